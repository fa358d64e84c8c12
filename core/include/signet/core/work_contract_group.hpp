#pragma once

// work_contract_group / blocking_work_contract_group: a fixed-capacity set of work contracts and
// the signal tree that says which of them are scheduled.
//
// Threading contract
//   create_contract(): any thread. execute_next_contract(): any number of worker threads (bring
//   your own, or use worker_pool). Handles: see work_contract. The group object itself must not
//   be destroyed while a thread is inside execute_next_contract().
//
// Guarantees (docs/architecture.md §1): a contract's work never runs on two threads at once;
// schedules coalesce (any number before a run cause one run; one during a run causes exactly one
// more); release runs exactly once, after the last run, on a worker thread; exceptions go to the
// handler or out of execute_next_contract(); handles outlive the group safely; nothing allocates
// after creation; selection is fair (a per-thread cursor advances after every execution).
//
// Destroying a group with live contracts destroys their stored callables without running any
// callback (no work, no release); their handles turn invalid.
//
// Costs: create = a scan of the free-slot bitmap (lock-free) and, only for callables larger than
// 96 bytes, one allocation. schedule and execute: see detail/contract_group_state.hpp.

#include <chrono>
#include <concepts>
#include <cstddef>
#include <exception>
#include <memory>
#include <utility>

#include <signet/core/signal_tree.hpp>
#include <signet/core/work_contract.hpp>

namespace signet {

enum class synchronization_mode { non_blocking, blocking };

/// Work callables take no argument or a work_contract_token&.
template <typename F>
concept work_callable = std::invocable < std::decay_t<F>
& > || std::invocable<std::decay_t<F>&, work_contract_token&>;
template <typename F>
concept release_callable = std::invocable < std::decay_t<F>
& > ;
template <typename F>
concept exception_handler = std::invocable < std::decay_t<F>
&, std::exception_ptr > ;

template <synchronization_mode Mode>
class basic_work_contract_group {
public:
    static constexpr std::size_t default_capacity = 512;

    /// capacity is rounded up to a multiple of 64; throws std::invalid_argument for 0.
    explicit basic_work_contract_group(std::size_t capacity = default_capacity)
        : state_(std::make_shared<detail::group_state>(capacity,
                                                       Mode == synchronization_mode::blocking)) {}
    basic_work_contract_group(basic_work_contract_group const&) = delete;
    basic_work_contract_group& operator=(basic_work_contract_group const&) = delete;
    ~basic_work_contract_group() { state_->close(); }

    [[nodiscard]] std::size_t capacity() const noexcept { return state_->capacity(); }

    /// Any thread. A full group returns an invalid handle (never blocks). The `lane` overloads
    /// place the contract in that slot range (invalid handle when the range is full).
    template <work_callable Work>
    work_contract create_contract(Work&& work, initial_state initial = initial_state::unscheduled) {
        return make(lane{}, std::forward<Work>(work), detail::no_callback{}, detail::no_callback{},
                    initial);
    }
    template <work_callable Work, release_callable Release>
    work_contract create_contract(Work&& work, Release&& release,
                                  initial_state initial = initial_state::unscheduled) {
        return make(lane{}, std::forward<Work>(work), std::forward<Release>(release),
                    detail::no_callback{}, initial);
    }
    template <work_callable Work, release_callable Release, exception_handler Handler>
    work_contract create_contract(Work&& work, Release&& release, Handler&& handler,
                                  initial_state initial = initial_state::unscheduled) {
        return make(lane{}, std::forward<Work>(work), std::forward<Release>(release),
                    std::forward<Handler>(handler), initial);
    }
    template <work_callable Work>
    work_contract create_contract(lane where, Work&& work,
                                  initial_state initial = initial_state::unscheduled) {
        return make(where, std::forward<Work>(work), detail::no_callback{}, detail::no_callback{},
                    initial);
    }
    template <work_callable Work, release_callable Release>
    work_contract create_contract(lane where, Work&& work, Release&& release,
                                  initial_state initial = initial_state::unscheduled) {
        return make(where, std::forward<Work>(work), std::forward<Release>(release),
                    detail::no_callback{}, initial);
    }
    template <work_callable Work, release_callable Release, exception_handler Handler>
    work_contract create_contract(lane where, Work&& work, Release&& release, Handler&& handler,
                                  initial_state initial = initial_state::unscheduled) {
        return make(where, std::forward<Work>(work), std::forward<Release>(release),
                    std::forward<Handler>(handler), initial);
    }

    /// Worker thread. Runs the next scheduled contract's work (or its release) once: exactly
    /// one contract per call; true if one ran. The next is the first scheduled slot at or after
    /// this thread's cursor, cyclically (fairness). Non-blocking group: never waits. Blocking
    /// group: waits until something is scheduled or stop() was called (then returns false once
    /// nothing is scheduled).
    bool execute_next_contract() {
        if constexpr (Mode == synchronization_mode::blocking) {
            return state_->execute_next_waiting(std::nullopt, 1) != 0;
        } else {
            return state_->execute_next(lane{}, 1) != 0;
        }
    }

    /// Worker thread; never waits. As above, preferring contracts in `preferred` and falling
    /// back to fair selection when it has nothing scheduled (lanes).
    bool execute_next_contract(lane preferred) { return state_->execute_next(preferred, 1) != 0; }

    /// Worker thread; blocking group only. As execute_next_contract(), waiting at most
    /// `timeout`; false on timeout or stop.
    bool execute_next_contract(std::chrono::nanoseconds timeout) requires(
        Mode == synchronization_mode::blocking) {
        return state_->execute_next_waiting(std::chrono::steady_clock::now() + timeout, 1) != 0;
    }

    /// Worker thread; never waits. A batch: runs up to `max` (1..max_batch, clamped) scheduled
    /// contracts of one leaf, each once, in slot order, preferring `preferred`; returns how many
    /// ran (0: nothing was scheduled). Cheaper per contract than one call each (one leaf RMW
    /// per execution, or two per batch with set_batch_claims(true)), for loops that run only
    /// contracts (worker_pool, the net runtime); a loop that polls something of its own
    /// between contracts should call execute_next_contract() instead.
    std::size_t execute_next_contracts(std::size_t max = max_batch, lane preferred = {}) {
        return state_->execute_next(preferred, clamp_batch(max));
    }

    /// Worker thread; blocking group only. As execute_next_contracts(max), waiting at most
    /// `timeout` for the first; 0 on timeout or stop.
    std::size_t execute_next_contracts(std::size_t max, std::chrono::nanoseconds timeout) requires(
        Mode == synchronization_mode::blocking) {
        return state_->execute_next_waiting(std::chrono::steady_clock::now() + timeout,
                                            clamp_batch(max));
    }

    /// Most contracts one execute_next_contracts() call runs.
    static constexpr std::size_t max_batch = detail::max_batch;

    /// Setup, before the executing threads start. true: one claim takes a whole batch of
    /// scheduled contracts (execute_next_contracts(max)) with one RMW — fastest, and the right
    /// choice when one thread executes the group, or when its contracts are many and short. The
    /// price with several executing threads: a claimed contract is invisible to the others, so
    /// a batch-mate of a long or blocking run waits although another thread could run it.
    /// false (the default) claims each contract right before it runs (one RMW per execution),
    /// and no contract ever waits that way. Correct either way, with any number of threads.
    void set_batch_claims(bool batches) noexcept { state_->set_batch_claims(batches); }

    /// Any thread; blocking group only. Permanent: wakes every waiter; later calls to
    /// execute_next_contract() run what is scheduled but never wait.
    void stop() noexcept requires(Mode == synchronization_mode::blocking) { state_->stop(); }

    /// Blocking group only: support for threads that sleep outside the group, e.g. a worker
    /// that waits in an io_uring or epoll_wait for packets (signet::net's reactor).
    /// set_external_waker: setup only, before workers start. `waker(context)` is called (from
    /// any thread, possibly several times) when a contract is scheduled while an external waiter
    /// is announced, and by stop(); it must make the sleeper return (e.g. write an eventfd).
    void set_external_waker(void (*waker)(void*), void* context) noexcept
        requires(Mode == synchronization_mode::blocking) {
        state_->set_external_waker(waker, context);
    }
    /// Worker thread, before sleeping elsewhere: announces the waiter. False when something is
    /// scheduled or the group is stopped (do not sleep; nothing was announced). After true, a
    /// schedule() from any thread calls the waker; call end_external_wait() after waking.
    [[nodiscard]] bool begin_external_wait() noexcept
        requires(Mode == synchronization_mode::blocking) {
        return state_->begin_external_wait();
    }
    void end_external_wait() noexcept requires(Mode == synchronization_mode::blocking) {
        state_->end_external_wait();
    }

    /// Any thread; blocking group only. Threads asleep (or about to sleep) in
    /// execute_next_contract(): a snapshot for diagnostics and tests, not for synchronization.
    [[nodiscard]] std::size_t waiting_threads() const noexcept
        requires(Mode == synchronization_mode::blocking) {
        return state_->waiters();
    }

private:
    static constexpr std::size_t clamp_batch(std::size_t max) noexcept {
        return max == 0 ? 1 : (max > max_batch ? max_batch : max);
    }

    template <typename Work, typename Release, typename Handler>
    work_contract make(lane where, Work&& work, Release&& release, Handler&& handler,
                       initial_state initial) {
        auto [slot, generation] =
            state_->create(where, std::forward<Work>(work), std::forward<Release>(release),
                           std::forward<Handler>(handler), initial);
        if (slot == detail::no_slot) {
            return {};
        }
        return work_contract(state_, slot, generation);
    }

    std::shared_ptr<detail::group_state> state_;
};

/// Non-blocking group: execute_next_contract() returns at once when nothing is scheduled.
using work_contract_group = basic_work_contract_group<synchronization_mode::non_blocking>;
/// Blocking group: idle workers sleep in execute_next_contract(); stop() wakes them.
using blocking_work_contract_group = basic_work_contract_group<synchronization_mode::blocking>;

} // namespace signet
