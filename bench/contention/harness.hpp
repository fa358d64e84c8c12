#pragma once

// The contention harness: T pinned worker threads drive one scheduler for a warm-up and then a
// measured window; every task execution is counted per worker and per task, so throughput and
// fairness come from the same run. In the fan_in workload one more pinned thread, the producer,
// schedules tasks for the workers to run (as a socket poller schedules receive contracts).
//
// A scheduler type S (see schedulers.hpp) provides
//   S(std::size_t tasks, std::size_t threads)  creates the task set in its workload's start state
//   bool run_one(std::size_t worker)           runs at most one task; false if none was ready
//   void stop()                                wakes workers that may be waiting (blocking modes)
//   void produce_one()                         fan_in only: schedules the next task (round robin)
// and its tasks call run_task<N>(index), which runs the body and counts the execution.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <time.h>
#include <unistd.h>

#include <signet/core/cpu_affinity.hpp>

#include "hash_task.hpp"

namespace signet::bench {

/// What drives the tasks (see schedulers.hpp for each implementation's version):
///   self     every task re-schedules (re-enqueues) itself each time it runs
///   fan_in   tasks do not re-schedule; one producer thread schedules them round robin
///   fan_out  a root task, when it runs, schedules the next fan_out_width tasks and the next root
enum class workload { self, fan_in, fan_out };

/// One worker's view: where the current phase counts executions, and the hash accumulator.
struct worker_context {
    std::uint64_t* counts = nullptr; // indexed by task; switched to the measured array
    std::uint64_t sink = 0;
};

inline thread_local worker_context* this_worker = nullptr;

/// The task body shared by every implementation: hash_task<N>, then count the execution.
template <unsigned N>
inline void run_task(std::uint32_t index) noexcept {
    worker_context& ctx = *this_worker;
    ctx.sink = hash_task<N>::run(ctx.sink + index);
    ++ctx.counts[index];
}

struct point_config {
    std::size_t tasks = 0;
    std::size_t threads = 0;
    std::vector<int> cpus; // worker i is pinned to cpus[i]
    int producer_cpu = -1; // fan_in: the producer thread is pinned here (may be a worker's CPU)
    double warm_up_seconds = 0;
    double seconds = 0;
};

struct point_result {
    double seconds = 0;                    // measured window
    std::vector<std::uint64_t> per_thread; // executions per worker in the window
    std::vector<std::uint64_t> per_task;   // executions per task in the window
    double cpu_share = 0;                  // CPU time the workers got / (threads x window)
    double other_share = 0; // CPU time others took on the used CPUs / (used CPUs x window)
};

/// Keeps the hashes alive; written once per worker at the end of a point.
inline std::atomic<std::uint64_t> global_sink{0};

inline double thread_cpu_seconds() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline double process_cpu_seconds() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Busy time (user, nice, system, irq, softirq, steal) of `cpus` from /proc/stat, in seconds.
inline double busy_seconds(std::vector<int> const& cpus) {
    std::ifstream in("/proc/stat");
    std::string line;
    double ticks = 0;
    while (std::getline(in, line)) {
        if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') {
            continue;
        }
        std::istringstream fields(line.substr(3));
        int cpu = -1;
        std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                      steal = 0;
        fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
        if (std::find(cpus.begin(), cpus.end(), cpu) != cpus.end()) {
            ticks += static_cast<double>(user + nice + system + irq + softirq + steal);
        }
    }
    return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// Runs one measurement point on a fresh scheduler. Throws std::system_error when a worker (or
/// the producer) cannot be pinned.
template <typename Scheduler>
point_result run_point(point_config const& config) {
    enum class phase : int { starting, warm_up, measure, stop };
    // alignas: read by every worker on every iteration; keep it off the lines that change.
    struct alignas(128) shared_flags {
        std::atomic<phase> current{phase::starting};
    };
    shared_flags flags;
    std::atomic<std::size_t> ready{0};
    std::atomic<int> pin_error{0};

    constexpr bool has_producer = requires(Scheduler & s) {
        s.produce_one();
    };
    Scheduler scheduler(config.tasks, config.threads);
    std::vector<std::vector<std::uint64_t>> counts(config.threads,
                                                   std::vector<std::uint64_t>(config.tasks));
    std::vector<std::vector<std::uint64_t>> warm_counts(config.threads,
                                                        std::vector<std::uint64_t>(config.tasks));

    auto const pin_or_record = [&](int cpu) {
        try {
            pin_this_thread(cpu, "benchmark worker");
        } catch (std::system_error const& e) {
            // relaxed: read by the main thread after it saw `ready` (acquire) below.
            pin_error.store(e.code().value(), std::memory_order_relaxed);
        }
    };
    auto const wait_for_start = [&] {
        // release: pairs with the acquire load in the main thread's start wait.
        ready.fetch_add(1, std::memory_order_release);
        // relaxed: a start flag only; nothing is read on the strength of it.
        while (flags.current.load(std::memory_order_relaxed) == phase::starting) {
            std::this_thread::yield();
        }
    };

    std::vector<double> cpu_seconds(config.threads);
    std::vector<std::thread> workers;
    workers.reserve(config.threads + 1);
    for (std::size_t w = 0; w < config.threads; ++w) {
        workers.emplace_back([&, w] {
            pin_or_record(config.cpus[w]);
            worker_context ctx;
            ctx.counts = warm_counts[w].data();
            this_worker = &ctx;
            wait_for_start();
            phase seen = phase::warm_up;
            double cpu_start = 0;
            for (;;) {
                // relaxed: the phase only switches where executions are counted; the counts
                // reach the main thread through join().
                phase const now = flags.current.load(std::memory_order_relaxed);
                if (now != seen) {
                    if (now == phase::stop) {
                        cpu_seconds[w] = thread_cpu_seconds() - cpu_start;
                        break;
                    }
                    ctx.counts = counts[w].data();
                    cpu_start = thread_cpu_seconds();
                    seen = now;
                }
                (void)scheduler.run_one(w);
            }
            this_worker = nullptr;
            // relaxed: only keeps the hashes from being optimised away.
            global_sink.fetch_add(ctx.sink, std::memory_order_relaxed);
        });
    }
    if constexpr (has_producer) {
        workers.emplace_back([&] {
            pin_or_record(config.producer_cpu);
            wait_for_start();
            // relaxed: a stop flag only; what the producer scheduled reaches the workers through
            // the scheduler's own synchronisation.
            while (flags.current.load(std::memory_order_relaxed) != phase::stop) {
                scheduler.produce_one();
            }
        });
    }

    std::size_t const started = workers.size();
    // acquire: pairs with the threads' release increments (pin_error is visible after this).
    while (ready.load(std::memory_order_acquire) != started) {
        std::this_thread::yield();
    }
    auto const set_phase = [&](phase p) {
        // relaxed: see the threads' loads.
        flags.current.store(p, std::memory_order_relaxed);
    };
    // relaxed: ordered after the acquire on `ready`.
    int const pin_rc = pin_error.load(std::memory_order_relaxed);
    if (pin_rc != 0) {
        set_phase(phase::stop);
        scheduler.stop();
        for (auto& t : workers) {
            t.join();
        }
        throw std::system_error(pin_rc, std::generic_category(),
                                "cannot pin a thread to its CPU (see --cpus, --producer-cpu)");
    }

    // The CPUs this point uses: the workers' and the producer's (which may be a worker's).
    std::vector<int> used_cpus(config.cpus.begin(),
                               config.cpus.begin() + static_cast<std::ptrdiff_t>(config.threads));
    if (has_producer &&
        std::find(used_cpus.begin(), used_cpus.end(), config.producer_cpu) == used_cpus.end()) {
        used_cpus.push_back(config.producer_cpu);
    }

    using clock = std::chrono::steady_clock;
    set_phase(phase::warm_up);
    std::this_thread::sleep_for(std::chrono::duration<double>(config.warm_up_seconds));
    set_phase(phase::measure);
    auto const start = clock::now();
    double const busy_start = busy_seconds(used_cpus);
    double const process_start = process_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::duration<double>(config.seconds));
    set_phase(phase::stop);
    auto const stop = clock::now();
    double const busy = busy_seconds(used_cpus) - busy_start;
    double const ours = process_cpu_seconds() - process_start;
    scheduler.stop();
    for (auto& t : workers) {
        t.join();
    }

    point_result result;
    result.seconds = std::chrono::duration<double>(stop - start).count();
    result.per_thread.assign(config.threads, 0);
    result.per_task.assign(config.tasks, 0);
    double cpu_total = 0;
    for (double c : cpu_seconds) {
        cpu_total += c;
    }
    result.cpu_share = cpu_total / (static_cast<double>(config.threads) * result.seconds);
    double const capacity = static_cast<double>(used_cpus.size()) * result.seconds;
    result.other_share = busy > ours ? (busy - ours) / capacity : 0.0;
    for (std::size_t w = 0; w < config.threads; ++w) {
        for (std::size_t t = 0; t < config.tasks; ++t) {
            result.per_thread[w] += counts[w][t];
            result.per_task[t] += counts[w][t];
        }
    }
    return result;
}

/// Mean time of one hash_task<N> body alone, measured on `cpu` for about `seconds`.
template <unsigned N>
double measure_body_ns(int cpu, double seconds) {
    double ns = 0;
    std::thread thread([&] {
        pin_this_thread(cpu, "body timer");
        using clock = std::chrono::steady_clock;
        std::uint64_t sink = 0;
        std::uint64_t calls = 0;
        auto const start = clock::now();
        auto const end = start + std::chrono::duration<double>(seconds);
        auto now = start;
        do {
            for (unsigned i = 0; i < 1024; ++i) {
                sink = hash_task<N>::run(sink + i);
            }
            calls += 1024;
            now = clock::now();
        } while (now < end);
        ns = std::chrono::duration<double, std::nano>(now - start).count() /
             static_cast<double>(calls);
        // relaxed: only keeps the hashes from being optimised away.
        global_sink.fetch_add(sink, std::memory_order_relaxed);
    });
    thread.join();
    return ns;
}

} // namespace signet::bench
