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
    for (std::size_t w = first / 64; w * 64 < last; ++w) {
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
    std::uint64_t const flags = initial == initial_state::scheduled ? scheduled_flag : 0;
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

void group_state::wake_one() noexcept {
    // Taking the mutex orders this wake after a waiter's predicate check (it holds the mutex
    // from its check until wait() releases it), so the wake cannot fall in between and be lost.
    { std::lock_guard lock(mutex_); }
    cv_.notify_one();
}

bool group_state::execute_next_waiting(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
    for (;;) {
        if (execute_next(lane{})) {
            return true;
        }
        if (stopped()) {
            return false;
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
        waiters_.fetch_sub(1, std::memory_order_relaxed);
        if (!woke) {
            return false; // timed out with nothing scheduled
        }
    }
}

void group_state::stop() noexcept {
    // release: pairs with the acquire load in stopped().
    stopped_.store(true, std::memory_order_release);
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
