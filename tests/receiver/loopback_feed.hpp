#pragma once

// One ITCH 5.0 feed over MoldUDP64 on loopback for the receiver's in-process tests: its config,
// a sender that never outruns the receiver's socket, and the feed's book.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/itch_order_book.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>
#include <signet/receiver/receiver.hpp>

#include "md/md_test_support.hpp"
#include "support/stress.hpp"

namespace signet::test {

inline receiver::receiver_config one_feed() {
    receiver::receiver_config config;
    config.stats_interval_s = 0.05;
    config.silent_warning_s = 0;
    config.workers = 2;
    receiver::feed_config feed;
    feed.name = "itch";
    feed.bind = net::udp_endpoint::parse("127.0.0.1:0");
    feed.protocol = std::make_shared<receiver::nasdaq::moldudp64_settings>();
    config.feeds.push_back(feed);
    return config;
}

// Sends a generated stream, a few messages per packet, never more than `window` packets ahead
// of what the receiver took (no loss in the socket buffer).
inline std::uint64_t send_stream(receiver::receiver& r,
                                 std::vector<md::test::bytes> const& messages,
                                 std::uint64_t first_sequence = 1) {
    namespace t = md::test;
    net::udp_socket out({.bind = net::udp_endpoint::parse("127.0.0.1:0")});
    net::udp_endpoint const to = r.runtime().local_endpoint(0);
    constexpr std::size_t per_packet = 8;
    constexpr std::uint64_t window = 64;
    std::uint64_t sent = r.parser(0).live().packets;
    std::uint64_t sequence = first_sequence;
    for (std::size_t i = 0; i < messages.size(); i += per_packet) {
        std::vector<t::bytes> const chunk(messages.begin() + static_cast<std::ptrdiff_t>(i),
                                          messages.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                 i + per_packet, messages.size())));
        EXPECT_FALSE(out.send_to(t::view(t::mold_packet("S", sequence, chunk)), to));
        sequence += chunk.size();
        ++sent;
        EXPECT_TRUE(eventually([&] { return r.parser(0).live().packets + window > sent; }));
    }
    EXPECT_TRUE(eventually([&] { return r.parser(0).live().packets == sent; }));
    return sequence;
}

inline md::nasdaq::itch_order_book const& book_of(receiver::receiver const& r) {
    return *dynamic_cast<receiver::nasdaq::moldudp64_protocol const&>(r.parser(0).protocol())
                .book();
}

} // namespace signet::test
