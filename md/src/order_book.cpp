#include <algorithm>
#include <bit>
#include <cassert>
#include <functional>
#include <map>
#include <stdexcept>
#include <tuple>

#include <signet/md/order_book.hpp>

namespace signet::md {

namespace detail {

order_table::order_table(std::size_t max_orders)
    : max_orders_(max_orders) {
    if (max_orders == 0 || max_orders > (std::size_t{1} << 31)) {
        throw std::invalid_argument("order_book: max_orders must be 1 to 2^31");
    }
    std::size_t const slots = std::bit_ceil(max_orders) * 2;
    slots_.resize(slots);
    mask_ = slots - 1;
    shift_ = 64U - static_cast<unsigned>(std::countr_zero(slots));
}

order_slot* order_table::find(std::uint64_t ref) noexcept {
    for (std::size_t i = home(ref);; i = (i + 1) & mask_) {
        order_slot& slot = slots_[i];
        if (!slot.used) {
            return nullptr;
        }
        if (slot.ref == ref) {
            return &slot;
        }
    }
}

order_slot const* order_table::find(std::uint64_t ref) const noexcept {
    return const_cast<order_table*>(this)->find(ref);
}

order_slot* order_table::insert(std::uint64_t ref) noexcept {
    if (size_ == max_orders_) {
        return nullptr;
    }
    // Load factor <= 0.5, so an empty slot exists and the probe ends.
    std::size_t i = home(ref);
    while (slots_[i].used) {
        i = (i + 1) & mask_;
    }
    order_slot& slot = slots_[i];
    slot = order_slot{};
    slot.ref = ref;
    slot.used = true;
    ++size_;
    return &slot;
}

void order_table::erase(order_slot* slot) noexcept {
    // Backward-shift deletion (Knuth 6.4 Algorithm R): walk the cluster after the hole and move
    // back every entry whose home is not in (hole, j] cyclically, so that every remaining entry
    // stays reachable from its home without tombstones.
    auto hole = static_cast<std::size_t>(slot - slots_.data());
    for (std::size_t j = (hole + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
        std::size_t const from_home = (j - home(slots_[j].ref)) & mask_;
        std::size_t const from_hole = (j - hole) & mask_;
        if (from_home >= from_hole) {
            slots_[hole] = slots_[j];
            hole = j;
        }
    }
    slots_[hole].used = false;
    --size_;
}

} // namespace detail

namespace {

// Bids ascend and asks descend, so on both sides the best level is last.
template <typename Compare>
void add_level(std::vector<price_level>& levels, std::uint32_t price, std::uint32_t shares,
               Compare better) {
    auto const it =
        std::lower_bound(levels.begin(), levels.end(), price,
                         [&](price_level const& l, std::uint32_t p) { return better(p, l.price); });
    if (it != levels.end() && it->price == price) {
        ++it->orders;
        it->shares += shares;
    } else {
        levels.insert(it, price_level{price, 1, shares});
    }
}

template <typename Compare>
void take_level(std::vector<price_level>& levels, std::uint32_t price, std::uint32_t shares,
                bool order_gone, Compare better) noexcept {
    auto const it =
        std::lower_bound(levels.begin(), levels.end(), price,
                         [&](price_level const& l, std::uint32_t p) { return better(p, l.price); });
    assert(it != levels.end() && it->price == price && "every live order has a level");
    if (it == levels.end() || it->price != price) {
        return;
    }
    it->shares -= std::min<std::uint64_t>(it->shares, shares);
    if (order_gone && --it->orders == 0) {
        levels.erase(it);
    }
}

} // namespace

order_book::order_book(order_book_options options)
    : orders_(options.max_orders)
    , stock_index_(max_locates, 0)
    , level_reserve_(options.level_reserve) {
    stocks_.reserve(std::min(options.stock_reserve, max_locates));
    listed_.reserve(std::min(options.stock_reserve, max_locates));
}

order_book::stock_state& order_book::use_stock(std::uint16_t locate) {
    std::uint32_t& index = stock_index_[locate];
    if (index == 0) {
        stocks_.emplace_back(); // reallocates only beyond options.stock_reserve
        index = static_cast<std::uint32_t>(stocks_.size());
        stock_state& stock = stocks_.back();
        stock.locate = locate;
        stock.bids.reserve(level_reserve_);
        stock.asks.reserve(level_reserve_);
    }
    return stocks_[index - 1];
}

order_book::stock_state const* order_book::find_stock(std::uint16_t locate) const noexcept {
    std::uint32_t const index = stock_index_[locate];
    return index == 0 ? nullptr : &stocks_[index - 1];
}

order_book::stock_state& order_book::stock_of(std::uint16_t locate) noexcept {
    assert(stock_index_[locate] != 0 && "a live order's stock exists");
    return stocks_[stock_index_[locate] - 1];
}

void order_book::set_symbol(std::uint16_t locate, std::string_view symbol) {
    stock_state& stock = use_stock(locate);
    symbol = symbol.substr(0, max_symbol_length);
    while (!symbol.empty() && symbol.back() == ' ') {
        symbol.remove_suffix(1);
    }
    stock.symbol.fill('\0');
    std::copy(symbol.begin(), symbol.end(), stock.symbol.begin());
    stock.symbol_length = static_cast<std::uint8_t>(symbol.size());
    if (!stock.listed) {
        stock.listed = true;
        listed_.push_back(locate); // reallocates only beyond options.stock_reserve
    }
}

void order_book::add_to_level(stock_state& stock, order_side side, std::uint32_t price,
                              std::uint32_t shares) {
    if (side == order_side::buy) {
        add_level(stock.bids, price, shares, std::greater<>{});
    } else {
        add_level(stock.asks, price, shares, std::less<>{});
    }
}

void order_book::take_from_level(stock_state& stock, order_side side, std::uint32_t price,
                                 std::uint32_t shares, bool order_gone) noexcept {
    if (side == order_side::buy) {
        take_level(stock.bids, price, shares, order_gone, std::greater<>{});
    } else {
        take_level(stock.asks, price, shares, order_gone, std::less<>{});
    }
}

book_result order_book::add(std::uint16_t locate, std::uint64_t ref, order_side side,
                            std::uint32_t shares, std::uint32_t price) {
    if (orders_.find(ref) != nullptr) {
        return book_result::duplicate_order;
    }
    if (orders_.size() == orders_.capacity()) {
        return book_result::book_full;
    }
    stock_state& stock = use_stock(locate);
    // Level first: if it throws (bad_alloc), the table holds no order without a level.
    add_to_level(stock, side, price, shares);
    detail::order_slot* const slot = orders_.insert(ref); // not full: never nullptr
    slot->shares = shares;
    slot->price = price;
    slot->locate = locate;
    slot->side = side;
    ++stock.orders;
    return book_result::ok;
}

void order_book::erase_order(detail::order_slot* slot) noexcept {
    stock_state& stock = stock_of(slot->locate);
    take_from_level(stock, slot->side, slot->price, slot->shares, true);
    --stock.orders;
    orders_.erase(slot);
}

book_result order_book::reduce(std::uint64_t ref, std::uint32_t shares) {
    detail::order_slot* const slot = orders_.find(ref);
    if (slot == nullptr) {
        return book_result::unknown_order;
    }
    std::uint32_t const cut = std::min(slot->shares, shares);
    if (cut == slot->shares) {
        erase_order(slot);
        return book_result::ok;
    }
    take_from_level(stock_of(slot->locate), slot->side, slot->price, cut, false);
    slot->shares -= cut;
    return book_result::ok;
}

book_result order_book::remove(std::uint64_t ref) {
    detail::order_slot* const slot = orders_.find(ref);
    if (slot == nullptr) {
        return book_result::unknown_order;
    }
    erase_order(slot);
    return book_result::ok;
}

book_result order_book::replace(std::uint64_t original_ref, std::uint64_t new_ref,
                                std::uint32_t shares, std::uint32_t price) {
    detail::order_slot* const slot = orders_.find(original_ref);
    if (slot == nullptr) {
        return book_result::unknown_order;
    }
    std::uint16_t const locate = slot->locate;
    order_side const side = slot->side;
    erase_order(slot); // invalidates slot
    return add(locate, new_ref, side, shares, price);
}

top_of_book order_book::top(std::uint16_t locate) const noexcept {
    top_of_book top;
    stock_state const* const stock = find_stock(locate);
    if (stock == nullptr) {
        return top;
    }
    if (!stock->bids.empty()) {
        top.bid_price = stock->bids.back().price;
        top.bid_shares = stock->bids.back().shares;
    }
    if (!stock->asks.empty()) {
        top.ask_price = stock->asks.back().price;
        top.ask_shares = stock->asks.back().shares;
    }
    return top;
}

std::uint32_t order_book::order_count(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock == nullptr ? 0 : stock->orders;
}

std::string_view order_book::symbol(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock == nullptr ? std::string_view{}
                            : std::string_view{stock->symbol.data(), stock->symbol_length};
}

bool order_book::listed(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock != nullptr && stock->listed;
}

std::optional<std::uint16_t> order_book::find_locate(std::string_view symbol) const noexcept {
    for (std::uint16_t const locate : listed_) {
        if (this->symbol(locate) == symbol) {
            return locate;
        }
    }
    return std::nullopt;
}

std::span<price_level const> order_book::bids(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock == nullptr ? std::span<price_level const>{} : stock->bids;
}

std::span<price_level const> order_book::asks(std::uint16_t locate) const noexcept {
    stock_state const* const stock = find_stock(locate);
    return stock == nullptr ? std::span<price_level const>{} : stock->asks;
}

std::optional<order> order_book::find(std::uint64_t ref) const noexcept {
    detail::order_slot const* const slot = orders_.find(ref);
    if (slot == nullptr) {
        return std::nullopt;
    }
    return order{slot->ref, slot->locate, slot->side, slot->shares, slot->price};
}

stock_view order_book::view(std::uint16_t locate) const noexcept {
    return stock_view{locate, symbol(locate), top(locate), order_count(locate)};
}

bool order_book::check_invariants() const {
    // Rebuild (locate, side, price) -> (orders, shares) from the orders and compare.
    std::map<std::tuple<std::uint16_t, char, std::uint32_t>, price_level> expected;
    std::vector<std::uint32_t> counts(stocks_.size(), 0);
    bool orphan = false;
    orders_.for_each([&](detail::order_slot const& slot) {
        price_level& level = expected[{slot.locate, static_cast<char>(slot.side), slot.price}];
        level.price = slot.price;
        ++level.orders;
        level.shares += slot.shares;
        std::uint32_t const index = stock_index_[slot.locate];
        if (index == 0) {
            orphan = true;
        } else {
            ++counts[index - 1];
        }
    });
    if (orphan) {
        return false;
    }
    std::size_t levels = 0;
    for (std::size_t i = 0; i < stocks_.size(); ++i) {
        stock_state const& stock = stocks_[i];
        if (stock_index_[stock.locate] != i + 1 || stock.orders != counts[i]) {
            return false;
        }
        auto const side_ok = [&](std::vector<price_level> const& side, char letter, auto better) {
            for (std::size_t l = 0; l < side.size(); ++l) {
                if (l > 0 && !better(side[l].price, side[l - 1].price)) {
                    return false;
                }
                auto const it = expected.find({stock.locate, letter, side[l].price});
                if (it == expected.end() || it->second.orders != side[l].orders ||
                    it->second.shares != side[l].shares) {
                    return false;
                }
            }
            levels += side.size();
            return true;
        };
        if (!side_ok(stock.bids, 'B', std::greater<>{}) ||
            !side_ok(stock.asks, 'S', std::less<>{})) {
            return false;
        }
    }
    return levels == expected.size();
}

} // namespace signet::md
