// blocking_work_contract_group: waiting, timeouts and stop() never hang.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/work_contract_group.hpp>

#include "support/stress.hpp"

namespace {

using namespace std::chrono_literals;
using signet::blocking_work_contract_group;
using signet::initial_state;

// Returns once `count` threads are asleep in the group (the test hook, not a sleep).
void wait_for_sleepers(blocking_work_contract_group const& group, std::size_t count) {
    while (group.waiting_threads() < count) {
        std::this_thread::yield();
    }
}

TEST(BlockingWorkContractGroup, RunsWhatIsScheduledWithoutWaiting) {
    blocking_work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract([&] { ++runs; }, initial_state::scheduled);
    EXPECT_TRUE(group.execute_next_contract());
    EXPECT_EQ(runs, 1);
}

TEST(BlockingWorkContractGroup, OneCallRunsExactlyOneContract) {
    blocking_work_contract_group group(64);
    int runs = 0;
    std::vector<signet::work_contract> contracts;
    for (int i = 0; i < 8; ++i) {
        contracts.push_back(group.create_contract([&] { ++runs; }, initial_state::scheduled));
    }
    EXPECT_TRUE(group.execute_next_contract());
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(group.execute_next_contract(1s));
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(group.execute_next_contracts(3, 1s), 3U);
    EXPECT_EQ(runs, 5);
    EXPECT_EQ(group.execute_next_contracts(), 3U);
    EXPECT_EQ(runs, 8);
    EXPECT_EQ(group.execute_next_contracts(16, 10ms), 0U); // nothing left: times out
}

TEST(BlockingWorkContractGroup, TimeoutReturnsFalseWhenIdle) {
    signet::test::watchdog dog(30s, "TimeoutReturnsFalseWhenIdle");
    blocking_work_contract_group group(64);
    auto const start = std::chrono::steady_clock::now();
    EXPECT_FALSE(group.execute_next_contract(30ms));
    auto const waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, 30ms);
}

TEST(BlockingWorkContractGroup, WaiterWakesWhenAnotherThreadSchedules) {
    signet::test::watchdog dog(30s, "WaiterWakesWhenAnotherThreadSchedules");
    blocking_work_contract_group group(64);
    std::atomic<int> runs{0};
    auto contract = group.create_contract([&] { runs.fetch_add(1, std::memory_order_relaxed); });
    std::atomic<bool> ran{false};
    std::thread worker([&] {
        // No timeout: returns only when the contract has run.
        ran.store(group.execute_next_contract(), std::memory_order_release);
    });
    wait_for_sleepers(group, 1);
    EXPECT_EQ(runs.load(std::memory_order_relaxed), 0);
    contract.schedule();
    worker.join();
    EXPECT_TRUE(ran.load(std::memory_order_acquire));
    EXPECT_EQ(runs.load(std::memory_order_relaxed), 1);
}

TEST(BlockingWorkContractGroup, StopWakesEveryWaiter) {
    signet::test::watchdog dog(30s, "StopWakesEveryWaiter");
    blocking_work_contract_group group(64);
    std::atomic<int> returned_false{0};
    std::vector<std::thread> waiters;
    for (int i = 0; i < 4; ++i) {
        waiters.emplace_back([&] {
            if (!group.execute_next_contract()) {
                returned_false.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }
    wait_for_sleepers(group, 4);
    group.stop();
    for (auto& t : waiters) {
        t.join();
    }
    EXPECT_EQ(returned_false.load(std::memory_order_relaxed), 4);
}

TEST(BlockingWorkContractGroup, AfterStopRunsScheduledWorkButNeverWaits) {
    signet::test::watchdog dog(30s, "AfterStopRunsScheduledWorkButNeverWaits");
    blocking_work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract([&] { ++runs; }, initial_state::scheduled);
    group.stop();
    EXPECT_TRUE(group.execute_next_contract());
    EXPECT_FALSE(group.execute_next_contract()); // would wait forever without stop()
    EXPECT_FALSE(group.execute_next_contract(10s));
    EXPECT_EQ(runs, 1);
}

TEST(BlockingWorkContractGroup, ReleaseWakesAWaiterToRunTheReleaseCallback) {
    signet::test::watchdog dog(30s, "ReleaseWakesAWaiter");
    blocking_work_contract_group group(64);
    std::atomic<int> releases{0};
    auto contract =
        group.create_contract([] {}, [&] { releases.fetch_add(1, std::memory_order_relaxed); });
    std::thread worker([&] { EXPECT_TRUE(group.execute_next_contract()); });
    wait_for_sleepers(group, 1);
    contract.release();
    worker.join();
    EXPECT_EQ(releases.load(std::memory_order_relaxed), 1);
}

TEST(BlockingWorkContractGroup, WaitingThreadsCountsSleepers) {
    signet::test::watchdog dog(30s, "WaitingThreadsCountsSleepers");
    blocking_work_contract_group group(64);
    EXPECT_EQ(group.waiting_threads(), 0U);
    std::thread worker([&] { EXPECT_FALSE(group.execute_next_contract()); });
    wait_for_sleepers(group, 1);
    group.stop();
    worker.join();
    EXPECT_EQ(group.waiting_threads(), 0U);
}

} // namespace
