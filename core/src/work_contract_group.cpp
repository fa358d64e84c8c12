#include <algorithm>
#include <bit>

#include <signet/core/detail/contract_group_state.hpp>

namespace signet::detail {

namespace {
std::uint64_t next_group_id() noexcept {
    static std::atomic<std::uint64_t> counter{0};
    // relaxed: only uniqueness matters, which the RMW guarantees.
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}
} // namespace

group_state::group_state(std::size_t capacity, bool blocking)
    : tree_(capacity)
    , slots_(std::make_unique<contract_slot[]>(tree_.capacity()))
    , free_words_(tree_.capacity() / 64)
    , id_(next_group_id())
    , blocking_(blocking) {
    free_ = std::make_unique<std::atomic<std::uint64_t>[]>(free_words_);
    for (std::size_t i = 0; i < free_words_; ++i) {
        // relaxed: construction; the group is published to other threads by the caller.
        free_[i].store(~std::uint64_t{0}, std::memory_order_relaxed);
    }
}

std::uint32_t group_state::acquire_slot(lane where) noexcept {
    std::size_t first = 0;
    std::size_t last = capacity();
    if (where.count != 0) {
        first = std::min(where.first, last);
        last = std::min(where.first + where.count, last);
    }
    std::size_t const first_word = first / 64;
    std::size_t const words = (last + 63) / 64 - first_word;
    // Without a lane, start at the word the last such creation used (relaxed: a hint only), so
    // that filling a large group scans each word about once instead of from the start each time.
    std::size_t const start =
        where.count == 0 ? std::min(free_hint_.load(std::memory_order_relaxed), words - 1) : 0;
    for (std::size_t n = 0; n < words; ++n) {
        std::size_t const w = first_word + (start + n) % words;
        std::size_t const lo = std::max(first, w * 64) - w * 64;
        std::size_t const hi = std::min(last, w * 64 + 64) - w * 64; // exclusive
        std::uint64_t const in_range =
            (hi - lo == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << (hi - lo)) - 1)) << lo;
        // relaxed: seeds the pick; the fetch_and decides.
        std::uint64_t word = free_[w].load(std::memory_order_relaxed);
        while ((word & in_range) != 0) {
            std::uint64_t const bit = std::uint64_t{1} << std::countr_zero(word & in_range);
            // acquire: pairs with the release fetch_or in free_slot(): the previous occupant's
            // destruction and generation bump happen-before our use of the slot.
            std::uint64_t const before = free_[w].fetch_and(~bit, std::memory_order_acquire);
            if ((before & bit) != 0) {
                if (where.count == 0) {
                    // relaxed: a hint for the next creation.
                    free_hint_.store(w, std::memory_order_relaxed);
                }
                return static_cast<std::uint32_t>(w * 64 +
                                                  static_cast<std::size_t>(std::countr_zero(bit)));
            }
            word = before;
        }
    }
    return no_slot;
}

void group_state::free_slot(std::uint32_t slot) noexcept {
    // release: pairs with the acquire fetch_and in acquire_slot().
    free_[slot / 64].fetch_or(std::uint64_t{1} << (slot % 64), std::memory_order_release);
}

void group_state::publish(std::uint32_t slot, std::uint64_t generation,
                          initial_state initial) noexcept {
    std::uint64_t const flags = initial == initial_state::scheduled ? busy_flag : 0;
    // release: pairs with the acquire fetch_xor in execute_slot(): the callables and ops stored
    // by create() are visible to the first run. No other thread writes a free slot's word (stale
    // handles fail their generation check), so a plain store suffices.
    slots_[slot].state.store((generation << generation_shift) | flags, std::memory_order_release);
    if (flags != 0) {
        signal(slot);
    }
}

void group_state::run_release(std::uint32_t slot, std::uint64_t generation) {
    contract_slot& s = slots_[slot];
    struct recycle_scope {
        group_state& group;
        std::uint32_t slot;
        std::uint64_t generation;
        work_contract_token* previous;
        ~recycle_scope() {
            current_token = previous;
            group.recycle(slot, generation); // also when the callback throws
        }
    } scope{*this, slot, generation, std::exchange(current_token, nullptr)};
    if (s.ops->release == nullptr) {
        return;
    }
    try {
        s.ops->release(s.storage);
    } catch (...) {
        if (s.ops->handle == nullptr) {
            throw;
        }
        s.ops->handle(s.storage, std::current_exception());
    }
}

void group_state::recycle(std::uint32_t slot, std::uint64_t generation) noexcept {
    contract_slot& s = slots_[slot];
    s.ops->destroy(s.storage);
    s.ops = nullptr;
    // relaxed: after R was set nobody else writes this word, and the new generation reaches the
    // next creator through free_slot()'s release. Stale handles read it with their own loads; a
    // late view only makes them fail on the R flag instead of on the generation.
    s.state.store((generation + 1) << generation_shift, std::memory_order_relaxed);
    free_slot(slot);
}

bool group_state::begin_external_wait() noexcept {
    // relaxed: only read together with waiters_, which orders (see signal()).
    external_waiters_.fetch_add(1, std::memory_order_relaxed);
    // seq_cst: the same Dekker pairing with signal() as execute_next_waiting()'s: announce the
    // waiter, then read the tree's root.
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    if (!tree_.empty() || stopped()) {
        end_external_wait();
        return false;
    }
    return true;
}

void group_state::end_external_wait() noexcept {
    // relaxed: a late decrement only costs a signaller one unneeded wake.
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    external_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void group_state::wake_one() noexcept {
    // relaxed: external_waiters_ was incremented before waiters_ (seq_cst), which our caller
    // read as non-zero; a stale zero here only happens when that waiter already left.
    if (external_waker_ != nullptr && external_waiters_.load(std::memory_order_relaxed) != 0) {
        external_waker_(external_context_); // it cannot tell which kind sleeps: wake both
    }
    // Taking the mutex orders this wake after a waiter's predicate check (it holds the mutex
    // from its check until wait() releases it), so the wake cannot fall in between and be lost.
    { std::lock_guard lock(mutex_); }
    cv_.notify_one();
}

std::size_t group_state::home_cursor() noexcept {
    // Spread the threads' starting points over the slots (0, 1/2, 1/4, 3/4, 1/8, ...: the
    // bit-reversed thread number), so that workers sweep different leaves and summary words
    // and do not write the same cache lines while each has work ahead of it.
    // relaxed: only distinctness matters, which the RMW guarantees.
    std::uint32_t n = threads_seen_.fetch_add(1, std::memory_order_relaxed);
    std::uint32_t reversed = 0;
    for (int i = 0; i < 32; ++i) {
        reversed = (reversed << 1) | (n & 1U);
        n >>= 1;
    }
    std::size_t const leaves = capacity() / signal_tree::bits_per_leaf;
    std::size_t const leaf = static_cast<std::size_t>((std::uint64_t{reversed} * leaves) >> 32);
    return leaf * signal_tree::bits_per_leaf;
}

std::size_t
group_state::execute_next_waiting(std::optional<std::chrono::steady_clock::time_point> deadline,
                                  std::size_t max) {
    for (;;) {
        if (std::size_t const ran = execute_next(lane{}, max); ran != 0) {
            return ran;
        }
        if (stopped()) {
            return 0;
        }
        std::unique_lock lock(mutex_);
        // seq_cst: Dekker pairing with signal() (see there): announce the waiter, then read the
        // tree root with the seq_cst load in empty().
        waiters_.fetch_add(1, std::memory_order_seq_cst);
        auto ready = [this] {
            return !tree_.empty() || stopped();
        };
        bool woke = true;
        if (deadline) {
            woke = cv_.wait_until(lock, *deadline, ready);
        } else {
            cv_.wait(lock, ready);
        }
        // relaxed: a late decrement only costs a signaller one unneeded wake.
        std::uint32_t const others = waiters_.fetch_sub(1, std::memory_order_relaxed) - 1;
        if (!woke) {
            return 0; // timed out with nothing scheduled
        }
        lock.unlock();
        // A signaller wakes one waiter per new signal it publishes; a batch republished at once
        // may hold work for several. Pass the wake on while work and sleepers remain.
        if (others != 0 && !tree_.empty()) {
            wake_one();
        }
    }
}

void group_state::stop() noexcept {
    // release: pairs with the acquire load in stopped().
    stopped_.store(true, std::memory_order_release);
    if (external_waker_ != nullptr) {
        external_waker_(external_context_);
    }
    { std::lock_guard lock(mutex_); }
    cv_.notify_all();
}

void group_state::close() noexcept {
    if (closed_) {
        return;
    }
    closed_ = true;
    stop();
    for (std::size_t i = 0; i < capacity(); ++i) {
        contract_slot& s = slots_[i];
        if (s.ops == nullptr) {
            continue;
        }
        s.ops->destroy(s.storage);
        s.ops = nullptr;
        // relaxed: handles only compare generations; no data hangs on this store.
        std::uint64_t const state = s.state.load(std::memory_order_relaxed);
        s.state.store(((state >> generation_shift) + 1) << generation_shift,
                      std::memory_order_relaxed);
    }
}

} // namespace signet::detail
