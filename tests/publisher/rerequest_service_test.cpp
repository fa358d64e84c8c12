// request_service on loopback: packets recorded through the publisher's on_packet hook (the
// dropped ones included) are answered from the store byte for byte; ignored requests are
// counted by reason; each client has its own budget; the served session is the first one
// recorded when none is given; an answer includes everything recorded before the request.
// Waits are for events (a datagram, a counter), with generous deadlines; no timing assertions.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/net/udp_sender.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>
#include <signet/publisher/nasdaq/moldudp64_publisher.hpp>
#include <signet/publisher/nasdaq/rerequest_service.hpp>

#include "publisher/publisher_test_support.hpp"

namespace {

namespace pub = signet::publisher;
namespace md = signet::md;
namespace net = signet::net;
using namespace pub::test;

/// A re-requesting client: its own socket on 127.0.0.1.
class client {
public:
    explicit client(std::uint16_t server_port)
        : socket_({.source = net::udp_endpoint::parse("127.0.0.1:0")})
        , server_(*net::udp_endpoint::try_parse_address("127.0.0.1", server_port)) {}

    void send(bytes const& datagram) { socket_.send(view(datagram), server_); }
    void request(std::string_view session, std::uint64_t sequence, std::uint16_t count) {
        send(md::test::mold_header(session, sequence, count));
    }
    /// The next `count` datagrams (fewer if none comes for 10 s).
    std::vector<bytes> receive(std::size_t count) {
        std::vector<bytes> out;
        std::vector<std::byte> buffer(65536);
        while (out.size() < count) {
            pollfd ready{.fd = socket_.native_handle(), .events = POLLIN, .revents = 0};
            if (::poll(&ready, 1, 10'000) != 1) {
                break;
            }
            ssize_t const n = ::recv(socket_.native_handle(), buffer.data(), buffer.size(), 0);
            if (n >= 0) {
                out.emplace_back(buffer.begin(), buffer.begin() + n);
            }
        }
        return out;
    }
    /// Datagrams already queued (none is expected: call after the service counted the requests).
    std::size_t pending() {
        std::size_t n = 0;
        std::vector<std::byte> buffer(65536);
        while (::recv(socket_.native_handle(), buffer.data(), buffer.size(), MSG_DONTWAIT) >= 0) {
            ++n;
        }
        return n;
    }

private:
    net::udp_sender socket_;
    net::udp_endpoint server_;
};

/// Waits (10 s at most) until the service has taken in `requests` requests.
void wait_for_requests(pub::nasdaq::rerequest_service const& service, std::uint64_t requests) {
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (service.stats().requests < requests && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(service.stats().requests, requests);
}

pub::nasdaq::rerequest_service_options options(std::string session = "SIGNET0001") {
    return {.family = AF_INET,
            .store = pub::nasdaq::store_for_messages(100'000),
            .session = std::move(session),
            .max_messages_per_answer = 1000,
            .requests_per_second = 1e6};
}

/// Messages by sequence from MoldUDP64 data packets.
std::map<std::uint64_t, bytes> messages_of(std::vector<bytes> const& datagrams) {
    std::map<std::uint64_t, bytes> out;
    for (bytes const& d : datagrams) {
        md::nasdaq::moldudp64_session session(md::nasdaq::moldudp64_sequence(view(d)));
        (void)session.on_packet(view(d), [&](std::uint64_t s, std::span<std::byte const> m) {
            out[s] = bytes(m.begin(), m.end());
        });
    }
    return out;
}

/// Runs the generator through a publisher into `service` (every 4th packet dropped); returns
/// every packet built, in order.
std::vector<bytes> publish(pub::nasdaq::rerequest_service& service, std::uint64_t messages,
                           std::vector<bytes>* dropped = nullptr) {
    fake_clock clock;
    recording_lines out(clock, 1);
    std::vector<bytes> built;
    pub::nasdaq::moldudp64_publisher p({.rate = 0,
                                        .faults = {.drop_every = 4},
                                        .on_packet =
                                            [&](std::span<std::byte const> d) {
                                                service.record(d);
                                                built.emplace_back(d.begin(), d.end());
                                            }},
                                       out, clock);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 4, .messages = messages});
    EXPECT_TRUE(p.run(generator).ok());
    if (dropped != nullptr) {
        for (std::size_t i = 3; i < built.size(); i += 4) {
            dropped->push_back(built[i]);
        }
    }
    return built;
}

TEST(RequestService, AnswersDroppedPacketsFromTheStore) {
    pub::nasdaq::rerequest_service service(options());
    ASSERT_NE(service.port(), 0);
    std::vector<bytes> dropped;
    std::vector<bytes> const built = publish(service, 1000, &dropped);
    ASSERT_GT(dropped.size(), 20U);
    client c(service.port());
    for (bytes const& packet : dropped) {
        c.request("SIGNET0001", md::nasdaq::moldudp64_sequence(view(packet)), mold_count(packet));
        // The same messages in one packet: the very bytes that were dropped.
        EXPECT_EQ(c.receive(1), std::vector<bytes>{packet});
    }
    service.stop();
    md::nasdaq::rerequest_stats const r = service.stats();
    EXPECT_EQ(r.requests, dropped.size());
    EXPECT_EQ(r.answered, dropped.size());
    EXPECT_EQ(r.packets_resent, dropped.size());
    pub::nasdaq::rerequest_store_counts const store = service.store_counts();
    EXPECT_EQ(store.stored, messages_of(built).size()) << "every message, dropped ones included";
    EXPECT_EQ(store.restarts, 0U);
    EXPECT_EQ(store.evicted, 0U);
    EXPECT_EQ(store.send_errors, 0U);
    EXPECT_EQ(store.handoff_lost_bytes, 0U);
    EXPECT_EQ(service.session(), "SIGNET0001");
}

TEST(RequestService, IgnoredRequestsAreCountedByReason) {
    pub::nasdaq::rerequest_service_options o = options();
    o.store = pub::nasdaq::store_for_messages(100); // the oldest messages are evicted
    o.max_messages_per_answer = 20;                 // one packet
    pub::nasdaq::rerequest_service service(o);
    std::vector<bytes> const built = publish(service, 1000);
    std::uint64_t const next =
        md::nasdaq::moldudp64_sequence(view(built.back())) + mold_count(built.back());
    client c(service.port());
    c.send(md::test::text_bytes("too short"));
    c.request("ELSEWHERE", next - 10, 1);
    c.request("SIGNET0001", 0, 1);
    c.request("SIGNET0001", next - 10, 0);
    c.request("SIGNET0001", next, 1);          // not sent yet
    c.request("SIGNET0001", 1, 1);             // evicted
    c.request("SIGNET0001", next - 90, 65535); // clamped to 20 messages
    std::map<std::uint64_t, bytes> const answered = messages_of(c.receive(1));
    ASSERT_EQ(answered.size(), 20U);
    EXPECT_EQ(answered.begin()->first, next - 90);
    wait_for_requests(service, 7);
    EXPECT_EQ(c.pending(), 0U) << "ignored requests get no answer";
    service.stop();
    md::nasdaq::rerequest_stats const r = service.stats();
    EXPECT_EQ(r.malformed, 1U);
    EXPECT_EQ(r.wrong_session, 1U);
    EXPECT_EQ(r.zero_sequence, 1U);
    EXPECT_EQ(r.zero_count, 1U);
    EXPECT_EQ(r.not_yet_sent, 1U);
    EXPECT_EQ(r.evicted, 1U);
    EXPECT_EQ(r.answered, 1U);
    EXPECT_EQ(r.clamped, 1U);
    EXPECT_EQ(r.messages_resent, 20U);
    EXPECT_GT(service.store_counts().evicted, 0U);
}

TEST(RequestService, EachClientHasItsOwnBudget) {
    pub::nasdaq::rerequest_service_options o = options();
    o.requests_per_second = 0.001; // a burst of one, then one per 1000 s
    pub::nasdaq::rerequest_service service(o);
    publish(service, 100);
    client first(service.port());
    client second(service.port());
    for (int i = 0; i < 5; ++i) {
        first.request("SIGNET0001", 1, 1);
    }
    second.request("SIGNET0001", 2, 1);
    EXPECT_EQ(messages_of(second.receive(1)).begin()->first, 2U);
    EXPECT_EQ(messages_of(first.receive(1)).begin()->first, 1U);
    wait_for_requests(service, 6);
    EXPECT_EQ(first.pending(), 0U);
    service.stop();
    EXPECT_EQ(service.stats().answered, 2U);
    EXPECT_EQ(service.stats().rate_limited, 4U);
}

TEST(RequestService, AnAnswerIncludesEverythingRecordedBeforeTheRequest) {
    pub::nasdaq::rerequest_service service(options());
    client c(service.port());
    for (std::uint64_t sequence = 1; sequence <= 50; ++sequence) {
        service.record(view(md::test::mold_packet("SIGNET0001", sequence,
                                                  {md::test::add(1, sequence, 'B', 1, 1)})));
        c.request("SIGNET0001", sequence, 1); // the message just recorded: never "not yet sent"
        std::map<std::uint64_t, bytes> const got = messages_of(c.receive(1));
        ASSERT_EQ(got.size(), 1U) << sequence;
        EXPECT_EQ(got.begin()->first, sequence);
    }
    service.stop();
    EXPECT_EQ(service.stats().not_yet_sent, 0U);
    EXPECT_EQ(service.stats().answered, 50U);
}

TEST(RequestService, ServesTheFirstRecordedSessionWhenNoneIsGiven) {
    pub::nasdaq::rerequest_service service(options(""));
    EXPECT_EQ(service.session(), "");
    EXPECT_NE(service.describe().find("session of the first data packet"), std::string::npos)
        << service.describe();
    std::vector<bytes> const capture = mold_traffic(100, "CAPTURE1");
    for (bytes const& packet : capture) {
        service.record(view(packet));
        service.record(view(packet)); // line B's copy: stored once
    }
    // Another session's packets and non-data datagrams are not stored.
    service.record(view(md::test::mold_packet("OTHER", 1, {md::test::add(1, 1, 'B', 1, 1)})));
    service.record(view(md::test::mold_header("CAPTURE1", 500, 0)));
    service.record(view(md::test::text_bytes("not moldudp64")));
    client c(service.port());
    c.request("CAPTURE1", md::nasdaq::moldudp64_sequence(view(capture[1])), mold_count(capture[1]));
    EXPECT_EQ(c.receive(1), std::vector<bytes>{capture[1]});
    c.request("SIGNET0001", 1, 1);
    wait_for_requests(service, 2);
    service.stop();
    EXPECT_EQ(service.session(), "CAPTURE1  ");
    EXPECT_EQ(service.stats().wrong_session, 1U);
    EXPECT_EQ(service.store_counts().stored, 100U + 3 + 4 + 3);
    EXPECT_EQ(service.store_counts().restarts, 0U);
}

TEST(RequestService, AJumpAheadStartsTheStoreAnew) {
    pub::nasdaq::rerequest_service service(options());
    service.record(view(md::test::mold_packet("SIGNET0001", 1, {md::test::add(1, 1, 'B', 1, 1)})));
    service.record(view(md::test::mold_packet("SIGNET0001", 5, {md::test::add(1, 5, 'B', 1, 1)})));
    service.stop();
    EXPECT_EQ(service.store_counts().stored, 2U);
    EXPECT_EQ(service.store_counts().restarts, 1U);
    EXPECT_EQ(service.store_counts().evicted, 1U);
}

TEST(RequestService, StoreSizes) {
    pub::nasdaq::store_size const n = pub::nasdaq::store_for_messages(10);
    EXPECT_EQ(n.messages, 10U);
    EXPECT_EQ(n.bytes, 10U * 50 + 65535);
    scratch_dir dir("request_service_test");
    {
        std::ofstream file(dir / "day.itch", std::ios::binary);
        for (bytes const& m :
             {md::test::add(1, 1, 'B', 1, 1), bytes{}, md::test::delete_order(1)}) {
            char const prefix[2] = {static_cast<char>(m.size() >> 8),
                                    static_cast<char>(m.size() & 0xFF)};
            file.write(prefix, 2);
            file.write(reinterpret_cast<char const*>(m.data()),
                       static_cast<std::streamsize>(m.size()));
        }
    }
    pub::nasdaq::store_size const whole = pub::nasdaq::store_for_file((dir / "day.itch").string());
    EXPECT_EQ(whole.messages, 2U);
    EXPECT_EQ(whole.bytes, 36U + 19);
    EXPECT_THROW((void)pub::nasdaq::store_for_file((dir / "missing.itch").string()),
                 std::system_error);
}

TEST(RequestService, ATakenPortIsAClearError) {
    net::udp_socket const taken(
        {.bind = net::udp_endpoint::parse("0.0.0.0:0"), .timestamps = net::timestamping::off});
    pub::nasdaq::rerequest_service_options o = options();
    o.port = taken.local_endpoint().port();
    try {
        pub::nasdaq::rerequest_service const service(o);
        FAIL() << "bound a port that is taken";
    } catch (std::system_error const& e) {
        EXPECT_NE(std::string(e.what()).find("cannot bind UDP port " + std::to_string(o.port)),
                  std::string::npos)
            << e.what();
    }
}

TEST(RequestService, LingerEndsWhenTheFlagIsSetAndStops) {
    pub::nasdaq::rerequest_service service(options());
    std::atomic<bool> interrupted{true};
    service.linger(std::chrono::hours(1), &interrupted); // returns at once: the flag is set
    client c(service.port());
    service.record(view(md::test::mold_packet("SIGNET0001", 1, {md::test::add(1, 1, 'B', 1, 1)})));
    c.request("SIGNET0001", 1, 1);
    EXPECT_EQ(service.stats().requests, 0U) << "stopped: nothing is answered";
    service.stop(); // idempotent
    pub::nasdaq::rerequest_service other(options());
    other.linger(std::chrono::nanoseconds(0));
    EXPECT_EQ(other.stats().requests, 0U);
}

} // namespace
