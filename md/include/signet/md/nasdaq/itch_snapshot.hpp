#pragma once

/// write_itch_snapshot: an order_book as ITCH 5.0 messages, the content of a point-in-time
/// snapshot (what GLIMPSE sends before its End of Snapshot): the last system event ('S'), a
/// stock directory ('R') for every listed stock, each stock's last trading action ('H') and
/// Reg SHO restriction ('Y'), then every live order as an add ('A'). Applied to an empty book
/// by itch50_parser, they rebuild the same price levels, order counts, symbols and live orders
/// (same references, sides, shares and prices).
///
/// The book keeps orders and symbols only; an itch_snapshot_state, fed the same messages,
/// keeps the rest as received (system event, directory, trading action, Reg SHO). Without
/// one, the directory's other fields (market category, round lot, ...) are written as neutral
/// values and there are no S, H or Y messages.
///
/// Threading: as the book (a reader). Costs: O(orders + listed stocks + index pages); emit()
/// gets each message in a buffer of the writer's, valid during the call; no allocation. The
/// state holds the last message of each kind per stock (about 5.5 MiB, allocated once).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_order_book.hpp>

namespace signet::md::nasdaq {

namespace detail {
void put_snapshot_directory(std::span<std::byte, 39> out, std::uint16_t locate,
                            std::string_view symbol) noexcept;
void put_snapshot_add(std::span<std::byte, 36> out, std::uint64_t ref,
                      detail::order_record const& order, std::string_view symbol) noexcept;
} // namespace detail

/// The state a snapshot sends beside the book: the last system event, and per stock the last
/// directory, trading action and Reg SHO messages, as received.
class itch_snapshot_state {
public:
    itch_snapshot_state();
    /// Keeps the message if it is one of those kinds (of its exact length); ignores the rest.
    void on_message(std::span<std::byte const> message) noexcept;
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
    book.order_store().for_each([&](std::uint64_t ref, detail::order_record const& order) {
        detail::put_snapshot_add(std::span<std::byte, 36>(buffer.data(), 36), ref, order,
                                 book.symbol(order.locate));
        emit(std::span<std::byte const>(buffer.data(), 36));
        ++orders;
    });
    return orders;
}

/// The book alone (no S, H or Y; neutral directory fields).
template <typename Emit>
std::size_t write_itch_snapshot(itch_order_book const& book, Emit&& emit) {
    return write_itch_snapshot(book, nullptr, std::forward<Emit>(emit));
}

} // namespace signet::md::nasdaq
