#include <algorithm>

#include <signet/md/cme/mdp3_price_book.hpp>

namespace signet::md::cme {

mdp3_price_book::mdp3_price_book(std::size_t depth) noexcept
    : depth_(std::clamp<std::size_t>(depth, 1, max_depth)) {}

void mdp3_price_book::clear() noexcept {
    bids_.count = 0;
    offers_.count = 0;
}

book_update mdp3_price_book::apply(book_entry const& e) noexcept {
    switch (e.type) {
    case entry_type::bid:
        return apply(bids_, e);
    case entry_type::offer:
        return apply(offers_, e);
    case entry_type::book_reset:
        clear();
        return book_update::applied;
    default:
        return book_update::ignored;
    }
}

book_update mdp3_price_book::apply(side& s, book_entry const& e) noexcept {
    std::size_t const level = e.price_level;
    if (e.action == update_action::delete_thru) {
        s.count = 0;
        return book_update::applied;
    }
    if (level == 0 || level > depth_) {
        return book_update::inconsistent;
    }
    std::size_t const i = level - 1;
    mdp3_price_level const value{e.price, e.size, e.number_of_orders};
    auto* const levels = s.levels.data();
    switch (e.action) {
    case update_action::new_level:
        if (i > s.count) {
            return book_update::inconsistent; // a hole above it
        }
        std::copy_backward(levels + i, levels + std::min(s.count, depth_ - 1),
                           levels + std::min(s.count, depth_ - 1) + 1);
        levels[i] = value;
        s.count = std::min(s.count + 1, depth_);
        return book_update::applied;
    case update_action::change:
        if (i >= s.count || levels[i].price != e.price) {
            return book_update::inconsistent;
        }
        levels[i] = value;
        return book_update::applied;
    case update_action::remove:
        if (i >= s.count) {
            return book_update::inconsistent;
        }
        std::copy(levels + i + 1, levels + s.count, levels + i);
        --s.count;
        return book_update::applied;
    case update_action::delete_from: {
        std::size_t const removed = std::min(level, s.count);
        std::copy(levels + removed, levels + s.count, levels);
        s.count -= removed;
        return book_update::applied;
    }
    case update_action::overlay:
        if (i >= s.count) {
            return book_update::inconsistent;
        }
        levels[i] = value;
        return book_update::applied;
    case update_action::delete_thru:
        break; // handled above
    }
    return book_update::inconsistent; // an action this schema does not have
}

bool mdp3_price_book::assign_snapshot(group<snapshot_entry> const& entries) noexcept {
    clear();
    bool ok = true;
    entries.for_each([&](snapshot_entry const& e) {
        side* const s = e.type == entry_type::bid     ? &bids_
                        : e.type == entry_type::offer ? &offers_
                                                      : nullptr;
        if (s == nullptr || !ok) {
            return; // statistics and implied entries are not this book's
        }
        if (e.price_level < 1 || static_cast<std::size_t>(e.price_level) > depth_) {
            ok = false;
            return;
        }
        auto const i = static_cast<std::size_t>(e.price_level - 1);
        if (i > s->count) {
            ok = false; // a hole
            return;
        }
        s->levels[i] = {e.price, e.size, e.number_of_orders};
        s->count = std::max(s->count, i + 1);
    });
    if (!ok) {
        clear();
    }
    return ok;
}

} // namespace signet::md::cme
