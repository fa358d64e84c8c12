#pragma once

/// metrics::counter: a monotonically increasing 64-bit count with one writer at a time and any
/// number of readers (packets parsed, gaps seen, bytes received).
///
/// Threading: add() is writer-side; calls must not overlap, and a writer that moves to another
/// thread must be ordered after the previous one by happens-before (the runs of one work
/// contract are; so are a mutex and a join). value() runs on any thread at any time.
///
/// Not for several concurrent writers: add() is a load and a store, not a read-modify-write, so
/// two writers lose each other's increments. Give each writer its own counter and sum their
/// value()s when reading (the usual per-feed / per-worker layout), or, if writers truly share
/// one count, use an std::atomic with fetch_add(memory_order_relaxed) (a locked instruction and
/// a contended cache line on every increment). No shared_counter exists because nothing in
/// signet needs one yet.
///
/// Design: one std::atomic<std::uint64_t>. Every access is relaxed: a counter is a statistic;
/// nothing is published through it, so readers order nothing on its value. A reader sees some
/// value the writer stored (never a torn one) and, on the same thread, never an older value
/// after a newer one (read-read coherence), so rates computed from successive reads are
/// non-negative. The count wraps modulo 2^64 (centuries at a billion increments a second).
///
/// Costs: add() is an ordinary load, add and store on the writer's own cache line (no locked
/// instruction, no fence); value() is one load. 8 bytes, no alignment: the owner decides what
/// shares its cache line (place counters written by one thread together).

#include <atomic>
#include <cstdint>

namespace signet::metrics {

class counter {
public:
    counter() noexcept = default;
    counter(counter const&) = delete;
    counter& operator=(counter const&) = delete;
    counter(counter&&) = delete;
    counter& operator=(counter&&) = delete;

    /// Writer-side. Adds n (modulo 2^64).
    void add(std::uint64_t n = 1) noexcept {
        // relaxed load: only the writer stores value_, so it reads its own last store.
        // relaxed store: readers take a statistic and order nothing on it.
        value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }

    /// Any thread. The count as of some recent add().
    [[nodiscard]] std::uint64_t value() const noexcept {
        return value_.load(std::memory_order_relaxed); // relaxed: a statistic, see above
    }

private:
    static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                  "metrics need lock-free 64-bit atomics");
    std::atomic<std::uint64_t> value_{0};
};

} // namespace signet::metrics
