#pragma once

/// cme::mdp3_price_book: one instrument's market-by-price book as CME MDP 3.0 maintains it — each
/// side a list of at most `depth` price levels addressed by MDPriceLevel (1 = best), changed
/// by MDIncrementalRefreshBook46 entries and replaced by SnapshotFullRefresh52.
///
///   new (0)          insert at the level, worse levels shift down; one beyond the depth drops
///   change (1)       the level's size and order count; its price must not move
///   delete (2)       remove the level, worse levels shift up
///   delete thru (3)  clear the side
///   delete from (4)  remove levels 1 to the level, the rest shift up
///   overlay (5)      replace the level's price, size and orders
///   book reset ('J') clear both sides
///
/// 0-2 and 'J' follow CME's published book-update rules; 3-5 follow the most widely used open
/// handler, CME's text defining them not having been found (docs/mdp3.md). An entry that does
/// not fit the book — a level of 0 or beyond the depth, a change, delete or overlay of a level
/// the side does not have, a change that moves the price, a new level that leaves a hole — is
/// refused and reported (inconsistent): the book is then no longer trusted and the caller
/// recovers the instrument (snapshot). Implied entries ('E', 'F') and other types are ignored
/// and reported so.
///
/// Threading: none. Costs: fixed arrays; an update moves at most `depth` levels. No allocation.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <signet/md/cme/mdp3.hpp>

namespace signet::md::cme {

struct mdp3_price_level {
    std::int64_t price = 0; ///< mantissa, exponent price_exponent
    std::int32_t size = 0;
    std::int32_t orders = 0;
    friend bool operator==(mdp3_price_level const&, mdp3_price_level const&) = default;
};

enum class book_update : std::uint8_t {
    applied,
    ignored,      ///< not an outright book entry (implied, trade, statistics)
    inconsistent, ///< does not fit the book: recover the instrument
    full,         ///< a by-order book at its channel's order budget: recover the instrument
};

class mdp3_price_book {
public:
    static constexpr std::size_t max_depth = 32;

    /// depth: 1 to max_depth (clamped).
    explicit mdp3_price_book(std::size_t depth = 10) noexcept;

    book_update apply(book_entry const& e) noexcept;
    /// Replaces both sides with a snapshot's book entries (bids and offers by MDPriceLevel);
    /// false (the book cleared) if an entry does not fit.
    bool assign_snapshot(group<snapshot_entry> const& entries) noexcept;
    void clear() noexcept;

    [[nodiscard]] std::size_t depth() const noexcept { return depth_; }
    [[nodiscard]] std::span<mdp3_price_level const> bids() const noexcept {
        return {bids_.levels.data(), bids_.count};
    }
    [[nodiscard]] std::span<mdp3_price_level const> offers() const noexcept {
        return {offers_.levels.data(), offers_.count};
    }

private:
    struct side {
        std::array<mdp3_price_level, max_depth> levels{};
        std::size_t count = 0;
    };
    book_update apply(side& s, book_entry const& e) noexcept;

    std::size_t depth_;
    side bids_;
    side offers_;
};

} // namespace signet::md::cme
