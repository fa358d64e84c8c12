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
//   bit 2       release requested (R)      bit 1  busy (B)      bit 0  scheduled again (S)
//
// B says "a run (or the release) is owed and somebody holds the contract": its bit is in the
// signal tree, or a worker claimed it and is running it or holds it in its batch. B = 0 means
// idle. Invariant: the slot's bit is in the tree only while B is set, and at most one of {the
// tree, one worker} holds a busy contract — so a contract never runs on two threads at once.
//
// State machine
//   schedule:  unless stale or R: idle -> B and set the tree bit (one CAS + tree set); busy ->
//              S (one CAS; an S already set still takes the RMW, see schedule()).
//   release:   unless stale or R: R:=1, and if idle also B:=1 and set the tree bit (a run of
//              the release callback is owed).
//   claim:     the worker whose signal_tree::claim took the bit loads the word. S set: schedules
//              arrived while it waited; they coalesce into this run, so clear S (one RMW, only
//              then). R set: run the release instead of the work, then recycle. The load is the
//              claim's linearization point: a schedule after it is "during the run".
//   self:      a run that schedules itself through its own token (or this_contract) only sets a
//              thread-local flag: the contract stays busy and goes back into the tree at the end
//              of the batch, with no RMW on the state word at all.
//   finish:    load the word. R set: run the release right away (the one-shot pattern). Self-
//              scheduled, or S set during the run: stay busy, back into the tree (an S left set
//              is cleared by the next claim, which that run serves). Else B:=0 with one CAS
//              (retried only when S or R arrived in between).
//   recycle:   destroy the callables, bump the generation, clear the flags, free the slot.
//
// Batches (what execute_next_contracts(max) runs: 1 to min(max, max_batch) contracts of one
// leaf; execute_next_contract() is a batch of one)
//   A claimed contract is invisible to other workers until it runs, so a worker that holds one
//   while running another delays it if some other thread could have run it (a long or blocking
//   run in front of it: hoarding). Hence two shapes, chosen by the group's owner:
//   * batch claims (set_batch_claims(true): the net runtime with one worker, the contention
//     benchmark, any group of many short contracts): one signal_tree::claim takes up to `max`
//     set bits of a leaf with one RMW; the worker runs them in slot order, collects those that
//     go back into the tree in a mask and publishes it with one set_bits() RMW at the end,
//     together with any claimed contract left unrun because a callback threw. Correct with any
//     number of threads; only the hoarding above is the price. (Deciding this from the threads
//     seen so far would race with a worker that starts late.)
//   * otherwise (the default): a chain. Claim one contract; after its run, one swap_claim() RMW
//     puts it back (if it goes again) and claims the next scheduled contract after it in the
//     same leaf. Nothing is held unrun; one leaf RMW per execution instead of 2/batch.
//   Either way the batch lives inside one call: no thread keeps anything once it returns. The
//   call installs one work_contract_token as current_token for all its runs (run_context):
//   per run only the token's slot and generation change.
//
// Memory orders (and their pairs)
//   * schedule()/release() CAS: release — the caller's writes reach the run it causes, through
//     the claim's acquire load (directly, or via the finish that reads S and republishes).
//   * claim load / S-clearing fetch_and: acquire — pairs with the above and with publish()'s
//     release store.
//   * finish CAS to idle: release — the run's writes reach the next run: the scheduler's CAS is
//     an RMW, so it continues this release sequence up to the next claim's acquire load.
//   * a contract that goes back into the tree carries its run's writes through set_bits()'s
//     release and the next claimer's acquire fetch_and.
//
// Costs per execution: self-rescheduling contract (the steady state of a busy group): one plain
// load of the state word, the indirect call, 2/batch leaf RMWs — no locked operation per
// contract (about 56 instructions with batches of 64, the empty-body contention task, by
// callgrind). Scheduled from another thread: schedule = 1 CAS + tree set; run = load + 1 CAS.

#include <atomic>
#include <bit>
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
inline constexpr std::uint64_t busy_flag = 2;
inline constexpr std::uint64_t release_flag = 4;
inline constexpr unsigned generation_shift = 8;
inline constexpr std::uint32_t no_slot = ~std::uint32_t{0};
/// Most contracts one execute_next_contracts() call claims and runs (one leaf RMW claims them).
inline constexpr unsigned max_batch = 64;

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
static_assert(inline_callable_size >= 48,
              "a lambda capturing a few pointers and a token must fit inline (no allocation)");
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

/// The work_contract_token of the work running on this thread (nullptr outside a run). One
/// token serves the runs of one execute_next() call: its slot and generation are set before
/// each run; the call saves and restores the outer values (nested calls from inside a run).
inline thread_local work_contract_token* current_token = nullptr;
/// Set when the work running on this thread schedules itself through current_token; the run's
/// finish publishes it as S (see "self" above). Cleared before each run; saved and restored
/// around nested calls with current_token.
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

    /// Worker thread. Claims up to `max` (1..max_batch) scheduled contracts (preferring
    /// `preferred`) and runs each one's work or release once; returns how many ran (0: none
    /// was scheduled).
    std::size_t execute_next(lane preferred, std::size_t max);
    /// Worker thread (blocking groups). As execute_next, but waits for work until `deadline`
    /// (forever if empty) or stop(); 0 on timeout or when stopped with nothing scheduled.
    std::size_t execute_next_waiting(std::optional<std::chrono::steady_clock::time_point> deadline,
                                     std::size_t max);

    void stop() noexcept;
    [[nodiscard]] bool stopped() const noexcept {
        // acquire: pairs with the release store in stop().
        return stopped_.load(std::memory_order_acquire);
    }

    /// External waiters (blocking groups): a thread that sleeps elsewhere (in an io_uring or
    /// epoll_wait) announces itself like a waiter; signal() then calls the waker set here.
    /// set_external_waker: setup only, before any thread waits.
    void set_external_waker(void (*waker)(void*), void* context) noexcept {
        external_waker_ = waker;
        external_context_ = context;
    }
    /// Announces an external waiter; false (and nothing announced) when work is scheduled or
    /// the group is stopped: then do not sleep.
    bool begin_external_wait() noexcept;
    void end_external_wait() noexcept;

    /// Setup: allow a claim to take up to max_batch contracts (see "Batches").
    void set_batch_claims(bool on) noexcept {
        // relaxed: set before the executing threads start (their start orders it).
        batch_claims_.store(on, std::memory_order_relaxed);
    }

    /// Test hook: threads currently asleep (or about to sleep) in execute_next_waiting().
    [[nodiscard]] std::uint32_t waiters() const noexcept {
        // relaxed: a snapshot for tests that wait until a worker sleeps.
        return waiters_.load(std::memory_order_relaxed);
    }

    /// Group destructor only: destroys the callables of live contracts without running any
    /// callback, and invalidates every handle (bumps each live slot's generation).
    void close() noexcept;

private:
    enum class after_run { idle, again, release };
    struct batch;
    struct run_context;

    std::uint32_t acquire_slot(lane where) noexcept;
    void free_slot(std::uint32_t slot) noexcept;
    void publish(std::uint32_t slot, std::uint64_t generation, initial_state initial) noexcept;
    void run_claimed(std::uint32_t slot, std::uint64_t& again, std::uint64_t bit,
                     work_contract_token& token);
    after_run finish_run(std::uint32_t slot, bool rescheduled) noexcept;
    void run_release(std::uint32_t slot, std::uint64_t generation);
    void recycle(std::uint32_t slot, std::uint64_t generation) noexcept;
    void signal(std::size_t slot) noexcept;
    void republish(std::size_t leaf, std::uint64_t bits) noexcept;
    void wake_if_waiting() noexcept;
    void wake_one() noexcept;
    std::size_t& thread_cursor() noexcept;
    std::size_t home_cursor() noexcept;

    signal_tree tree_;
    std::unique_ptr<contract_slot[]> slots_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> free_; // bit set = slot free
    std::size_t free_words_;
    std::uint64_t const id_; // unique per group, keys the per-thread bias cursor
    bool const blocking_;
    bool closed_ = false;
    std::atomic<std::uint32_t> threads_seen_{0}; // numbers the threads' home cursors
    std::atomic<std::size_t> free_hint_{0};      // free_ word where the last creation found a slot
    std::atomic<bool> batch_claims_{false};      // set_batch_claims(): one executing thread
    // alignas: waiters_ is read by every signal() of a blocking group; keep it off the lines
    // written by creators and the fields above.
    alignas(destructive_interference_size) std::atomic<std::uint32_t> waiters_{0};
    std::atomic<std::uint32_t> external_waiters_{0}; // part of waiters_ sleeping elsewhere
    std::atomic<bool> stopped_{false};
    void (*external_waker_)(void*) = nullptr;
    void* external_context_ = nullptr;
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
    // finish, a claim clearing S, a release or another schedule), so it is lock-free.
    for (;;) {
        if ((expected >> generation_shift) != generation || (expected & release_flag) != 0) {
            return false;
        }
        std::uint64_t const desired =
            (expected & busy_flag) != 0 ? expected | scheduled_flag : expected | busy_flag;
        // release: pairs with the claim's acquire load in run_claimed() (or the finish's, which
        // then republishes), so what the caller wrote before schedule() is visible to the run
        // it causes. When S is already set this is a same-value exchange that still joins the
        // release sequence the claim reads from.
        if (state.compare_exchange_weak(expected, desired, std::memory_order_release,
                                        std::memory_order_relaxed)) {
            if ((expected & busy_flag) == 0) {
                signal(slot); // idle -> busy: the run is owed through the tree
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
        // release: pairs with the claim's or finish's acquire load; the release callback sees
        // what the caller wrote before release().
        if (state.compare_exchange_weak(expected, expected | release_flag | busy_flag,
                                        std::memory_order_release, std::memory_order_relaxed)) {
            if ((expected & busy_flag) == 0) {
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

inline void group_state::wake_if_waiting() noexcept {
    // Called right after a seq_cst RMW on the tree published a contract; waiters_ is read
    // seq_cst: Dekker-style pairing with execute_next_waiting() / begin_external_wait(), which
    // increment waiters_ (seq_cst) before they read the root (seq_cst). Either the waiter sees
    // the signal or we see the waiter (signal_tree.hpp argues why a set leaf is visible at the
    // root). Non-blocking groups never read waiters_.
    if (blocking_ && waiters_.load(std::memory_order_seq_cst) != 0) {
        wake_one();
    }
}

inline void group_state::signal(std::size_t slot) noexcept {
    if (tree_.set(slot)) {
        wake_if_waiting();
    }
}

inline void group_state::republish(std::size_t leaf, std::uint64_t bits) noexcept {
    // As signal(), for the contracts of a batch that go back into the tree (one RMW).
    if (tree_.set_bits(leaf, bits) != 0) {
        wake_if_waiting();
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
    e = {id_, home_cursor()};
    return e.cursor;
}

/// The contracts of one claim: runs them, and on every exit (also when a callback throws)
/// puts the ones that go back into the tree, and the ones left unrun, back with one RMW.
struct group_state::batch {
    group_state& group;
    std::size_t leaf;
    std::uint64_t remaining; // claimed, not yet run
    std::uint64_t again = 0; // ran, and go back into the tree
    ~batch() {
        if ((again | remaining) != 0) {
            group.republish(leaf, again | remaining);
        }
    }
};

/// The thread's run state for one execute_next() call: the token its runs share, installed as
/// current_token, and the outer values of current_token and current_rescheduled, restored on
/// every exit (a nested call from inside a run, an exception).
struct group_state::run_context {
    work_contract_token token;
    work_contract_token* previous_token;
    bool previous_rescheduled;
    explicit run_context(group_state* group) noexcept
        : token(group, 0, 0)
        , previous_token(std::exchange(current_token, &token))
        , previous_rescheduled(current_rescheduled) {}
    run_context(run_context const&) = delete;
    run_context& operator=(run_context const&) = delete;
    ~run_context() {
        current_token = previous_token;
        current_rescheduled = previous_rescheduled;
    }
};

inline std::size_t group_state::execute_next(lane preferred, std::size_t max) {
    assert(max >= 1 && max <= max_batch && "execute_next: max must be in 1..max_batch");
    std::size_t& cursor = thread_cursor();
    // Declared single executor: claim a batch with one RMW. Otherwise claim one at a time, each
    // right before it runs (see "Batches" above: nothing waits unrun in a worker's hands).
    // relaxed: a setting made before the executing thread started (see set_batch_claims()).
    bool const alone = batch_claims_.load(std::memory_order_relaxed);
    std::size_t const bias = cursor;
    signal_tree::claimed const c =
        tree_.claim(bias, preferred, alone ? static_cast<unsigned>(max) : 1U);
    if (c.bits == 0) {
        return 0;
    }
    batch b{*this, c.leaf, c.bits};
    run_context context(this);
    std::size_t const leaf_first = c.leaf * signal_tree::bits_per_leaf;
    std::size_t ran = 0;
    if (alone || preferred.count != 0) {
        // Advance the bias past the last slot taken: the next claim starts at its neighbour,
        // so every scheduled contract runs within one sweep (fairness).
        std::size_t const last =
            leaf_first + 63 - static_cast<std::size_t>(std::countl_zero(c.bits));
        cursor = last + 1 == tree_.capacity() ? 0 : last + 1;
        while (b.remaining != 0) {
            auto const bit_index = static_cast<std::size_t>(std::countr_zero(b.remaining));
            std::uint64_t const bit = std::uint64_t{1} << bit_index;
            b.remaining ^= bit;
            ++ran;
            run_claimed(static_cast<std::uint32_t>(leaf_first + bit_index), b.again, bit,
                        context.token);
        }
        return ran;
    }
    // The chain: b.remaining holds the one contract claimed to run next.
    auto bit_index = static_cast<unsigned>(std::countr_zero(b.remaining));
    std::size_t const first = leaf_first + bit_index;
    std::size_t next_cursor = first + 1 == tree_.capacity() ? 0 : first + 1;
    bool const jump = first > bias && first - bias < signal_tree::bits_per_leaf &&
                      tree_.capacity() >= 4 * signal_tree::bits_per_leaf;
    if (jump) {
        // The slots just ahead of our bias were taken: another worker sweeps right in front
        // of us, and following it would make both write the same leaf on every claim.
        // Continue the sweep half the group away instead.
        next_cursor = (first + tree_.capacity() / 2) % tree_.capacity();
    }
    cursor = next_cursor;
    for (;;) {
        std::uint64_t const bit = std::uint64_t{1} << bit_index;
        b.remaining = 0;
        ++ran;
        run_claimed(static_cast<std::uint32_t>(leaf_first + bit_index), b.again, bit,
                    context.token);
        if (ran == max) {
            return ran; // b puts this one back if it goes again
        }
        // Put this contract back (if it goes again) and claim the next scheduled one after it
        // in the same leaf, in one RMW.
        std::uint64_t const back = std::exchange(b.again, 0);
        b.remaining = tree_.swap_claim(c.leaf, back, bit_index + 1);
        if (back != 0) {
            wake_if_waiting(); // as republish(): the contract is visible again
        }
        if (b.remaining == 0) {
            return ran;
        }
        bit_index = static_cast<unsigned>(std::countr_zero(b.remaining));
        std::size_t const slot = leaf_first + bit_index;
        if (!jump) {
            cursor = slot + 1 == tree_.capacity() ? 0 : slot + 1; // keep sweeping from here
        }
    }
}

/// Runs a claimed (busy) contract's work or release; adds `bit` to `again` when the contract
/// goes back into the tree. `token` is the call's shared token (current_token). When a callback
/// throws, the finish still happens (a release owed then runs at the next claim) and the
/// exception propagates.
inline void group_state::run_claimed(std::uint32_t slot, std::uint64_t& again, std::uint64_t bit,
                                     work_contract_token& token) {
    contract_slot& s = slots_[slot];
    // acquire: pairs with the release in publish(), schedule(), release() and set_bits():
    // the stored callables and the schedulers' writes are visible to this run.
    std::uint64_t state = s.state.load(std::memory_order_acquire);
    assert((state & busy_flag) != 0 && "signal_tree handed out an idle contract");
    if ((state & scheduled_flag) != 0) {
        // Schedules that arrived while the contract waited: this run serves them all.
        // acquire: as the load above, for the schedulers that set S.
        state = s.state.fetch_and(~scheduled_flag, std::memory_order_acquire);
    }
    std::uint64_t const generation = state >> generation_shift;
    if ((state & release_flag) != 0) {
        run_release(slot, generation);
        return;
    }
    token.slot_ = slot;
    token.generation_ = generation;
    current_rescheduled = false;
    // On an exception too the group stays consistent: a contract owed another run or its
    // release goes back into the tree with the batch.
    struct finish_on_throw {
        group_state& group;
        std::uint32_t slot;
        std::uint64_t& again;
        std::uint64_t bit;
        bool armed = true;
        ~finish_on_throw() {
            if (armed && group.finish_run(slot, current_rescheduled) != after_run::idle) {
                again |= bit;
            }
        }
    } guard{*this, slot, again, bit};
    try {
        s.ops->work(s.storage, token);
    } catch (...) {
        if (s.ops->handle == nullptr) {
            throw; // guarantee 4: no handler, so it propagates out of execute_next_contract()
        }
        s.ops->handle(s.storage, std::current_exception());
    }
    guard.armed = false;
    switch (finish_run(slot, current_rescheduled)) {
    case after_run::idle:
        break;
    case after_run::again:
        again |= bit;
        break;
    case after_run::release:
        // Released during the run (the one-shot pattern): run the release right here. The
        // contract is busy and R is sticky, so no other thread can claim the slot meanwhile.
        // A self-schedule of this run is dropped, as schedule() after release always is.
        run_release(slot, generation);
        break;
    }
}

inline group_state::after_run group_state::finish_run(std::uint32_t slot,
                                                      bool rescheduled) noexcept {
    auto& state = slots_[slot].state;
    // acquire: pairs with the release CAS of release() / schedule() during the run: the release
    // callback, or the follow-up run this thread republishes, sees the requester's writes.
    std::uint64_t expected = state.load(std::memory_order_acquire);
    for (;;) {
        if ((expected & release_flag) != 0) {
            return after_run::release;
        }
        if (rescheduled || (expected & scheduled_flag) != 0) {
            return after_run::again; // stays busy; an S left set is cleared by the next claim
        }
        // release: this run's writes reach the next run (the next schedule's CAS continues the
        // release sequence up to that run's acquire claim). acquire on failure: as above.
        if (state.compare_exchange_weak(expected, expected & ~busy_flag, std::memory_order_release,
                                        std::memory_order_acquire)) {
            return after_run::idle;
        }
    }
}

} // namespace signet::detail

namespace signet {

inline void work_contract_token::schedule() noexcept {
    if (detail::current_token == this) {
        // The running work schedules itself on its own thread (copies of the token have other
        // addresses and take the general path): B is set until this run finishes, so just
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
