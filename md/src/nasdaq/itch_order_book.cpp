#include <algorithm>
#include <cassert>

#include <signet/md/ascii_field.hpp>
#include <signet/md/nasdaq/itch_order_book.hpp>

namespace signet::md::nasdaq {

namespace {

// Both sides keep the best level last: bids ascend, asks descend. `Bids` picks the order.
template <bool Bids>
bool worse(std::uint32_t a, std::uint32_t b) noexcept {
    return Bids ? a < b : a > b;
}

// Levels scanned from the best price before a binary search takes over.
constexpr std::size_t linear_scan = 16;

// The index of the first level not worse than `price`: the level at `price` if there is one,
// else where it would go. Scans from the best end, where most activity is.
template <bool Bids>
std::size_t position(std::vector<detail::level_ref> const& levels, std::uint32_t price) noexcept {
    std::size_t i = levels.size();
    std::size_t const stop = i > linear_scan ? i - linear_scan : 0;
    while (i > stop && !worse<Bids>(levels[i - 1].price, price)) {
        --i;
    }
    if (i == stop && stop > 0) {
        auto const first = levels.begin();
        i = static_cast<std::size_t>(std::partition_point(first,
                                                          first + static_cast<std::ptrdiff_t>(i),
                                                          [&](detail::level_ref const& l) {
                                                              return worse<Bids>(l.price, price);
                                                          }) -
                                     first);
    }
    return i;
}

} // namespace

itch_order_book::itch_order_book(itch_order_book_options options)
    : orders_(options.max_orders, options.index_pages)
    , stock_index_(max_locates, 0)
    , level_reserve_(options.level_reserve) {
    levels_.reserve(options.level_pool_reserve);
    free_levels_.reserve(options.level_pool_reserve);
    stocks_.reserve(std::min(options.stock_reserve, max_locates));
    listed_.reserve(max_locates);
}

itch_order_book::stock_state& itch_order_book::new_stock(std::uint16_t locate) {
    // Only one stock's state is referenced at a time, so growing past the reserve is safe.
    stock_state& stock = stocks_.emplace_back();
    stock.locate = locate;
    stock_index_[locate] = static_cast<std::uint32_t>(stocks_.size());
    stock.bids.reserve(level_reserve_); // if these throw, the stock exists with no room yet
    stock.asks.reserve(level_reserve_);
    return stock;
}

itch_order_book::stock_state const*
itch_order_book::find_stock(std::uint16_t locate) const noexcept {
    std::uint32_t const index = stock_index_[locate];
    return index == 0 ? nullptr : &stocks_[index - 1];
}

itch_order_book::stock_state& itch_order_book::stock_of(std::uint16_t locate) noexcept {
    assert(stock_index_[locate] != 0 && "a live order's stock exists");
    return stocks_[stock_index_[locate] - 1];
}

void itch_order_book::set_symbol(std::uint16_t locate, std::string_view symbol) {
    stock_state& stock = use_stock(locate);
    symbol = trim_padding(symbol.substr(0, max_symbol_length));
    stock.symbol.fill('\0');
    std::copy(symbol.begin(), symbol.end(), stock.symbol.begin());
    stock.symbol_length = static_cast<std::uint8_t>(symbol.size());
    if (!stock.listed) {
        stock.listed = true;
        listed_.push_back(locate); // reserved for every locate: never reallocates
    }
}

std::uint32_t itch_order_book::join_level(stock_state& stock, order_side side, std::uint32_t price,
                                          std::uint32_t shares) {
    bool const bids = side == order_side::buy;
    std::vector<detail::level_ref>& levels = bids ? stock.bids : stock.asks;
    std::size_t const at = bids ? position<true>(levels, price) : position<false>(levels, price);
    if (at < levels.size() && levels[at].price == price) {
        detail::level_node& node = levels_[levels[at].node];
        ++node.orders;
        node.shares += shares;
        if (tracking_ && (depth_ || at + 1 == levels.size())) {
            note(levels[at].node, price, levels.size() - 1 - at, stock.locate, side);
        }
        return levels[at].node;
    }
    // A new level. Everything that can throw happens before anything changes.
    if (levels.size() == levels.capacity()) {
        levels.reserve(std::max<std::size_t>(2 * levels.size(), 4));
    }
    std::uint32_t node = 0;
    if (free_levels_.empty()) {
        if (levels_.size() == levels_.capacity()) {
            std::size_t const grown = std::max<std::size_t>(2 * levels_.size(), 64);
            free_levels_.reserve(grown);
            levels_.reserve(grown);
        }
        node = static_cast<std::uint32_t>(levels_.size());
        levels_.emplace_back();
    } else {
        node = free_levels_.back();
        free_levels_.pop_back();
    }
    levels_[node] = detail::level_node{shares, 1, 0};
    levels.insert(levels.begin() + static_cast<std::ptrdiff_t>(at), detail::level_ref{price, node});
    if (tracking_) {
        if (depth_) {
            renumber(levels, at);
        }
        if (depth_ || at + 1 == levels.size()) {
            note(node, price, levels.size() - 1 - at, stock.locate, side);
        }
    }
    return node;
}

void itch_order_book::track_changes(bool on, bool depth) noexcept {
    if (on && depth && !depth_) { // the slots were not kept meanwhile
        for (stock_state const& stock : stocks_) {
            renumber(stock.bids, 0);
            renumber(stock.asks, 0);
        }
    }
    tracking_ = on;
    depth_ = on && depth;
}

level_change* itch_order_book::note(std::uint32_t node, std::uint32_t price, std::size_t depth,
                                    std::uint16_t locate, order_side side) noexcept {
    if (change_count_ == changes_.size()) {
        return nullptr; // cannot happen: a writer changes at most two levels
    }
    detail::level_node const& n = levels_[node];
    level_change& c = changes_[change_count_++];
    c = {.price = price,
         .orders = n.orders,
         .shares = n.shares,
         .depth = static_cast<std::uint32_t>(depth),
         .locate = locate,
         .side = side,
         .next_best_price = 0,
         .next_best_shares = 0};
    return &c;
}

void itch_order_book::note_level(detail::order_record const& order) noexcept {
    if (!depth_) { // the stock's side stays untouched (the caller knows its best)
        note(order.level, order.price, level_change::unknown_depth, order.locate, order.side);
        return;
    }
    stock_state const& stock = stock_of(order.locate);
    std::size_t const size = order.side == order_side::buy ? stock.bids.size() : stock.asks.size();
    note(order.level, order.price, size - 1 - levels_[order.level].slot, order.locate, order.side);
}

void itch_order_book::renumber(std::vector<detail::level_ref> const& levels,
                               std::size_t from) noexcept {
    for (std::size_t i = from; i < levels.size(); ++i) {
        levels_[levels[i].node].slot = static_cast<std::uint32_t>(i);
    }
}

void itch_order_book::leave_level(detail::order_record const& order) noexcept {
    detail::level_node& node = levels_[order.level];
    node.shares -= std::min<std::uint64_t>(node.shares, order.shares);
    if (--node.orders != 0) {
        if (tracking_) {
            note_level(order);
        }
        return;
    }
    stock_state& stock = stock_of(order.locate);
    std::vector<detail::level_ref>& levels =
        order.side == order_side::buy ? stock.bids : stock.asks;
    std::size_t const at =
        depth_ ? node.slot
               : (order.side == order_side::buy ? position<true>(levels, order.price)
                                                : position<false>(levels, order.price));
    assert(at < levels.size() && levels[at].node == order.level && "every live order has a level");
    level_change* const left =
        tracking_ && (depth_ || at + 1 == levels.size())
            ? note(order.level, order.price, levels.size() - 1 - at, order.locate, order.side)
            : nullptr;
    levels.erase(levels.begin() + static_cast<std::ptrdiff_t>(at));
    if (depth_) {
        renumber(levels, at);
    }
    if (left != nullptr && at == levels.size() && !levels.empty()) { // the best left: the next
        left->next_best_price = levels.back().price;
        left->next_best_shares = levels_[levels.back().node].shares;
    }
    free_levels_.push_back(order.level); // capacity >= levels_.size(): never reallocates
}

book_result itch_order_book::add(std::uint16_t locate, std::uint64_t ref, order_side side,
                                 std::uint32_t shares, std::uint32_t price) {
    begin_change();
    return insert(locate, ref, side, shares, price);
}

book_result itch_order_book::insert(std::uint16_t locate, std::uint64_t ref, order_side side,
                                    std::uint32_t shares, std::uint32_t price) {
    auto const [order, fresh] = orders_.emplace(ref);
    if (!fresh) {
        return order != nullptr ? book_result::duplicate_order : book_result::book_full;
    }
    std::uint32_t level = 0;
    try {
        level = join_level(use_stock(locate), side, price, shares);
    } catch (...) { // bad_alloc growing a side: the order goes again, nothing else changed
        orders_.erase(ref);
        throw;
    }
    order->level = level;
    order->shares = shares;
    order->price = price;
    order->locate = locate;
    order->side = side;
    return book_result::ok;
}

void itch_order_book::erase_order(std::uint64_t ref, detail::order_record const& order) noexcept {
    leave_level(order);
    orders_.erase(ref); // invalidates `order`
}

book_result itch_order_book::reduce(std::uint64_t ref, std::uint32_t shares) {
    begin_change();
    detail::order_record* const order = orders_.find(ref);
    if (order == nullptr) {
        return book_result::unknown_order;
    }
    note_order(ref, *order);
    std::uint32_t const cut = std::min(order->shares, shares);
    if (cut == order->shares) {
        erase_order(ref, *order);
        return book_result::ok;
    }
    detail::level_node& node = levels_[order->level];
    node.shares -= std::min<std::uint64_t>(node.shares, cut);
    order->shares -= cut;
    if (tracking_) {
        note_level(*order);
    }
    return book_result::ok;
}

book_result itch_order_book::remove(std::uint64_t ref) {
    begin_change();
    detail::order_record const* const order = orders_.find(ref);
    if (order == nullptr) {
        return book_result::unknown_order;
    }
    note_order(ref, *order);
    erase_order(ref, *order);
    return book_result::ok;
}

book_result itch_order_book::replace(std::uint64_t original_ref, std::uint64_t new_ref,
                                     std::uint32_t shares, std::uint32_t price) {
    begin_change();
    detail::order_record const* const order = orders_.find(original_ref);
    if (order == nullptr) {
        return book_result::unknown_order;
    }
    note_order(original_ref, *order);
    std::uint16_t const locate = order->locate;
    order_side const side = order->side;
    erase_order(original_ref, *order); // invalidates `order`
    return insert(locate, new_ref, side, shares, price);
}

void itch_order_book::prefetch_level(std::uint64_t ref) const noexcept {
    if (detail::order_record const* const order = orders_.find(ref)) {
        __builtin_prefetch(&levels_[order->level]);
        if (depth_) { // the change's depth: the size of the level's side
            prefetch_stock(order->locate);
        }
    }
}

void itch_order_book::prefetch_stock(std::uint16_t locate) const noexcept {
    if (std::uint32_t const index = stock_index_[locate]; index != 0) {
        __builtin_prefetch(&stocks_[index - 1]);
    }
}

void itch_order_book::prefetch_side(std::uint16_t locate, order_side side) const noexcept {
    if (stock_state const* const stock = find_stock(locate)) {
        std::vector<detail::level_ref> const& levels =
            side == order_side::buy ? stock->bids : stock->asks;
        if (!levels.empty()) {
            __builtin_prefetch(&levels.back()); // the best price: where an add's scan starts
            __builtin_prefetch(&levels.back() - std::min<std::size_t>(levels.size() - 1, 8));
        }
    }
}

top_of_book itch_order_book::top(std::uint16_t locate) const noexcept {
    top_of_book top;
    stock_state const* const stock = find_stock(locate);
    if (stock == nullptr) {
        return top;
    }
    if (!stock->bids.empty()) {
        detail::level_node const& best = levels_[stock->bids.back().node];
        top.bid_price = stock->bids.back().price;
        top.bid_shares = best.shares;
    }
    if (!stock->asks.empty()) {
        detail::level_node const& best = levels_[stock->asks.back().node];
        top.ask_price = stock->asks.back().price;
        top.ask_shares = best.shares;
    }
    return top;
}

std::uint32_t itch_order_book::order_count(std::uint16_t locate) const noexcept {
    std::uint32_t orders = 0;
    for (itch_price_level const level : bids(locate)) {
        orders += level.orders;
    }
    for (itch_price_level const level : asks(locate)) {
        orders += level.orders;
    }
    return orders;
}

std::string_view itch_order_book::symbol(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock == nullptr ? std::string_view{}
                            : std::string_view{stock->symbol.data(), stock->symbol_length};
}

bool itch_order_book::listed(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock != nullptr && stock->listed;
}

std::optional<std::uint16_t> itch_order_book::find_locate(std::string_view symbol) const noexcept {
    for (std::uint16_t const locate : listed_) {
        if (this->symbol(locate) == symbol) {
            return locate;
        }
    }
    return std::nullopt;
}

book_side itch_order_book::bids(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock == nullptr ? book_side{} : book_side{stock->bids, levels_.data()};
}

book_side itch_order_book::asks(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock == nullptr ? book_side{} : book_side{stock->asks, levels_.data()};
}

std::optional<order> itch_order_book::find(std::uint64_t ref) const noexcept {
    detail::order_record const* const record = orders_.find(ref);
    if (record == nullptr) {
        return std::nullopt;
    }
    return order{ref, record->locate, record->side, record->shares, record->price};
}

stock_view itch_order_book::view(std::uint16_t locate) const noexcept {
    return stock_view{locate, symbol(locate), top(locate), order_count(locate)};
}

bool itch_order_book::check_invariants() const {
    if (!orders_.check_invariants()) {
        return false;
    }
    // Which stock and side each pool node is on; every node on at most one side.
    constexpr std::uint32_t free_node = 0xFFFF'FFFF;
    std::vector<std::uint32_t> prices(levels_.size(), 0);        // of the nodes on a side
    std::vector<std::uint32_t> owner(levels_.size(), free_node); // locate * 2 + (ask ? 1 : 0)
    std::size_t on_sides = 0;
    for (std::size_t i = 0; i < stocks_.size(); ++i) {
        stock_state const& stock = stocks_[i];
        if (stock_index_[stock.locate] != i + 1) {
            return false;
        }
        auto const side_ok = [&](std::vector<detail::level_ref> const& side, std::uint32_t tag,
                                 auto worse_than) {
            for (std::size_t l = 0; l < side.size(); ++l) {
                if (l > 0 && !worse_than(side[l - 1].price, side[l].price)) {
                    return false; // not strictly ordered, worst first
                }
                if (side[l].node >= levels_.size() || owner[side[l].node] != free_node ||
                    levels_[side[l].node].orders == 0 ||
                    (depth_ && levels_[side[l].node].slot != l)) {
                    return false;
                }
                owner[side[l].node] = tag;
                prices[side[l].node] = side[l].price;
            }
            on_sides += side.size();
            return true;
        };
        auto const tag = static_cast<std::uint32_t>(stock.locate * 2U);
        if (!side_ok(stock.bids, tag, worse<true>) || !side_ok(stock.asks, tag + 1, worse<false>)) {
            return false;
        }
    }
    for (std::uint32_t const node : free_levels_) {
        if (node >= levels_.size() || owner[node] != free_node) {
            return false;
        }
    }
    if (on_sides + free_levels_.size() != levels_.size()) {
        return false;
    }
    // Every order on a level of its stock and side at its price; the levels' sums.
    std::vector<itch_price_level> sums(levels_.size());
    bool orphan = false;
    orders_.for_each([&](std::uint64_t, detail::order_record const& order) {
        std::uint32_t const tag = order.locate * 2U + (order.side == order_side::sell ? 1U : 0U);
        if (order.level >= levels_.size() || owner[order.level] != tag ||
            prices[order.level] != order.price) {
            orphan = true;
            return;
        }
        ++sums[order.level].orders;
        sums[order.level].shares += order.shares;
    });
    if (orphan) {
        return false;
    }
    for (std::size_t node = 0; node < levels_.size(); ++node) {
        if (owner[node] != free_node && (sums[node].orders != levels_[node].orders ||
                                         sums[node].shares != levels_[node].shares)) {
            return false;
        }
    }
    return true;
}

} // namespace signet::md::nasdaq
