#pragma once

/// cme::mdp3_order_book: one instrument's market-by-order book as CME MDP 3.0 sends it — orders
/// by OrderID, changed by MDIncrementalRefreshOrderBook47 entries (0 new, 1 update, 2 delete)
/// and replaced by the chunks of SnapshotFullRefreshOrderBook53.
///
/// An entry that does not fit (a new order whose id is live, an update or delete of an id that
/// is not) is refused and reported (inconsistent): the caller recovers the instrument. Implied
/// and other entry types are ignored.
///
/// Threading: none. Costs: a hash map by OrderID; a new order allocates its node (the MBP path
/// does not allocate; this one does, once per live order).

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <signet/md/cme/mdp3.hpp>
#include <signet/md/cme/mdp3_price_book.hpp>

namespace signet::md::cme {

struct mdp3_order {
    std::uint64_t priority = 0;
    std::int64_t price = 0;
    std::int32_t quantity = 0;
    char side = entry_type::bid; ///< '0' bid, '1' offer
    friend bool operator==(mdp3_order const&, mdp3_order const&) = default;
};

class mdp3_order_book {
public:
    book_update apply(order_book_entry const& e);
    /// A snapshot, chunk by chunk: begin_load(), add() for each chunk's entries, then
    /// commit_load() swaps it in (abort by calling begin_load() again).
    void begin_load() { loading_.clear(); }
    void add(snapshot_order_entry const& e);
    void commit_load() {
        orders_.swap(loading_);
        loading_.clear();
    }
    void clear() noexcept { orders_.clear(); }

    [[nodiscard]] std::size_t size() const noexcept { return orders_.size(); }
    [[nodiscard]] mdp3_order const* find(std::uint64_t order_id) const noexcept;
    /// f(id, order) for every live order, in no particular order.
    template <typename F>
    void for_each(F&& f) const {
        for (auto const& [id, order] : orders_) {
            f(id, order);
        }
    }
    /// Every live order as (id, order), ordered by id.
    [[nodiscard]] std::vector<std::pair<std::uint64_t, mdp3_order>> sorted() const;

private:
    std::unordered_map<std::uint64_t, mdp3_order> orders_;
    std::unordered_map<std::uint64_t, mdp3_order> loading_;
};

} // namespace signet::md::cme
