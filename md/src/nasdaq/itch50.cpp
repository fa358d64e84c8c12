#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>

#include <signet/md/nasdaq/itch50.hpp>

namespace signet::md::nasdaq {

namespace {

// Copies n <= 64 bytes with at most two fixed-size (overlapping) copies, which compile to a
// few vector moves instead of a call to memmove: ITCH messages are 12 to 50 bytes.
void copy_short(std::byte* to, std::byte const* from, std::size_t n) noexcept {
    auto const two = [&](auto width) {
        std::memcpy(to, from, width);
        std::memcpy(to + n - width, from + n - width, width);
    };
    if (n >= 32) {
        two(std::integral_constant<std::size_t, 32>{});
    } else if (n >= 16) {
        two(std::integral_constant<std::size_t, 16>{});
    } else if (n >= 8) {
        two(std::integral_constant<std::size_t, 8>{});
    } else {
        for (std::size_t i = 0; i < n; ++i) {
            to[i] = from[i];
        }
    }
}

std::uint64_t u64_at(std::byte const* m, std::size_t offset) noexcept {
    return load_be64(m + offset);
}
std::uint32_t u32_at(std::byte const* m, std::size_t offset) noexcept {
    return load_be32(m + offset);
}

// The type letter of a message on_message() would decode, else '\0' (it is empty, of an
// unknown type or too short: on_message() counts it, and there is nothing to prefetch).
char decodable_type(std::span<std::byte const> message) noexcept {
    char const type = message.empty() ? '\0' : itch50::message_type(message);
    std::size_t const length = itch50::message_length(type);
    return length == 0 || message.size() < length ? '\0' : type;
}

} // namespace

itch50_parser::itch50_parser(itch_order_book_options options)
    : book_(options) {}

void itch50_parser::count(book_result result) noexcept {
    switch (result) {
    case book_result::ok:
        break;
    case book_result::unknown_order:
        ++stats_.unknown_order_refs;
        break;
    case book_result::duplicate_order:
        ++stats_.duplicate_order_refs;
        break;
    case book_result::book_full:
        ++stats_.book_full_drops;
        break;
    }
}

void itch50_parser::prefetch_far_ahead(std::span<std::byte const> message) const noexcept {
    namespace f = itch50::field;
    std::byte const* const m = message.data();
    char const type = decodable_type(message);
    if (sink_ != nullptr && type != 0 && wanted_.has(event_kind::bbo)) { // the bbo last reported
        __builtin_prefetch(&reported_top_[itch50::stock_locate(message)]);
    }
    switch (type) {
    case 'A':
    case 'F':
        book_.prefetch_stock(itch50::stock_locate(message));
        break;
    case 'E':
    case 'C':
    case 'X':
    case 'D':
    case 'U': // original_ref sits where order_ref does
        book_.prefetch_order(u64_at(m, f::order_ref));
        break;
    default:
        break;
    }
}

void itch50_parser::prefetch_near_ahead(std::span<std::byte const> message) const noexcept {
    namespace f = itch50::field;
    std::byte const* const m = message.data();
    switch (decodable_type(message)) {
    case 'A':
    case 'F':
        book_.prefetch_side(itch50::stock_locate(message), static_cast<char>(m[f::side]) == 'B'
                                                               ? order_side::buy
                                                               : order_side::sell);
        break;
    case 'E':
    case 'C':
    case 'X':
    case 'D':
    case 'U':
        book_.prefetch_level(u64_at(m, f::order_ref));
        break;
    default:
        break;
    }
}

void itch50_parser::on_messages(std::span<std::span<std::byte const> const> messages) {
    if (sink_ == nullptr) [[likely]] {
        apply_each<false>(messages);
    } else {
        apply_each<true>(messages);
    }
}

template <bool Events>
void itch50_parser::apply_each(std::span<std::span<std::byte const> const> messages) {
    event_context const context{};
    std::size_t const n = messages.size();
    for (std::size_t i = 0; i < std::min(prefetch_far, n); ++i) {
        prefetch_far_ahead(messages[i]);
    }
    for (std::size_t i = 0; i < std::min(prefetch_near, n); ++i) {
        prefetch_near_ahead(messages[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (i + prefetch_far < n) {
            prefetch_far_ahead(messages[i + prefetch_far]);
        }
        if (i + prefetch_near < n) {
            prefetch_near_ahead(messages[i + prefetch_near]);
        }
        apply<Events>(messages[i], context);
    }
}

void itch50_parser::on_message(std::span<std::byte const> message, event_context const& context) {
    if (sink_ == nullptr) [[likely]] {
        apply<false>(message, context);
    } else {
        apply_with_events(message, context);
    }
}

void itch50_parser::apply_with_events(std::span<std::byte const> message,
                                      event_context const& context) {
    apply<true>(message, context);
}

void itch50_parser::set_event_sink(event_sink* sink, event_mask kinds) {
    if (sink != nullptr && reported_top_.empty()) {
        reported_top_.resize(itch_order_book::max_locates);
    }
    sink_ = sink;
    wanted_ = kinds;
    // The events need the order a writer changed and the levels it changed; the depth of a
    // level that stays only for level_update (a bbo needs only whether it is the best).
    book_.track_changes(sink != nullptr, kinds.has(event_kind::level_update));
}

inline void itch50_parser::emit_changes(event_header const& header) {
    std::span<level_change const> const changes = book_.changes();
    if (wanted_.has(event_kind::level_update)) {
        event const base = header.make();
        for (level_change const& c : changes) {
            sink_->on_event(level_update_event(base, c));
        }
    }
    if (!wanted_.has(event_kind::bbo) || changes.empty()) {
        return;
    }
    // Per side (buy, sell): whether a change was at the best, and the best after the message
    // as its last such change says it — a level at depth 0 that stays or arrived is the best,
    // a best level that left names the next (nothing later in the message moves the best but
    // another change at depth 0). A level that stays, of unknown depth (tracking without
    // depth), is the best if its price is the best last reported (the book's best before this
    // message); one better than that, or with none reported (a sink set mid-stream), sends
    // the bbo to the book to look.
    struct best_change {
        bool touched = false;
        bool known = false;
        itch_price_level level;
    };
    std::uint16_t const locate = changes.back().locate; // every change is of one stock
    top_of_book& reported = reported_top_[locate];
    // By side index (0 buy, 1 sell), with no branch on the side: it is as random as the flow.
    auto const side_of = [](level_change const& c) {
        return static_cast<std::size_t>(c.side != order_side::buy);
    };
    // What change `c` says of its side's best (only a change at the best, or of the best: a
    // best level that left, can move it): `to` touched if it may have.
    auto const look = [&](level_change const& c, std::size_t side, best_change& to) {
        if (c.depth == 0) {
            to.touched = true;
            to.known = true;
            to.level = c.orders != 0 ? itch_price_level{c.price, c.orders, c.shares}
                                     : itch_price_level{c.next_best_price, 0, c.next_best_shares};
        } else if (c.depth == level_change::unknown_depth) {
            std::array<std::uint32_t, 2> const prices{reported.bid_price, reported.ask_price};
            std::array<bool, 2> const nones{reported.bid_shares == 0, reported.ask_shares == 0};
            std::uint32_t const price = prices[side];
            bool const none = nones[side];
            // At or better than the best: a bid at or above it, an offer at or below it.
            bool const at_or_better = (c.price == price) | ((c.price > price) == (side == 0));
            if (none | at_or_better) {
                to.touched = true;
                to.known = !none && c.price == price;
                to.level = {c.price, c.orders, c.shares};
            }
        }
    };
    // A touched side's best after the message against the one last reported (a replace
    // within the best level may leave it as it was): true, and reported_top_ follows, if it
    // moved.
    auto const settle = [&](std::size_t side, best_change const& b) {
        itch_price_level level = b.level;
        if (!b.known) {
            book_side const levels = side == 0 ? book_.bids(locate) : book_.asks(locate);
            level = levels.empty() ? itch_price_level{} : levels.back();
        }
        std::array<std::uint32_t*, 2> const prices{&reported.bid_price, &reported.ask_price};
        std::array<std::uint64_t*, 2> const sizes{&reported.bid_shares, &reported.ask_shares};
        std::uint32_t& price = *prices[side];
        std::uint64_t& size = *sizes[side];
        if (price == level.price && size == level.shares) {
            return false;
        }
        price = level.price;
        size = level.shares;
        return true;
    };
    if (changes.size() == 1) { // all but a replace that recorded both its levels
        std::size_t const side = side_of(changes.front());
        best_change b;
        look(changes.front(), side, b);
        if (b.touched && settle(side, b)) {
            emit_bbo(header.make(), locate);
        }
        return;
    }
    // Several changes: per side, the best after the message as its last change says it.
    std::array<best_change, 2> best{};
    for (level_change const& c : changes) {
        std::size_t const side = side_of(c);
        look(c, side, best[side]);
    }
    bool moved = false;
    for (std::size_t side = 0; side < 2; ++side) {
        if (best[side].touched) {
            moved = settle(side, best[side]) || moved;
        }
    }
    if (moved) {
        emit_bbo(header.make(), locate);
    }
}

void itch50_parser::emit_bbo(event const& base, std::uint16_t locate) {
    top_of_book const& top = reported_top_[locate];
    event e = base;
    e.kind = event_kind::bbo;
    e.side = 0;
    e.bbo = {top.bid_price, top.bid_shares, top.ask_price, top.ask_shares};
    send(e);
}

void itch50_parser::emit_book(std::uint16_t flags, event_context const& context) {
    event base{};
    base.flags = flags;
    base.sequence = context.sequence;
    base.receive_ns = context.receive_ns;
    book_.for_each_stock([&](stock_view const& stock) {
        event e = base;
        e.instrument = stock.locate;
        e.kind = event_kind::instrument_definition;
        e.definition = {};
        std::copy(stock.symbol.begin(), stock.symbol.end(), e.definition.symbol.begin());
        e.definition.price_exponent = -4;
        send(e);
    });
    book_.order_store().for_each([&](std::uint64_t ref, detail::order_record const& order) {
        event e = base;
        e.instrument = order.locate;
        e.kind = event_kind::order_add;
        e.side = static_cast<char>(order.side);
        e.order = {
            .id = ref, .price = order.price, .quantity = order.shares, .mpid = {}, .priority = 0};
        send(e);
    });
    book_.for_each_stock([&](stock_view const& stock) {
        event e = base;
        e.instrument = stock.locate;
        e.kind = event_kind::level_update;
        for (order_side const side : {order_side::buy, order_side::sell}) {
            book_side const levels =
                side == order_side::buy ? book_.bids(stock.locate) : book_.asks(stock.locate);
            e.side = static_cast<char>(side);
            for (std::size_t depth = 0; depth < levels.size(); ++depth) {
                itch_price_level const l = levels[levels.size() - 1 - depth];
                e.level = {.price = l.price,
                           .size = l.shares,
                           .orders = l.orders,
                           .depth =
                               static_cast<std::uint16_t>(std::min<std::size_t>(depth, 0xFFFF)),
                           .reserved = {}};
                send(e);
            }
        }
        reported_top_[stock.locate] = stock.top;
        emit_bbo(e, stock.locate);
    });
}

template <bool Events>
inline void itch50_parser::apply(std::span<std::byte const> message, event_context const& context) {
    namespace f = itch50::field;
    if (message.empty()) {
        ++stats_.malformed_messages;
        return;
    }
    char const type = itch50::message_type(message);
    std::size_t const length = itch50::message_length(type);
    if (length == 0) {
        ++stats_.unknown_messages;
        return;
    }
    if (message.size() < length) {
        ++stats_.malformed_messages;
        return;
    }
    // From here on every read is below `length`, which the message holds.
    std::byte const* const m = message.data();
    std::uint16_t const locate = itch50::stock_locate(message);
    // What every event of this message shares (Events only); an event is made of it only when
    // one goes out (most messages send none a bbo and trades subscriber wants).
    event_header header{.instrument = locate, .flags = 0, .context = context, .message = m};
    // After an E, C, X, D or U: the order it changed, as it was (the book kept it: no second
    // lookup), its stock the events' instrument whatever the header says (Events only).
    auto const changed = [&]() noexcept -> order const* {
        order const* const o = book_.changed_order();
        if (o != nullptr) {
            header.instrument = o->locate;
        }
        return o;
    };
    bool book_changed = false; // the level and bbo events follow the message's own (Events only)
    auto const emit = [&](event_kind kind, char side, auto&& fill) {
        if (!wanted_.has(kind)) {
            return;
        }
        event e = header.make();
        e.kind = kind;
        e.side = side;
        fill(e);
        sink_->on_event(e);
    };
    switch (type) {
    case 'R':
        book_.set_symbol(locate, std::string_view(reinterpret_cast<char const*>(m + f::stock),
                                                  itch_order_book::max_symbol_length));
        if constexpr (Events) {
            emit(event_kind::instrument_definition, 0, [&](event& e) {
                e.definition = {};
                std::string_view const symbol = book_.symbol(locate);
                std::copy(symbol.begin(), symbol.end(), e.definition.symbol.begin());
                e.definition.price_exponent = -4;
            });
        }
        break;
    case 'H':
        if constexpr (Events) {
            emit(event_kind::trading_status, 0, [&](event& e) {
                char const state = static_cast<char>(m[f::trading_state]);
                e.status = {};
                e.status.state = state == 'T'   ? trading_state::open
                                 : state == 'H' ? trading_state::halted
                                 : state == 'P' ? trading_state::paused
                                 : state == 'Q' ? trading_state::quote_only
                                                : trading_state::unknown;
                e.status.code[0] = state;
                std::memcpy(e.status.reason.data(), m + f::trading_reason, 4);
            });
        }
        break;
    case 'A':
    case 'F': {
        auto const side = static_cast<char>(m[f::side]);
        if (side != 'B' && side != 'S') {
            ++stats_.malformed_messages;
            return;
        }
        order_side const s = side == 'B' ? order_side::buy : order_side::sell;
        book_result const r = book_.add(locate, u64_at(m, f::order_ref), s, u32_at(m, f::shares),
                                        u32_at(m, f::price));
        count(r);
        if constexpr (Events) {
            if (r == book_result::ok) {
                emit(event_kind::order_add, side, [&](event& e) {
                    e.order = {.id = u64_at(m, f::order_ref),
                               .price = u32_at(m, f::price),
                               .quantity = u32_at(m, f::shares),
                               .mpid = {},
                               .priority = 0};
                    if (type == 'F') {
                        std::memcpy(e.order.mpid.data(), m + f::attribution, 4);
                    }
                });
                book_changed = true;
            }
        }
        break;
    }
    case 'E':
    case 'C': {
        std::uint32_t const shares = u32_at(m, f::executed_shares);
        count(book_.reduce(u64_at(m, f::order_ref), shares));
        if constexpr (Events) {
            if (order const* const before = changed()) {
                std::uint32_t const executed = std::min(shares, before->shares);
                std::int64_t const price =
                    type == 'C' ? u32_at(m, f::execution_price) : before->price;
                emit(event_kind::order_execute, static_cast<char>(before->side), [&](event& e) {
                    e.execute = {.id = before->ref,
                                 .price = price,
                                 .executed = executed,
                                 .remaining = before->shares - executed,
                                 .match = u64_at(m, f::match_number)};
                });
                if (type == 'E' || static_cast<char>(m[f::printable]) == 'Y') {
                    // The aggressor took the resting order: it was on the other side.
                    emit(event_kind::trade, before->side == order_side::buy ? 'S' : 'B',
                         [&](event& e) {
                             e.trade = {.price = price,
                                        .quantity = executed,
                                        .match = u64_at(m, f::match_number),
                                        .order_id = before->ref};
                         });
                }
                book_changed = true;
            }
        }
        break;
    }
    case 'X': {
        std::uint32_t const shares = u32_at(m, f::cancelled_shares);
        count(book_.reduce(u64_at(m, f::order_ref), shares));
        if constexpr (Events) {
            if (order const* const before = changed()) {
                std::uint32_t const left = before->shares - std::min(shares, before->shares);
                emit(left == 0 ? event_kind::order_delete : event_kind::order_modify,
                     static_cast<char>(before->side), [&](event& e) {
                         e.order = {.id = before->ref,
                                    .price = before->price,
                                    .quantity = left,
                                    .mpid = {},
                                    .priority = 0};
                     });
                book_changed = true;
            }
        }
        break;
    }
    case 'D':
        count(book_.remove(u64_at(m, f::order_ref)));
        if constexpr (Events) {
            if (order const* const before = changed()) {
                emit(event_kind::order_delete, static_cast<char>(before->side), [&](event& e) {
                    e.order = {.id = before->ref,
                               .price = before->price,
                               .quantity = 0,
                               .mpid = {},
                               .priority = 0};
                });
                book_changed = true;
            }
        }
        break;
    case 'U': {
        std::uint64_t const new_ref = u64_at(m, f::new_ref);
        book_result const r = book_.replace(u64_at(m, f::original_ref), new_ref,
                                            u32_at(m, f::new_shares), u32_at(m, f::new_price));
        count(r);
        if constexpr (Events) {
            // The original left (even when the new reference was refused).
            if (order const* const before = changed()) {
                char const side = static_cast<char>(before->side);
                header.flags |= event_flag::replace;
                emit(event_kind::order_delete, side, [&](event& e) {
                    e.order = {.id = before->ref,
                               .price = before->price,
                               .quantity = 0,
                               .mpid = {},
                               .priority = 0};
                });
                if (r == book_result::ok) {
                    emit(event_kind::order_add, side, [&](event& e) {
                        e.order = {.id = new_ref,
                                   .price = u32_at(m, f::new_price),
                                   .quantity = u32_at(m, f::new_shares),
                                   .mpid = {},
                                   .priority = 0};
                    });
                }
                header.flags = 0; // the level and bbo events are not the replace's own
                book_changed = true;
            }
        }
        break;
    }
    case 'P':
        if constexpr (Events) {
            emit(event_kind::trade, static_cast<char>(m[f::side]), [&](event& e) {
                e.trade = {.price = u32_at(m, f::price),
                           .quantity = u32_at(m, f::shares),
                           .match = u64_at(m, f::trade_match),
                           .order_id = 0};
            });
        }
        break;
    case 'Q':
        if constexpr (Events) {
            emit(event_kind::trade, 0, [&](event& e) {
                e.trade = {.price = u32_at(m, f::cross_price),
                           .quantity = u64_at(m, f::cross_shares),
                           .match = u64_at(m, f::cross_match),
                           .order_id = 0};
            });
        }
        break;
    default:
        // B (breaks) and the administrative messages do not change the visible book: counted
        // only.
        break;
    }
    if constexpr (Events) {
        if (book_changed) {
            emit_changes(header);
        }
    }
    ++stats_.messages_by_type[static_cast<unsigned char>(type)];
    ++stats_.messages;
}

void itch50_parser::apply_oldest() {
    if (held_ > prefetch_near) {
        prefetch_near_ahead(held(prefetch_near));
    }
    on_message(held(0), ring_contexts_[oldest_]);
    oldest_ = (oldest_ + 1) & (slots - 1);
    --held_;
}

void itch50_parser::push(std::span<std::byte const> message, event_context const& context) {
    if (message.size() > slot_size) {
        flush(); // everything before it first
        on_message(message, context);
        return;
    }
    std::size_t const newest = (oldest_ + held_) & (slots - 1);
    copy_short(ring_[newest].data(), message.data(), message.size());
    ring_sizes_[newest] = static_cast<std::uint8_t>(message.size());
    ring_contexts_[newest] = context;
    ++held_;
    prefetch_far_ahead(held(held_ - 1));
    if (held_ > prefetch_far) {
        apply_oldest();
    }
}

void itch50_parser::flush() {
    while (held_ != 0) {
        apply_oldest();
    }
}

} // namespace signet::md::nasdaq
