// Single-threaded behaviour of work_contract_group: one test per guarantee of
// docs/architecture.md §1.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/work_contract_group.hpp>

namespace {

using signet::contract_id;
using signet::initial_state;
using signet::invalid_contract_id;
using signet::lane;
using signet::work_contract;
using signet::work_contract_group;
using signet::work_contract_token;

// Runs until nothing is scheduled; returns how many contracts (work or release) ran.
int drain(work_contract_group& group) {
    int executed = 0;
    while (std::size_t const ran = group.execute_next_contracts()) {
        executed += static_cast<int>(ran);
    }
    return executed;
}

TEST(WorkContractGroup, CapacityIsRoundedUpToWholeLeaves) {
    EXPECT_EQ(work_contract_group().capacity(), 512U);
    EXPECT_EQ(work_contract_group(1).capacity(), 64U);
    EXPECT_EQ(work_contract_group(100).capacity(), 128U);
    EXPECT_THROW(work_contract_group(0), std::invalid_argument);
}

TEST(WorkContractGroup, UnscheduledContractDoesNotRun) {
    work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract([&] { ++runs; });
    EXPECT_TRUE(contract.is_valid());
    EXPECT_FALSE(group.execute_next_contract());
    EXPECT_EQ(runs, 0);
}

TEST(WorkContractGroup, InitiallyScheduledContractRunsOnce) {
    work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract([&] { ++runs; }, initial_state::scheduled);
    EXPECT_EQ(drain(group), 1);
    EXPECT_EQ(runs, 1);
}

TEST(WorkContractGroup, SchedulesBeforeARunCoalesceIntoOne) {
    work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract([&] { ++runs; });
    for (int i = 0; i < 10; ++i) {
        EXPECT_TRUE(contract.schedule());
    }
    EXPECT_EQ(drain(group), 1);
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(contract.schedule()); // and it can be scheduled again afterwards
    EXPECT_EQ(drain(group), 1);
    EXPECT_EQ(runs, 2);
}

TEST(WorkContractGroup, SchedulesDuringARunCauseExactlyOneFollowUp) {
    work_contract_group group(64);
    int runs = 0;
    work_contract contract;
    contract = group.create_contract([&] {
        if (++runs == 1) {
            for (int i = 0; i < 5; ++i) {
                EXPECT_TRUE(contract.schedule());  // through the handle
                signet::this_contract::schedule(); // and through this_contract
            }
        }
    });
    contract.schedule();
    EXPECT_EQ(drain(group), 2);
    EXPECT_EQ(runs, 2);
}

TEST(WorkContractGroup, TokenSchedulesAndReleasesItsOwnContract) {
    work_contract_group group(64);
    int runs = 0;
    int releases = 0;
    auto contract = group.create_contract(
        [&](work_contract_token& token) {
            if (++runs < 3) {
                token.schedule();
            } else {
                token.release();
            }
        },
        [&] { ++releases; }, initial_state::scheduled);
    EXPECT_EQ(drain(group), 3); // three runs; the release follows the last one directly
    EXPECT_EQ(runs, 3);
    EXPECT_EQ(releases, 1);
    EXPECT_FALSE(contract.is_valid());
    EXPECT_FALSE(contract.schedule());
}

TEST(WorkContractGroup, IdsMatchBetweenHandleTokenAndThisContract) {
    work_contract_group group(64);
    contract_id from_token = invalid_contract_id;
    contract_id from_this = invalid_contract_id;
    auto contract = group.create_contract([&](work_contract_token& token) {
        from_token = token.get_id();
        from_this = signet::this_contract::get_id();
    });
    contract.schedule();
    drain(group);
    EXPECT_NE(contract.get_id(), invalid_contract_id);
    EXPECT_EQ(from_token, contract.get_id());
    EXPECT_EQ(from_this, contract.get_id());
    EXPECT_EQ(signet::this_contract::get_id(), invalid_contract_id); // outside any run
    EXPECT_EQ(work_contract{}.get_id(), invalid_contract_id);
}

TEST(WorkContractGroup, ThisContractOutsideARunDoesNothing) {
    work_contract_group group(64);
    int runs = 0;
    int releases = 0;
    auto contract = group.create_contract([&] { ++runs; }, [&] { ++releases; });
    signet::this_contract::schedule(); // no run on this thread: must touch no contract
    signet::this_contract::release();
    EXPECT_EQ(drain(group), 0);
    EXPECT_TRUE(contract.is_valid());
    EXPECT_EQ(runs, 0);
    EXPECT_EQ(releases, 0);
}

TEST(WorkContractGroup, OneCallRunsABatchOfNeighboursInSlotOrder) {
    for (bool batch_claims : {false, true}) { // chained one by one, or claimed at once
        work_contract_group group(64);
        group.set_batch_claims(batch_claims);
        std::vector<std::size_t> order;
        std::vector<work_contract> contracts;
        for (std::size_t i = 0; i < 64; ++i) {
            contracts.push_back(group.create_contract([&order, i] { order.push_back(i); },
                                                      initial_state::scheduled));
        }
        EXPECT_EQ(group.execute_next_contracts(), signet::detail::max_batch);
        ASSERT_EQ(order.size(), signet::detail::max_batch);
        for (std::size_t i = 0; i < order.size(); ++i) {
            EXPECT_EQ(order[i], i);
        }
        EXPECT_EQ(drain(group), 64 - static_cast<int>(signet::detail::max_batch));
    }
}

// The API contract: one call of execute_next_contract() runs exactly one contract, whatever the
// claim mode, so a loop that polls something of its own between calls runs one contract per
// poll. Self-rescheduling contracts would let a batching call run many.
TEST(WorkContractGroup, OneCallRunsExactlyOneContract) {
    for (bool batch_claims : {false, true}) {
        work_contract_group group(1024);
        group.set_batch_claims(batch_claims);
        int runs = 0;
        std::vector<work_contract> contracts;
        for (int i = 0; i < 16; ++i) {
            contracts.push_back(group.create_contract(
                [&](work_contract_token& token) {
                    ++runs;
                    token.schedule();
                },
                initial_state::scheduled));
        }
        for (int call = 1; call <= 50; ++call) {
            EXPECT_TRUE(group.execute_next_contract());
            EXPECT_EQ(runs, call);
        }
        EXPECT_TRUE(group.execute_next_contract(lane{0, 64}));
        EXPECT_EQ(runs, 51);
        // The batching call is the explicit one.
        EXPECT_EQ(group.execute_next_contracts(4), 4U);
        EXPECT_EQ(runs, 55);
        EXPECT_EQ(group.execute_next_contracts(0), 1U); // clamped to at least one
        // Clamped to max_batch; a batch also ends at the leaf's last scheduled slot.
        std::size_t const ran = group.execute_next_contracts(1000);
        EXPECT_GT(ran, 1U);
        EXPECT_LE(ran, work_contract_group::max_batch);
    }
}

TEST(WorkContractGroup, SelfScheduledContractRunsOncePerBatch) {
    work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract(
        [&](work_contract_token& token) {
            ++runs;
            token.schedule();
        },
        initial_state::scheduled);
    EXPECT_EQ(group.execute_next_contracts(), 1U); // back into the tree after the batch
    EXPECT_EQ(group.execute_next_contracts(), 1U);
    EXPECT_EQ(runs, 2);
    contract.release();
    EXPECT_EQ(drain(group), 1); // the release
    EXPECT_EQ(runs, 2);
}

TEST(WorkContractGroup, ExceptionMidBatchLeavesTheRestScheduled) {
    work_contract_group group(64);
    std::vector<int> runs(3, 0);
    auto first = group.create_contract(
        [&](work_contract_token& token) {
            if (++runs[0] == 1) {
                token.schedule(); // goes back into the tree although a later run throws
            }
        },
        initial_state::scheduled);
    auto thrower = group.create_contract(
        [&] {
            ++runs[1];
            throw std::runtime_error("boom");
        },
        initial_state::scheduled);
    auto third = group.create_contract([&] { ++runs[2]; }, initial_state::scheduled);
    EXPECT_THROW(group.execute_next_contracts(), std::runtime_error);
    EXPECT_EQ(runs, (std::vector<int>{1, 1, 0}));
    EXPECT_EQ(drain(group), 2); // the third, and the first once more
    EXPECT_EQ(runs, (std::vector<int>{2, 1, 1}));
    EXPECT_TRUE(thrower.schedule()); // the thrower is idle and consistent
    EXPECT_THROW(group.execute_next_contract(), std::runtime_error);
}

TEST(WorkContractGroup, ThreadsStartTheirSweepsInDifferentHomeRegions) {
    work_contract_group group(512);
    group.set_batch_claims(true); // only one thread executes at a time here
    std::vector<work_contract> contracts;
    std::atomic<std::size_t> first_slot{512};
    for (std::size_t i = 0; i < 512; ++i) {
        contracts.push_back(group.create_contract(
            [&first_slot, i] {
                std::size_t expected = 512;
                // relaxed: read after join().
                first_slot.compare_exchange_strong(expected, i, std::memory_order_relaxed);
            },
            initial_state::scheduled));
    }
    std::size_t first_of[2] = {0, 0};
    std::size_t ran[2] = {0, 0};
    for (int t = 0; t < 2; ++t) {
        std::thread([&] {
            first_slot.store(512, std::memory_order_relaxed);
            ran[t] = group.execute_next_contracts();
            first_of[t] = first_slot.load(std::memory_order_relaxed);
        }).join();
    }
    // Two threads' sweeps start half the group apart, so they do not write the same leaves.
    EXPECT_EQ(first_of[0], 0U);
    EXPECT_EQ(first_of[1], 256U);
    EXPECT_EQ(ran[0], signet::detail::max_batch);
    EXPECT_EQ(ran[1], signet::detail::max_batch);
}

// By default a worker never holds a claimed contract while it runs another: a long (here:
// blocking) run cannot keep its neighbours from another thread, even one that starts later.
TEST(WorkContractGroup, NoContractWaitsBehindAnotherRunWhileAThreadCouldRunIt) {
    work_contract_group group(64);
    std::atomic<bool> a_started{false};
    std::atomic<bool> b_ran{false};
    auto a = group.create_contract([&] {
        // release / acquire: pair with the test thread and with b's store.
        a_started.store(true, std::memory_order_release);
        while (!b_ran.load(std::memory_order_acquire)) {
            std::this_thread::yield();
        }
    });
    auto b = group.create_contract([&] { b_ran.store(true, std::memory_order_release); });
    a.schedule();
    b.schedule();
    std::thread runner([&] { EXPECT_TRUE(group.execute_next_contract()); }); // claims a
    while (!a_started.load(std::memory_order_acquire)) {
        std::this_thread::yield();
    }
    bool const b_available = group.execute_next_contract(); // b must not be held by runner
    if (!b_available) {
        b_ran.store(true, std::memory_order_release); // unblock a so the test can fail cleanly
    }
    runner.join();
    EXPECT_TRUE(b_available);
}

TEST(WorkContractGroup, ReleaseRunsExactlyOnceAndIsFinal) {
    work_contract_group group(64);
    int runs = 0;
    int releases = 0;
    auto contract = group.create_contract([&] { ++runs; }, [&] { ++releases; });
    EXPECT_TRUE(contract.release());
    EXPECT_FALSE(contract.release());
    EXPECT_FALSE(contract.is_valid());
    EXPECT_FALSE(contract.schedule());
    EXPECT_EQ(releases, 0); // asynchronous: runs on a worker
    EXPECT_EQ(drain(group), 1);
    EXPECT_EQ(releases, 1);
    EXPECT_EQ(drain(group), 0);
    EXPECT_EQ(runs, 0);
    EXPECT_EQ(releases, 1);
}

TEST(WorkContractGroup, ReleaseWhileScheduledRunsReleaseInsteadOfWork) {
    work_contract_group group(64);
    int runs = 0;
    int releases = 0;
    auto contract = group.create_contract([&] { ++runs; }, [&] { ++releases; });
    contract.schedule();
    contract.release();
    EXPECT_EQ(drain(group), 1);
    EXPECT_EQ(runs, 0);
    EXPECT_EQ(releases, 1);
}

TEST(WorkContractGroup, ReleaseDuringARunRunsAfterIt) {
    work_contract_group group(64);
    std::vector<std::string> events;
    auto contract = group.create_contract(
        [&] {
            events.emplace_back("work");
            signet::this_contract::schedule(); // owed a follow-up...
            signet::this_contract::release();  // ...but release wins: work never runs again
            events.emplace_back("work-end");
        },
        [&] { events.emplace_back("release"); }, initial_state::scheduled);
    EXPECT_EQ(drain(group), 1); // the release runs right after the run, in the same call
    EXPECT_EQ(events, (std::vector<std::string>{"work", "work-end", "release"}));
}

// Guarantee 3, "on a worker thread": release() only requests the release; the callback runs
// at the contract's next execution, on the thread executing the group, never on the caller.
TEST(WorkContractGroup, ReleaseCallbackRunsOnTheExecutingThreadNotTheCaller) {
    work_contract_group group(64);
    std::thread::id release_thread{}; // written by the callback, read after join()
    int releases = 0;
    auto const on_release = [&] {
        release_thread = std::this_thread::get_id();
        ++releases;
    };
    auto contract = group.create_contract([] {}, on_release);
    ASSERT_TRUE(contract.release());
    EXPECT_EQ(releases, 0) << "release() ran the callback on the calling thread";
    std::thread::id worker_thread{};
    std::thread worker([&] {
        worker_thread = std::this_thread::get_id();
        while (group.execute_next_contract()) {
        }
    });
    worker.join();
    EXPECT_EQ(releases, 1);
    EXPECT_EQ(release_thread, worker_thread);
    EXPECT_NE(release_thread, std::this_thread::get_id());
}

// Released from another thread while its work runs on a worker: the callback runs after that
// run, on the worker, not on the thread that called release().
TEST(WorkContractGroup, ReleaseFromAnotherThreadDuringARunRunsOnTheWorker) {
    work_contract_group group(64);
    std::atomic<bool> running{false};
    std::atomic<bool> release_requested{false};
    std::thread::id work_thread{};    // written by the work, read after join()
    std::thread::id release_thread{}; // written by the callback, read after join()
    bool work_finished_first = false; // written by work and callback, read after join()
    bool work_done = false;
    auto contract = group.create_contract(
        [&] {
            work_thread = std::this_thread::get_id();
            // release: pairs with the test thread's acquire load; the run has started.
            running.store(true, std::memory_order_release);
            // acquire: pairs with the test thread's release store, made after release().
            while (!release_requested.load(std::memory_order_acquire)) {
                std::this_thread::yield();
            }
            work_done = true;
        },
        [&] {
            release_thread = std::this_thread::get_id();
            work_finished_first = work_done;
        },
        initial_state::scheduled);
    std::thread worker([&] {
        while (group.execute_next_contract()) {
        }
    });
    while (!running.load(std::memory_order_acquire)) {
        std::this_thread::yield();
    }
    EXPECT_TRUE(contract.release()); // the work is running on the worker right now
    EXPECT_EQ(release_thread, std::thread::id{}) << "release() ran the callback on the caller";
    release_requested.store(true, std::memory_order_release);
    worker.join();
    EXPECT_NE(release_thread, std::thread::id{}) << "the release callback never ran";
    EXPECT_EQ(release_thread, work_thread);
    EXPECT_NE(release_thread, std::this_thread::get_id());
    EXPECT_TRUE(work_finished_first);
}

TEST(WorkContractGroup, DestroyingTheHandleReleases) {
    work_contract_group group(64);
    int releases = 0;
    {
        auto contract = group.create_contract([] {}, [&] { ++releases; });
    }
    EXPECT_EQ(drain(group), 1);
    EXPECT_EQ(releases, 1);
}

TEST(WorkContractGroup, MoveAssignReleasesTheOverwrittenContract) {
    work_contract_group group(64);
    int released_a = 0;
    int released_b = 0;
    int runs_b = 0;
    auto a = group.create_contract([] {}, [&] { ++released_a; });
    auto b = group.create_contract([&] { ++runs_b; }, [&] { ++released_b; });
    auto const id_b = b.get_id();
    a = std::move(b);
    EXPECT_EQ(a.get_id(), id_b);
    EXPECT_TRUE(a.is_valid());
    EXPECT_FALSE(b.is_valid()); // NOLINT(bugprone-use-after-move): moved-from is invalid
    EXPECT_TRUE(a.schedule());
    EXPECT_EQ(drain(group), 2); // a's release and b's work
    EXPECT_EQ(released_a, 1);
    EXPECT_EQ(released_b, 0);
    EXPECT_EQ(runs_b, 1);
}

TEST(WorkContractGroup, MoveConstructionTransfersOwnership) {
    work_contract_group group(64);
    int releases = 0;
    auto a = group.create_contract([] {}, [&] { ++releases; });
    work_contract b(std::move(a));
    EXPECT_FALSE(a.release()); // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(b.is_valid());
    EXPECT_EQ(drain(group), 0);
    EXPECT_EQ(releases, 0);
}

TEST(WorkContractGroup, WorkExceptionGoesToTheHandler) {
    work_contract_group group(64);
    std::string caught;
    int runs = 0;
    auto contract = group.create_contract(
        [&] {
            ++runs;
            throw std::runtime_error("boom");
        },
        [] {},
        [&](std::exception_ptr error) {
            try {
                std::rethrow_exception(error);
            } catch (std::runtime_error const& e) {
                caught = e.what();
            }
        });
    contract.schedule();
    EXPECT_NO_THROW(drain(group));
    EXPECT_EQ(caught, "boom");
    EXPECT_TRUE(contract.schedule()); // still consistent: runs again
    EXPECT_EQ(drain(group), 1);
    EXPECT_EQ(runs, 2);
}

TEST(WorkContractGroup, WorkExceptionPropagatesWithoutAHandler) {
    work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract([&] {
        if (++runs == 1) {
            signet::this_contract::schedule(); // a follow-up owed when the throw happens
            throw std::logic_error("no handler");
        }
    });
    contract.schedule();
    EXPECT_THROW(group.execute_next_contract(), std::logic_error);
    EXPECT_EQ(drain(group), 1); // the owed follow-up still runs: the group stayed consistent
    EXPECT_EQ(runs, 2);
}

TEST(WorkContractGroup, ReleaseExceptionGoesToHandlerOrPropagates) {
    work_contract_group group(64);
    int handled = 0;
    auto with_handler = group.create_contract([] {}, [] { throw std::runtime_error("release"); },
                                              [&](std::exception_ptr) { ++handled; });
    with_handler.release();
    EXPECT_NO_THROW(drain(group));
    EXPECT_EQ(handled, 1);

    auto without = group.create_contract([] {}, [] { throw std::runtime_error("release"); });
    without.release();
    EXPECT_THROW(group.execute_next_contract(), std::runtime_error);
    // The slot was recycled anyway: the whole group can be filled again.
    std::vector<work_contract> all;
    for (std::size_t i = 0; i < group.capacity(); ++i) {
        all.push_back(group.create_contract([] {}));
        EXPECT_TRUE(all.back().is_valid()) << i;
    }
}

TEST(WorkContractGroup, FullGroupGivesInvalidHandleThenReusesReleasedSlot) {
    work_contract_group group(64);
    std::vector<work_contract> contracts;
    for (int i = 0; i < 64; ++i) {
        contracts.push_back(group.create_contract([] {}));
        ASSERT_TRUE(contracts.back().is_valid());
    }
    auto overflow = group.create_contract([] {});
    EXPECT_FALSE(overflow.is_valid());
    EXPECT_FALSE(overflow);
    EXPECT_FALSE(overflow.schedule());
    EXPECT_FALSE(overflow.release());
    EXPECT_EQ(overflow.get_id(), invalid_contract_id);

    auto const freed_slot = contracts[17].get_id() & 0xFFFF'FFFFU;
    contracts[17].release();
    // Not reusable until the release has run on a worker.
    EXPECT_FALSE(group.create_contract([] {}).is_valid());
    EXPECT_EQ(drain(group), 1);
    auto reused = group.create_contract([] {});
    ASSERT_TRUE(reused.is_valid());
    EXPECT_EQ(reused.get_id() & 0xFFFF'FFFFU, freed_slot);
    EXPECT_NE(reused.get_id(), contracts[17].get_id()); // a new generation
}

TEST(WorkContractGroup, StaleHandleNeverRunsTheNewOccupant) {
    work_contract_group group(64);
    std::vector<work_contract> fillers;
    int old_runs = 0;
    work_contract stale = group.create_contract([&] {
        ++old_runs;
        signet::this_contract::release(); // released through the token: `stale` keeps its ids
    });
    for (int i = 0; i < 63; ++i) {
        fillers.push_back(group.create_contract([] {}));
    }
    stale.schedule();
    EXPECT_EQ(drain(group), 1);
    int new_runs = 0;
    auto occupant = group.create_contract([&] { ++new_runs; }); // the only free slot
    ASSERT_TRUE(occupant.is_valid());
    EXPECT_EQ(occupant.get_id() & 0xFFFF'FFFFU, stale.get_id() & 0xFFFF'FFFFU);

    constexpr int hammer = 1'000'000;
    int accepted = 0;
    for (int i = 0; i < hammer; ++i) {
        accepted += stale.schedule() ? 1 : 0;
    }
    EXPECT_EQ(accepted, 0);
    EXPECT_FALSE(stale.is_valid());
    EXPECT_EQ(drain(group), 0);
    EXPECT_EQ(new_runs, 0);
    EXPECT_FALSE(stale.release()); // and releasing the stale handle leaves the occupant alone
    EXPECT_TRUE(occupant.is_valid());
    occupant.schedule();
    EXPECT_EQ(drain(group), 1);
    EXPECT_EQ(new_runs, 1);
    EXPECT_EQ(old_runs, 1);
}

TEST(WorkContractGroup, HandleOutlivesItsGroup) {
    auto resource = std::make_shared<int>(7);
    int runs = 0;
    int releases = 0;
    work_contract survivor;
    {
        work_contract_group group(64);
        survivor = group.create_contract([&runs, resource] { ++runs; }, [&] { ++releases; });
        survivor.schedule(); // scheduled but never executed
        EXPECT_EQ(resource.use_count(), 2);
    }
    EXPECT_EQ(resource.use_count(), 1); // the stored callable was destroyed with the group
    EXPECT_FALSE(survivor.is_valid());
    EXPECT_FALSE(survivor.schedule());
    EXPECT_FALSE(survivor.release());
    EXPECT_EQ(runs, 0);
    EXPECT_EQ(releases, 0); // no callback runs once the group is gone
}

TEST(WorkContractGroup, OneThreadServesEveryContractOncePerSweep) {
    constexpr std::size_t contracts = 256;
    work_contract_group group(contracts);
    std::vector<std::uint64_t> runs(contracts, 0);
    std::vector<work_contract> handles;
    for (std::size_t i = 0; i < contracts; ++i) {
        handles.push_back(group.create_contract(
            [&runs, i] {
                ++runs[i];
                signet::this_contract::schedule();
            },
            initial_state::scheduled));
    }
    for (int sweep = 1; sweep <= 20; ++sweep) {
        for (std::size_t i = 0; i < contracts; ++i) {
            ASSERT_TRUE(group.execute_next_contract());
        }
        auto [lo, hi] = std::minmax_element(runs.begin(), runs.end());
        ASSERT_LE(*hi - *lo, 1U) << "after sweep " << sweep;
        ASSERT_GE(*lo + 1, static_cast<std::uint64_t>(sweep));
    }
}

TEST(WorkContractGroup, LanePreferenceAndFallback) {
    work_contract_group group(256);
    std::vector<int> order;
    std::vector<work_contract> handles;
    lane const hot{128, 64};
    for (int i = 0; i < 3; ++i) {
        handles.push_back(group.create_contract([&order, i] { order.push_back(i); }));
        handles.push_back(group.create_contract(hot, [&order, i] { order.push_back(100 + i); }));
        EXPECT_EQ(handles.back().get_id() & 0xFFFF'FFFFU, 128U + static_cast<unsigned>(i));
    }
    for (auto& h : handles) {
        h.schedule();
    }
    while (group.execute_next_contract(hot)) {
    }
    ASSERT_EQ(order.size(), 6U);
    EXPECT_EQ((std::vector<int>(order.begin(), order.begin() + 3)),
              (std::vector<int>{100, 101, 102}));
    std::vector<int> rest(order.begin() + 3, order.end());
    std::sort(rest.begin(), rest.end());
    EXPECT_EQ(rest, (std::vector<int>{0, 1, 2}));
}

TEST(WorkContractGroup, FullLaneGivesInvalidHandle) {
    work_contract_group group(256);
    std::vector<work_contract> handles;
    for (int i = 0; i < 64; ++i) {
        handles.push_back(group.create_contract(lane{64, 64}, [] {}));
        ASSERT_TRUE(handles.back().is_valid());
    }
    EXPECT_FALSE(group.create_contract(lane{64, 64}, [] {}).is_valid());
    EXPECT_TRUE(group.create_contract([] {}).is_valid()); // elsewhere there is room
}

} // namespace
