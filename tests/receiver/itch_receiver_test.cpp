// itch_receiver in-process on loopback: the runtime's timers do what md_receiver's polling loop
// used to (reorder-hold expiry, re-request timeouts), the summary carries every documented
// field, and books and counters are readable while the feeds run.
#include <array>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/moldudp64_request.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/itch_receiver.hpp>
#include <signet/receiver/summary.hpp>

#include "md/md_test_support.hpp"
#include "support/stress.hpp"
#include <nlohmann/json.hpp>

namespace {

using namespace std::chrono_literals;
namespace t = signet::md::test;
using signet::net::udp_endpoint;
using signet::net::udp_socket;
using signet::receiver::feed_config;
using signet::receiver::itch_receiver;
using signet::receiver::receiver_config;
using signet::test::eventually;

receiver_config one_feed(std::optional<udp_endpoint> rerequest = std::nullopt) {
    receiver_config config;
    config.stats_interval_s = 0.05;
    config.silent_warning_s = 0;
    feed_config feed;
    feed.name = "test";
    feed.bind = udp_endpoint::parse("127.0.0.1:0");
    feed.rerequest = rerequest;
    feed.rerequest_timeout_ms = 20;
    feed.rerequest_tries = 50;
    config.feeds.push_back(feed);
    return config;
}

struct sender {
    udp_socket socket{{.bind = udp_endpoint::parse("127.0.0.1:0")}};
    void send(t::bytes const& datagram, udp_endpoint const& to) const {
        ASSERT_FALSE(socket.send_to(t::view(datagram), to));
    }
};

t::bytes packet(std::uint64_t sequence) {
    if (sequence == 1) {
        return t::mold_packet("S", 1, {t::directory(1, "TEST")});
    }
    return t::mold_packet("S", sequence,
                          {t::add(1, sequence, 'B', 100, static_cast<std::uint32_t>(sequence))});
}

// Without a timer the packet behind the gap would wait in the reorder hold until more packets
// came (md_receiver's polling loop used to wake the parser for this).
TEST(ItchReceiver, AHoldExpiresOnItsTimerWithoutMorePackets) {
    signet::test::watchdog dog(60s, "AHoldExpiresOnItsTimerWithoutMorePackets");
    itch_receiver receiver(one_feed(), {.stats_lines = false});
    receiver.start();
    udp_endpoint const to = receiver.runtime().local_endpoint(0);
    sender out;
    out.send(packet(1), to);
    out.send(packet(3), to); // 2 never comes
    ASSERT_TRUE(eventually([&] { return receiver.parser(0).live().messages == 2; }));
    EXPECT_EQ(receiver.parser(0).live().gaps, 1U);
    receiver.stop();
    EXPECT_EQ(receiver.parser(0).session_stats().missing_messages, 1U);
}

// Re-requests are sent and resent on the parser's timer while no packet arrives; the answer
// fills the gap and the books are complete.
TEST(ItchReceiver, ReRequestsAreResentOnTimersAndTheAnswerFillsTheGap) {
    signet::test::watchdog dog(60s, "ReRequestsAreResentOnTimersAndTheAnswerFillsTheGap");
    udp_socket server({.bind = udp_endpoint::parse("127.0.0.1:0")});
    itch_receiver receiver(one_feed(server.local_endpoint()), {.stats_lines = false});
    receiver.start();
    udp_endpoint const to = receiver.runtime().local_endpoint(0);
    sender out;
    out.send(packet(1), to);
    out.send(packet(3), to);
    // Two requests for 2 with no packet in between: the second is the timeout's resend.
    std::array<std::byte, 64> request{};
    sockaddr_storage from{};
    socklen_t from_size = 0;
    for (int i = 0; i < 2; ++i) {
        std::int64_t got = -1;
        ASSERT_TRUE(eventually([&] {
            from_size = sizeof(from);
            got = ::recvfrom(server.native_handle(), request.data(), request.size(), MSG_DONTWAIT,
                             reinterpret_cast<sockaddr*>(&from), &from_size);
            return got == 20;
        }));
        auto const parsed = signet::md::nasdaq::parse_moldudp64_request({request.data(), 20});
        ASSERT_TRUE(parsed.has_value());
        EXPECT_EQ(parsed->sequence, 2U);
    }
    auto const answer = packet(2);
    ASSERT_EQ(::sendto(server.native_handle(), answer.data(), answer.size(), 0,
                       reinterpret_cast<sockaddr*>(&from), from_size),
              static_cast<ssize_t>(answer.size()));
    ASSERT_TRUE(eventually([&] { return receiver.parser(0).live().messages == 3; }));
    receiver.stop();
    auto const summary = nlohmann::json::parse(signet::receiver::summary_json(receiver));
    auto const& feed = summary["feeds"][0];
    EXPECT_EQ(feed["gaps"], 0);
    EXPECT_EQ(feed["unknown_order_refs"], 0);
    EXPECT_EQ(feed["recovery"]["gaps_recovered"], 1);
    EXPECT_GE(feed["recovery"]["rerequest_timeouts"], 1);
    EXPECT_EQ(feed.at("books").at("TEST").at("orders"), 2);
}

TEST(ItchReceiver, BooksAndCountersAreReadableWhileRunning) {
    signet::test::watchdog dog(60s, "BooksAndCountersAreReadableWhileRunning");
    itch_receiver receiver(one_feed(), {.stats_lines = false});
    receiver.start();
    udp_endpoint const to = receiver.runtime().local_endpoint(0);
    sender out;
    for (std::uint64_t s = 1; s <= 4; ++s) {
        out.send(packet(s), to);
    }
    // The book snapshot is published every stats interval (0.05 s) by the parser's timer.
    ASSERT_TRUE(eventually([&] {
        auto const rows = receiver.parser(0).books();
        return rows.size() == 1 && rows[0].orders == 3;
    }));
    EXPECT_EQ(receiver.net_stats(0).packets, 4U);
    EXPECT_EQ(receiver.parser(0).live().messages, 4U);
    receiver.stop();
}

TEST(ItchReceiver, TheSummaryHasEveryDocumentedFieldAndNoOther) {
    itch_receiver receiver(one_feed(), {.stats_lines = false});
    receiver.start();
    sender out;
    out.send(packet(1), receiver.runtime().local_endpoint(0));
    ASSERT_TRUE(eventually([&] { return receiver.parser(0).live().messages == 1; }));
    receiver.stop();
    auto const summary = nlohmann::json::parse(signet::receiver::summary_json(receiver));
    std::set<std::string> top;
    std::set<std::string> feed;
    for (auto const& field : signet::receiver::summary_fields()) {
        (field.per_feed ? feed : top).insert(std::string(field.name));
    }
    std::set<std::string> seen_top;
    for (auto const& [key, value] : summary.items()) {
        seen_top.insert(key);
    }
    EXPECT_EQ(seen_top, top);
    std::set<std::string> seen_feed;
    for (auto const& [key, value] : summary["feeds"][0].items()) {
        seen_feed.insert(key);
    }
    feed.erase("recovery"); // only with rerequest
    feed.erase("record");   // only with --record
    feed.erase("snapshot"); // only with snapshot
    feed.erase("mdp3");     // only with protocol mdp3
    EXPECT_EQ(seen_feed, feed);
}

} // namespace
