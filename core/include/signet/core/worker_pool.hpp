#pragma once

// worker_pool: N threads running batches of contracts (execute_next_contracts()) on one group.
//
// Bring-your-own-threads is the normal way to use a group; this helper is what the apps and
// benchmarks share: optional CPU pinning per thread, an idle strategy, a priority lane per
// thread, per-worker counters, a graceful stop and submit() for one-shot tasks.
//
// Threading contract: construct, stop() and destroy from one controlling thread; stats() and
// submit() from any thread.
//
// stop(): workers stop waiting for work, then keep running whatever is scheduled (work and
// releases) until nothing is, or until options.drain_timeout passes (a contract that always
// reschedules itself would otherwise keep a worker forever), then exit and are joined.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <signet/core/cache_line.hpp>
#include <signet/core/cpu_affinity.hpp>
#include <signet/core/cpu_relax.hpp>
#include <signet/core/metrics/counter.hpp>
#include <signet/core/work_contract_group.hpp>

namespace signet {

enum class idle_strategy {
    spin, ///< busy-poll with a pause instruction: lowest latency, burns the core
    /// pause, then yield, then sleep as the idle streak grows: in a blocking group, inside the
    /// group until work is scheduled (as block); else short sleeps
    backoff,
    block, ///< sleep in the blocking group until work is scheduled (blocking group only)
};

struct worker_pool_options {
    std::size_t threads = 1;
    std::vector<int> cpus{}; ///< empty: no pinning; else worker i is pinned to cpus[i % size]
    idle_strategy idle = idle_strategy::backoff;
    std::vector<lane> lanes{}; ///< empty: fair; else worker i prefers lanes[i % size]
    std::chrono::milliseconds drain_timeout{1000}; ///< bound on the drain in stop()
};

struct worker_stats {
    std::uint64_t executed = 0;   ///< contracts run (work or release)
    std::uint64_t idle_loops = 0; ///< polls that found nothing
};

template <typename Group>
class worker_pool {
public:
    /// Starts the workers. Throws std::invalid_argument for bad options (no threads, a CPU id
    /// out of range, idle_strategy::block on a non-blocking group) and std::system_error when a
    /// worker cannot be pinned (e.g. the CPU is not in this process's affinity mask).
    worker_pool(Group& group, worker_pool_options options);
    worker_pool(worker_pool const&) = delete;
    worker_pool& operator=(worker_pool const&) = delete;
    ~worker_pool() { stop(); }

    /// Controlling thread. Drains (see above) and joins; idempotent.
    void stop();

    [[nodiscard]] std::size_t size() const noexcept { return threads_.size(); }

    /// Any thread; a racy snapshot of worker `index`'s counters.
    [[nodiscard]] worker_stats stats(std::size_t index) const noexcept;

    /// Any thread. Runs `task` once on a worker, as a contract that releases itself (no task
    /// queue). Throws std::runtime_error when the group has no free slot.
    template <typename F>
    auto submit(F&& task) -> std::future<std::invoke_result_t<std::decay_t<F>&>>;

private:
    // alignas: each worker writes its own counters; keep them off each other's lines.
    // metrics::counter: one writer (the owning worker), relaxed snapshots for readers.
    struct alignas(destructive_interference_size) counters {
        metrics::counter executed;
        metrics::counter idle_loops;
    };

    std::size_t execute_batch(lane preferred, unsigned streak);
    void idle(unsigned streak) const;
    void run(std::size_t index);

    static constexpr bool blocking_group = requires(Group & g) { g.stop(); };
    static constexpr std::chrono::milliseconds block_slice{20}; // bounds stop() latency
    // backoff: the idle streak at which the pauses end, and the yields'.
    static constexpr unsigned backoff_pauses = 64;
    static constexpr unsigned backoff_yields = 256;

    Group& group_;
    worker_pool_options options_;
    std::vector<counters> counters_;
    std::vector<std::thread> threads_;
    std::atomic<bool> stopping_{false};
};

// ---- implementation ------------------------------------------------------------------------

template <typename Group>
worker_pool<Group>::worker_pool(Group& group, worker_pool_options options)
    : group_(group)
    , options_(std::move(options))
    , counters_(options_.threads) {
    if (options_.threads == 0) {
        throw std::invalid_argument("worker_pool: threads must be at least 1");
    }
    if (options_.idle == idle_strategy::block && !blocking_group) {
        throw std::invalid_argument(
            "worker_pool: idle_strategy::block needs a blocking_work_contract_group");
    }
    for (int cpu : options_.cpus) {
        if (!valid_cpu_id(cpu)) {
            throw std::invalid_argument("worker_pool: CPU id " + std::to_string(cpu) +
                                        " is out of range");
        }
    }
    threads_.reserve(options_.threads);
    for (std::size_t i = 0; i < options_.threads; ++i) {
        threads_.emplace_back([this, i] { run(i); });
        if (options_.cpus.empty()) {
            continue;
        }
        try {
            pin_thread(threads_.back(), options_.cpus[i % options_.cpus.size()],
                       "worker_pool's worker");
        } catch (...) {
            stop();
            throw;
        }
    }
}

template <typename Group>
void worker_pool<Group>::stop() {
    // release: pairs with the acquire load in run(); workers see the request.
    stopping_.store(true, std::memory_order_release);
    for (auto& t : threads_) {
        if (t.joinable()) {
            t.join();
        }
    }
}

template <typename Group>
worker_stats worker_pool<Group>::stats(std::size_t index) const noexcept {
    auto const& c = counters_[index];
    return {c.executed.value(), c.idle_loops.value()}; // a snapshot of independent counters
}

template <typename Group>
std::size_t worker_pool<Group>::execute_batch(lane preferred, unsigned streak) {
    if constexpr (blocking_group) {
        // block: always wait in the group; backoff: once its pauses and yields found nothing
        // (a worker asleep there costs nothing, where short sleeps woke it thousands of times
        // a second, and schedule() wakes it at once).
        if (options_.idle == idle_strategy::block ||
            (options_.idle == idle_strategy::backoff && streak >= backoff_yields)) {
            return group_.execute_next_contracts(Group::max_batch,
                                                 std::chrono::nanoseconds(block_slice));
        }
    }
    return group_.execute_next_contracts(Group::max_batch, preferred); // never waits
}

template <typename Group>
void worker_pool<Group>::idle(unsigned streak) const {
    switch (options_.idle) {
    case idle_strategy::spin:
        cpu_relax();
        break;
    case idle_strategy::backoff:
        if (streak < backoff_pauses) {
            cpu_relax();
        } else if (streak < backoff_yields) {
            std::this_thread::yield();
        } else if constexpr (!blocking_group) {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        } // a blocking group: execute_batch() waits in it
        break;
    case idle_strategy::block:
        break; // execute_batch() already waited in the group
    }
}

template <typename Group>
void worker_pool<Group>::run(std::size_t index) {
    auto& mine = counters_[index];
    lane const preferred =
        options_.lanes.empty() ? lane{} : options_.lanes[index % options_.lanes.size()];
    unsigned streak = 0;
    // acquire: pairs with the release store in stop().
    while (!stopping_.load(std::memory_order_acquire)) {
        if (std::size_t const ran = execute_batch(preferred, streak); ran != 0) {
            mine.executed.add(ran);
            streak = 0;
        } else {
            mine.idle_loops.add();
            idle(streak++);
        }
    }
    // Drain: run what is scheduled (work and releases) without waiting, within the bound.
    auto const deadline = std::chrono::steady_clock::now() + options_.drain_timeout;
    while (std::size_t const ran = group_.execute_next_contracts(Group::max_batch)) {
        mine.executed.add(ran);
        if (std::chrono::steady_clock::now() >= deadline) {
            break;
        }
    }
}

template <typename Group>
template <typename F>
auto worker_pool<Group>::submit(F&& task) -> std::future<std::invoke_result_t<std::decay_t<F>&>> {
    using result = std::invoke_result_t<std::decay_t<F>&>;
    std::promise<result> promise;
    auto future = promise.get_future();
    auto contract = group_.create_contract(
        [promise = std::move(promise),
         task = std::forward<F>(task)](work_contract_token& token) mutable {
            token.release(); // one shot: never runs again; the slot is recycled after this run
            try {
                if constexpr (std::is_void_v<result>) {
                    task();
                    promise.set_value();
                } else {
                    promise.set_value(task());
                }
            } catch (...) {
                promise.set_exception(std::current_exception());
            }
        },
        initial_state::scheduled);
    if (contract.get_id() == invalid_contract_id) {
        throw std::runtime_error("worker_pool::submit: the group has no free contract slot");
    }
    contract.detach(); // the contract releases itself; dropping the handle must not
    return future;
}

} // namespace signet
