// mdp3_channel's events (md/events.hpp): what each applied entry, definition, status, snapshot
// and reset means to a consumer. Called only with a sink set.
#include <algorithm>
#include <span>

#include <signet/md/cme/mdp3_channel.hpp>

namespace signet::md::cme {

namespace {

/// SecurityTradingStatus (CME's codes) as a normalized state.
trading_state state_of(std::uint8_t status) noexcept {
    switch (status) {
    case 17: // ReadyToTrade
        return trading_state::open;
    case 2: // TradingHalt
        return trading_state::halted;
    case 4:  // Close
    case 18: // NotAvailableForTrading
    case 26: // PostClose
        return trading_state::closed;
    case 15: // NewPriceIndication
    case 21: // PreOpen
        return trading_state::pre_open;
    case 24: // PreCross
    case 25: // Cross
        return trading_state::paused;
    default:
        return trading_state::unknown;
    }
}

event_level level_payload(mdp3_price_level const& l, std::size_t depth) noexcept {
    return {.price = l.price,
            .size = static_cast<std::uint64_t>(std::max(l.size, 0)),
            .orders = static_cast<std::uint32_t>(std::max(l.orders, 0)),
            .depth = static_cast<std::uint16_t>(depth),
            .reserved = {}};
}

char side_of(char entry_type) noexcept {
    return entry_type == entry_type::bid ? 'B' : 'S';
}

} // namespace

mdp3_channel::book_copy mdp3_channel::copy_of(mdp3_price_book const& b) noexcept {
    book_copy c;
    c.bid_count = b.bids().size();
    c.offer_count = b.offers().size();
    std::copy(b.bids().begin(), b.bids().end(), c.bids.begin());
    std::copy(b.offers().begin(), b.offers().end(), c.offers.begin());
    return c;
}

event mdp3_channel::base_event(mdp3_instrument const& i, std::uint64_t now_ns) const noexcept {
    event e{};
    e.instrument = static_cast<std::uint32_t>(&i - instruments_.data());
    e.sequence = event_sequence_;
    e.receive_ns = receive_ns_ != 0 ? receive_ns_ : now_ns;
    e.exchange_ns = transact_time_;
    return e;
}

void mdp3_channel::emit(event_kind kind, mdp3_instrument const& i, std::uint64_t now_ns,
                        std::uint16_t flags) noexcept {
    if (!wants(kind)) {
        return;
    }
    event e = base_event(i, now_ns);
    e.kind = kind;
    e.flags = flags;
    sink_->on_event(e);
}

void mdp3_channel::emit_definition(mdp3_instrument const& i, std::uint64_t now_ns) noexcept {
    if (!wants(event_kind::instrument_definition)) {
        return;
    }
    event e = base_event(i, now_ns);
    e.kind = event_kind::instrument_definition;
    e.definition = {};
    std::copy(i.symbol.begin(), i.symbol.end(), e.definition.symbol.begin());
    e.definition.price_exponent = static_cast<std::int8_t>(price_exponent); // PRICE9
    e.definition.tick = i.tick;
    sink_->on_event(e);
}

void mdp3_channel::emit_bbo(mdp3_instrument const& i, event const& base) noexcept {
    if (!wants(event_kind::bbo)) {
        return;
    }
    event e = base;
    e.kind = event_kind::bbo;
    e.side = 0;
    auto const bids = i.book.bids();
    auto const offers = i.book.offers();
    e.bbo = {.bid_price = bids.empty() ? 0 : bids[0].price,
             .bid_size = bids.empty() ? 0 : static_cast<std::uint64_t>(bids[0].size),
             .ask_price = offers.empty() ? 0 : offers[0].price,
             .ask_size = offers.empty() ? 0 : static_cast<std::uint64_t>(offers[0].size)};
    sink_->on_event(e);
}

void mdp3_channel::emit_book_changes(mdp3_instrument const& i, book_copy const& before,
                                     std::uint64_t now_ns) noexcept {
    event base = base_event(i, now_ns);
    bool best_moved = false;
    auto const diff = [&](char side, std::span<mdp3_price_level const> old_levels,
                          std::span<mdp3_price_level const> levels) {
        best_moved = best_moved || (old_levels.empty() != levels.empty()) ||
                     (!levels.empty() && !(old_levels[0] == levels[0]));
        if (!wants(event_kind::level_update)) {
            return;
        }
        event e = base;
        e.kind = event_kind::level_update;
        e.side = side;
        auto const price_at = [](std::span<mdp3_price_level const> l, std::int64_t price) {
            return std::find_if(l.begin(), l.end(),
                                [price](mdp3_price_level const& x) { return x.price == price; });
        };
        for (std::size_t d = 0; d < old_levels.size(); ++d) { // levels that left
            if (price_at(levels, old_levels[d].price) == levels.end()) {
                e.level = {.price = old_levels[d].price,
                           .size = 0,
                           .orders = 0,
                           .depth = static_cast<std::uint16_t>(d),
                           .reserved = {}};
                sink_->on_event(e);
            }
        }
        for (std::size_t d = 0; d < levels.size(); ++d) { // new or changed levels
            auto const was = price_at(old_levels, levels[d].price);
            if (was != old_levels.end() && *was == levels[d]) {
                continue;
            }
            e.level = level_payload(levels[d], d);
            sink_->on_event(e);
        }
    };
    diff('B', {before.bids.data(), before.bid_count}, i.book.bids());
    diff('S', {before.offers.data(), before.offer_count}, i.book.offers());
    if (best_moved) {
        emit_bbo(i, base);
    }
}

void mdp3_channel::emit_order(mdp3_instrument const& i, order_book_entry const& e,
                              std::uint64_t now_ns) noexcept {
    event_kind const kind = e.action == update_action::new_level ? event_kind::order_add
                            : e.action == update_action::change  ? event_kind::order_modify
                                                                 : event_kind::order_delete;
    if (!wants(kind)) {
        return;
    }
    event out = base_event(i, now_ns);
    out.kind = kind;
    out.side = side_of(e.type);
    out.order = {.id = e.order_id,
                 .price = e.price,
                 .quantity = kind == event_kind::order_delete
                                 ? 0U
                                 : static_cast<std::uint32_t>(std::max(e.display_qty, 0)),
                 .mpid = {},
                 .priority = e.priority == null_uint64 ? 0 : e.priority};
    sink_->on_event(out);
}

void mdp3_channel::emit_trade(mdp3_instrument const& i, trade_entry const& e,
                              std::uint64_t now_ns) noexcept {
    if (!wants(event_kind::trade)) {
        return;
    }
    event out = base_event(i, now_ns);
    out.kind = event_kind::trade;
    out.side = e.aggressor_side == 1 ? 'B' : e.aggressor_side == 2 ? 'S' : 0;
    out.trade = {.price = e.price,
                 .quantity = static_cast<std::uint64_t>(std::max(e.size, 0)),
                 .match = e.trade_entry_id == null_uint32 ? 0 : e.trade_entry_id,
                 .order_id = 0};
    sink_->on_event(out);
}

void mdp3_channel::emit_status(mdp3_instrument const& i, std::uint8_t status,
                               std::uint64_t now_ns) noexcept {
    if (!wants(event_kind::trading_status)) {
        return;
    }
    event e = base_event(i, now_ns);
    e.kind = event_kind::trading_status;
    e.status = {};
    e.status.state = state_of(status);
    char digits[3];
    std::size_t n = 0;
    for (unsigned v = status; n == 0 || v != 0; v /= 10) {
        digits[n++] = static_cast<char>('0' + v % 10);
    }
    std::reverse_copy(digits, digits + n, e.status.code.begin()); // SecurityTradingStatus

    sink_->on_event(e);
}

void mdp3_channel::emit_loaded_book(mdp3_instrument const& i, std::uint64_t now_ns) noexcept {
    emit(event_kind::snapshot_begin, i, now_ns, event_flag::from_snapshot);
    emit(event_kind::book_clear, i, now_ns, event_flag::from_snapshot);
    event base = base_event(i, now_ns);
    base.flags = event_flag::from_snapshot;
    if (wants(event_kind::level_update)) {
        event e = base;
        e.kind = event_kind::level_update;
        for (auto const& [side, levels] :
             {std::pair{'B', i.book.bids()}, std::pair{'S', i.book.offers()}}) {
            e.side = side;
            for (std::size_t d = 0; d < levels.size(); ++d) {
                e.level = level_payload(levels[d], d);
                sink_->on_event(e);
            }
        }
    }
    if (!i.orders_stale && wants(event_kind::order_add)) {
        event e = base;
        e.kind = event_kind::order_add;
        i.orders.for_each([&](std::uint64_t id, mdp3_order const& o) {
            e.side = side_of(o.side);
            e.order = {.id = id,
                       .price = o.price,
                       .quantity = static_cast<std::uint32_t>(std::max(o.quantity, 0)),
                       .mpid = {},
                       .priority = o.priority == null_uint64 ? 0 : o.priority};
            sink_->on_event(e);
        });
    }
    emit_bbo(i, base);
    emit(event_kind::snapshot_end, i, now_ns, event_flag::from_snapshot);
}

} // namespace signet::md::cme
