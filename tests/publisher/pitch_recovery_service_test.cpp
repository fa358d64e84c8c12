// pitch_recovery_service: Cboe's Gap Request Proxy and Spin server beside a publisher, over
// real TCP on 127.0.0.1 (the client side is md::cboe::session_client): a login with other
// credentials is refused; an accepted gap request comes back on the gap line as blocks of the
// unit with the original sequences and bytes; requests out of range or of another unit are
// refused by status; a request that arrives while the service answers another one covers
// the blocks recorded before it was sent; a Spin of a unit rebuilds that unit's book as a receiver
// that saw every block has it, and a second request while it is sent is 'S'. Connections that
// never log in are dropped at the login deadline and give way to new ones, per server; a second
// session with the same credentials is 'B'.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/md/cboe/pitch_book.hpp>
#include <signet/md/cboe/pitch_session.hpp>
#include <signet/publisher/cboe/pitch_generator.hpp>
#include <signet/publisher/cboe/pitch_recovery_service.hpp>

#include "support/stress.hpp"
#include "support/tcp_peer.hpp"

namespace {

namespace cb = signet::md::cboe;
namespace mt = cb::message_type;
namespace pub = signet::publisher;
using bytes = std::vector<std::byte>;

/// The gap line: keeps what the service sends (its thread), for the test's.
class captured_line final : public pub::line_output {
public:
    [[nodiscard]] std::size_t lines() const noexcept override { return 1; }
    [[nodiscard]] std::error_code send(std::size_t,
                                       std::span<std::byte const> d) noexcept override {
        std::function<void()> hook;
        {
            std::lock_guard const lock(mutex_);
            sent_.emplace_back(d.begin(), d.end());
            hook = std::exchange(on_send_, {});
        }
        if (hook) {
            hook();
        }
        return {};
    }
    /// Runs once, on the service's thread, at the next send.
    void on_next_send(std::function<void()> hook) {
        std::lock_guard const lock(mutex_);
        on_send_ = std::move(hook);
    }
    [[nodiscard]] std::string describe(std::size_t) const override { return "captured"; }
    [[nodiscard]] std::vector<bytes> sent() const {
        std::lock_guard const lock(mutex_);
        return sent_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<bytes> sent_;
    std::function<void()> on_send_;
};

/// `blocks` blocks of a generated two-unit market, as the publisher builds them.
std::vector<bytes> market(std::size_t blocks) {
    pub::cboe::pitch_generator generator({.seed = 3, .units = 2, .symbols = 6});
    std::vector<bytes> out;
    std::uint32_t next[3] = {0, 1, 1};
    for (std::size_t i = 0; i < blocks; ++i) {
        auto const unit = static_cast<std::uint8_t>(1 + i % 2);
        bytes buffer(1400);
        cb::block_writer w(buffer);
        w.begin(unit, next[unit]);
        for (int k = 0; k < 3; ++k) {
            cb::message m;
            generator.next(unit, m);
            EXPECT_TRUE(w.add(m));
        }
        next[unit] += w.count();
        auto const block = w.finish();
        out.emplace_back(block.begin(), block.end());
    }
    return out;
}

/// A connected TCP socket to 127.0.0.1:port.
signet::net::unique_fd connect_to(std::uint16_t port) {
    signet::net::unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    int const one = 1; // requests leave at once, as the receiver's do
    (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    return fd;
}

/// A logged-in client of one of the service's ports (blocking socket, bounded waits).
class client {
public:
    client(std::uint16_t port, cb::session_credentials const& credentials)
        : fd_(connect_to(port))
        , session_({.credentials = credentials}) {
        session_.start(0);
        flush();
        // The login's answer first: requests go out once logged in.
        (void)read_until([](cb::message const&) { return false; },
                         [&] { return session_.state() != cb::session_state::logging_in; });
    }
    void send(cb::message const& m) { send_together({m}); }
    /// The messages in one write: the server reads them together.
    void send_together(std::initializer_list<cb::message> messages) {
        for (cb::message const& m : messages) {
            EXPECT_TRUE(session_.send(m, 0));
        }
        flush();
    }
    /// Reads until `done(message)` (or `stop()`) is true, the session fails or the peer closes
    /// (20 s bound).
    template <typename Done, typename Stop = bool (*)()>
    std::vector<cb::message> read_until(
        Done&& done, Stop stop = [] { return false; }) {
        std::vector<cb::message> got;
        bool finished = stop();
        while (!finished) {
            pollfd p{.fd = fd_.get(), .events = POLLIN, .revents = 0};
            if (::poll(&p, 1, 20'000) != 1) {
                break;
            }
            ssize_t const n =
                ::recv(fd_.get(), buffer_.data() + filled_, buffer_.size() - filled_, 0);
            if (n <= 0) {
                break;
            }
            filled_ += static_cast<std::size_t>(n);
            std::size_t const used = session_.on_bytes(
                std::span<std::byte const>(buffer_.data(), filled_), 0, [&](cb::message const& m) {
                    got.push_back(m);
                    finished = finished || done(m);
                });
            std::memmove(buffer_.data(), buffer_.data() + used, filled_ - used);
            filled_ -= used;
            finished = finished || stop() || session_.state() == cb::session_state::failed;
        }
        return got;
    }
    [[nodiscard]] cb::session_client const& session() const noexcept { return session_; }

private:
    void flush() {
        EXPECT_TRUE(signet::test::send_all(fd_.get(), session_.output()));
        session_.sent(session_.output().size(), 0);
    }
    signet::net::unique_fd fd_;
    cb::session_client session_;
    bytes buffer_ = bytes(1 << 20);
    std::size_t filled_ = 0;
};

cb::session_credentials const login = cb::session_credentials::of("0001", "USER", "secret");

/// A service with Spin servers (on a base port and the next ones, free ones found by trying).
std::pair<std::unique_ptr<pub::cboe::pitch_recovery_service>, std::uint16_t>
spin_service(pub::cboe::pitch_recovery_options options, pub::line_output* gap_line) {
    for (int attempt = 0; attempt < 20; ++attempt) {
        options.spin_port = signet::test::tcp_listener().port(); // free a moment ago
        try {
            return {std::make_unique<pub::cboe::pitch_recovery_service>(options, gap_line),
                    options.spin_port};
        } catch (std::system_error const&) {
            continue; // a port above the base was taken
        }
    }
    ADD_FAILURE() << "no free spin ports";
    return {};
}

TEST(PitchRecoveryService, GapRequestsAreAnsweredOnTheGapLine) {
    signet::test::watchdog dog(std::chrono::seconds(60), "gap requests");
    captured_line gap;
    pub::cboe::pitch_recovery_service service(
        {.units = 2, .grp = true, .credentials = login, .handoff_bytes = 1 << 20}, &gap);
    std::vector<bytes> const blocks = market(40);
    for (bytes const& b : blocks) {
        service.record(b);
    }
    {
        client wrong(service.grp_port(), cb::session_credentials::of("0001", "USER", "guess"));
        (void)wrong.read_until([](cb::message const&) { return false; });
        EXPECT_EQ(wrong.session().failure(), cb::session_failure::rejected);
        EXPECT_EQ(wrong.session().rejection(), 'N');
    }
    client c(service.grp_port(), login);
    // Unit 2's sequences 4 to 9: blocks 3 and 5 (unit 2's second and third, 3 messages each).
    cb::message request;
    request.type = mt::gap_request;
    request.unit = 2;
    request.sequence = 4;
    request.count = 6;
    c.send(request);
    std::vector<cb::message> responses =
        c.read_until([](cb::message const& m) { return m.type == mt::gap_response; });
    ASSERT_FALSE(responses.empty());
    EXPECT_EQ(responses.back().status, 'A');
    EXPECT_EQ(responses.back().sequence, 4U);
    std::vector<bytes> const resent = gap.sent();
    ASSERT_EQ(resent.size(), 1U); // six messages fit one block
    bytes expected(blocks[3].begin() + cb::header_size, blocks[3].end());
    expected.insert(expected.end(), blocks[5].begin() + cb::header_size, blocks[5].end());
    std::optional<cb::block_check> const check = cb::validate_block(resent[0]);
    ASSERT_TRUE(check.has_value());
    EXPECT_EQ(check->header.unit, 2);
    EXPECT_EQ(check->header.sequence, 4U);
    EXPECT_EQ(check->header.count, 6);
    EXPECT_EQ(bytes(resent[0].begin() + cb::header_size, resent[0].end()), expected);
    // Refusals, by status: beyond what was sent, a unit not served.
    for (auto const& [unit, sequence, status] :
         {std::tuple{std::uint8_t{1}, std::uint32_t{58}, 'O'},
          std::tuple{std::uint8_t{7}, std::uint32_t{1}, 'I'}}) {
        request.unit = unit;
        request.sequence = sequence;
        request.count = 5;
        c.send(request);
        responses = c.read_until([](cb::message const& m) { return m.type == mt::gap_response; });
        ASSERT_FALSE(responses.empty());
        EXPECT_EQ(responses.back().status, status);
    }
    EXPECT_EQ(gap.sent().size(), 1U);
}

TEST(PitchRecoveryService, ARequestReadWhileAnsweringAnotherCoversEverythingRecordedBefore) {
    // The receiver's requests come in bursts: the second of two can be read in the receive
    // loop that answered the first. The test holds the service inside its first answer (on
    // the gap line's send) while it records unit 1's next blocks and asks for them.
    signet::test::watchdog dog(std::chrono::seconds(60), "request while answering");
    captured_line gap;
    pub::cboe::pitch_recovery_service service(
        {.units = 2, .grp = true, .credentials = login, .handoff_bytes = 1 << 20}, &gap);
    std::vector<bytes> const blocks = market(40);
    for (std::size_t i = 0; i < 20; ++i) {
        service.record(blocks[i]);
    }
    client c(service.grp_port(), login);
    std::mutex mutex;
    std::condition_variable changed;
    bool answering = false;
    bool asked = false;
    gap.on_next_send([&] {
        std::unique_lock lock(mutex);
        answering = true;
        changed.notify_all();
        changed.wait(lock, [&] { return asked; });
    });
    cb::message request;
    request.type = mt::gap_request;
    request.unit = 1;
    request.sequence = 1;
    request.count = 3;
    c.send(request);
    {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return answering; });
    }
    // Blocks 20 and 22: unit 1's sequences 31 to 36, recorded, then asked for.
    for (std::size_t i = 20; i < 40; ++i) {
        service.record(blocks[i]);
    }
    request.sequence = 31;
    request.count = 6;
    c.send(request);
    {
        std::lock_guard const lock(mutex);
        asked = true;
    }
    changed.notify_all();
    std::vector<cb::message> responses;
    while (responses.size() < 2) {
        std::vector<cb::message> const got =
            c.read_until([](cb::message const& m) { return m.type == mt::gap_response; });
        ASSERT_FALSE(got.empty());
        for (cb::message const& m : got) {
            if (m.type == mt::gap_response) {
                responses.push_back(m);
            }
        }
    }
    EXPECT_EQ(responses[0].status, 'A');
    EXPECT_EQ(responses[1].status, 'A');
    EXPECT_EQ(responses[1].sequence, 31U);
    std::vector<bytes> const resent = gap.sent();
    ASSERT_EQ(resent.size(), 2U);
    std::optional<cb::block_check> const check = cb::validate_block(resent[1]);
    ASSERT_TRUE(check.has_value());
    EXPECT_EQ(check->header.unit, 1);
    EXPECT_EQ(check->header.sequence, 31U);
    EXPECT_EQ(check->header.count, 6);
}

TEST(PitchRecoveryService, ASpinRebuildsTheUnitsBook) {
    signet::test::watchdog dog(std::chrono::seconds(60), "spin");
    auto const [made, base] =
        spin_service({.units = 2, .spin = true, .handoff_bytes = 1 << 20}, nullptr);
    ASSERT_TRUE(made);
    pub::cboe::pitch_recovery_service& service = *made;
    std::vector<bytes> const blocks = market(60);
    cb::pitch_book reference;
    for (bytes const& b : blocks) {
        service.record(b);
        reference.apply_block(b, 0, 0);
    }
    client c(static_cast<std::uint16_t>(base + 1), {}); // unit 2's server
    std::vector<cb::message> const images =
        c.read_until([](cb::message const& m) { return m.type == mt::spin_image_available; });
    ASSERT_FALSE(images.empty());
    EXPECT_EQ(images.back().sequence, 90U); // unit 2: 30 blocks of 3 messages
    cb::message request;
    request.type = mt::spin_request;
    request.sequence = images.back().sequence;
    c.send(request);
    std::vector<cb::message> const spin =
        c.read_until([](cb::message const& m) { return m.type == mt::spin_finished; });
    cb::pitch_book rebuilt;
    std::size_t adds = 0;
    for (cb::message const& m : spin) {
        if (m.type == mt::spin_response) {
            EXPECT_EQ(m.status, 'A');
            EXPECT_EQ(m.sequence, 90U);
        } else if (m.type == mt::spin_finished) {
            EXPECT_EQ(m.sequence, 90U);
        } else if (m.type != mt::spin_image_available) {
            rebuilt.apply(2, 90, m, 0);
            adds += m.type == mt::add_order_long || m.type == mt::add_order_expanded ? 1 : 0;
        }
    }
    ASSERT_GT(adds, 0U);
    for (std::uint32_t id = 0; id < reference.instrument_count(); ++id) {
        cb::pitch_instrument const& i = *reference.instrument(id);
        std::optional<std::uint32_t> const other = rebuilt.find(i.symbol);
        if (i.unit != 2) {
            EXPECT_FALSE(other.has_value()) << cb::trimmed(i.symbol); // another unit's
            continue;
        }
        if (reference.order_count(id) == 0) {
            continue;
        }
        ASSERT_TRUE(other.has_value()) << cb::trimmed(i.symbol);
        EXPECT_EQ(rebuilt.top(*other), reference.top(id)) << cb::trimmed(i.symbol);
        EXPECT_EQ(rebuilt.order_count(*other), reference.order_count(id));
    }
}

TEST(PitchRecoveryService, ASpinRequestWhileASpinIsSentIsAnsweredS) {
    // Cboe's server answers a second request while its spin runs with 'S' (the BATS capture:
    // request 312 sent twice, 'A' then 'S'). Both requests come in one write here, so the
    // second is read before the first spin can have left.
    signet::test::watchdog dog(std::chrono::seconds(60), "spin in progress");
    auto const [service, base] =
        spin_service({.units = 1, .spin = true, .handoff_bytes = 1 << 20}, nullptr);
    ASSERT_TRUE(service);
    for (bytes const& b : market(20)) {
        service->record(b); // unit 1's: 10 blocks of 3 messages
    }
    client c(base, {});
    std::vector<cb::message> const images =
        c.read_until([](cb::message const& m) { return m.type == mt::spin_image_available; });
    ASSERT_FALSE(images.empty());
    ASSERT_EQ(images.back().sequence, 30U);
    cb::message request;
    request.type = mt::spin_request;
    request.sequence = 30;
    c.send_together({request, request});
    int responses = 0;
    std::vector<cb::message> got = c.read_until(
        [&](cb::message const& m) { return m.type == mt::spin_response && ++responses == 2; });
    std::vector<char> statuses;
    int finished = 0;
    for (cb::message const& m : got) {
        statuses.push_back(m.type == mt::spin_response ? m.status : '\0');
        finished += m.type == mt::spin_finished ? 1 : 0;
    }
    std::erase(statuses, '\0');
    EXPECT_EQ(statuses, (std::vector<char>{'A', 'S'}));
    EXPECT_EQ(finished, 1); // one spin
    // Once it has left, a request is served again.
    c.send(request);
    got = c.read_until([](cb::message const& m) { return m.type == mt::spin_finished; });
    auto const response = std::find_if(
        got.begin(), got.end(), [](cb::message const& m) { return m.type == mt::spin_response; });
    ASSERT_NE(response, got.end());
    EXPECT_EQ(response->status, 'A');
    ASSERT_TRUE(signet::test::eventually([&] { return service->counts().spins == 2; }));
    EXPECT_EQ(service->counts().spin_refused, 1U);
}

TEST(PitchRecoveryService, ConnectionsThatNeverLogInCannotKeepALoginOut) {
    // Six connections to the GRP that send heartbeats and never log in, with four slots per
    // server and a one-second login deadline: each newer one takes the oldest one's slot, the
    // rest are dropped at the deadline whatever they send, and logins to the GRP and to the
    // Spin server (slots of its own) are accepted throughout.
    signet::test::watchdog dog(std::chrono::seconds(60), "unauthenticated connections");
    captured_line gap;
    auto const [service, base] = spin_service({.units = 1,
                                               .grp = true,
                                               .spin = true,
                                               .credentials = login,
                                               .max_clients = 4,
                                               .login_timeout = std::chrono::seconds(1),
                                               .handoff_bytes = 1 << 20},
                                              &gap);
    ASSERT_TRUE(service);
    bytes const heartbeat = {std::byte{8}, {}, {}, {}, {}, {}, {}, {}};
    std::vector<signet::net::unique_fd> idle;
    for (int i = 0; i < 6; ++i) {
        idle.push_back(connect_to(service->grp_port()));
        EXPECT_TRUE(signet::test::send_all(idle.back().get(), heartbeat));
    }
    client grp(service->grp_port(), login);
    EXPECT_EQ(grp.session().state(), cb::session_state::logged_in);
    client spin(base, login);
    EXPECT_EQ(spin.session().state(), cb::session_state::logged_in);
    // Every idle connection ends though it keeps sending a heartbeat every 100 ms.
    std::vector<bool> ended(idle.size(), false);
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::count(ended.begin(), ended.end(), false) != 0 &&
           std::chrono::steady_clock::now() < deadline) {
        std::vector<pollfd> fds;
        for (std::size_t i = 0; i < idle.size(); ++i) {
            if (!ended[i]) {
                (void)signet::test::send_all(idle[i].get(), heartbeat); // fails once closed
            }
            fds.push_back({.fd = ended[i] ? -1 : idle[i].get(), .events = POLLIN, .revents = 0});
        }
        (void)::poll(fds.data(), fds.size(), 100);
        for (std::size_t i = 0; i < idle.size(); ++i) {
            std::byte b{};
            if (fds[i].revents != 0 && ::recv(idle[i].get(), &b, 1, MSG_DONTWAIT) <= 0) {
                ended[i] = true; // nothing is ever sent to a connection not logged in
            }
        }
    }
    EXPECT_EQ(ended, std::vector<bool>(idle.size(), true));
    ASSERT_TRUE(signet::test::eventually([&] {
        pub::cboe::pitch_recovery_counts const c = service->counts();
        return c.evicted_clients + c.login_timeouts == 6;
    }));
    pub::cboe::pitch_recovery_counts const c = service->counts();
    EXPECT_EQ(c.evicted_clients, 3U); // by the 5th, the 6th and the GRP login
    EXPECT_EQ(c.login_timeouts, 3U);
    EXPECT_EQ(c.logins, 2U);
    EXPECT_EQ(c.refused_connections, 0U);
    EXPECT_EQ(c.dropped_clients, 0U);
    EXPECT_EQ(grp.session().state(), cb::session_state::logged_in);
}

TEST(PitchRecoveryService, ASecondSessionWithTheSameCredentialsIsRefusedWithB) {
    signet::test::watchdog dog(std::chrono::seconds(60), "session in use");
    captured_line gap;
    pub::cboe::pitch_recovery_service service(
        {.units = 1, .grp = true, .credentials = login, .handoff_bytes = 1 << 20}, &gap);
    {
        client first(service.grp_port(), login);
        EXPECT_EQ(first.session().state(), cb::session_state::logged_in);
        client second(service.grp_port(), login);
        EXPECT_EQ(second.session().failure(), cb::session_failure::rejected);
        EXPECT_EQ(second.session().rejection(), 'B');
    }
    // Once the first has gone, the session is free again.
    client again(service.grp_port(), login);
    EXPECT_EQ(again.session().state(), cb::session_state::logged_in);
    ASSERT_TRUE(signet::test::eventually([&] { return service.counts().logins == 2; }));
    EXPECT_EQ(service.counts().rejected_logins, 1U);
}

} // namespace
