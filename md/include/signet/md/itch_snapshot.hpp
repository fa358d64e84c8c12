#pragma once

/// write_itch_snapshot: an order_book as ITCH 5.0 messages, the content of a point-in-time
/// snapshot (what GLIMPSE sends before its End of Snapshot): a stock directory ('R') for every
/// listed stock, then every live order as an add ('A'). Applied to an empty book by
/// itch50_parser, they rebuild the same price levels, order counts, symbols and live orders
/// (same references, sides, shares and prices).
///
/// What the book does not keep is not in the snapshot: the directory's other fields (market
/// category, round lot, ...) are written as neutral values, and there are no system event,
/// trading action or Reg SHO messages (the book tracks no such state).
///
/// Threading: as the book (a reader). Costs: O(orders + listed stocks + index pages); emit()
/// gets each message in a buffer of the writer's, valid during the call; no allocation.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <signet/md/itch50.hpp>
#include <signet/md/order_book.hpp>

namespace signet::md {

namespace detail {
void put_snapshot_directory(std::span<std::byte, 39> out, std::uint16_t locate,
                            std::string_view symbol) noexcept;
void put_snapshot_add(std::span<std::byte, 36> out, std::uint64_t ref,
                      detail::order_record const& order, std::string_view symbol) noexcept;
} // namespace detail

/// Calls emit(std::span<std::byte const>) once per message; returns the number of orders.
template <typename Emit>
std::size_t write_itch_snapshot(order_book const& book, Emit&& emit) {
    std::array<std::byte, itch50::max_message_length> buffer{};
    book.for_each_stock([&](stock_view const& stock) {
        detail::put_snapshot_directory(std::span<std::byte, 39>(buffer.data(), 39), stock.locate,
                                       stock.symbol);
        emit(std::span<std::byte const>(buffer.data(), 39));
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

} // namespace signet::md
