#pragma once

// group_state: the shared state behind work_contract_group, blocking_work_contract_group, their
// work_contract handles and tokens. Internal; the public types are thin wrappers.
//
// Threading contract
//   schedule(), release(), is_current(): any thread, any time while the state exists (handles
//   keep it alive with a shared_ptr, so they may outlive the group object).
//   create(): any thread. execute_next*(): any number of worker threads.
//   close(): only from the group's destructor, when no thread executes in the group.
//
// Per-slot state: one 64-bit atomic word
//   bits 63..8  generation: bumped each time the slot is recycled; handles and tokens carry the
//               generation they were made for, so stale ones never touch a new occupant
//   bit 2       release requested (R)      bit 1  executing (E)      bit 0  scheduled (S)
//
// State machine (the slot is in the signal tree exactly when one run or release is owed)
//   schedule:  S:=1 unless stale or R. Signals the tree only if neither S nor E was set (a run in
//              progress re-signals on finish; an already scheduled contract coalesces).
//   release:   R:=1 unless stale or R. Signals the tree only if neither S nor E was set.
//   claim:     the worker that selected the slot flips S and E in one fetch_xor. If R was set it
//              runs the release callback instead of the work, then recycles the slot.
//   self:      a run that schedules itself through its own token (or this_contract) only sets a
//              thread-local flag: E is set, so the request could not signal anyway, and finish
//              turns the flag into S in the RMW it makes regardless (one RMW fewer per cycle).
//   finish:    if R was set during the run, run the release right away (E still set, so nobody
//              else can claim the slot). Else E:=0; if S or R was set meanwhile, signal the tree
//              again (exactly one follow-up).
//   recycle:   destroy the callables, bump the generation, clear the flags, free the slot.
//
// Costs per schedule + execute of one contract: schedule = 1 compare-exchange + signal_tree::set
// (none when the run schedules itself; finish signals instead); execute = signal_tree::select +
// 1 fetch_xor + 1 compare-exchange, one indirect call, no allocation.

#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include <signet/core/cache_line.hpp>
#include <signet/core/signal_tree.hpp>
#include <signet/core/work_contract_token.hpp>

namespace signet::detail {

inline constexpr std::uint64_t scheduled_flag = 1;
inline constexpr std::uint64_t executing_flag = 2;
inline constexpr std::uint64_t release_flag = 4;
inline constexpr unsigned generation_shift = 8;
inline constexpr std::uint32_t no_slot = ~std::uint32_t{0};

inline constexpr contract_id make_contract_id(std::uint32_t slot, std::uint64_t generation) {
    return (generation << 32) | slot;
}

/// Type-erased operations on a slot's stored callables: plain function pointers, one table per
/// callable type (no virtual call, no std::function).
struct contract_ops {
    void (*work)(void* storage, work_contract_token& token);
    void (*release)(void* storage);                    // null: no release callback
    void (*handle)(void* storage, std::exception_ptr); // null: exceptions propagate
    void (*destroy)(void* storage) noexcept;
};

/// Callables of up to this many bytes are stored inside the slot, without allocation.
inline constexpr std::size_t inline_callable_size = 96;

// alignas: one slot per cache line pair, so schedulers of one contract never false-share with
// workers running its neighbours.
struct alignas(destructive_interference_size) contract_slot {
    std::atomic<std::uint64_t> state{0};
    contract_ops const* ops = nullptr; // written by the creator before the state is published
    alignas(std::max_align_t) std::byte storage[inline_callable_size];
};
static_assert(inline_callable_size >= 48, "the issue asks for an inline buffer of >= 48 bytes");
static_assert(sizeof(contract_slot) % destructive_interference_size == 0);

// Marks an absent release callback or handler (its ops entry is null; the operators exist only so
// the unused wrappers compile).
struct no_callback {
    void operator()() const noexcept {}
    void operator()(std::exception_ptr const&) const noexcept {}
};

template <typename Work, typename Release, typename Handler>
struct contract_callables {
    [[no_unique_address]] Work work;
    [[no_unique_address]] Release release;
    [[no_unique_address]] Handler handler;
};

template <typename Callables, bool Inline>
struct contract_ops_for {
    static Callables& get(void* storage) noexcept {
        if constexpr (Inline) {
            return *std::launder(static_cast<Callables*>(storage));
        } else {
            return **std::launder(static_cast<Callables**>(storage));
        }
    }
    static void work(void* storage, work_contract_token& token) {
        auto& fn = get(storage).work;
        if constexpr (std::is_invocable_v<decltype(fn)&, work_contract_token&>) {
            fn(token);
        } else {
            fn();
        }
    }
    static void release(void* storage) { get(storage).release(); }
    static void handle(void* storage, std::exception_ptr error) {
        get(storage).handler(std::move(error));
    }
    static void destroy(void* storage) noexcept {
        if constexpr (Inline) {
            get(storage).~Callables();
        } else {
            delete &get(storage);
        }
    }
    static constexpr bool has_release =
        !std::is_same_v<decltype(std::declval<Callables&>().release), no_callback>;
    static constexpr bool has_handler =
        !std::is_same_v<decltype(std::declval<Callables&>().handler), no_callback>;
    static constexpr contract_ops table{&work, has_release ? &release : nullptr,
                                        has_handler ? &handle : nullptr, &destroy};
};

/// The work_contract_token of the work running on this thread (nullptr outside a run).
inline thread_local work_contract_token* current_token = nullptr;
/// Set when the work running on this thread schedules itself through current_token; the run's
/// finish publishes it as S (see "self" above). Saved and restored around nested runs.
inline thread_local bool current_rescheduled = false;

class group_state {
public:
    group_state(std::size_t capacity, bool blocking);
    group_state(group_state const&) = delete;
    group_state& operator=(group_state const&) = delete;
    ~group_state() { close(); }

    [[nodiscard]] std::size_t capacity() const noexcept { return tree_.capacity(); }

    /// Any thread. Stores the callables in a free slot of `where` (anywhere if where.count == 0)
    /// and publishes the contract. Returns {no_slot, 0} when no slot is free.
    template <typename Work, typename Release, typename Handler>
    std::pair<std::uint32_t, std::uint64_t> create(lane where, Work&& work, Release&& release,
                                                   Handler&& handler, initial_state initial);

    /// Any thread; lock-free. False for a stale (generation) or released contract.
    bool schedule(std::uint32_t slot, std::uint64_t generation) noexcept;
    /// Any thread; lock-free. True only for the first request on a current contract.
    bool release(std::uint32_t slot, std::uint64_t generation) noexcept;
    /// Any thread; a snapshot: the contract exists and release was not requested.
    [[nodiscard]] bool is_current(std::uint32_t slot, std::uint64_t generation) const noexcept;

    /// Worker thread. Selects one scheduled contract (preferring `preferred`) and runs its work
    /// or its release; false if none was scheduled.
    bool execute_next(lane preferred);
    /// Worker thread (blocking groups). As execute_next, but waits for work until `deadline`
    /// (forever if empty) or stop(); false on timeout or when stopped with nothing scheduled.
    bool execute_next_waiting(std::optional<std::chrono::steady_clock::time_point> deadline);

    void stop() noexcept;
    [[nodiscard]] bool stopped() const noexcept {
        // acquire: pairs with the release store in stop().
        return stopped_.load(std::memory_order_acquire);
    }

    /// Group destructor only: destroys the callables of live contracts without running any
    /// callback, and invalidates every handle (bumps each live slot's generation).
    void close() noexcept;

private:
    std::uint32_t acquire_slot(lane where) noexcept;
    void free_slot(std::uint32_t slot) noexcept;
    void publish(std::uint32_t slot, std::uint64_t generation, initial_state initial) noexcept;
    void execute_slot(std::uint32_t slot);
    void finish_run(std::uint32_t slot, bool rescheduled) noexcept;
    void run_release(std::uint32_t slot, std::uint64_t generation);
    void recycle(std::uint32_t slot, std::uint64_t generation) noexcept;
    void signal(std::size_t slot) noexcept;
    void wake_one() noexcept;
    std::size_t& thread_cursor() noexcept;

    signal_tree tree_;
    std::unique_ptr<contract_slot[]> slots_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> free_; // bit set = slot free
    std::size_t free_words_;
    std::uint64_t const id_; // unique per group, keys the per-thread bias cursor
    bool const blocking_;
    bool closed_ = false;
    // alignas: waiters_ is read by every signal() of a blocking group; keep it off the lines
    // written by creators and the fields above.
    alignas(destructive_interference_size) std::atomic<std::uint32_t> waiters_{0};
    std::atomic<bool> stopped_{false};
    std::mutex mutex_;
    std::condition_variable cv_;
};

// ---- creation (template) -------------------------------------------------------------------

template <typename Work, typename Release, typename Handler>
std::pair<std::uint32_t, std::uint64_t> group_state::create(lane where, Work&& work,
                                                            Release&& release, Handler&& handler,
                                                            initial_state initial) {
    using callables =
        contract_callables<std::decay_t<Work>, std::decay_t<Release>, std::decay_t<Handler>>;
    constexpr bool fits = sizeof(callables) <= inline_callable_size &&
                          alignof(callables) <= alignof(std::max_align_t);
    std::unique_ptr<callables> heap; // too large for the slot: the one allocation, made up front
    if constexpr (!fits) {
        heap.reset(new callables{std::forward<Work>(work), std::forward<Release>(release),
                                 std::forward<Handler>(handler)});
    }
    std::uint32_t const slot = acquire_slot(where);
    if (slot == no_slot) {
        return {no_slot, 0};
    }
    contract_slot& s = slots_[slot];
    if constexpr (fits) {
        try {
            ::new (static_cast<void*>(s.storage))
                callables{std::forward<Work>(work), std::forward<Release>(release),
                          std::forward<Handler>(handler)};
        } catch (...) {
            free_slot(slot);
            throw;
        }
    } else {
        ::new (static_cast<void*>(s.storage)) callables*(heap.release());
    }
    s.ops = &contract_ops_for<callables, fits>::table;
    // relaxed: the slot is ours alone since acquire_slot() (its acquire orders this load after
    // the recycler's store).
    std::uint64_t const generation = s.state.load(std::memory_order_relaxed) >> generation_shift;
    publish(slot, generation, initial);
    return {slot, generation};
}

// ---- hot paths (inline) --------------------------------------------------------------------

inline bool group_state::schedule(std::uint32_t slot, std::uint64_t generation) noexcept {
    auto& state = slots_[slot].state;
    // relaxed: only seeds the compare-exchange, which re-validates the whole word.
    std::uint64_t expected = state.load(std::memory_order_relaxed);
    // The loop repeats only when another thread changed this contract's word in between (a
    // claim, a finish, a release or another schedule), so it is lock-free.
    for (;;) {
        if ((expected >> generation_shift) != generation || (expected & release_flag) != 0) {
            return false;
        }
        // release: pairs with the acquire fetch_xor in execute_slot(), so what the caller wrote
        // before schedule() is visible to the run it causes. When S is already set this is a
        // same-value exchange that still joins the release sequence the claim reads from.
        if (state.compare_exchange_weak(expected, expected | scheduled_flag,
                                        std::memory_order_release, std::memory_order_relaxed)) {
            if ((expected & (scheduled_flag | executing_flag)) == 0) {
                signal(slot);
            }
            return true;
        }
    }
}

inline bool group_state::release(std::uint32_t slot, std::uint64_t generation) noexcept {
    auto& state = slots_[slot].state;
    // relaxed: only seeds the compare-exchange.
    std::uint64_t expected = state.load(std::memory_order_relaxed);
    for (;;) {
        if ((expected >> generation_shift) != generation || (expected & release_flag) != 0) {
            return false;
        }
        // release: pairs with the acquire fetch_xor in execute_slot(); the release callback sees
        // what the caller wrote before release().
        if (state.compare_exchange_weak(expected, expected | release_flag,
                                        std::memory_order_release, std::memory_order_relaxed)) {
            if ((expected & (scheduled_flag | executing_flag)) == 0) {
                signal(slot); // idle: owe a run of the release callback
            }
            return true;
        }
    }
}

inline bool group_state::is_current(std::uint32_t slot, std::uint64_t generation) const noexcept {
    // relaxed: a snapshot; nothing is read on the strength of it.
    std::uint64_t const state = slots_[slot].state.load(std::memory_order_relaxed);
    return (state >> generation_shift) == generation && (state & release_flag) == 0;
}

inline void group_state::signal(std::size_t slot) noexcept {
    // tree_.set() ends with a seq_cst RMW on the root and waiters_ is read seq_cst: Dekker-style
    // pairing with execute_next_waiting(), which increments waiters_ (seq_cst) before it reads
    // the root. Either the waiter sees the signal or we see the waiter. Non-blocking groups never
    // read waiters_.
    if (tree_.set(slot) && blocking_ && waiters_.load(std::memory_order_seq_cst) != 0) {
        wake_one();
    }
}

inline std::size_t& group_state::thread_cursor() noexcept {
    // Per-thread bias cursors, keyed by group id; a thread usually serves one group, so the
    // first entry hits. Evicted round-robin when a thread serves more than four groups.
    struct entry {
        std::uint64_t group;
        std::size_t cursor;
    };
    thread_local entry cache[4]{};
    thread_local unsigned victim = 0;
    for (auto& e : cache) {
        if (e.group == id_) {
            return e.cursor;
        }
    }
    entry& e = cache[victim++ % 4];
    e = {id_, 0};
    return e.cursor;
}

inline bool group_state::execute_next(lane preferred) {
    std::size_t& cursor = thread_cursor();
    std::size_t const slot = tree_.select(cursor, preferred);
    if (slot == signal_tree::npos) {
        return false;
    }
    // Advance the bias past the slot taken: the next selection starts at its neighbour, so
    // every scheduled contract runs within one sweep (fairness).
    cursor = slot + 1 == tree_.capacity() ? 0 : slot + 1;
    execute_slot(static_cast<std::uint32_t>(slot));
    return true;
}

inline void group_state::execute_slot(std::uint32_t slot) {
    contract_slot& s = slots_[slot];
    // acquire: pairs with the release in publish(), schedule(), release() and finish_run():
    // the stored callables and the schedulers' writes are visible to this run. One RMW clears
    // S and sets E (only the selector of the slot flips them; others only add S or R).
    std::uint64_t const state =
        s.state.fetch_xor(scheduled_flag | executing_flag, std::memory_order_acquire);
    assert((state & executing_flag) == 0 && "signal_tree handed out a running contract");
    std::uint64_t const generation = state >> generation_shift;
    if ((state & release_flag) != 0) {
        run_release(slot, generation);
        return;
    }
    work_contract_token token(this, slot, generation);
    struct run_scope {
        group_state& group;
        std::uint32_t slot;
        work_contract_token* previous;
        bool previous_rescheduled;
        bool finished = false;
        ~run_scope() {
            current_token = previous;
            bool const rescheduled = std::exchange(current_rescheduled, previous_rescheduled);
            if (!finished) {
                // on exceptions too: the group stays consistent
                group.finish_run(slot, rescheduled);
            }
        }
    } scope{*this, slot, std::exchange(current_token, &token),
            std::exchange(current_rescheduled, false)};
    try {
        s.ops->work(s.storage, token);
    } catch (...) {
        if (s.ops->handle == nullptr) {
            throw; // guarantee 4: no handler, so it propagates out of execute_next_contract()
        }
        s.ops->handle(s.storage, std::current_exception());
    }
    scope.finished = true;
    current_token = scope.previous;
    bool const rescheduled = std::exchange(current_rescheduled, scope.previous_rescheduled);
    // Released during the run (the one-shot pattern): run the release right here. E is still
    // set and R is sticky, so no other thread can signal or claim the slot meanwhile. A
    // self-schedule of this run is dropped, as schedule() after release always is.
    // acquire: pairs with the release compare-exchange in release().
    if ((s.state.load(std::memory_order_acquire) & release_flag) != 0) {
        run_release(slot, generation);
        return;
    }
    finish_run(slot, rescheduled);
}

inline void group_state::finish_run(std::uint32_t slot, bool rescheduled) noexcept {
    auto& state = slots_[slot].state;
    // E:=0, and S:=1 when the run scheduled itself. One compare-exchange either way (a
    // fetch_and whose result is used compiles to the same loop on x86); it repeats only when a
    // scheduler or releaser changed the word in between, so it is lock-free.
    std::uint64_t const self = rescheduled ? scheduled_flag : 0;
    // relaxed: only seeds the compare-exchange.
    std::uint64_t expected = state.load(std::memory_order_relaxed);
    // release: this run's writes (including those before a self-schedule) reach the next run,
    // whose claim (acquire fetch_xor) reads this value or a later one (schedulers' exchanges in
    // between continue the release sequence).
    while (!state.compare_exchange_weak(expected, (expected & ~executing_flag) | self,
                                        std::memory_order_release, std::memory_order_relaxed)) {
    }
    if (((expected | self) & (scheduled_flag | release_flag)) != 0) {
        signal(slot); // scheduled or released during the run: exactly one follow-up
    }
}

} // namespace signet::detail

namespace signet {

inline void work_contract_token::schedule() noexcept {
    if (detail::current_token == this) {
        // The running work schedules itself on its own thread (copies of the token have other
        // addresses and take the general path): E is set until this run finishes, so just
        // record the request; finish_run() publishes it. Dropped if release wins (see there).
        detail::current_rescheduled = true;
        return;
    }
    group_->schedule(slot_, generation_);
}
inline void work_contract_token::release() noexcept {
    group_->release(slot_, generation_);
}
inline contract_id work_contract_token::get_id() const noexcept {
    return detail::make_contract_id(slot_, generation_);
}

inline void this_contract::schedule() noexcept {
    if (auto* token = detail::current_token; token != nullptr) {
        token->schedule();
    }
}
inline void this_contract::release() noexcept {
    if (auto* token = detail::current_token; token != nullptr) {
        token->release();
    }
}
inline contract_id this_contract::get_id() noexcept {
    auto* token = detail::current_token;
    return token != nullptr ? token->get_id() : invalid_contract_id;
}

} // namespace signet
