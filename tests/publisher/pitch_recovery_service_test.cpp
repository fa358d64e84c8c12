// pitch_recovery_service: Cboe's Gap Request Proxy and Spin server beside a publisher, over
// real TCP on 127.0.0.1 (the client side is md::cboe::session_client): a login with other
// credentials is refused; an accepted gap request comes back on the gap line as blocks of the
// unit with the original sequences and bytes; requests out of range or of another unit are
// refused by status; a request that arrives while the service answers another one covers
// the blocks recorded before it was sent; a Spin of a unit rebuilds that unit's book as a receiver
// that saw every block has it.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
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

/// A logged-in client of one of the service's ports (blocking socket, bounded waits).
class client {
public:
    client(std::uint16_t port, cb::session_credentials const& credentials)
        : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0))
        , session_({.credentials = credentials}) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = htons(port);
        int const one = 1; // requests leave at once, as the receiver's do
        (void)::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        EXPECT_EQ(::connect(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        session_.start(0);
        flush();
        // The login's answer first: requests go out once logged in.
        (void)read_until([](cb::message const&) { return false; },
                         [&] { return session_.state() != cb::session_state::logging_in; });
    }
    void send(cb::message const& m) {
        EXPECT_TRUE(session_.send(m, 0));
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
    // Two consecutive free ports for the two units' servers: an ephemeral one and the next,
    // tried until both bind.
    std::unique_ptr<pub::cboe::pitch_recovery_service> made;
    std::uint16_t base = 0;
    for (int attempt = 0; attempt < 20 && !made; ++attempt) {
        base = signet::test::tcp_listener().port(); // free a moment ago
        try {
            made = std::make_unique<pub::cboe::pitch_recovery_service>(
                pub::cboe::pitch_recovery_options{
                    .units = 2, .spin = true, .spin_port = base, .handoff_bytes = 1 << 20},
                nullptr);
        } catch (std::system_error const&) {
            continue; // base + 1 was taken
        }
    }
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

} // namespace
