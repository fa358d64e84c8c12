// backend_kind::memory: lines written in-process go through the runtime's own queue, pool and
// parser contract, in every poller mode; the full-queue policies and truncation count exactly as
// on a socket line.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/realtime_clock.hpp>
#include <signet/net/runtime.hpp>
#include <signet/net/stage_latency.hpp>

#include "support/runtime_modes.hpp"
#include "support/stress.hpp"

namespace {

using namespace std::chrono_literals;
using signet::idle_strategy;
using signet::net::backend_kind;
using signet::net::feed_options;
using signet::net::full_policy;
using signet::net::memory_line;
using signet::net::packet;
using signet::net::poller_mode;
using signet::net::runtime;
using signet::net::runtime_options;
using signet::test::eventually;

class MemoryLineTest : public ::testing::TestWithParam<signet::test::runtime_mode> {
protected:
    runtime_options options() const { return GetParam().options(); }
};

std::uint64_t read_sequence(packet const& p) {
    std::uint64_t value = 0;
    std::memcpy(&value, p.data, sizeof(value));
    return value;
}

bool write_sequence(memory_line& line, std::uint64_t value, std::uint64_t rx_ns = 0) {
    return line.write(
        [value](std::span<std::byte> buffer) noexcept {
            std::memcpy(buffer.data(), &value, sizeof(value));
            return sizeof(value);
        },
        rx_ns);
}

TEST_P(MemoryLineTest, WriterThreadDeliversEveryPacketInOrder) {
    signet::test::watchdog dog(60s, "WriterThreadDeliversEveryPacketInOrder");
    runtime rt(options());
    EXPECT_EQ(rt.backend(), backend_kind::memory);
    feed_options feed;
    feed.name = "memory";
    feed.queue_capacity = 64;        // small: the writer meets a full queue often
    std::vector<std::uint64_t> seen; // parser only
    std::atomic<std::uint64_t> parsed{0};
    auto const f = rt.add_feed(feed, [&](packet const& p) {
        seen.push_back(read_sequence(p));
        parsed.fetch_add(1, std::memory_order_release); // pairs with the test's acquire load
    });
    rt.start();
    constexpr std::uint64_t n = 20'000;
    std::thread writer([&rt, f] {
        memory_line line = rt.memory_line(f);
        for (std::uint64_t i = 0; i < n;) {
            if (write_sequence(line, i)) {
                ++i;
                if (i % 8 == 0) {
                    line.flush();
                }
                continue;
            }
            line.flush(); // full under backpressure: let the parser make room, then retry
            std::this_thread::yield();
        }
        line.flush();
    });
    writer.join();
    ASSERT_TRUE(eventually([&] { return parsed.load(std::memory_order_acquire) == n; }))
        << parsed.load(std::memory_order_relaxed);
    rt.stop();
    ASSERT_EQ(seen.size(), n);
    for (std::uint64_t i = 0; i < n; ++i) {
        ASSERT_EQ(seen[i], i) << "out of order at " << i;
    }
    auto const stats = rt.stats(f);
    EXPECT_EQ(stats.packets, n);
    EXPECT_EQ(stats.parsed, n);
    EXPECT_EQ(stats.bytes, n * sizeof(std::uint64_t));
    EXPECT_EQ(stats.dropped, 0U);
}

TEST_P(MemoryLineTest, DropPolicyCountsWhatDidNotFit) {
    signet::test::watchdog dog(60s, "DropPolicyCountsWhatDidNotFit");
    runtime rt(options());
    feed_options feed;
    feed.name = "memory-drop";
    feed.queue_capacity = 16;
    feed.on_full = full_policy::drop;
    std::atomic<bool> release{false};
    std::atomic<std::uint64_t> parsed{0};
    auto const f = rt.add_feed(feed, [&](packet const&) {
        // acquire: pairs with the release store below; the parser holds the queue full.
        while (!release.load(std::memory_order_acquire)) {
            std::this_thread::yield();
        }
        parsed.fetch_add(1, std::memory_order_release);
    });
    rt.start();
    memory_line line = rt.memory_line(f);
    std::uint64_t written = 0;
    std::uint64_t refused = 0;
    for (std::uint64_t i = 0; i < 200; ++i) {
        if (write_sequence(line, i)) {
            ++written;
        } else {
            ++refused;
        }
    }
    line.flush();
    release.store(true, std::memory_order_release);
    ASSERT_TRUE(eventually([&] { return parsed.load(std::memory_order_acquire) == written; }));
    rt.stop();
    EXPECT_GE(written, 16U);
    EXPECT_GT(refused, 0U);
    auto const stats = rt.stats(f);
    EXPECT_EQ(stats.packets, 200U);
    EXPECT_EQ(stats.parsed, written);
    EXPECT_EQ(stats.parsed + stats.dropped, stats.packets);
}

TEST_P(MemoryLineTest, OversizedPayloadIsTruncatedAndCounted) {
    runtime rt(options());
    feed_options feed;
    feed.name = "memory-trunc";
    feed.buffer_size = 100;
    std::atomic<std::uint64_t> parsed{0};
    std::atomic<bool> flagged{true};
    auto const f = rt.add_feed(feed, [&](packet const& p) {
        if (!p.truncated || p.size != 100) {
            flagged.store(false, std::memory_order_relaxed);
        }
        parsed.fetch_add(1, std::memory_order_release);
    });
    rt.start();
    memory_line line = rt.memory_line(f);
    std::vector<std::byte> big(150, std::byte{7});
    ASSERT_TRUE(line.write(big));
    line.flush();
    ASSERT_TRUE(eventually([&] { return parsed.load(std::memory_order_acquire) == 1; }));
    rt.stop();
    EXPECT_TRUE(flagged.load(std::memory_order_relaxed));
    EXPECT_EQ(rt.stats(f).truncated, 1U);
}

TEST_P(MemoryLineTest, ARunMarksThePacketsThatFollowAndStagesAreTimed) {
    runtime rt(options());
    feed_options feed;
    feed.name = "memory-run";
    std::vector<bool> follows; // parser only
    signet::net::stage_latency stages;
    std::atomic<std::uint64_t> parsed{0};
    auto const f = rt.add_feed(feed, [&](packet const& p) {
        stages.begin(p);
        follows.push_back(p.follows_in_run);
        stages.end(p);
        parsed.fetch_add(1, std::memory_order_release); // pairs with the acquire load below
    });
    rt.start();
    memory_line line = rt.memory_line(f);
    constexpr std::uint64_t burst = 10; // under the parser's batch of 64: one run
    std::uint64_t const rx_ns = signet::realtime_clock::now_ns();
    for (std::uint64_t i = 0; i < burst; ++i) {
        ASSERT_TRUE(write_sequence(line, i, rx_ns));
    }
    line.flush();
    ASSERT_TRUE(eventually([&] { return parsed.load(std::memory_order_acquire) == burst; }));
    rt.stop();
    ASSERT_EQ(follows.size(), burst);
    EXPECT_FALSE(follows.front());
    for (std::size_t i = 1; i < burst; ++i) {
        EXPECT_TRUE(follows[i]) << "packet " << i;
    }
    // user_rx_ns was given: queue and parse per packet; no kernel stamp: no receive or total.
    auto const queue = stages.queue().take();
    EXPECT_EQ(queue.count, burst);
    EXPECT_EQ(stages.parse().take().count, burst);
    EXPECT_EQ(stages.receive().take().count, 0U);
    EXPECT_EQ(stages.total().take().count, 0U);
    // Packets later in the run waited for the earlier ones' parse: never less than the first.
    EXPECT_GE(queue.max, queue.min);
}

// A parser's on_batch() follows every run that parsed packets, once; on_idle() only a run that
// found none (wake_parser).
TEST_P(MemoryLineTest, OnBatchFollowsARunAndOnIdleAnEmptyOne) {
    struct counting_parser {
        std::atomic<std::uint64_t>* parsed;
        std::atomic<std::uint64_t>* batches;
        std::atomic<std::uint64_t>* idles;
        void operator()(packet const&) const {
            parsed->fetch_add(1, std::memory_order_relaxed); // ordered by batches' release
        }
        void on_batch() const {
            batches->fetch_add(1, std::memory_order_release); // pairs with the test's acquire
        }
        void on_idle() const {
            idles->fetch_add(1, std::memory_order_release); // pairs with the test's acquire
        }
    };
    runtime rt(options());
    feed_options feed;
    feed.name = "memory-batch";
    std::atomic<std::uint64_t> parsed{0};
    std::atomic<std::uint64_t> batches{0};
    std::atomic<std::uint64_t> idles{0};
    auto const f = rt.add_feed(feed, counting_parser{&parsed, &batches, &idles});
    rt.start();
    memory_line line = rt.memory_line(f);
    for (std::uint64_t i = 0; i < 10; ++i) { // under the parser's batch of 64: one run
        ASSERT_TRUE(write_sequence(line, i));
    }
    line.flush();
    ASSERT_TRUE(eventually([&] { return batches.load(std::memory_order_acquire) == 1; }));
    EXPECT_EQ(parsed.load(std::memory_order_relaxed), 10U);
    EXPECT_EQ(idles.load(std::memory_order_acquire), 0U);
    rt.wake_parser(f);
    ASSERT_TRUE(eventually([&] { return idles.load(std::memory_order_acquire) == 1; }));
    rt.stop();
    EXPECT_EQ(batches.load(std::memory_order_acquire), 1U);
}

INSTANTIATE_TEST_SUITE_P(PollerModes, MemoryLineTest,
                         ::testing::ValuesIn(signet::test::runtime_modes({backend_kind::memory})),
                         signet::test::runtime_mode_name);

TEST(MemoryLine, OnlyTheMemoryBackendHasMemoryLines) {
    runtime rt(runtime_options{.backend = backend_kind::epoll});
    feed_options feed;
    feed.name = "socket";
    feed.lines.push_back({.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")});
    auto const f = rt.add_feed(feed, [](packet const&) {});
    EXPECT_THROW((void)rt.memory_line(f), std::logic_error);
}

// A memory line opens no socket: asking its endpoint (the receiver logs each line's) answers
// without one, never a getsockname on no descriptor.
TEST(MemoryLine, AMemoryLineHasAnEndpointWithoutASocket) {
    runtime rt(runtime_options{.backend = backend_kind::memory});
    feed_options feed;
    feed.name = "memory";
    feed.lines.push_back({.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")});
    auto const f = rt.add_feed(feed, [](packet const&) {});
    EXPECT_NO_THROW((void)rt.local_endpoint(f));
}

} // namespace
