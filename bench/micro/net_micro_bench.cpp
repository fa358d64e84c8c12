// Net-layer micro benchmarks, in signet_micro_bench (BENCHMARK_MAIN is in core_micro_bench.cpp):
//   stage_latency/<follows>: net::stage_latency's cost per packet — begin() and end() around an
//   empty parse of a kernel-stamped packet (all four stages recorded). follows = 1: the packet
//   follows another in the parser contract's run (one clock read); 0: the first of a run (two).

#include <cstdint>

#include <benchmark/benchmark.h>

#include <signet/core/realtime_clock.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/stage_latency.hpp>

namespace {

void stage_latency(benchmark::State& state) {
    signet::net::stage_latency stages;
    signet::net::packet p;
    p.follows_in_run = state.range(0) != 0;
    std::uint64_t const now = signet::realtime_clock::now_ns();
    p.kernel_rx_ns = now - 3'000;
    p.user_rx_ns = now - 2'000;
    for (auto _ : state) {
        benchmark::DoNotOptimize(stages.begin(p));
        stages.end(p);
    }
    benchmark::DoNotOptimize(stages.total().take().count);
}
BENCHMARK(stage_latency)->Arg(1)->Arg(0);

} // namespace
