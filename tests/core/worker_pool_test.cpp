#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <sched.h>

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
    // release: pairs with the test's acquire load below.
    auto contract = group.create_contract([&] { runs.fetch_add(1, std::memory_order_release); });
    worker_pool pool(group, {.threads = 2, .idle = idle_strategy::block});
    // With nothing scheduled, block-idle workers sleep inside the group, where schedule() wakes
    // them (spin or backoff would keep polling on their own and never show up here).
    ASSERT_TRUE(eventually([&] { return group.waiting_threads() == 2; }))
        << "waiting: " << group.waiting_threads();
    contract.schedule();
    ASSERT_TRUE(eventually([&] { return runs.load(std::memory_order_acquire) == 1; }));
    pool.stop();
    EXPECT_EQ(pool.stats(0).executed + pool.stats(1).executed, 1U);
}

TEST(WorkerPool, BackoffIdleEndsAsleepInTheBlockingGroup) {
    signet::test::watchdog dog(60s, "BackoffIdleEndsAsleepInTheBlockingGroup");
    blocking_work_contract_group group(64);
    std::atomic<int> runs{0};
    // release: pairs with the test's acquire loads below.
    auto contract = group.create_contract([&] { runs.fetch_add(1, std::memory_order_release); });
    worker_pool pool(group, {.threads = 2, .idle = idle_strategy::backoff});
    // Once their pauses and yields found nothing, backoff workers sleep inside the group (not
    // in short sleeps of their own, each a wake-up), where schedule() wakes them; and again
    // after each run.
    for (int i = 1; i <= 3; ++i) {
        ASSERT_TRUE(eventually([&] { return group.waiting_threads() == 2; }))
            << "waiting: " << group.waiting_threads();
        contract.schedule();
        ASSERT_TRUE(eventually([&] { return runs.load(std::memory_order_acquire) == i; }));
    }
    pool.stop();
    EXPECT_EQ(pool.stats(0).executed + pool.stats(1).executed, 3U);
}

TEST(WorkerPool, RejectsBadOptions) {
    work_contract_group group(64);
    EXPECT_THROW(worker_pool(group, {.threads = 0}), std::invalid_argument);
    EXPECT_THROW(worker_pool(group, {.threads = 1, .idle = idle_strategy::block}),
                 std::invalid_argument);
    EXPECT_THROW(worker_pool(group, {.threads = 1, .cpus = {-1}}), std::invalid_argument);
    EXPECT_THROW(worker_pool(group, {.threads = 1, .cpus = {100000}}), std::invalid_argument);
}

// The highest CPU this process may run on (sched_getaffinity), or -1 when the set is empty.
int highest_allowed_cpu() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
        return -1;
    }
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu) {
        if (CPU_ISSET(static_cast<std::size_t>(cpu), &allowed)) {
            return cpu;
        }
    }
    return -1;
}

TEST(WorkerPool, PinsWorkersToTheGivenCpus) {
    signet::test::watchdog dog(60s, "PinsWorkersToTheGivenCpus");
    // The highest allowed CPU: on a machine with more than one, a pool that ignored the option
    // (or pinned to CPU 0) is caught.
    int const cpu = highest_allowed_cpu();
    if (cpu < 0) {
        GTEST_SKIP() << "sched_getaffinity gives no CPU this process may run on";
    }
    work_contract_group group(64);
    int cpu_seen = -1;    // written by the contract, read after the acquire below
    int cpus_in_mask = 0; // the worker's own affinity mask, as the kernel reports it
    bool mask_has_cpu = false;
    std::atomic<bool> done{false};
    auto contract = group.create_contract([&] {
        cpu_set_t mask;
        CPU_ZERO(&mask);
        if (sched_getaffinity(0, sizeof(mask), &mask) == 0) { // 0: the calling thread
            cpus_in_mask = CPU_COUNT(&mask);
            mask_has_cpu = CPU_ISSET(static_cast<std::size_t>(cpu), &mask);
        }
        cpu_seen = sched_getcpu();
        done.store(true, std::memory_order_release); // pairs with the test's acquire load
    });
    worker_pool pool(group, {.threads = 1, .cpus = {cpu}});
    contract.schedule();
    ASSERT_TRUE(eventually([&] { return done.load(std::memory_order_acquire); }));
    EXPECT_EQ(cpus_in_mask, 1);
    EXPECT_TRUE(mask_has_cpu) << "CPU " << cpu;
    EXPECT_EQ(cpu_seen, cpu);
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
    // An unbounded drain would never return from stop(): the watchdog turns that into a failure.
    signet::test::watchdog dog(60s, "DrainIsBoundedForSelfReschedulingContracts");
    work_contract_group group(64);
    std::atomic<std::uint64_t> runs{0};
    auto forever = group.create_contract(
        [&] {
            runs.fetch_add(1, std::memory_order_relaxed); // a count; orders nothing
            signet::this_contract::schedule();
        },
        initial_state::scheduled);
    worker_pool pool(group, {.threads = 1, .drain_timeout = 50ms});
    ASSERT_TRUE(eventually([&] { return runs.load(std::memory_order_relaxed) > 0; }));
    pool.stop();
    // The drain gave up on a contract that was still scheduled: it is there to run right now.
    EXPECT_TRUE(group.execute_next_contract());
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
