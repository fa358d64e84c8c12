#include <atomic>
#include <chrono>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/worker_pool.hpp>

#include "support/stress.hpp"

namespace {

using namespace std::chrono_literals;
using signet::blocking_work_contract_group;
using signet::idle_strategy;
using signet::initial_state;
using signet::work_contract;
using signet::work_contract_group;
using signet::worker_pool;
using signet::worker_pool_options;

using signet::test::eventually;

TEST(WorkerPool, RunsScheduledContractsAndCountsThem) {
    signet::test::watchdog dog(60s, "RunsScheduledContractsAndCountsThem");
    work_contract_group group(64);
    std::atomic<int> runs{0};
    auto contract = group.create_contract([&] { runs.fetch_add(1, std::memory_order_relaxed); });
    worker_pool pool(group, {.threads = 2, .idle = idle_strategy::backoff});
    for (int i = 1; i <= 100; ++i) {
        contract.schedule();
        ASSERT_TRUE(eventually([&] { return runs.load(std::memory_order_relaxed) >= i; }));
    }
    pool.stop();
    std::uint64_t executed = 0;
    for (std::size_t i = 0; i < pool.size(); ++i) {
        executed += pool.stats(i).executed;
    }
    EXPECT_EQ(executed, 100U);
    EXPECT_EQ(runs.load(), 100);
}

TEST(WorkerPool, BlockIdleSleepsInTheBlockingGroup) {
    signet::test::watchdog dog(60s, "BlockIdleSleepsInTheBlockingGroup");
    blocking_work_contract_group group(64);
    std::atomic<int> runs{0};
    auto contract = group.create_contract([&] { runs.fetch_add(1, std::memory_order_relaxed); });
    worker_pool pool(group, {.threads = 2, .idle = idle_strategy::block});
    std::this_thread::sleep_for(50ms);
    // Sleeping workers wake up in slices of 20 ms at most: far fewer idle loops than spinning.
    EXPECT_LT(pool.stats(0).idle_loops + pool.stats(1).idle_loops, 100U);
    contract.schedule();
    EXPECT_TRUE(eventually([&] { return runs.load(std::memory_order_relaxed) == 1; }));
}

TEST(WorkerPool, RejectsBadOptions) {
    work_contract_group group(64);
    EXPECT_THROW(worker_pool(group, {.threads = 0}), std::invalid_argument);
    EXPECT_THROW(worker_pool(group, {.threads = 1, .idle = idle_strategy::block}),
                 std::invalid_argument);
    EXPECT_THROW(worker_pool(group, {.threads = 1, .cpus = {-1}}), std::invalid_argument);
    EXPECT_THROW(worker_pool(group, {.threads = 1, .cpus = {100000}}), std::invalid_argument);
}

TEST(WorkerPool, PinsWorkersToTheGivenCpus) {
    signet::test::watchdog dog(60s, "PinsWorkersToTheGivenCpus");
    work_contract_group group(64);
    std::atomic<int> cpu_seen{-1};
    auto contract =
        group.create_contract([&] { cpu_seen.store(sched_getcpu(), std::memory_order_relaxed); });
    worker_pool pool(group, {.threads = 1, .cpus = {0}});
    contract.schedule();
    ASSERT_TRUE(eventually([&] { return cpu_seen.load(std::memory_order_relaxed) >= 0; }));
    EXPECT_EQ(cpu_seen.load(), 0);
}

TEST(WorkerPool, PinningToAMissingCpuThrowsSystemError) {
    work_contract_group group(64);
    // CPU_SETSIZE - 1 is in range for cpu_set_t but not present on this machine.
    EXPECT_THROW(worker_pool(group, {.threads = 1, .cpus = {CPU_SETSIZE - 1}}), std::system_error);
}

TEST(WorkerPool, StopDrainsScheduledContractsAndReleases) {
    signet::test::watchdog dog(60s, "StopDrainsScheduledContractsAndReleases");
    work_contract_group group(256);
    std::atomic<int> runs{0};
    std::atomic<int> releases{0};
    std::vector<work_contract> contracts;
    for (int i = 0; i < 200; ++i) {
        contracts.push_back(
            group.create_contract([&] { runs.fetch_add(1, std::memory_order_relaxed); },
                                  [&] { releases.fetch_add(1, std::memory_order_relaxed); }));
        contracts.back().schedule();
        if (i % 2 == 0) {
            contracts.back().release(); // release wins over the pending run
        }
    }
    {
        worker_pool pool(group, {.threads = 2});
        pool.stop(); // at once: whatever the workers have not run yet, the drain runs
    }
    EXPECT_EQ(runs.load(), 100);
    EXPECT_EQ(releases.load(), 100);
}

TEST(WorkerPool, DrainIsBoundedForSelfReschedulingContracts) {
    signet::test::watchdog dog(60s, "DrainIsBoundedForSelfReschedulingContracts");
    work_contract_group group(64);
    auto forever =
        group.create_contract([] { signet::this_contract::schedule(); }, initial_state::scheduled);
    worker_pool pool(group, {.threads = 1, .drain_timeout = 50ms});
    std::this_thread::sleep_for(10ms);
    auto const start = std::chrono::steady_clock::now();
    pool.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(WorkerPool, SubmitReturnsResultsAndExceptions) {
    signet::test::watchdog dog(60s, "SubmitReturnsResultsAndExceptions");
    work_contract_group group(64);
    worker_pool pool(group, {.threads = 2});
    auto answer = pool.submit([] { return 42; });
    auto nothing = pool.submit([] {});
    auto failure = pool.submit([]() -> int { throw std::runtime_error("task failed"); });
    EXPECT_EQ(answer.get(), 42);
    EXPECT_NO_THROW(nothing.get());
    EXPECT_THROW(failure.get(), std::runtime_error);
}

TEST(WorkerPool, SubmittedTasksFreeTheirSlots) {
    signet::test::watchdog dog(60s, "SubmittedTasksFreeTheirSlots");
    work_contract_group group(64);
    worker_pool pool(group, {.threads = 2});
    long sum = 0;
    for (int round = 0; round < 20; ++round) {
        std::vector<std::future<int>> futures;
        for (int i = 0; i < 32; ++i) {
            futures.push_back(pool.submit([i] { return i; }));
        }
        for (auto& f : futures) {
            sum += f.get();
        }
    }
    EXPECT_EQ(sum, 20L * (31 * 32 / 2)); // 640 tasks through a 64-slot group
}

TEST(WorkerPool, SubmitOnAFullGroupThrows) {
    work_contract_group group(64);
    std::vector<work_contract> fill;
    for (int i = 0; i < 64; ++i) {
        fill.push_back(group.create_contract([] {}));
    }
    worker_pool pool(group, {.threads = 1});
    EXPECT_THROW(pool.submit([] { return 1; }), std::runtime_error);
}

} // namespace
