#pragma once

// pacing_clock: the time source and the wait of a publisher, behind a small interface so that
// tests run a publisher on a simulated clock (sleep_until() moves the time forward at once) and
// check its schedule exactly, without sleeps or timing assertions.
//
// Threading: whatever the implementation allows; the publisher calls it from its own thread
// only. steady() is stateless and may be shared. Costs: one virtual call per reading.

#include <atomic>
#include <chrono>

namespace signet::publisher {

class pacing_clock {
public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;

    virtual ~pacing_clock() = default;
    [[nodiscard]] virtual time_point now() noexcept = 0;
    /// Waits until about `due`. May return early (the caller checks the time again: the real
    /// clock sleeps at most 50 ms at a time so that stop requests are seen), or late by the
    /// system's timer slack (tens of microseconds).
    virtual void sleep_until(time_point due) noexcept = 0;

    /// std::chrono::steady_clock and std::this_thread::sleep_for.
    [[nodiscard]] static pacing_clock& steady() noexcept;

protected:
    pacing_clock() = default;
    pacing_clock(pacing_clock const&) = default;
    pacing_clock& operator=(pacing_clock const&) = default;
};

/// Waits `how_long` on the steady clock, or until `interrupt` (a signal handler's flag; may be
/// null) is set: how a program lets its services serve a tail after sending ends.
void wait_unless_interrupted(std::chrono::nanoseconds how_long,
                             std::atomic<bool> const* interrupt) noexcept;

} // namespace signet::publisher
