#pragma once

// timer_queue: the runtime's timers (timer.hpp): one slot per timer, each an armed deadline and
// the contract it schedules, plus the earliest armed deadline so the driver's check costs one
// load while nothing is armed. Created at setup; armed from any thread; fired by the driver
// (the reactor contract, a worker that slept in the backend, or the poller thread).
//
// Invariant: every armed slot's deadline is >= earliest_ (earliest_ may be earlier than every
// armed deadline, e.g. after a cancel: the driver then finds nothing due and recomputes it).
//   1. arm(i, d): slot.deadline := d (release), then earliest_ := min(earliest_, d) by CAS.
//   2. fire_due(): if earliest_ <= now: earliest_ := never (exchange), then for every slot: a
//      due deadline is taken (CAS d -> 0) and its contract scheduled; a future one goes back
//      into earliest_ by the same CAS min as arm().
// Why no arming is lost: an arm whose min lands before the driver's exchange is read by the
// exchange (acquire RMW on the same word, the arm's CAS being a release RMW), so the driver's
// scan sees the slot's deadline; one whose min lands after it leaves earliest_ <= d for the next
// fire_due(). Why nothing fires twice: a deadline leaves its slot only by the CAS d -> 0, which
// one thread wins; two drivers may scan at once (a worker after its backend wait and the
// reactor contract), and the CAS decides.
// Sleepers: the thread about to sleep in the backend sets sleeping_ and then reads earliest_
// (sleep_bound()); arm() writes earliest_ and then reads sleeping_. Both seq_cst (a Dekker
// pair: store then load on the other side's variable needs store-load ordering), so either the
// sleeper sees the new deadline and sleeps less, or the arm sees the sleeper and wakes it
// through the backend's wake() (an eventfd: a wake before the sleep still ends it).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <signet/core/cache_line.hpp>
#include <signet/core/work_contract.hpp>

namespace signet::net::detail {

class timer_queue {
public:
    /// `wake(context)` makes a thread sleeping in the backend return (receive_backend::wake()).
    timer_queue(void (*wake)(void*), void* context) noexcept
        : wake_(wake)
        , context_(context) {}
    timer_queue(timer_queue const&) = delete;
    timer_queue& operator=(timer_queue const&) = delete;

    /// Setup only (no driver runs yet): a timer that schedules `*target` (not owned; it must
    /// outlive the queue's use). Returns its index.
    std::size_t add(work_contract* target);
    /// Setup only: a timer that schedules a contract it owns.
    std::size_t add(work_contract owned);

    /// Any thread. `deadline`: steady_clock nanoseconds since its epoch (0 is taken as 1).
    void arm(std::size_t index, std::int64_t deadline) noexcept;
    void cancel(std::size_t index) noexcept;

    /// Driver, any thread: schedules the contract of every timer due now. One relaxed-cost
    /// load when nothing is armed; a clock read when something is. True if any fired.
    bool fire_due() noexcept;

    /// The thread about to sleep in the backend: claims the sleeper role (false: another
    /// thread holds it). Then sleep at most sleep_bound(max), then end_sleep().
    [[nodiscard]] bool begin_sleep() noexcept;
    [[nodiscard]] std::chrono::nanoseconds sleep_bound(std::chrono::nanoseconds max) noexcept;
    void end_sleep() noexcept;

private:
    static constexpr std::int64_t never = INT64_MAX;
    struct slot {
        work_contract owned;
        work_contract* target = nullptr;
        std::atomic<std::int64_t> deadline{0}; // 0: disarmed
    };
    void lower_earliest(std::int64_t deadline) noexcept;

    std::vector<std::unique_ptr<slot>> slots_; // fixed once the driver runs
    void (*wake_)(void*);
    void* context_;
    // alignas: written by every arm() and fire_due(); keep it off the slots' and setup lines.
    alignas(destructive_interference_size) std::atomic<std::int64_t> earliest_{never};
    std::atomic<bool> sleeping_{false};
};

} // namespace signet::net::detail
