#include <algorithm>

#include <signet/md/cme/mdp3_order_book.hpp>

namespace signet::md::cme {

mdp3_order_book::mdp3_order_book(mdp3_order_budget* budget)
    : budget_(budget) {
    if (budget_ != nullptr) {
        budget_->used += orders_.capacity() + loading_.capacity();
    }
}

bool mdp3_order_book::make_room(table& t) {
    if (t.size() < t.capacity()) {
        return true;
    }
    std::size_t const grown = t.capacity() * 2;
    if (budget_ != nullptr) {
        if (budget_->used + (grown - t.capacity()) > budget_->limit) {
            return false;
        }
        budget_->used += grown - t.capacity();
    }
    t.rehash(grown); // the one allocation: amortized over the orders that filled it
    return true;
}

book_update mdp3_order_book::apply(order_book_entry const& e) {
    if (e.type != entry_type::bid && e.type != entry_type::offer) {
        return book_update::ignored;
    }
    mdp3_order* const order = orders_.find(e.order_id);
    mdp3_order const value{e.priority, e.price, e.display_qty, e.type};
    switch (e.action) {
    case update_action::new_level:
        if (order != nullptr) {
            return book_update::inconsistent;
        }
        if (!make_room(orders_)) {
            return book_update::full;
        }
        (void)orders_.insert(e.order_id, value); // room made, the id is not in
        return book_update::applied;
    case update_action::change:
        if (order == nullptr) {
            return book_update::inconsistent;
        }
        *order = value;
        return book_update::applied;
    case update_action::remove:
        return orders_.erase(e.order_id) ? book_update::applied : book_update::inconsistent;
    default:
        return book_update::inconsistent; // not an order action
    }
}

bool mdp3_order_book::add(snapshot_order_entry const& e) {
    if (e.type != entry_type::bid && e.type != entry_type::offer) {
        return true;
    }
    mdp3_order const value{e.priority, e.price, e.display_qty, e.type};
    if (mdp3_order* const order = loading_.find(e.order_id)) {
        *order = value; // the same id twice in a snapshot: the later one
        return true;
    }
    if (!make_room(loading_)) {
        return false;
    }
    (void)loading_.insert(e.order_id, value);
    return true;
}

std::vector<std::pair<std::uint64_t, mdp3_order>> mdp3_order_book::sorted() const {
    std::vector<std::pair<std::uint64_t, mdp3_order>> out;
    out.reserve(orders_.size());
    orders_.for_each([&](std::uint64_t id, mdp3_order const& o) { out.emplace_back(id, o); });
    std::sort(out.begin(), out.end(),
              [](auto const& a, auto const& b) { return a.first < b.first; });
    return out;
}

} // namespace signet::md::cme
