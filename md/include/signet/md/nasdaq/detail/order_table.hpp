#pragma once

// order_table: a map from ITCH order reference to order record, an open-addressing hash table
// whose memory is fixed at construction. Linear probing over 2 * bit_ceil(max_orders) slots
// (load factor <= 0.5), Fibonacci hashing of the reference, and backward-shift deletion (no
// tombstones, so probe lengths do not degrade over a trading day). Not thread-safe.
//
// The order book's fallback store: order_index keeps most orders in direct-indexed pages and
// puts here only the references that do not fit a page (see order_index.hpp).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace signet::md::nasdaq {

enum class order_side : char { buy = 'B', sell = 'S' };

namespace detail {

/// One live order as the book keeps it. `level` is the index of its price level in the book's
/// level pool, so executes and cancels reach the level without a search.
struct order_record {
    std::uint32_t level;
    std::uint32_t shares;
    std::uint32_t price;
    std::uint16_t locate;
    order_side side;
    bool live; ///< false: the slot is free
};
static_assert(sizeof(order_record) == 16, "order_record: 4 records per cache line");

struct order_slot {
    std::uint64_t ref = 0;
    order_record order{};
};
static_assert(sizeof(order_slot) == 24, "order_slot: 24 bytes per slot keeps the table compact");

class order_table {
public:
    /// Throws std::invalid_argument unless 1 <= max_orders <= 2^31.
    explicit order_table(std::size_t max_orders);

    [[nodiscard]] order_slot* find(std::uint64_t ref) noexcept;
    [[nodiscard]] order_slot const* find(std::uint64_t ref) const noexcept;
    /// Requires find(ref) == nullptr. Returns the new slot (ref set, order live and otherwise
    /// zero), or nullptr when size() == capacity().
    [[nodiscard]] order_slot* insert(std::uint64_t ref) noexcept;
    /// Frees the slot; other slots may move, so every order_slot pointer is invalid afterwards.
    void erase(order_slot* slot) noexcept;

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t capacity() const noexcept { return max_orders_; }
    /// Slots allocated (2 * bit_ceil(capacity())).
    [[nodiscard]] std::size_t slot_count() const noexcept { return slots_.size(); }

    /// Calls f(ref, order_record const&) for every live order.
    template <typename F>
    void for_each(F&& f) const {
        for (order_slot const& slot : slots_) {
            if (slot.order.live) {
                f(slot.ref, slot.order);
            }
        }
    }

private:
    [[nodiscard]] std::size_t home(std::uint64_t ref) const noexcept {
        // Fibonacci hashing: the top bits of ref * 2^64/phi. Sequential references spread out.
        return static_cast<std::size_t>((ref * 0x9E3779B97F4A7C15ULL) >> shift_);
    }

    std::vector<order_slot> slots_;
    std::size_t mask_;
    std::size_t max_orders_;
    std::size_t size_ = 0;
    unsigned shift_;
};

} // namespace detail
} // namespace signet::md::nasdaq
