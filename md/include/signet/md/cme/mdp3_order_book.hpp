#pragma once

/// cme::mdp3_order_book: one instrument's market-by-order book as CME MDP 3.0 sends it — orders
/// by OrderID, changed by MDIncrementalRefreshOrderBook47 entries (0 new, 1 update, 2 delete)
/// and replaced by the chunks of SnapshotFullRefreshOrderBook53.
///
/// An entry that does not fit (a new order whose id is live, an update or delete of an id that
/// is not) is refused and reported (inconsistent): the caller recovers the instrument. Implied
/// and other entry types are ignored.
///
/// Memory: the orders live in open-addressing tables (detail::fixed_hash_map), one for the
/// book and one for a snapshot being loaded, no node per order. A table that fills doubles
/// (the one allocation, amortized: none once an instrument's live orders stop growing), within
/// a budget of order slots its channel's books share (mdp3_order_budget: the receiver's
/// [book] max_orders); past it the entry or chunk is refused (full) and the caller recovers
/// the instrument from the snapshot loop. Without a budget, tables grow without bound (tests,
/// md_feed's model).
///
/// Threading: none. Costs: a lookup, and an insert or erase, per entry.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <signet/md/cme/mdp3.hpp>
#include <signet/md/cme/mdp3_price_book.hpp>
#include <signet/md/detail/fixed_hash_map.hpp>

namespace signet::md::cme {

struct mdp3_order {
    std::uint64_t priority = 0;
    std::int64_t price = 0;
    std::int32_t quantity = 0;
    char side = entry_type::bid; ///< '0' bid, '1' offer
    friend bool operator==(mdp3_order const&, mdp3_order const&) = default;
};

/// Order slots (table capacity) a channel's by-order books may hold in all, and hold now.
struct mdp3_order_budget {
    std::size_t limit = std::numeric_limits<std::size_t>::max();
    std::size_t used = 0;
};

class mdp3_order_book {
public:
    /// `budget`: shared with the channel's other books, outlives them (nullptr: unbounded).
    explicit mdp3_order_book(mdp3_order_budget* budget = nullptr);

    book_update apply(order_book_entry const& e);
    /// A snapshot, chunk by chunk: begin_load(), add() for each chunk's entries, then
    /// commit_load() swaps it in (abort by calling begin_load() again). add() returns false
    /// when the order does not fit the budget: the load cannot complete.
    void begin_load() noexcept { loading_.clear(); }
    bool add(snapshot_order_entry const& e);
    void commit_load() noexcept {
        std::swap(orders_, loading_);
        loading_.clear();
    }
    void clear() noexcept { orders_.clear(); }

    [[nodiscard]] std::size_t size() const noexcept { return orders_.size(); }
    [[nodiscard]] mdp3_order const* find(std::uint64_t order_id) const noexcept {
        return orders_.find(order_id);
    }
    /// f(id, order) for every live order, in no particular order.
    template <typename F>
    void for_each(F&& f) const {
        orders_.for_each(f);
    }
    /// Every live order as (id, order), ordered by id.
    [[nodiscard]] std::vector<std::pair<std::uint64_t, mdp3_order>> sorted() const;

private:
    using table = detail::fixed_hash_map<std::uint64_t, mdp3_order>;
    /// Room for one more entry in `t` (doubling it within the budget); false: none.
    bool make_room(table& t);

    mdp3_order_budget* budget_;
    table orders_{initial_capacity};
    table loading_{initial_capacity};
    static constexpr std::size_t initial_capacity = 8;
};

} // namespace signet::md::cme
