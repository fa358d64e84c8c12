#pragma once

// timer: a deadline that schedules a contract of the runtime's group when it falls due — how a
// parser (or any contract) asks to run at a time point: re-request timeouts, a reorder hold's
// expiry, a recorder's flush, a live view's refresh.
//
//   net::timer t = rt.parser_timer(feed);          // setup: runs the feed's parser contract
//   net::timer s = rt.create_timer([&] { ... });   // setup: a contract of its own
//   t.arm_after(std::chrono::milliseconds(20));    // any thread, any time after setup
//
// The runtime has no timer thread: the reactor contract (poller_mode::contract) or the poller
// thread (poller_mode::thread) fires due timers after each poll, and whoever sleeps in the
// backend sleeps no longer than the earliest deadline. A timer is one slot: arming it again
// moves its deadline (the last arming wins); when it fires it is disarmed and its contract is
// scheduled once (schedules coalesce, as always). Resolution: the driver's poll — a due timer
// fires at the next poll or wake-up, typically microseconds late; a worker busy with other
// contracts polls at least every third batch of them (runtime.hpp). The clock is
// std::chrono::steady_clock.
//
// Threading: arm_*() and cancel() from any thread, wait-free but for a short compare-exchange
// loop on the earliest deadline, no allocation; arming earlier than every armed deadline while
// a thread sleeps in the backend wakes it (one eventfd write). A handle is a plain value (copy
// it freely); it must not be used after its runtime is destroyed.

#include <chrono>
#include <cstddef>

namespace signet::net {

namespace detail {
class timer_queue;
}

class timer {
public:
    using clock = std::chrono::steady_clock;

    timer() noexcept = default; ///< not attached to a runtime: arming does nothing
    timer(detail::timer_queue& queue, std::size_t index) noexcept
        : queue_(&queue)
        , index_(index) {}

    /// Fires at `deadline` (at once, at the next poll, if it has passed).
    void arm_at(clock::time_point deadline) const noexcept;
    /// Fires `delay` from now (a delay <= 0 fires at the next poll).
    void arm_after(std::chrono::nanoseconds delay) const noexcept;
    /// Disarms it (a fire already under way may still schedule the contract once).
    void cancel() const noexcept;
    [[nodiscard]] bool is_valid() const noexcept { return queue_ != nullptr; }

private:
    detail::timer_queue* queue_ = nullptr;
    std::size_t index_ = 0;
};

} // namespace signet::net
