#pragma once

/// itch_order_book: the visible ITCH 5.0 order book of every stock of a feed, keyed by stock
/// locate.
///
/// Threading: none; one writer (the feed's parser), readers on the same thread or after it
/// stopped. Not for: depth-of-book consumers that need per-order queues at a level (it keeps
/// aggregated levels), or several feeds in one book.
///
/// Design and costs (the numbers: docs/benchmarks.md, "Book building"):
///   - Orders: detail::order_index, pages of 4096 consecutive references indexed directly
///     (ITCH references count up, so an add lands beside the previous one: no hash, no miss),
///     with an open-addressing table of max_orders capacity for what does not fit a page. A
///     full book (max_orders live) drops the add and the caller counts it (book_result::
///     book_full); nothing grows. Memory: 48 bytes per order of max_orders for the table,
///     plus 64 KiB per page in use (at most index_pages; about 66 bytes per live order when
///     orders leave at random; see order_index.hpp).
///   - Price levels: one pool of level nodes (shares, orders, slot) for the whole book; each
///     order keeps its level's index, so an execute, cancel or delete updates the level
///     without a search. Per stock and side a vector of (price, level) sorted so that the best
///     price is last, where most activity is: an add scans it from the best price (a binary
///     search past 16 levels), and a level is searched and erased only when its last order
///     goes. While changes are tracked with depths (events), each node keeps its place in its
///     side (`slot`): a level's depth is then the side's size - 1 - slot, and an erase needs
///     no search; an insert or erase renumbers the levels that moved, the better ones: as
///     many as the level's depth, few where activity is at the best, O(depth) random writes
///     for a feed that changes levels far from it (the memmove of the side moves as many
///     entries, contiguously). Each side reserves
///     order_book_options::level_reserve entries when its stock is first used; the pool and
///     the sides allocate again only past their high-water marks.
///   - Stocks: a fixed index of 65536 locates (256 KiB) into a dense array of per-stock state
///     (sides, symbol) reserved at construction for stock_reserve stocks (all 65536 by
///     default: about 4 MiB of address space, touched only as stocks appear, never
///     reallocated). order_count() sums the stock's levels (O(levels)), so an execute or a
///     cancel never touches the stock unless its level empties.
///   Memory per stock: about 64 bytes of state, 2 * level_reserve * 8 bytes reserved for its
///   sides when first used (512 by default), and 24 bytes per price level (8 in its side, 16
///   in the pool). Per live order: 16 bytes in a page (about 66 bytes of pages per live order
///   when orders leave at random, measured 70 on the 20M-message benchmark file), or 48 in the
///   table's capacity.
///   Add: O(1) for the order, O(distance from the best price) for the level. Execute, cancel,
///   delete: O(1), plus the search and the shift when a level empties. No locks, no logging,
///   no exceptions except std::bad_alloc from those level allocations.
///
/// Invariants (check_invariants()): every live order's level is a level of its stock and
/// side at its price; a level's shares and order count are the sums over its orders, and no
/// level is empty; levels are strictly ordered; every pool node is on one side or free. Shares
/// are unsigned and reductions are clamped to the order's shares, so nothing underflows.

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <signet/md/events.hpp>
#include <signet/md/nasdaq/book_side.hpp>
#include <signet/md/nasdaq/detail/order_index.hpp>

namespace signet::md::nasdaq {

struct itch_order_book_options {
    std::size_t max_orders = std::size_t{1} << 20; ///< live orders; 1 to 2^31
    /// Pages of 4096 directly indexed order references (64 KiB each, mapped only when first
    /// used); 1 to 65536. Orders beyond go to the max_orders table, a little slower.
    std::size_t index_pages = 2048;
    std::size_t level_reserve = 32;                        ///< price levels reserved per stock side
    std::size_t level_pool_reserve = std::size_t{1} << 16; ///< level nodes reserved up front
    /// Stocks whose state is reserved at construction (up to max_locates); a book that meets
    /// more allocates as they appear. The default reserves every locate: no allocation later.
    std::size_t stock_reserve = 65536;
};

/// Best bid (highest) and best ask (lowest) with the total shares at each; an empty side is 0/0.
/// Prices in ITCH units (1/10000 dollar).
struct top_of_book {
    std::uint32_t bid_price = 0;
    std::uint64_t bid_shares = 0;
    std::uint32_t ask_price = 0;
    std::uint64_t ask_shares = 0;

    friend bool operator==(top_of_book const&, top_of_book const&) = default;
};

struct order {
    std::uint64_t ref = 0;
    std::uint16_t locate = 0;
    order_side side = order_side::buy;
    std::uint32_t shares = 0;
    std::uint32_t price = 0;
};

/// What for_each_stock() passes for each stock that has a symbol.
struct stock_view {
    std::uint16_t locate = 0;
    std::string_view symbol;
    top_of_book top;
    std::uint32_t orders = 0; ///< live orders
};

/// A price level a writer changed, as it is after the change (orders 0: it left the book), and
/// its depth from the best (0) after the change (a level that left: the depth it had), or
/// unknown_depth where tracking without depth did not look (a level that stays).
struct level_change {
    static constexpr std::uint32_t unknown_depth = 0xFFFFFFFF;
    std::uint32_t price = 0;
    std::uint32_t orders = 0;
    std::uint64_t shares = 0;
    std::uint32_t depth = 0;
    std::uint16_t locate = 0;
    order_side side = order_side::buy;
    /// A level that left from the best (orders 0, depth 0): its side's best after it left
    /// (shares 0: the side is empty), so that a consumer of the change need not look.
    std::uint32_t next_best_price = 0;
    std::uint64_t next_best_shares = 0;
};

/// The level_update event of a change: `base`'s header (sequence, times, flags), the change's
/// stock, side and level (a depth past 0xFFFF says 0xFFFF).
[[nodiscard]] inline event level_update_event(event const& base, level_change const& c) noexcept {
    event e = base;
    e.instrument = c.locate;
    e.kind = event_kind::level_update;
    e.side = static_cast<char>(c.side);
    e.level = {.price = c.price,
               .size = c.shares,
               .orders = c.orders,
               .depth = static_cast<std::uint16_t>(c.depth < 0xFFFF ? c.depth : 0xFFFF),
               .reserved = {}};
    return e;
}

enum class book_result : std::uint8_t {
    ok,
    unknown_order,   ///< no live order with that reference: nothing changed
    duplicate_order, ///< add (or replace) with a reference that is already live: not added
    book_full,       ///< the order table is at capacity: not added
};

class itch_order_book {
public:
    static constexpr std::size_t max_locates = 65536;
    static constexpr std::size_t max_symbol_length = 8;

    /// Allocates everything up front; throws std::invalid_argument on a bad max_orders.
    explicit itch_order_book(itch_order_book_options options = {});
    itch_order_book(itch_order_book const&) = delete;
    itch_order_book& operator=(itch_order_book const&) = delete;
    itch_order_book(itch_order_book&&) noexcept = default;
    itch_order_book& operator=(itch_order_book&&) noexcept = default;
    ~itch_order_book() = default;

    // Writers (one thread).
    /// The first 8 characters, trailing spaces trimmed (an R message). Lists the stock.
    void set_symbol(std::uint16_t locate, std::string_view symbol);
    /// A/F: a new order.
    book_result add(std::uint16_t locate, std::uint64_t ref, order_side side, std::uint32_t shares,
                    std::uint32_t price);
    /// E/C/X: takes min(shares, the order's shares) off; the order goes at zero.
    book_result reduce(std::uint64_t ref, std::uint32_t shares);
    /// D.
    book_result remove(std::uint64_t ref);
    /// U: removes the original; adds new_ref on the same stock and side. unknown_order if the
    /// original is not live (nothing changes); duplicate_order if new_ref is (original removed).
    book_result replace(std::uint64_t original_ref, std::uint64_t new_ref, std::uint32_t shares,
                        std::uint32_t price);

    /// With tracking on, every writer records the levels it changed (at most two: a replace's
    /// old and new level), readable through changes() until the next writer call, and the
    /// order it changed as it was (changed_order(): no second lookup for its events). With
    /// `depth`, each change has its depth, which costs no search: each level keeps its place
    /// in its side (level_node::slot; a level's insert or erase renumbers the better levels,
    /// which moved), so a depth is the side's size - 1 - slot; turning it on numbers every
    /// level (O(levels)). Without, only the changes that may have moved a side's best are
    /// recorded (what a bbo needs): a level that arrived, grew or left at depth 0, and a level
    /// that stays, which says level_change::unknown_depth (nothing but the order and its level
    /// is touched); a level that arrived, grew or left below the best is left out. Off by
    /// default.
    void track_changes(bool on, bool depth = true) noexcept;
    [[nodiscard]] std::span<level_change const> changes() const noexcept {
        return {changes_.data(), change_count_};
    }
    /// With tracking on: the order the last reduce(), remove() or replace() changed, as it was
    /// before (the original of a replace); nullptr after another writer or an unknown reference.
    [[nodiscard]] order const* changed_order() const noexcept {
        return has_changed_order_ ? &changed_order_ : nullptr;
    }

    // Cache hints for a message about to be applied (itch50_parser::on_messages prefetches a
    // few messages ahead); they never change the book. First the order's record (or the
    // stock's state); later, once that has arrived, the order's level (or the best end of the
    // stock's side).
    void prefetch_order(std::uint64_t ref) const noexcept { orders_.prefetch(ref); }
    void prefetch_level(std::uint64_t ref) const noexcept;
    void prefetch_stock(std::uint16_t locate) const noexcept;
    void prefetch_side(std::uint16_t locate, order_side side) const noexcept;

    // Readers.
    [[nodiscard]] top_of_book top(std::uint16_t locate) const noexcept;
    [[nodiscard]] std::uint32_t order_count(std::uint16_t locate) const noexcept;
    /// Empty if no R message named the stock.
    [[nodiscard]] std::string_view symbol(std::uint16_t locate) const noexcept;
    [[nodiscard]] bool listed(std::uint16_t locate) const noexcept;
    /// Linear search over the listed stocks.
    [[nodiscard]] std::optional<std::uint16_t> find_locate(std::string_view symbol) const noexcept;
    /// A side's levels, worst first and best last.
    [[nodiscard]] book_side bids(std::uint16_t locate) const noexcept;
    [[nodiscard]] book_side asks(std::uint16_t locate) const noexcept;
    [[nodiscard]] std::optional<order> find(std::uint64_t ref) const noexcept;
    /// Calls f(stock_view const&) for each listed stock, in the order they were first listed.
    template <typename F>
    requires std::invocable<F&, stock_view const&>
    void for_each_stock(F&& f) const;

    [[nodiscard]] std::size_t size() const noexcept { return orders_.size(); }
    [[nodiscard]] std::size_t capacity() const noexcept { return orders_.capacity(); }
    /// Price levels in the book, both sides of every stock.
    [[nodiscard]] std::size_t level_count() const noexcept {
        return levels_.size() - free_levels_.size();
    }
    /// The order store's pages and table (memory and placement; see order_index.hpp).
    [[nodiscard]] detail::order_index const& order_store() const noexcept { return orders_; }
    /// Recomputes every level from the orders: O(orders + levels + locates). Tests and fuzzers.
    [[nodiscard]] bool check_invariants() const;

private:
    struct stock_state {
        std::vector<detail::level_ref> bids; // ascending price: best bid last
        std::vector<detail::level_ref> asks; // descending price: best ask last
        std::array<char, max_symbol_length> symbol{};
        std::uint8_t symbol_length = 0;
        std::uint16_t locate = 0;
        bool listed = false;
    };

    /// The stock's state, created (and its sides reserved) on first use.
    stock_state& use_stock(std::uint16_t locate) {
        std::uint32_t const index = stock_index_[locate];
        return index != 0 ? stocks_[index - 1] : new_stock(locate);
    }
    stock_state& new_stock(std::uint16_t locate);
    /// nullptr if the locate was never used.
    [[nodiscard]] stock_state const* find_stock(std::uint16_t locate) const noexcept;
    /// Requires a live order at the locate (so its state exists).
    [[nodiscard]] stock_state& stock_of(std::uint16_t locate) noexcept;
    /// add() without resetting the recorded changes (replace() records two).
    book_result insert(std::uint16_t locate, std::uint64_t ref, order_side side,
                       std::uint32_t shares, std::uint32_t price);
    /// The level of `price` on the order's side, created if new; returns its pool index.
    std::uint32_t join_level(stock_state& stock, order_side side, std::uint32_t price,
                             std::uint32_t shares);
    /// Takes a gone order off its level and erases the level if it was the last.
    void leave_level(detail::order_record const& order) noexcept;
    /// Tracking: a writer starts with nothing recorded.
    void begin_change() noexcept {
        if (tracking_) {
            change_count_ = 0;
            has_changed_order_ = false;
        }
    }
    /// Tracking: records the order a writer is about to change.
    void note_order(std::uint64_t ref, detail::order_record const& o) noexcept {
        if (tracking_) {
            changed_order_ = {ref, o.locate, o.side, o.shares, o.price};
            has_changed_order_ = true;
        }
    }
    /// Tracking: records the level `node` (at `price`) of a side at `depth` from its best;
    /// returns the record.
    level_change* note(std::uint32_t node, std::uint32_t price, std::size_t depth,
                       std::uint16_t locate, order_side side) noexcept;
    /// Tracking: records the level of `order` that stays after it left or shrank.
    void note_level(detail::order_record const& order) noexcept;
    /// Tracking: sets the slot of each level of `levels` from `from` on (they moved).
    void renumber(std::vector<detail::level_ref> const& levels, std::size_t from) noexcept;
    void erase_order(std::uint64_t ref, detail::order_record const& order) noexcept;
    [[nodiscard]] stock_view view(std::uint16_t locate) const noexcept;

    detail::order_index orders_;
    std::vector<detail::level_node> levels_; // the level pool; orders keep indexes into it
    std::vector<std::uint32_t> free_levels_; // capacity >= levels_.size(): push never throws
    std::vector<std::uint32_t> stock_index_; // per locate: 1 + index into stocks_, 0 if unused
    std::vector<stock_state> stocks_;        // reserved for stock_reserve: rarely reallocates
    std::vector<std::uint16_t> listed_;      // reserved for every locate: never reallocates
    std::size_t level_reserve_;
    bool tracking_ = false;
    bool depth_ = false; // tracking with depths: every level's slot is kept
    std::uint8_t change_count_ = 0;
    bool has_changed_order_ = false;
    order changed_order_{};
    std::array<level_change, 2> changes_{};
};

template <typename F>
requires std::invocable<F&, stock_view const&>
void itch_order_book::for_each_stock(F&& f) const {
    for (std::uint16_t const locate : listed_) {
        f(view(locate));
    }
}

} // namespace signet::md::nasdaq
