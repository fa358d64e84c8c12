// receiver in-process on loopback, moldudp64 feeds: the runtime's timers do what md_receiver's
// polling loop used to (reorder-hold expiry, re-request timeouts), the summary carries every
// documented field, and books and counters are readable while the feeds run.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/moldudp64_request.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>
#include <signet/receiver/raw_protocol.hpp>
#include <signet/receiver/receiver.hpp>
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
using signet::receiver::receiver;
using signet::receiver::receiver_config;
using signet::receiver::nasdaq::moldudp64_settings;
using signet::test::eventually;

receiver_config one_feed(std::optional<udp_endpoint> rerequest = std::nullopt) {
    receiver_config config;
    config.stats_interval_s = 0.05;
    config.silent_warning_s = 0;
    feed_config feed;
    feed.name = "test";
    feed.bind = udp_endpoint::parse("127.0.0.1:0");
    auto settings = std::make_shared<moldudp64_settings>();
    settings->rerequest = rerequest;
    settings->rerequest_timeout_ms = 20;
    settings->rerequest_tries = 50;
    feed.protocol = settings;
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
TEST(Receiver, AHoldExpiresOnItsTimerWithoutMorePackets) {
    signet::test::watchdog dog(60s, "AHoldExpiresOnItsTimerWithoutMorePackets");
    receiver r(one_feed(), {.stats_lines = false});
    r.start();
    udp_endpoint const to = r.runtime().local_endpoint(0);
    sender out;
    out.send(packet(1), to);
    out.send(packet(3), to); // 2 never comes
    ASSERT_TRUE(eventually([&] { return r.parser(0).live().messages == 2; }));
    EXPECT_EQ(r.parser(0).live().gaps, 1U);
    r.stop();
    EXPECT_EQ(r.parser(0).live().missing, 1U);
}

// Re-requests are sent and resent on the parser's timer while no packet arrives; the answer
// fills the gap and the books are complete.
TEST(Receiver, ReRequestsAreResentOnTimersAndTheAnswerFillsTheGap) {
    signet::test::watchdog dog(60s, "ReRequestsAreResentOnTimersAndTheAnswerFillsTheGap");
    udp_socket server({.bind = udp_endpoint::parse("127.0.0.1:0")});
    receiver r(one_feed(server.local_endpoint()), {.stats_lines = false});
    r.start();
    udp_endpoint const to = r.runtime().local_endpoint(0);
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
    ASSERT_TRUE(eventually([&] { return r.parser(0).live().messages == 3; }));
    r.stop();
    auto const summary = nlohmann::json::parse(signet::receiver::summary_json(r));
    auto const& feed = summary["feeds"][0];
    EXPECT_EQ(feed["gaps"], 0);
    EXPECT_EQ(feed["recovered"], 1);
    EXPECT_EQ(feed["book_state"], "complete");
    auto const& mold = feed.at("moldudp64");
    EXPECT_EQ(mold["itch"]["unknown_order_refs"], 0);
    EXPECT_EQ(mold["recovery"]["gaps_recovered"], 1);
    EXPECT_GE(mold["recovery"]["rerequest_timeouts"], 1);
    EXPECT_EQ(mold.at("itch").at("books").at("TEST").at("orders"), 2);
    EXPECT_EQ(feed.at("lines").at("request").at("packets"), 1); // the answer
}

TEST(Receiver, BooksAndCountersAreReadableWhileRunning) {
    signet::test::watchdog dog(60s, "BooksAndCountersAreReadableWhileRunning");
    receiver r(one_feed(), {.stats_lines = false});
    r.start();
    udp_endpoint const to = r.runtime().local_endpoint(0);
    sender out;
    for (std::uint64_t s = 1; s <= 4; ++s) {
        out.send(packet(s), to);
    }
    // The book snapshot is published every stats interval (0.05 s) by the parser's timer.
    ASSERT_TRUE(eventually([&] {
        auto const rows = r.parser(0).books();
        return rows.size() == 1 && rows[0].orders == 3;
    }));
    EXPECT_EQ(r.net_stats(0).packets, 4U);
    EXPECT_EQ(r.parser(0).live().messages, 4U);
    r.stop();
}

TEST(Receiver, TheSummaryHasEveryDocumentedFieldAndNoOther) {
    // A moldudp64 feed with every section (re-requests, GLIMPSE needs a server: left out) and a
    // raw feed: every key is documented, and every documented neutral field is there.
    udp_socket server({.bind = udp_endpoint::parse("127.0.0.1:0")});
    receiver_config config = one_feed(server.local_endpoint());
    feed_config raw;
    raw.name = "raw";
    raw.bind = udp_endpoint::parse("127.0.0.1:0");
    raw.protocol = std::make_shared<signet::receiver::raw_settings>();
    config.feeds.push_back(raw);
    receiver r(config, {.stats_lines = false});
    r.start();
    sender out;
    out.send(packet(1), r.runtime().local_endpoint(0));
    out.send(packet(1), r.runtime().local_endpoint(1));
    ASSERT_TRUE(eventually([&] { return r.parser(0).live().messages == 1; }));
    ASSERT_TRUE(eventually([&] { return r.parser(1).live().packets == 1; }));
    r.stop();
    auto const summary = nlohmann::json::parse(signet::receiver::summary_json(r));
    std::set<std::string> top;
    std::set<std::string> feed;
    std::set<std::string> sections; // "moldudp64.itch", ...
    auto const fields = signet::receiver::summary_fields();
    for (auto const& field : fields) {
        std::string const name(field.name);
        // A protocol's section ("mdp3") and its parts ("mdp3.channel").
        bool const section = name.find('.') != std::string::npos ||
                             std::any_of(fields.begin(), fields.end(), [&](auto const& other) {
                                 return std::string_view(other.name).starts_with(name + ".");
                             });
        (!field.per_feed ? top : section ? sections : feed).insert(name);
    }
    std::set<std::string> seen_top;
    for (auto const& [key, value] : summary.items()) {
        seen_top.insert(key);
    }
    EXPECT_EQ(seen_top, top);
    EXPECT_EQ(summary["schema"], signet::receiver::summary_schema);
    for (auto const& f : summary["feeds"]) {
        std::set<std::string> seen_feed;
        for (auto const& [key, value] : f.items()) {
            if (key == f["protocol"]) {
                for (auto const& [part, ignored] : value.items()) {
                    EXPECT_EQ(sections.count(key + "." + part), 1U) << key << "." << part;
                }
                continue;
            }
            seen_feed.insert(key);
        }
        std::set<std::string> want = feed;
        if (f["protocol"] == "raw") {
            want.erase("sequencing");           // only for sequenced protocols
            EXPECT_EQ(f["book_state"], "none"); // nothing reports books it does not build
        }
        EXPECT_EQ(seen_feed, want) << f["name"];
    }
    EXPECT_EQ(summary["feeds"][0]["book_state"], "complete");
}

} // namespace
