// io_uring backend specifics (skipped where the kernel lacks what the backend needs): the
// multishot receive and its re-arming. Loopback, ephemeral ports, bounded waits.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/net/runtime.hpp>

#include "support/runtime_modes.hpp"
#include "support/stress.hpp"
#include "support/udp_sender.hpp"

namespace {

using namespace std::chrono_literals;
using signet::idle_strategy;
using signet::net::backend_kind;
using signet::net::feed_options;
using signet::net::full_policy;
using signet::net::packet;
using signet::net::poller_mode;
using signet::net::runtime;
using signet::net::runtime_options;
using signet::net::udp_endpoint;
using signet::test::eventually;
using signet::test::sequence_of;
using signet::test::udp_sender;

class IoUringTest : public ::testing::TestWithParam<signet::test::runtime_mode> {
protected:
    void SetUp() override { SIGNET_SKIP_WITHOUT_IO_URING(GetParam()); }
    runtime_options options() const { return GetParam().options(); }
};

/// Sends `n` numbered datagrams to a one-line feed whose parser holds the first packet until the
/// whole flood is in the socket, so that the line's receive must end and be re-armed; returns
/// the feed's counters after every datagram was parsed, and checks the order.
signet::net::feed_stats flood_while_the_parser_waits(runtime_options const& options,
                                                     feed_options feed, std::uint64_t n) {
    runtime rt(options);
    EXPECT_EQ(rt.backend(), backend_kind::io_uring);
    feed.lines.push_back({.bind = udp_endpoint::parse("127.0.0.1:0")});
    std::vector<std::uint64_t> seen; // parser only; read after stop()
    seen.reserve(n);
    std::atomic<bool> flood_sent{false};
    std::atomic<std::uint64_t> parsed{0};
    auto const f = rt.add_feed(feed, [&](packet const& p) {
        // acquire: pairs with the release store once every datagram is sent.
        while (!flood_sent.load(std::memory_order_acquire)) {
            std::this_thread::yield();
        }
        seen.push_back(sequence_of(p.payload()));
        // release: pairs with the acquire load in eventually().
        parsed.fetch_add(1, std::memory_order_release);
    });
    rt.start();
    udp_sender sender;
    udp_endpoint const to = rt.local_endpoint(f);
    for (std::uint64_t i = 0; i < n; ++i) {
        sender.send_sequence(to, i);
    }
    flood_sent.store(true, std::memory_order_release);
    EXPECT_TRUE(eventually([&] { return parsed.load(std::memory_order_acquire) == n; }))
        << parsed.load(std::memory_order_relaxed) << " of " << n;
    rt.stop();
    EXPECT_EQ(seen.size(), n);
    for (std::uint64_t i = 0; i < seen.size(); ++i) {
        if (seen[i] != i) {
            ADD_FAILURE() << "out of order at " << i;
            break;
        }
    }
    auto const stats = rt.stats(f);
    ::testing::Test::RecordProperty("rearms", std::to_string(stats.rearms));
    return stats;
}

// A line has queue_capacity (8) pool buffers in its buffer ring. The parser holds the first
// packet until the whole flood is in the socket; until then no buffer comes back, so the
// multishot receive must end: the ring runs dry (-ENOBUFS) or a full queue cancels it for
// backpressure. The rest of the flood needs a new receive: rearms > 0. Backpressure keeps what
// does not fit in the kernel, so nothing is lost and the order holds.
TEST_P(IoUringTest, MultishotReceiveEndsAndIsRearmedWithoutLoss) {
    signet::test::watchdog dog(60s, "MultishotReceiveEndsAndIsRearmedWithoutLoss");
    feed_options feed;
    feed.name = "rearm";
    feed.queue_capacity = 8;
    feed.on_full = full_policy::backpressure;
    constexpr std::uint64_t n = 2'000; // 64-byte datagrams: well within the socket buffer
    auto const stats = flood_while_the_parser_waits(options(), feed, n);
    EXPECT_GT(stats.rearms, 0U);
    EXPECT_EQ(stats.packets, n);
    EXPECT_EQ(stats.parsed, n);
    EXPECT_EQ(stats.dropped, 0U);
    EXPECT_EQ(stats.kernel_drops, 0U);
}

// A ring of 4 buffers (feed_options::ring_buffers) in front of a queue of 1024: the flood
// empties the ring long before the queue fills, so the multishot receive ends for want of
// buffers (-ENOBUFS), not for backpressure, while the parser holds them. Once it frees them the
// line must be resumed and re-armed, also when the poller (or the reactor's worker) went to
// sleep in the ring meanwhile: every datagram arrives promptly, in order, with rearms > 0.
TEST_P(IoUringTest, DryRingIsRearmedWhenTheParserFreesBuffers) {
    signet::test::watchdog dog(60s, "DryRingIsRearmedWhenTheParserFreesBuffers");
    feed_options feed;
    feed.name = "dry";
    feed.queue_capacity = 1024;
    feed.ring_buffers = 4;
    constexpr std::uint64_t n = 2'000;
    auto const stats = flood_while_the_parser_waits(options(), feed, n);
    EXPECT_GT(stats.rearms, 0U);
    EXPECT_EQ(stats.packets, n);
    EXPECT_EQ(stats.dropped, 0U);
    EXPECT_EQ(stats.kernel_drops, 0U);
}

// The poller thread, and the reactor contract on one worker that sleeps in the ring.
INSTANTIATE_TEST_SUITE_P(PollerModes, IoUringTest,
                         ::testing::ValuesIn(signet::test::runtime_modes({backend_kind::io_uring})),
                         signet::test::runtime_mode_name);

} // namespace
