// feed_parser: what md_receiver runs per packet. Here: the order book's capacity comes from
// the config and adds beyond it, duplicate and unknown references are counted.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/moldudp64_request.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/feed_parser.hpp>

#include "md/md_test_support.hpp"

namespace {

namespace t = signet::md::test;
using signet::receiver::feed_config;
using signet::receiver::feed_parser;

void push(feed_parser& processor, t::bytes const& datagram) {
    signet::net::packet p;
    p.data = datagram.data();
    p.size = static_cast<std::uint32_t>(datagram.size());
    p.user_rx_ns = 1;
    processor(p);
    processor.on_batch(); // as the parser contract does after its run
}

TEST(FeedParser, OrderTableOverflowIsCounted) {
    feed_config config;
    config.name = "overflow";
    config.max_orders = 2;
    feed_parser processor(config);
    push(processor, t::mold_packet("S", 1,
                                   {t::directory(1, "TEST"), t::add(1, 11, 'B', 100, 10'0000),
                                    t::add(1, 12, 'S', 100, 11'0000),
                                    t::add(1, 13, 'B', 100, 9'0000),  // the table is full
                                    t::add(1, 11, 'B', 100, 10'0000), // already live
                                    t::delete_order(99)}));           // never added
    processor.finish();

    auto const* itch = processor.itch_stats();
    ASSERT_NE(itch, nullptr);
    EXPECT_EQ(itch->book_full_drops, 1U);
    EXPECT_EQ(itch->duplicate_order_refs, 1U);
    EXPECT_EQ(itch->unknown_order_refs, 1U);
    EXPECT_EQ(processor.live().book_full_drops, 1U);
    ASSERT_NE(processor.book(), nullptr);
    EXPECT_EQ(processor.book()->capacity(), 2U);
    EXPECT_EQ(processor.book()->size(), 2U);
    EXPECT_EQ(processor.session_stats().messages, 6U);
}

TEST(FeedParser, DefaultCapacityIsTwoToTheTwenty) {
    feed_config config;
    config.name = "default";
    feed_parser processor(config);
    ASSERT_NE(processor.book(), nullptr);
    EXPECT_EQ(processor.book()->capacity(), std::size_t{1} << 20);
}

TEST(FeedParser, EndOfSessionIsVisibleLive) {
    feed_config config;
    config.name = "eos";
    feed_parser processor(config);
    EXPECT_FALSE(processor.live().end_of_session);
    push(processor, t::mold_header("S", 1, 0xFFFF));
    EXPECT_TRUE(processor.live().end_of_session);
}

// Gap recovery through a real request socket: the hold expires in front of a gap, the
// processor sends a request to the "server" socket, the answer (a normal packet on the request
// line) fills the gap, and everything is delivered in sequence.
signet::net::packet at(t::bytes const& datagram, std::uint64_t now_ns, std::uint16_t line = 0) {
    signet::net::packet p;
    p.data = datagram.data();
    p.size = static_cast<std::uint32_t>(datagram.size());
    p.user_rx_ns = now_ns;
    p.line = line;
    return p;
}

// A processor with re-requests to a "server" socket of the test, its request line a socket of
// its own (line 1); packets carry one message each.
struct recovery_rig {
    signet::net::udp_socket server{{.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")}};
    signet::net::udp_socket request_line{{.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")}};
    std::unique_ptr<feed_parser> processor;

    explicit recovery_rig(unsigned tries) {
        feed_config config;
        config.name = "recover";
        config.parser = signet::receiver::parser_kind::count;
        config.rerequest = server.local_endpoint();
        config.rerequest_timeout_ms = 5;
        config.rerequest_tries = tries;
        processor = std::make_unique<feed_parser>(config);
        processor->attach_request_line(request_line, 1);
    }
    static t::bytes packet(std::uint64_t sequence) {
        return t::mold_packet("S", sequence, {t::bytes{std::byte{1}}});
    }
};

constexpr std::uint64_t ms = 1'000'000;

TEST(FeedParser, AGapIsReRequestedAndFilledInSequence) {
    recovery_rig rig(3);
    feed_parser& processor = *rig.processor;
    processor(at(recovery_rig::packet(1), 1 * ms));
    processor(at(recovery_rig::packet(3), 2 * ms)); // 2 is missing: held
    processor(at(recovery_rig::packet(4), 5 * ms)); // the hold (2 ms) expired: request sent
    EXPECT_TRUE(processor.live().recovering);
    EXPECT_EQ(processor.session_stats().messages, 1U);
    std::array<std::byte, 64> got{};
    ssize_t const n = ::recv(rig.server.native_handle(), got.data(), got.size(), 0);
    ASSERT_EQ(n, 20);
    auto const request = signet::md::nasdaq::parse_moldudp64_request({got.data(), 20});
    ASSERT_TRUE(request.has_value());
    EXPECT_EQ(request->sequence, 2U);
    EXPECT_EQ(request->count, 1U);
    EXPECT_EQ(std::string(request->session.data(), 10), "S         ");
    processor(at(recovery_rig::packet(2), 6 * ms, 1)); // the answer, on the request line
    EXPECT_FALSE(processor.live().recovering);
    EXPECT_EQ(processor.session_stats().messages, 4U);
    EXPECT_EQ(processor.session_stats().gaps, 0U);
    processor.finish();
    auto const* r = processor.recovery_stats();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->recovered_messages, 1U);
    EXPECT_EQ(r->rerequests_sent, 1U);
    EXPECT_EQ(r->lost_messages, 0U);
    EXPECT_EQ(processor.rerequest_answers(), 1U);
    EXPECT_EQ(processor.recovery_latency().take().count, 1U);
}

TEST(FeedParser, AnUnansweredGapIsLostAfterItsTries) {
    recovery_rig rig(2);
    feed_parser& processor = *rig.processor;
    processor(at(recovery_rig::packet(1), 1 * ms));
    processor(at(recovery_rig::packet(5), 2 * ms));  // 2..4 missing
    processor(at(recovery_rig::packet(6), 5 * ms));  // request 1
    processor(at(recovery_rig::packet(7), 11 * ms)); // timeout: request 2
    processor(at(recovery_rig::packet(8), 17 * ms)); // timeout after the last try: lost, released
    EXPECT_FALSE(processor.live().recovering);
    EXPECT_EQ(processor.session_stats().gaps, 1U);
    EXPECT_EQ(processor.session_stats().missing_messages, 3U);
    EXPECT_EQ(processor.session_stats().messages, 5U);
    auto const* r = processor.recovery_stats();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->rerequests_sent, 2U);
    EXPECT_EQ(r->rerequest_timeouts, 1U);
    EXPECT_EQ(r->lost_messages, 3U);
    EXPECT_EQ(r->gaps_lost, 1U);
}

} // namespace
