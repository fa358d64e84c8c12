// feed_processor: what md_receiver runs per packet. Here: the order book's capacity comes from
// the config and adds beyond it, duplicate and unknown references are counted.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <signet/net/packet.hpp>

#include "feed_processor.hpp"
#include "md/md_test_support.hpp"

namespace {

namespace t = signet::md::test;
using signet::apps::feed_config;
using signet::apps::feed_processor;

void push(feed_processor& processor, t::bytes const& datagram) {
    signet::net::packet p;
    p.data = datagram.data();
    p.size = static_cast<std::uint32_t>(datagram.size());
    p.user_rx_ns = 1;
    processor(p);
}

TEST(FeedProcessor, OrderTableOverflowIsCounted) {
    feed_config config;
    config.name = "overflow";
    config.max_orders = 2;
    feed_processor processor(config);
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

TEST(FeedProcessor, DefaultCapacityIsTwoToTheTwenty) {
    feed_config config;
    config.name = "default";
    feed_processor processor(config);
    ASSERT_NE(processor.book(), nullptr);
    EXPECT_EQ(processor.book()->capacity(), std::size_t{1} << 20);
}

TEST(FeedProcessor, EndOfSessionIsVisibleLive) {
    feed_config config;
    config.name = "eos";
    feed_processor processor(config);
    EXPECT_FALSE(processor.live().end_of_session);
    push(processor, t::mold_header("S", 1, 0xFFFF));
    EXPECT_TRUE(processor.live().end_of_session);
}

} // namespace
