#pragma once

/// metrics::gauge: a signed 64-bit value that goes up and down (queue depth, a state as 0/1,
/// the next expected sequence number), set by its owner and read by any thread.
///
/// Threading: set() and value() run on any thread. Concurrent set() calls are safe (one of the
/// values wins), but a gauge means "the current value of X", so normally one owner sets it.
///
/// Design: one std::atomic<std::int64_t>; every access is relaxed. A gauge is a statistic:
/// nothing is published through it, so a reader orders nothing on it and sees some value that
/// was set (never a torn one). A reader that needs the gauge to agree with other data must
/// synchronize with the writer by other means.
///
/// Costs: set() is one plain store, value() one load. 8 bytes, no alignment (the owner places it).

#include <atomic>
#include <cstdint>

namespace signet::metrics {

class gauge {
public:
    gauge() noexcept = default;
    gauge(gauge const&) = delete;
    gauge& operator=(gauge const&) = delete;
    gauge(gauge&&) = delete;
    gauge& operator=(gauge&&) = delete;

    /// Any thread (normally the owner).
    void set(std::int64_t v) noexcept {
        value_.store(v, std::memory_order_relaxed); // relaxed: a statistic; publishes nothing
    }

    /// Any thread. The value of some recent set(); 0 before the first.
    [[nodiscard]] std::int64_t value() const noexcept {
        return value_.load(std::memory_order_relaxed); // relaxed: a statistic; orders nothing
    }

private:
    static_assert(std::atomic<std::int64_t>::is_always_lock_free,
                  "metrics need lock-free 64-bit atomics");
    std::atomic<std::int64_t> value_{0};
};

} // namespace signet::metrics
