// Multi-threaded guarantees of the work contract groups (run under ThreadSanitizer in CI).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/worker_pool.hpp>

#include "support/stress.hpp"

namespace {

using namespace std::chrono_literals;
using signet::blocking_work_contract_group;
using signet::initial_state;
using signet::work_contract;
using signet::work_contract_group;

// Worker threads running contracts until stopped, then draining: one call in two runs a single
// contract (execute_next_contract), the other a batch (execute_next_contracts), so both paths
// (and, with set_batch_claims, both claim shapes) race with each other and with schedulers.
template <typename Group>
class workers {
public:
    workers(Group& group, unsigned count)
        : group_(group) {
        for (unsigned i = 0; i < count; ++i) {
            threads_.emplace_back([this] {
                bool batch = false;
                // acquire: pairs with the release store in stop_and_drain().
                while (!stop_.load(std::memory_order_acquire)) {
                    if (batch) {
                        (void)group_.execute_next_contracts(Group::max_batch);
                    } else {
                        (void)group_.execute_next_contract(signet::lane{});
                    }
                    batch = !batch;
                }
                while (group_.execute_next_contracts(Group::max_batch) != 0) {
                }
            });
        }
    }
    void stop_and_drain() {
        // release: pairs with the workers' acquire load.
        stop_.store(true, std::memory_order_release);
        for (auto& t : threads_) {
            t.join();
        }
        threads_.clear();
    }
    ~workers() {
        if (!threads_.empty()) {
            stop_and_drain();
        }
    }

private:
    Group& group_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

std::uint64_t iterations(std::uint64_t base) {
    return base * signet::test::stress_scale();
}

// Two workers run `group` while two scheduler threads, started on one gate, each pick
// `per_thread` of `handles` at random (seeded seed + t, for replay) and for each first count the
// request in states[c].requested, then schedule it. Returns the number of schedules accepted,
// once the schedulers are joined and the workers have drained the group.
template <typename State>
std::uint64_t schedule_at_random(work_contract_group& group, std::vector<work_contract>& handles,
                                 State* states, std::uint64_t seed, std::uint64_t per_thread) {
    std::atomic<std::uint64_t> accepted{0};
    workers<work_contract_group> pool(group, 2);
    signet::test::start_gate gate;
    std::vector<std::thread> schedulers;
    for (unsigned t = 0; t < 2; ++t) {
        schedulers.emplace_back([&, t] {
            std::mt19937_64 rng(seed + t);
            gate.wait();
            for (std::uint64_t i = 0; i < per_thread; ++i) {
                auto const c = rng() % handles.size();
                // release: pairs with the run's acquire load of `requested`.
                states[c].requested.fetch_add(1, std::memory_order_release);
                if (handles[c].schedule()) {
                    accepted.fetch_add(1, std::memory_order_relaxed); // a count, read after join()
                }
            }
        });
    }
    gate.open();
    for (auto& t : schedulers) {
        t.join();
    }
    pool.stop_and_drain();
    return accepted.load(std::memory_order_relaxed); // after join()
}

class WorkContractGroupClaims : public ::testing::TestWithParam<bool> {};

TEST_P(WorkContractGroupClaims, NeverTwoThreadsInOneContractAndNoScheduleLost) {
    signet::test::watchdog dog(120s, "NeverTwoThreadsInOneContract");
    constexpr std::size_t contracts = 64;
    work_contract_group group(contracts);
    group.set_batch_claims(GetParam());
    struct state {
        std::atomic<bool> busy{false};
        std::atomic<std::uint64_t> requested{0};
        std::uint64_t seen = 0; // plain: only the contract's own runs touch it
        std::uint64_t runs = 0; // plain: TSan flags any overlap or missing happens-before
    };
    auto states = std::make_unique<state[]>(contracts);
    std::atomic<int> overlaps{0};
    std::vector<work_contract> handles;
    for (std::size_t i = 0; i < contracts; ++i) {
        handles.push_back(group.create_contract([&st = states[i], &overlaps] {
            // acq_rel: the exchange orders this run after the previous run's release store.
            if (st.busy.exchange(true, std::memory_order_acq_rel)) {
                overlaps.fetch_add(1, std::memory_order_relaxed);
            }
            ++st.runs;
            // acquire: pairs with the scheduler's release increment, done before schedule().
            st.seen = st.requested.load(std::memory_order_acquire);
            st.busy.store(false, std::memory_order_release);
        }));
    }
    std::uint64_t const seed = signet::test::test_seed();
    std::uint64_t const per_thread = iterations(100'000);
    std::uint64_t const accepted =
        schedule_at_random(group, handles, states.get(), seed, per_thread);
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_EQ(accepted, 2 * per_thread);
    std::uint64_t runs = 0;
    for (std::size_t i = 0; i < contracts; ++i) {
        // The last run started after the last schedule: nothing was lost.
        EXPECT_EQ(states[i].seen, states[i].requested.load()) << "contract " << i;
        runs += states[i].runs;
    }
    EXPECT_LE(runs, 2 * per_thread); // coalescing: never more runs than schedules
    EXPECT_GT(runs, 0U);
}

TEST_P(WorkContractGroupClaims, ReleaseRunsExactlyOnceAfterTheLastRun) {
    signet::test::watchdog dog(120s, "ReleaseRunsExactlyOnceAfterTheLastRun");
    work_contract_group group(64);
    group.set_batch_claims(GetParam());
    workers<work_contract_group> pool(group, 2);
    std::uint64_t const rounds = iterations(2'000);
    for (std::uint64_t round = 0; round < rounds; ++round) {
        std::atomic<int> releases{0};
        std::atomic<int> runs_after_release{0};
        std::atomic<bool> released{false};
        auto contract = group.create_contract(
            [&] {
                if (released.load(std::memory_order_acquire)) {
                    runs_after_release.fetch_add(1, std::memory_order_relaxed);
                }
                signet::this_contract::schedule(); // keeps itself busy until released
            },
            [&] {
                released.store(true, std::memory_order_release);
                releases.fetch_add(1, std::memory_order_release);
            },
            initial_state::scheduled);
        std::thread scheduler([&] {
            for (int i = 0; i < 50; ++i) {
                contract.schedule();
            }
        });
        std::this_thread::yield();
        scheduler.join();
        EXPECT_TRUE(contract.release());
        EXPECT_FALSE(contract.release());
        while (releases.load(std::memory_order_acquire) == 0) {
            std::this_thread::yield();
        }
        std::this_thread::yield();
        ASSERT_EQ(releases.load(), 1) << "round " << round;
        ASSERT_EQ(runs_after_release.load(), 0) << "round " << round;
    }
}

TEST(WorkContractGroupStress, StaleHandlesNeverRunTheNewOccupant) {
    signet::test::watchdog dog(120s, "StaleHandlesNeverRunTheNewOccupant");
    work_contract_group group(64);
    // Fill every slot but one, so the released slot is the one the occupant gets.
    std::vector<work_contract> fillers;
    for (int i = 0; i < 63; ++i) {
        fillers.push_back(group.create_contract([] {}));
    }
    work_contract stale =
        group.create_contract([] { signet::this_contract::release(); }, initial_state::scheduled);
    while (group.execute_next_contract()) {
    }
    std::atomic<std::uint64_t> occupant_runs{0};
    auto occupant =
        group.create_contract([&] { occupant_runs.fetch_add(1, std::memory_order_release); });
    ASSERT_EQ(occupant.get_id() & 0xFFFF'FFFFU, stale.get_id() & 0xFFFF'FFFFU);

    workers<work_contract_group> pool(group, 2);
    std::uint64_t const hammer = std::max<std::uint64_t>(iterations(500'000), 500'000);
    std::atomic<std::uint64_t> accepted{0};
    signet::test::start_gate gate;
    std::vector<std::thread> hammers;
    for (int t = 0; t < 2; ++t) {
        hammers.emplace_back([&] {
            gate.wait();
            for (std::uint64_t i = 0; i < hammer; ++i) {
                if (stale.schedule()) {
                    accepted.fetch_add(1, std::memory_order_relaxed);
                }
            }
        });
    }
    gate.open();
    constexpr std::uint64_t legit = 200; // one at a time, each waited for: exact count
    for (std::uint64_t i = 1; i <= legit; ++i) {
        ASSERT_TRUE(occupant.schedule());
        while (occupant_runs.load(std::memory_order_acquire) < i) {
            std::this_thread::yield();
        }
    }
    for (auto& t : hammers) {
        t.join();
    }
    pool.stop_and_drain();
    EXPECT_EQ(accepted.load(), 0U) << "a stale handle's schedule was accepted";
    EXPECT_EQ(occupant_runs.load(), legit); // >= 1M stale schedules added no run
}

// Workers wait in execute_next_contract() with no timeout: a lost wake-up leaves the step's
// contract unrun forever and the watchdog aborts the test.
TEST(WorkContractGroupStress, BlockingGroupWorkersNeverMissAWakeUp) {
    signet::test::watchdog dog(120s, "BlockingGroupWorkersNeverMissAWakeUp");
    blocking_work_contract_group group(512);
    constexpr std::size_t contracts = 8; // spread over leaves and summary bits
    std::atomic<std::uint64_t> runs{0};
    std::vector<work_contract> handles;
    for (std::size_t i = 0; i < contracts; ++i) {
        handles.push_back(
            group.create_contract([&] { runs.fetch_add(1, std::memory_order_release); }));
    }
    std::vector<std::thread> sleepers;
    for (int t = 0; t < 3; ++t) {
        sleepers.emplace_back([&] {
            while (group.execute_next_contract()) { // false only after stop()
            }
        });
    }
    std::uint64_t const steps = iterations(20'000);
    for (std::uint64_t i = 1; i <= steps; ++i) {
        handles[i % contracts].schedule();
        // acquire: pairs with the run's release increment.
        while (runs.load(std::memory_order_acquire) < i) {
            std::this_thread::yield();
        }
    }
    group.stop();
    for (auto& t : sleepers) {
        t.join();
    }
    EXPECT_EQ(runs.load(std::memory_order_relaxed), steps); // after join()
}

// Self-rescheduling contracts go back into the tree at the end of a batch while other workers
// sleep with no timeout: every contract reaches its exact run count, none overlaps itself.
TEST_P(WorkContractGroupClaims, BlockingGroupRepublishedBatchesWakeSleepers) {
    signet::test::watchdog dog(120s, "BlockingGroupRepublishedBatchesWakeSleepers");
    blocking_work_contract_group group(256);
    group.set_batch_claims(GetParam());
    constexpr std::size_t contracts = 40;
    std::uint64_t const target = iterations(2'000);
    struct counter {
        std::atomic<bool> busy{false};
        std::uint64_t runs = 0; // plain: TSan checks the runs are ordered
    };
    auto counters = std::make_unique<counter[]>(contracts);
    std::atomic<int> overlaps{0};
    std::atomic<std::size_t> finished{0};
    std::vector<work_contract> handles;
    for (std::size_t i = 0; i < contracts; ++i) {
        handles.push_back(group.create_contract(
            [&, &c = counters[i]](signet::work_contract_token& token) {
                // acq_rel: orders this run after the previous one's release store.
                if (c.busy.exchange(true, std::memory_order_acq_rel)) {
                    overlaps.fetch_add(1, std::memory_order_relaxed);
                }
                if (++c.runs < target) {
                    token.schedule();
                } else {
                    // release: pairs with the main thread's acquire load.
                    finished.fetch_add(1, std::memory_order_release);
                }
                c.busy.store(false, std::memory_order_release);
            },
            initial_state::scheduled));
    }
    std::vector<std::thread> sleepers;
    for (int t = 0; t < 3; ++t) {
        sleepers.emplace_back([&] {
            // Batches, waiting for the first; 0 only after stop() (the hour never passes).
            while (group.execute_next_contracts(blocking_work_contract_group::max_batch, 1h) != 0) {
            }
        });
    }
    while (finished.load(std::memory_order_acquire) < contracts) {
        std::this_thread::yield();
    }
    group.stop();
    for (auto& t : sleepers) {
        t.join();
    }
    EXPECT_EQ(overlaps.load(std::memory_order_relaxed), 0); // after join()
    for (std::size_t i = 0; i < contracts; ++i) {
        EXPECT_EQ(counters[i].runs, target) << "contract " << i;
    }
}

// Contracts that schedule themselves (no RMW on their state word) while other threads schedule
// them too (S set while busy): never two runs at once, and the last run sees the last request.
TEST_P(WorkContractGroupClaims, SelfAndForeignSchedulesMix) {
    signet::test::watchdog dog(120s, "SelfAndForeignSchedulesMix");
    constexpr std::size_t contracts = 128;
    work_contract_group group(contracts);
    group.set_batch_claims(GetParam());
    struct state {
        std::atomic<bool> busy{false};
        std::atomic<std::uint64_t> requested{0};
        std::uint64_t seen = 0;
        std::uint64_t self_left = 0; // plain: only the contract's own runs touch it
    };
    auto states = std::make_unique<state[]>(contracts);
    std::atomic<int> overlaps{0};
    std::vector<work_contract> handles;
    for (std::size_t i = 0; i < contracts; ++i) {
        handles.push_back(
            group.create_contract([&st = states[i], &overlaps](signet::work_contract_token& token) {
                // acq_rel: orders this run after the previous one's release store.
                if (st.busy.exchange(true, std::memory_order_acq_rel)) {
                    overlaps.fetch_add(1, std::memory_order_relaxed);
                }
                // acquire: pairs with the scheduler's release increment before schedule().
                std::uint64_t const requested = st.requested.load(std::memory_order_acquire);
                if (requested != st.seen) {
                    st.seen = requested;
                    st.self_left = 3; // each new request: three more runs on our own
                }
                if (st.self_left > 0) {
                    --st.self_left;
                    token.schedule();
                }
                st.busy.store(false, std::memory_order_release);
            }));
    }
    std::uint64_t const seed = signet::test::test_seed();
    std::uint64_t const per_thread = iterations(50'000);
    EXPECT_EQ(schedule_at_random(group, handles, states.get(), seed, per_thread), 2 * per_thread);
    EXPECT_EQ(overlaps.load(std::memory_order_relaxed), 0); // after join()
    for (std::size_t i = 0; i < contracts; ++i) {
        // relaxed: read after join().
        EXPECT_EQ(states[i].seen, states[i].requested.load(std::memory_order_relaxed))
            << "contract " << i;
        EXPECT_EQ(states[i].self_left, 0U) << "contract " << i;
    }
}

// Every test above in both claim shapes: chains (the default) and batch claims.
std::string claim_shape(::testing::TestParamInfo<bool> const& shape) {
    return shape.param ? "BatchClaims" : "Chains";
}
INSTANTIATE_TEST_SUITE_P(Stress, WorkContractGroupClaims, ::testing::Values(false, true),
                         claim_shape);

TEST(WorkContractGroupStress, SubmitFromManyThreads) {
    signet::test::watchdog dog(120s, "SubmitFromManyThreads");
    work_contract_group group(256);
    signet::worker_pool pool(group, {.threads = 2});
    std::uint64_t const per_thread = iterations(2'000);
    std::atomic<std::uint64_t> sum{0};
    std::vector<std::thread> submitters;
    for (int t = 0; t < 2; ++t) {
        submitters.emplace_back([&] {
            std::vector<std::future<std::uint64_t>> pending;
            for (std::uint64_t i = 0; i < per_thread; ++i) {
                for (;;) {
                    try {
                        pending.push_back(pool.submit([i] { return i; }));
                        break;
                    } catch (std::runtime_error const&) {
                        std::this_thread::yield(); // full group: wait for tasks to finish
                    }
                }
                if (pending.size() == 64) {
                    for (auto& f : pending) {
                        sum.fetch_add(f.get(), std::memory_order_relaxed);
                    }
                    pending.clear();
                }
            }
            for (auto& f : pending) {
                sum.fetch_add(f.get(), std::memory_order_relaxed);
            }
        });
    }
    for (auto& t : submitters) {
        t.join();
    }
    EXPECT_EQ(sum.load(), 2 * (per_thread * (per_thread - 1) / 2));
}

} // namespace
