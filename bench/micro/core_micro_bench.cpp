// Micro-benchmarks of the core hot paths (single thread unless the name says otherwise).
//   schedule:            work_contract::schedule() on an idle contract, then the select+run
//   schedule_coalesced:  schedule() on an already scheduled contract
//   execute_empty:       execute_next_contract() on an empty group
//   schedule_execute:    schedule + execute of an empty contract (the contention bench's unit)
//   self_reschedule:     contracts that reschedule themselves via this_contract; items are runs
//                        (one execute_next_contracts() call runs a batch of up to max_batch = 64)
//   signal_tree_set_select: one set + one select, by tree capacity
//   signal_tree_batch:   set_bits of 16 slots of a leaf + one claim of 16; items are slots
//   spsc_push_pop:       one push + one pop on the same thread
//   spsc_two_threads:    producer/consumer throughput across two threads
//   clock_realtime, clock_monotonic, tsc: the per-stage latency clock's candidates (one read);
//   realtime_clock_now: the one chosen (signet::realtime_clock)
#include <atomic>
#include <bit>
#include <cstdint>
#include <thread>
#include <vector>

#include <time.h>

#include <benchmark/benchmark.h>

#include <signet/core.hpp>

namespace {

void schedule_execute(benchmark::State& state) {
    signet::work_contract_group group(static_cast<std::size_t>(state.range(0)));
    std::uint64_t runs = 0;
    auto contract = group.create_contract([&runs] { ++runs; });
    for (auto _ : state) {
        contract.schedule();
        group.execute_next_contract();
    }
    benchmark::DoNotOptimize(runs);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(schedule_execute)->Arg(64)->Arg(512)->Arg(16384)->Arg(1 << 20);

void schedule_coalesced(benchmark::State& state) {
    signet::work_contract_group group(512);
    auto contract = group.create_contract([] {});
    contract.schedule();
    for (auto _ : state) {
        benchmark::DoNotOptimize(contract.schedule());
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(schedule_coalesced);

void execute_empty(benchmark::State& state) {
    signet::work_contract_group group(512);
    for (auto _ : state) {
        benchmark::DoNotOptimize(group.execute_next_contract());
    }
}
BENCHMARK(execute_empty);

void self_reschedule(benchmark::State& state) {
    auto const contracts = static_cast<std::size_t>(state.range(0));
    signet::work_contract_group group(contracts);
    std::vector<signet::work_contract> handles;
    for (std::size_t i = 0; i < contracts; ++i) {
        handles.push_back(group.create_contract([] { signet::this_contract::schedule(); },
                                                signet::initial_state::scheduled));
    }
    std::int64_t runs = 0;
    for (auto _ : state) {
        runs += static_cast<std::int64_t>(group.execute_next_contracts());
    }
    state.SetItemsProcessed(runs);
}
BENCHMARK(self_reschedule)->Arg(64)->Arg(512)->Arg(16384)->Arg(1 << 20);

void signal_tree_set_select(benchmark::State& state) {
    signet::signal_tree tree(static_cast<std::size_t>(state.range(0)));
    std::size_t slot = 0;
    std::size_t const capacity = tree.capacity();
    for (auto _ : state) {
        tree.set(slot);
        slot = tree.select(slot);
        slot = slot * 7 + 13;
        slot %= capacity;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(signal_tree_set_select)->Arg(64)->Arg(512)->Arg(16384)->Arg(1 << 20);

void signal_tree_batch(benchmark::State& state) {
    signet::signal_tree tree(static_cast<std::size_t>(state.range(0)));
    std::size_t const leaves = tree.capacity() / 64;
    std::size_t leaf = 0;
    std::uint64_t bits = 0xFFFF;
    for (auto _ : state) {
        tree.set_bits(leaf, bits);
        auto const got = tree.claim(leaf * 64, signet::lane{}, 16);
        benchmark::DoNotOptimize(got);
        leaf = (leaf * 7 + 13) % leaves;
        bits = std::rotl(bits, 16);
    }
    state.SetItemsProcessed(state.iterations() * 16);
}
BENCHMARK(signal_tree_batch)->Arg(64)->Arg(512)->Arg(16384)->Arg(1 << 20);

void spsc_push_pop(benchmark::State& state) {
    signet::spsc_fixed_queue<std::uint64_t> queue(1024);
    std::uint64_t value = 0;
    for (auto _ : state) {
        (void)queue.push(value);
        (void)queue.pop(value);
        ++value;
    }
    benchmark::DoNotOptimize(value);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(spsc_push_pop);

void spsc_two_threads(benchmark::State& state) {
    signet::spsc_fixed_queue<std::uint64_t> queue(4096);
    std::atomic<bool> done{false};
    std::thread consumer([&] {
        std::uint64_t value = 0;
        // acquire: pairs with the release store below.
        while (!done.load(std::memory_order_acquire)) {
            while (queue.pop(value)) {
            }
        }
        while (queue.pop(value)) {
        }
    });
    std::uint64_t i = 0;
    for (auto _ : state) {
        while (!queue.push(i)) {
        }
        ++i;
    }
    done.store(true, std::memory_order_release);
    consumer.join();
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(spsc_two_threads)->UseRealTime();

} // namespace

void clock_realtime(benchmark::State& state) {
    timespec ts{};
    for (auto _ : state) {
        clock_gettime(CLOCK_REALTIME, &ts);
        benchmark::DoNotOptimize(ts);
    }
}
BENCHMARK(clock_realtime);

void clock_monotonic(benchmark::State& state) {
    timespec ts{};
    for (auto _ : state) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        benchmark::DoNotOptimize(ts);
    }
}
BENCHMARK(clock_monotonic);

#if defined(__x86_64__)
void tsc(benchmark::State& state) {
    for (auto _ : state) {
        benchmark::DoNotOptimize(__builtin_ia32_rdtsc());
    }
}
BENCHMARK(tsc);
#endif

// What the stage timestamps read: rdtsc scaled to CLOCK_REALTIME (or the system clock where the
// TSC is not usable; the label says which).
void realtime_clock_now(benchmark::State& state) {
    for (auto _ : state) {
        benchmark::DoNotOptimize(signet::realtime_clock::now_ns());
    }
    state.SetLabel(
        signet::realtime_clock::active() == signet::realtime_clock::source::tsc ? "tsc" : "system");
}
BENCHMARK(realtime_clock_now);

BENCHMARK_MAIN();
