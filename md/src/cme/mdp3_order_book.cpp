#include <algorithm>

#include <signet/md/cme/mdp3_order_book.hpp>

namespace signet::md::cme {

book_update mdp3_order_book::apply(order_book_entry const& e) {
    if (e.type != entry_type::bid && e.type != entry_type::offer) {
        return book_update::ignored;
    }
    auto const it = orders_.find(e.order_id);
    switch (e.action) {
    case update_action::new_level:
        if (it != orders_.end()) {
            return book_update::inconsistent;
        }
        orders_.emplace(e.order_id, mdp3_order{e.priority, e.price, e.display_qty, e.type});
        return book_update::applied;
    case update_action::change:
        if (it == orders_.end()) {
            return book_update::inconsistent;
        }
        it->second = {e.priority, e.price, e.display_qty, e.type};
        return book_update::applied;
    case update_action::remove:
        if (it == orders_.end()) {
            return book_update::inconsistent;
        }
        orders_.erase(it);
        return book_update::applied;
    default:
        return book_update::inconsistent; // not an order action
    }
}

void mdp3_order_book::add(snapshot_order_entry const& e) {
    if (e.type == entry_type::bid || e.type == entry_type::offer) {
        loading_[e.order_id] = {e.priority, e.price, e.display_qty, e.type};
    }
}

mdp3_order const* mdp3_order_book::find(std::uint64_t order_id) const noexcept {
    auto const it = orders_.find(order_id);
    return it == orders_.end() ? nullptr : &it->second;
}

std::vector<std::pair<std::uint64_t, mdp3_order>> mdp3_order_book::sorted() const {
    std::vector<std::pair<std::uint64_t, mdp3_order>> out(orders_.begin(), orders_.end());
    std::sort(out.begin(), out.end(),
              [](auto const& a, auto const& b) { return a.first < b.first; });
    return out;
}

} // namespace signet::md::cme
