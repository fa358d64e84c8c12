#pragma once

/// write_itch_snapshot: an order_book as ITCH 5.0 messages, the content of a point-in-time
/// snapshot (what GLIMPSE sends before its End of Snapshot): the last system event ('S'), a
/// stock directory ('R') for every listed stock, each stock's last trading action ('H') and
/// Reg SHO restriction ('Y'), then every live order as an add. Applied to an empty book by
/// itch50_parser, they rebuild the same price levels, order counts, symbols and live orders
/// (same references, sides, shares and prices).
///
/// The book keeps orders and symbols only; an itch_snapshot_state, fed the same messages,
/// keeps the rest as received (system event, directory, trading action, Reg SHO) and, given
/// room for orders, each live order's origin: its time priority (the order of its add, or of
/// the replace that gave it its reference: a replaced order loses its place) and its MPID
/// attribution ('F'; a replace keeps it, as the specification tells firms to). With origins the
/// orders go out in time priority — so each price level's queue is rebuilt in its order — and
/// an attributed order as an 'F' with its MPID; orders the state had no room for follow,
/// unattributed, by reference. Without a state, the directory's other fields (market
/// category, round lot, ...) are written as neutral values, there are no S, H or Y messages,
/// and orders go out as 'A' in the book's order.
///
/// Threading: as the book (a reader). Costs: O(orders + listed stocks + index pages), plus a
/// sort of the live orders by priority with origins (one vector, allocated per snapshot);
/// emit() gets each message in a buffer of the writer's, valid during the call. The state
/// holds the last message of each kind per stock (about 5.5 MiB) and, with origins, an
/// open-addressing table of 2 * bit_ceil(max_orders) slots of 40 bytes, both allocated once.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <signet/md/detail/fixed_hash_map.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_order_book.hpp>

namespace signet::md::nasdaq {

namespace detail {
void put_snapshot_directory(std::span<std::byte, 39> out, std::uint16_t locate,
                            std::string_view symbol) noexcept;
/// An add of `order` ('A', 36 bytes; 'F', 40 bytes, when `mpid` is given) into `out` (at least
/// 40 bytes); returns its length.
std::size_t put_snapshot_add(std::span<std::byte> out, std::uint64_t ref,
                             detail::order_record const& order, std::string_view symbol,
                             std::array<char, 4> const* mpid) noexcept;
} // namespace detail

/// Where a live order came from, as far as a snapshot must say it.
struct itch_order_origin {
    std::uint64_t priority = 0; ///< smaller: earlier in its price level's queue
    std::uint32_t shares = 0;   ///< still open (the origin is dropped at 0)
    std::array<char, 4> mpid{}; ///< the attribution of an 'F' (kept through replaces)
    bool attributed = false;
};

/// The state a snapshot sends beside the book: the last system event, and per stock the last
/// directory, trading action and Reg SHO messages, as received.
class itch_snapshot_state {
public:
    /// Origins of up to `max_orders` live orders (0: none kept; orders go out as 'A').
    explicit itch_snapshot_state(std::size_t max_orders = 0);
    /// Keeps the message if it is one of those kinds (of its exact length), and with room for
    /// orders follows A, F, E, C, X, D and U; ignores the rest.
    void on_message(std::span<std::byte const> message) noexcept;
    /// A live order's origin; null if not kept (no room, or never added).
    [[nodiscard]] itch_order_origin const* origin(std::uint64_t ref) const noexcept;
    [[nodiscard]] bool keeps_origins() const noexcept { return keep_origins_; }
    /// Adds the state had no room to keep (their orders go out last, unattributed).
    [[nodiscard]] std::uint64_t untracked_orders() const noexcept { return untracked_; }
    /// The last message of `type` ('R', 'H' or 'Y') for `locate`; empty if none.
    [[nodiscard]] std::span<std::byte const> stock_message(char type,
                                                           std::uint16_t locate) const noexcept;
    /// The last system event; empty if none.
    [[nodiscard]] std::span<std::byte const> system_event() const noexcept;

private:
    static constexpr std::size_t slot = 40; // the longest kept message (R: 39) and its length
    std::vector<std::byte> directory_;      // per locate: [length][message]
    std::vector<std::byte> trading_;
    std::vector<std::byte> reg_sho_;
    std::array<std::byte, slot> system_{};
    void on_order_message(char type, std::span<std::byte const> message) noexcept;
    void reduce(std::uint64_t ref, std::uint32_t shares) noexcept;
    bool keep_origins_;
    md::detail::fixed_hash_map<std::uint64_t, itch_order_origin> origins_;
    std::uint64_t next_priority_ = 0;
    std::uint64_t untracked_ = 0;
};

/// Calls emit(std::span<std::byte const>) once per message; returns the number of orders.
/// `state` (may be null) adds what the book does not keep.
template <typename Emit>
std::size_t write_itch_snapshot(itch_order_book const& book, itch_snapshot_state const* state,
                                Emit&& emit) {
    std::array<std::byte, itch50::max_message_length> buffer{};
    if (state != nullptr && !state->system_event().empty()) {
        emit(state->system_event());
    }
    book.for_each_stock([&](stock_view const& stock) {
        if (auto const kept = state != nullptr ? state->stock_message('R', stock.locate)
                                               : std::span<std::byte const>{};
            !kept.empty()) {
            emit(kept);
        } else {
            detail::put_snapshot_directory(std::span<std::byte, 39>(buffer.data(), 39),
                                           stock.locate, stock.symbol);
            emit(std::span<std::byte const>(buffer.data(), 39));
        }
        if (state != nullptr) {
            for (char const type : {'H', 'Y'}) {
                if (auto const kept = state->stock_message(type, stock.locate); !kept.empty()) {
                    emit(kept);
                }
            }
        }
    });
    std::size_t orders = 0;
    auto const add = [&](std::uint64_t ref, detail::order_record const& order,
                         std::array<char, 4> const* mpid) {
        std::size_t const n =
            detail::put_snapshot_add(buffer, ref, order, book.symbol(order.locate), mpid);
        emit(std::span<std::byte const>(buffer.data(), n));
        ++orders;
    };
    if (state == nullptr || !state->keeps_origins()) {
        book.order_store().for_each([&](std::uint64_t ref, detail::order_record const& order) {
            add(ref, order, nullptr);
        });
        return orders;
    }
    // Time priority: every live order by its origin's priority (unknown ones last, by ref).
    struct entry {
        std::uint64_t priority;
        std::uint64_t ref;
        detail::order_record const* order; // stable while the book is only read
    };
    std::vector<entry> queue;
    queue.reserve(book.size());
    book.order_store().for_each([&](std::uint64_t ref, detail::order_record const& order) {
        itch_order_origin const* const o = state->origin(ref);
        queue.push_back({o != nullptr ? o->priority : ~std::uint64_t{0}, ref, &order});
    });
    std::sort(queue.begin(), queue.end(), [](entry const& a, entry const& b) {
        return a.priority != b.priority ? a.priority < b.priority : a.ref < b.ref;
    });
    for (entry const& e : queue) {
        itch_order_origin const* const o = state->origin(e.ref);
        add(e.ref, *e.order, o != nullptr && o->attributed ? &o->mpid : nullptr);
    }
    return orders;
}

/// The book alone (no S, H or Y; neutral directory fields).
template <typename Emit>
std::size_t write_itch_snapshot(itch_order_book const& book, Emit&& emit) {
    return write_itch_snapshot(book, nullptr, std::forward<Emit>(emit));
}

} // namespace signet::md::nasdaq
