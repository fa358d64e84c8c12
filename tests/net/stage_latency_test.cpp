// stage_latency: which stages a packet's stamps allow, and a packet that follows another in a
// parser contract run starting where that one ended (no clock read of its own).

#include <cstdint>

#include <gtest/gtest.h>

#include <signet/core/realtime_clock.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/stage_latency.hpp>

namespace {

using signet::realtime_clock;
using signet::net::packet;
using signet::net::stage_latency;

/// Spins until the clock moved `ns` past `from` (the clock is the subject, not a synchronizer).
std::uint64_t wait_past(std::uint64_t from, std::uint64_t ns) {
    std::uint64_t now = realtime_clock::now_ns();
    while (now < from + ns) {
        now = realtime_clock::now_ns();
    }
    return now;
}

TEST(StageLatency, KernelStampedPacketFillsEveryStage) {
    stage_latency stages;
    std::uint64_t const now = realtime_clock::now_ns();
    packet p;
    p.kernel_rx_ns = now - 3'000;
    p.user_rx_ns = now - 2'000;
    std::uint64_t const start = stages.begin(p);
    EXPECT_GE(start, now);
    stages.end(p);
    auto const receive = stages.receive().take();
    ASSERT_EQ(receive.count, 1U);
    EXPECT_EQ(receive.sum, 1'000U); // exact: both stamps are the packet's
    auto const queue = stages.queue().take();
    ASSERT_EQ(queue.count, 1U);
    EXPECT_EQ(queue.sum, start - p.user_rx_ns);
    auto const parse = stages.parse().take();
    auto const total = stages.total().take();
    ASSERT_EQ(parse.count, 1U);
    ASSERT_EQ(total.count, 1U);
    // total = receive + queue + parse, each a difference of the same stamps.
    EXPECT_EQ(total.sum, receive.sum + queue.sum + parse.sum);
}

TEST(StageLatency, HardwareStampsSkipTheStagesThatCompareClocks) {
    stage_latency stages;
    packet p;
    p.kernel_rx_ns = 5; // the NIC's clock: not comparable with the system's
    p.hardware_timestamp = true;
    p.user_rx_ns = realtime_clock::now_ns();
    stages.begin(p);
    stages.end(p);
    EXPECT_EQ(stages.receive().take().count, 0U);
    EXPECT_EQ(stages.total().take().count, 0U);
    EXPECT_EQ(stages.queue().take().count, 1U);
    EXPECT_EQ(stages.parse().take().count, 1U);
}

TEST(StageLatency, UnstampedPacketTimesOnlyItsParse) {
    stage_latency stages;
    packet p;
    stages.begin(p);
    stages.end(p);
    EXPECT_EQ(stages.parse().take().count, 1U);
    EXPECT_EQ(stages.queue().take().count, 0U);
    EXPECT_EQ(stages.receive().take().count, 0U);
    EXPECT_EQ(stages.total().take().count, 0U);
}

TEST(StageLatency, AFollowingPacketStartsWhereThePreviousEnded) {
    stage_latency stages;
    packet first;
    stages.begin(first);
    stages.end(first);
    std::uint64_t const ended = realtime_clock::now_ns(); // at or after first's end
    wait_past(ended, 10'000);
    packet second;
    second.follows_in_run = true;
    EXPECT_LE(stages.begin(second), ended) << "took the previous end, not a fresh reading";
    stages.end(second);
    // The second parse spans the 10 us wait: it began at the first's end.
    EXPECT_GE(stages.parse().take().max, 10'000U);

    wait_past(realtime_clock::now_ns(), 10'000);
    packet third; // a new run: reads the clock
    std::uint64_t const before = realtime_clock::now_ns();
    EXPECT_GE(stages.begin(third), before);
    stages.end(third);
}

TEST(StageLatency, AParseThatNeverEndedIsNotTheNextOnesStart) {
    stage_latency stages;
    packet thrown;
    std::uint64_t const began = stages.begin(thrown); // the parser threw: no end()
    wait_past(began, 10'000);
    packet next;
    next.follows_in_run = true;
    std::uint64_t const before = realtime_clock::now_ns();
    EXPECT_GE(stages.begin(next), before);
}

} // namespace
