#include <bit>
#include <stdexcept>

#include <signet/md/nasdaq/detail/order_table.hpp>

namespace signet::md::nasdaq::detail {

order_table::order_table(std::size_t max_orders)
    : max_orders_(max_orders) {
    if (max_orders == 0 || max_orders > (std::size_t{1} << 31)) {
        throw std::invalid_argument("itch_order_book: max_orders must be 1 to 2^31");
    }
    std::size_t const slots = std::bit_ceil(max_orders) * 2;
    slots_.resize(slots);
    mask_ = slots - 1;
    shift_ = 64U - static_cast<unsigned>(std::countr_zero(slots));
}

order_slot* order_table::find(std::uint64_t ref) noexcept {
    for (std::size_t i = home(ref);; i = (i + 1) & mask_) {
        order_slot& slot = slots_[i];
        if (!slot.order.live) {
            return nullptr;
        }
        if (slot.ref == ref) {
            return &slot;
        }
    }
}

order_slot const* order_table::find(std::uint64_t ref) const noexcept {
    return const_cast<order_table*>(this)->find(ref);
}

order_slot* order_table::insert(std::uint64_t ref) noexcept {
    if (size_ == max_orders_) {
        return nullptr;
    }
    // Load factor <= 0.5, so an empty slot exists and the probe ends.
    std::size_t i = home(ref);
    while (slots_[i].order.live) {
        i = (i + 1) & mask_;
    }
    order_slot& slot = slots_[i];
    slot = order_slot{};
    slot.ref = ref;
    slot.order.live = true;
    ++size_;
    return &slot;
}

void order_table::erase(order_slot* slot) noexcept {
    // Backward-shift deletion (Knuth 6.4 Algorithm R): walk the cluster after the hole and move
    // back every entry whose home is not in (hole, j] cyclically, so that every remaining entry
    // stays reachable from its home without tombstones.
    auto hole = static_cast<std::size_t>(slot - slots_.data());
    for (std::size_t j = (hole + 1) & mask_; slots_[j].order.live; j = (j + 1) & mask_) {
        std::size_t const from_home = (j - home(slots_[j].ref)) & mask_;
        std::size_t const from_hole = (j - hole) & mask_;
        if (from_home >= from_hole) {
            slots_[hole] = slots_[j];
            hole = j;
        }
    }
    slots_[hole].order.live = false;
    --size_;
}

} // namespace signet::md::nasdaq::detail
