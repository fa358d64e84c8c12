#include <algorithm>

#include <signet/net/detail/timer_queue.hpp>
#include <signet/net/timer.hpp>

namespace signet::net {

namespace {

std::int64_t ticks(timer::clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

} // namespace

void timer::arm_at(clock::time_point deadline) const noexcept {
    if (queue_ != nullptr) {
        queue_->arm(index_, ticks(deadline));
    }
}

void timer::arm_after(std::chrono::nanoseconds delay) const noexcept {
    arm_at(clock::now() + std::max(delay, std::chrono::nanoseconds::zero()));
}

void timer::cancel() const noexcept {
    if (queue_ != nullptr) {
        queue_->cancel(index_);
    }
}

namespace detail {

std::size_t timer_queue::add(work_contract* target) {
    auto s = std::make_unique<slot>();
    s->target = target;
    slots_.push_back(std::move(s));
    return slots_.size() - 1;
}

std::size_t timer_queue::add(work_contract owned) {
    auto s = std::make_unique<slot>();
    s->owned = std::move(owned);
    s->target = &s->owned;
    slots_.push_back(std::move(s));
    return slots_.size() - 1;
}

void timer_queue::lower_earliest(std::int64_t deadline) noexcept {
    // relaxed: only seeds the compare-exchange.
    std::int64_t current = earliest_.load(std::memory_order_relaxed);
    // seq_cst: release for the slot's deadline (pairs with fire_due()'s acquire exchange) and
    // the store half of the Dekker pair with begin_sleep()/sleep_bound() (see the header).
    while (deadline < current &&
           !earliest_.compare_exchange_weak(current, deadline, std::memory_order_seq_cst,
                                            std::memory_order_relaxed)) {
    }
}

void timer_queue::arm(std::size_t index, std::int64_t deadline) noexcept {
    deadline = std::max<std::int64_t>(deadline, 1);
    // release: pairs with fire_due()'s acquire load of the slot, so the writes made before
    // arming reach the contract run the timer causes (through schedule()'s release).
    slots_[index]->deadline.store(deadline, std::memory_order_release);
    // relaxed: only decides whether a wake might be needed; lower_earliest() re-reads.
    std::int64_t const before = earliest_.load(std::memory_order_relaxed);
    lower_earliest(deadline);
    // seq_cst: the load half of the Dekker pair (see the header).
    if (deadline < before && sleeping_.load(std::memory_order_seq_cst)) {
        wake_(context_);
    }
}

void timer_queue::cancel(std::size_t index) noexcept {
    // relaxed: a disarm publishes nothing; earliest_ may stay early (harmless, see header).
    slots_[index]->deadline.store(0, std::memory_order_relaxed);
}

bool timer_queue::fire_due() noexcept {
    // acquire: pairs with lower_earliest()'s CAS (an armed slot's deadline is visible).
    if (earliest_.load(std::memory_order_acquire) == never) {
        return false;
    }
    std::int64_t const now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(timer::clock::now().time_since_epoch())
            .count();
    // relaxed re-read: the exchange below is what synchronizes.
    if (now < earliest_.load(std::memory_order_relaxed)) {
        return false;
    }
    // acq_rel: takes over every arming published so far (see the header's argument).
    (void)earliest_.exchange(never, std::memory_order_acq_rel);
    bool fired = false;
    for (auto& s : slots_) {
        // acquire: pairs with arm()'s release store.
        std::int64_t deadline = s->deadline.load(std::memory_order_acquire);
        while (deadline != 0) {
            if (deadline > now) {
                lower_earliest(deadline);
                break;
            }
            // acq_rel: one driver takes the deadline; acquire as for the load above.
            if (s->deadline.compare_exchange_weak(deadline, 0, std::memory_order_acq_rel,
                                                  std::memory_order_acquire)) {
                s->target->schedule();
                fired = true;
                break;
            }
        }
    }
    return fired;
}

bool timer_queue::begin_sleep() noexcept {
    // seq_cst: the store half of the sleeper's Dekker pair; the exchange also elects one
    // sleeper among the workers.
    return !sleeping_.exchange(true, std::memory_order_seq_cst);
}

std::chrono::nanoseconds timer_queue::sleep_bound(std::chrono::nanoseconds max) noexcept {
    // seq_cst: the load half of the sleeper's Dekker pair.
    std::int64_t const earliest = earliest_.load(std::memory_order_seq_cst);
    if (earliest == never) {
        return max;
    }
    std::int64_t const now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(timer::clock::now().time_since_epoch())
            .count();
    return std::clamp(std::chrono::nanoseconds(earliest - now), std::chrono::nanoseconds::zero(),
                      max);
}

void timer_queue::end_sleep() noexcept {
    // release: pairs with the next begin_sleep()'s exchange (the role passes on).
    sleeping_.store(false, std::memory_order_release);
}

} // namespace detail
} // namespace signet::net
