#pragma once

/// itch_book_levels: a side of an itch_order_book's stock as feed_protocol::book_levels() gives
/// it, best first (a book_side holds it best last), for the protocols whose book is one
/// (moldudp64's ITCH 5.0, Cboe PITCH).
///
/// Threading: as the book. Costs: one indexed load per level copied; no allocation.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include <signet/md/nasdaq/itch_order_book.hpp>
#include <signet/receiver/feed_protocol.hpp>

namespace signet::receiver::nasdaq {

/// The best min(out.size(), levels) levels of `side` ('B' bids, else asks) of the stock at
/// `locate` into `out`; returns how many.
inline std::size_t itch_book_levels(md::nasdaq::itch_order_book const& book, std::uint16_t locate,
                                    char side, std::span<book_level> out) noexcept {
    md::nasdaq::book_side const levels = side == 'B' ? book.bids(locate) : book.asks(locate);
    std::size_t const n = std::min(levels.size(), out.size());
    for (std::size_t i = 0; i < n; ++i) {
        md::nasdaq::itch_price_level const l = levels[levels.size() - 1 - i];
        out[i] = {.price = l.price, .size = l.shares, .orders = l.orders};
    }
    return n;
}

} // namespace signet::receiver::nasdaq
