// signet_wake_latency: how long a contract scheduled from a foreign thread waits before it runs
// in an idle runtime, whose only worker sleeps: in the backend (reactor mode, idle block: an
// eventfd in the io_uring ring or the epoll set wakes it) or on the group's condition variable
// (poller thread mode, the worker_pool's block idle).
//
//   signet_wake_latency [--samples N] [--worker-cpu C] [--scheduler-cpu C]
//
// Each sample: wait until the worker sleeps (the group's waiting_threads() hook), take the
// time, schedule(), and let the contract take the time when it runs. Prints p50/p99/max in µs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/core/metrics/histogram.hpp>
#include <signet/net/log.hpp>
#include <signet/net/runtime.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

struct result {
    double p50_us = 0;
    double p99_us = 0;
    double max_us = 0;
};

result measure(signet::net::backend_kind backend, signet::net::poller_mode poller,
               std::size_t samples, int worker_cpu) {
    signet::net::runtime rt(
        {.backend = backend,
         .workers = 1,
         .cpus = worker_cpu >= 0 ? std::vector<int>{worker_cpu} : std::vector<int>{},
         .idle = signet::idle_strategy::block,
         .poller = poller});
    signet::net::feed_options feed;
    feed.name = "idle";
    feed.lines.push_back({.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")});
    rt.add_feed(feed, [](signet::net::packet const&) {});
    std::atomic<std::int64_t> ran_at{0};
    auto contract = rt.group().create_contract([&] {
        // release: pairs with the acquire load below.
        ran_at.store(clock_type::now().time_since_epoch().count(), std::memory_order_release);
    });
    rt.start();
    std::vector<double> waits;
    waits.reserve(samples);
    for (std::size_t i = 0; i < samples + 10; ++i) {
        while (rt.group().waiting_threads() == 0) {
            std::this_thread::yield();
        }
        ran_at.store(0, std::memory_order_relaxed);
        auto const start = clock_type::now();
        contract.schedule();
        std::int64_t at = 0;
        // acquire: pairs with the contract's release store.
        while ((at = ran_at.load(std::memory_order_acquire)) == 0) {
            std::this_thread::yield();
        }
        if (i >= 10) { // the first few warm the paths up
            waits.push_back(static_cast<double>(at - start.time_since_epoch().count()) / 1000.0);
        }
    }
    rt.stop();
    std::sort(waits.begin(), waits.end());
    auto at = [&](double q) {
        // signet::metrics' nearest-rank rule (rank ceil(q * n)), on the exact samples.
        auto const rank = signet::metrics::histogram::nearest_rank(q, waits.size());
        return waits[std::max<std::uint64_t>(rank, 1) - 1];
    };
    return {at(0.50), at(0.99), waits.back()};
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"signet wake latency: schedule() from a foreign thread into an idle runtime"};
    std::size_t samples = 2000;
    int worker_cpu = 0;
    int scheduler_cpu = 1;
    app.add_option("--samples", samples, "samples per mode")->capture_default_str();
    app.add_option("--worker-cpu", worker_cpu, "CPU of the runtime's worker (-1: unpinned)")
        ->capture_default_str();
    app.add_option("--scheduler-cpu", scheduler_cpu, "CPU of the scheduling thread (-1: unpinned)")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
#ifndef NDEBUG
    std::printf("Debug build: numbers are not representative\n");
#endif
    signet::pin_this_thread(scheduler_cpu, "scheduler");
    signet::net::logger()->set_level(spdlog::level::warn); // no start/stop lines per mode
    std::printf("%-10s %-9s %10s %10s %10s\n", "backend", "poller", "p50_us", "p99_us", "max_us");
    using signet::net::backend_kind;
    using signet::net::poller_mode;
    std::string why_not;
    bool const uring = signet::net::io_uring_available(why_not);
    for (auto backend : {backend_kind::io_uring, backend_kind::epoll}) {
        if (backend == backend_kind::io_uring && !uring) {
            std::printf("io_uring   skipped: %s\n", why_not.c_str());
            continue;
        }
        for (auto poller : {poller_mode::contract, poller_mode::thread}) {
            result const r = measure(backend, poller, samples, worker_cpu);
            std::printf("%-10s %-9s %10.1f %10.1f %10.1f\n",
                        std::string(to_string(backend)).c_str(),
                        std::string(to_string(poller)).c_str(), r.p50_us, r.p99_us, r.max_us);
        }
    }
    return 0;
}
