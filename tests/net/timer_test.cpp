// Runtime timers: the queue's rules (deterministic, driven by hand), then timers fired by the
// runtime in every backend and poller mode.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/work_contract_group.hpp>
#include <signet/net/detail/timer_queue.hpp>
#include <signet/net/runtime.hpp>

#include "support/runtime_modes.hpp"
#include "support/stress.hpp"

namespace {

using namespace std::chrono_literals;
using signet::initial_state;
using signet::work_contract;
using signet::work_contract_group;
using signet::net::runtime;
using signet::net::timer;
using signet::net::detail::timer_queue;
using signet::test::eventually;

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               timer::clock::now().time_since_epoch())
        .count();
}

// A queue whose contracts count their runs in a group the test drives by hand.
struct queue_rig {
    work_contract_group group{64};
    int wakes = 0;
    timer_queue queue{[](void* self) { ++static_cast<queue_rig*>(self)->wakes; }, this};
    std::vector<int> runs = std::vector<int>(4, 0);

    std::size_t add(int id) {
        return queue.add(
            group.create_contract([this, id] { ++runs[static_cast<std::size_t>(id)]; }));
    }
    void drain() {
        while (group.execute_next_contract()) {
        }
    }
};

TEST(TimerQueue, FiresOnlyWhatIsDueAndOnlyOnce) {
    queue_rig rig;
    std::size_t const past = rig.add(0);
    std::size_t const future = rig.add(1);
    rig.add(2); // never armed
    rig.queue.arm(past, now_ns() - 1);
    rig.queue.arm(future, now_ns() + 3'600'000'000'000); // an hour away
    EXPECT_TRUE(rig.queue.fire_due());
    rig.drain();
    EXPECT_EQ(rig.runs, (std::vector<int>{1, 0, 0, 0}));
    EXPECT_FALSE(rig.queue.fire_due()); // disarmed once fired; the hour is not up
    rig.drain();
    EXPECT_EQ(rig.runs, (std::vector<int>{1, 0, 0, 0}));
}

TEST(TimerQueue, ReArmingMovesTheDeadlineAndCancelDisarms) {
    queue_rig rig;
    std::size_t const a = rig.add(0);
    std::size_t const b = rig.add(1);
    rig.queue.arm(a, now_ns() + 3'600'000'000'000);
    rig.queue.arm(a, now_ns() - 1); // the last arming wins
    rig.queue.arm(b, now_ns() - 1);
    rig.queue.cancel(b);
    EXPECT_TRUE(rig.queue.fire_due());
    rig.drain();
    EXPECT_EQ(rig.runs, (std::vector<int>{1, 0, 0, 0}));
}

TEST(TimerQueue, SleepBoundFollowsTheEarliestDeadline) {
    queue_rig rig;
    std::size_t const a = rig.add(0);
    EXPECT_EQ(rig.queue.sleep_bound(100ms), 100ms); // nothing armed: the caller's bound
    rig.queue.arm(a, now_ns() + 50'000'000);
    auto const bound = rig.queue.sleep_bound(100ms);
    EXPECT_GT(bound, 0ns);
    EXPECT_LE(bound, 50ms);
    rig.queue.arm(a, now_ns() - 1);
    EXPECT_EQ(rig.queue.sleep_bound(100ms), 0ns); // due: do not sleep
}

TEST(TimerQueue, ArmingEarlierWakesTheSleeperOnlyWhenItMatters) {
    queue_rig rig;
    std::size_t const a = rig.add(0);
    std::size_t const b = rig.add(1);
    rig.queue.arm(a, now_ns() + 3'600'000'000'000); // nobody sleeps: no wake
    EXPECT_EQ(rig.wakes, 0);
    ASSERT_TRUE(rig.queue.begin_sleep());
    EXPECT_FALSE(rig.queue.begin_sleep());          // one sleeper at a time
    rig.queue.arm(b, now_ns() + 7'200'000'000'000); // later than the earliest: no wake
    EXPECT_EQ(rig.wakes, 0);
    rig.queue.arm(b, now_ns() + 1'000'000'000); // earlier: the sleeper must recompute
    EXPECT_EQ(rig.wakes, 1);
    rig.queue.end_sleep();
    rig.queue.arm(a, now_ns() + 1'000); // earlier still, but nobody sleeps
    EXPECT_EQ(rig.wakes, 1);
}

// ---- the runtime fires them -----------------------------------------------------------------

using signet::test::runtime_mode;

class RuntimeTimerTest : public ::testing::TestWithParam<runtime_mode> {
protected:
    void SetUp() override { SIGNET_SKIP_WITHOUT_IO_URING(GetParam()); }
};

TEST_P(RuntimeTimerTest, ATimerRunsItsContractAtItsDeadline) {
    signet::test::watchdog dog(60s, "ATimerRunsItsContractAtItsDeadline");
    runtime rt(GetParam().options());
    // A feed so that every backend has something to watch (no packet is sent).
    (void)rt.add_feed(
        {.name = "idle", .lines = {{.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")}}},
        [](signet::net::packet const&) {});
    std::atomic<int> runs{0};
    std::atomic<std::int64_t> ran_at{0};
    timer t = rt.create_timer([&] {
        // relaxed: the test reads both after `runs` (acquire).
        ran_at.store(now_ns(), std::memory_order_relaxed);
        runs.fetch_add(1, std::memory_order_release);
    });
    rt.start();
    std::int64_t const armed_at = now_ns();
    t.arm_after(30ms);
    ASSERT_TRUE(eventually([&] { return runs.load(std::memory_order_acquire) == 1; }));
    EXPECT_GE(ran_at.load(std::memory_order_relaxed) - armed_at, 30'000'000);
    rt.stop();
    EXPECT_EQ(runs.load(std::memory_order_acquire), 1);
}

TEST_P(RuntimeTimerTest, CancelledTimerDoesNotFireBeforeALaterOne) {
    signet::test::watchdog dog(60s, "CancelledTimerDoesNotFireBeforeALaterOne");
    runtime rt(GetParam().options());
    std::atomic<int> early{0};
    std::atomic<int> late{0};
    timer first = rt.create_timer([&] { early.fetch_add(1, std::memory_order_release); });
    timer second = rt.create_timer([&] { late.fetch_add(1, std::memory_order_release); });
    rt.start();
    first.arm_after(20ms);
    second.arm_after(60ms);
    first.cancel();
    ASSERT_TRUE(eventually([&] { return late.load(std::memory_order_acquire) == 1; }));
    // Had the cancel failed, the earlier deadline would have fired before the later one.
    EXPECT_EQ(early.load(std::memory_order_acquire), 0);
    rt.stop();
}

TEST_P(RuntimeTimerTest, AParserTimerRunsTheParsersOnIdle) {
    signet::test::watchdog dog(60s, "AParserTimerRunsTheParsersOnIdle");
    runtime rt(GetParam().options());
    struct parser {
        std::atomic<int>* idles;
        void operator()(signet::net::packet const&) {}
        void on_idle() { idles->fetch_add(1, std::memory_order_release); }
    };
    std::atomic<int> idles{0};
    std::size_t const feed = rt.add_feed(
        {.name = "a", .lines = {{.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")}}},
        parser{&idles});
    timer t = rt.parser_timer(feed);
    rt.start();
    int const before = idles.load(std::memory_order_acquire);
    t.arm_after(10ms);
    ASSERT_TRUE(eventually([&] { return idles.load(std::memory_order_acquire) > before; }));
    rt.stop();
}

TEST_P(RuntimeTimerTest, ManyArmingsFromManyThreadsEachFire) {
    signet::test::watchdog dog(120s, "ManyArmingsFromManyThreadsEachFire");
    runtime rt(GetParam().options());
    constexpr int timers = 8;
    constexpr int rounds = 20;
    std::vector<std::atomic<int>> runs(timers);
    std::vector<timer> handles;
    for (int i = 0; i < timers; ++i) {
        handles.push_back(rt.create_timer([&runs, i] {
            runs[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_release);
        }));
    }
    rt.start();
    for (int round = 1; round <= rounds; ++round) {
        std::vector<std::thread> armers;
        for (int i = 0; i < timers; ++i) {
            armers.emplace_back([&, i] {
                handles[static_cast<std::size_t>(i)].arm_after(std::chrono::microseconds(100 * i));
            });
        }
        for (auto& a : armers) {
            a.join();
        }
        ASSERT_TRUE(eventually([&] {
            for (auto const& r : runs) {
                if (r.load(std::memory_order_acquire) < round) {
                    return false;
                }
            }
            return true;
        })) << "round "
            << round;
    }
    rt.stop();
    for (auto const& r : runs) {
        EXPECT_EQ(r.load(std::memory_order_acquire), rounds); // each arming fired exactly once
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, RuntimeTimerTest,
                         ::testing::ValuesIn(signet::test::runtime_modes(
                             {signet::net::backend_kind::io_uring, signet::net::backend_kind::epoll,
                              signet::net::backend_kind::asio, signet::net::backend_kind::memory})),
                         signet::test::runtime_mode_name);

} // namespace
