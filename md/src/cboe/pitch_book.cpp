#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <signet/md/cboe/pitch_book.hpp>
#include <signet/md/little_endian.hpp>

namespace signet::md::cboe {

namespace {

namespace t = message_type;
using nasdaq::book_result;
using nasdaq::order_side;

constexpr std::int64_t max_price = std::numeric_limits<std::uint32_t>::max();

trading_state state_of(char status) noexcept {
    switch (status) {
    case 'T':
        return trading_state::open;
    case 'H':
    case 'S': // exchange-specific suspension
        return trading_state::halted;
    case 'Q':
        return trading_state::quote_only;
    case 'A': // accepting orders for queuing
        return trading_state::pre_open;
    default:
        return trading_state::unknown;
    }
}

nasdaq::itch_order_book_options book_options(pitch_book_options const& options) {
    nasdaq::itch_order_book_options o;
    o.max_orders = options.max_orders;
    o.stock_reserve = options.max_instruments;
    o.index_pages = options.index_pages;
    o.level_pool_reserve = options.level_pool_reserve;
    return o;
}

} // namespace

pitch_book::pitch_book(pitch_book_options const& options)
    : book_(book_options(options))
    , ids_(std::max<std::size_t>(options.max_instruments, 1))
    , max_instruments_(options.max_instruments) {
    if (options.max_instruments == 0 ||
        options.max_instruments > nasdaq::itch_order_book::max_locates) {
        throw std::invalid_argument("pitch_book: max_instruments must be 1 to 65536");
    }
    instruments_.reserve(max_instruments_);
    reported_.reserve(max_instruments_);
    clearing_.reserve(options.max_orders);
}

void pitch_book::set_event_sink(event_sink* sink, event_mask kinds) {
    sink_ = sink;
    wanted_ = kinds;
    book_.track_changes(sink != nullptr && kinds.has(event_kind::level_update));
}

std::uint64_t pitch_book::key(symbol_text const& s) noexcept {
    std::uint64_t k = 0;
    std::memcpy(&k, s.data(), sizeof k);
    return k;
}

std::optional<std::uint32_t> pitch_book::find(symbol_text const& symbol) const noexcept {
    std::uint32_t const* const id = ids_.find(key(symbol));
    return id != nullptr ? std::optional(*id) : std::nullopt;
}

std::optional<std::uint32_t> pitch_book::use(symbol_text const& symbol, std::uint8_t unit,
                                             event& base) {
    if (std::uint32_t const* const id = ids_.find(key(symbol))) {
        return *id;
    }
    if (instruments_.size() >= max_instruments_) {
        ++stats_.instruments_full;
        return std::nullopt;
    }
    auto const id = static_cast<std::uint32_t>(instruments_.size());
    (void)ids_.insert(key(symbol), id);
    instruments_.push_back({.symbol = symbol, .unit = unit});
    reported_.push_back({});
    std::string_view const name = trimmed(symbol);
    book_.set_symbol(static_cast<std::uint16_t>(id), name);
    event e = base;
    e.kind = event_kind::instrument_definition;
    e.instrument = id;
    e.side = 0;
    e.definition = {};
    std::copy(name.begin(), name.end(), e.definition.symbol.begin());
    e.definition.price_exponent = price_exponent;
    send(e);
    return id;
}

void pitch_book::emit_changes(event const& base, std::uint32_t id) {
    if (sink_ == nullptr) {
        return;
    }
    if (wanted_.has(event_kind::level_update)) {
        for (nasdaq::level_change const& c : book_.changes()) {
            send(nasdaq::level_update_event(base, c));
        }
    }
    nasdaq::top_of_book const top = book_.top(static_cast<std::uint16_t>(id));
    if (top != reported_[id]) {
        reported_[id] = top;
        event e = base;
        e.kind = event_kind::bbo;
        e.instrument = id;
        e.side = 0;
        e.bbo = {top.bid_price, top.bid_shares, top.ask_price, top.ask_shares};
        send(e);
    }
}

void pitch_book::send_order(event const& base, event_kind kind, nasdaq::order const& o,
                            std::int64_t price, std::uint32_t quantity) noexcept {
    event e = base;
    e.kind = kind;
    e.instrument = o.locate;
    e.side = static_cast<char>(o.side);
    e.order = {.id = o.ref, .price = price, .quantity = quantity, .mpid = {}, .priority = 0};
    send(e);
}

void pitch_book::add(std::uint8_t unit, message const& m, event& base) {
    std::optional<std::uint32_t> const id = use(m.symbol, unit, base);
    if (!id) {
        return;
    }
    if (m.price > max_price) {
        ++stats_.price_out_of_range;
        return;
    }
    order_side const side = m.side == 'S' ? order_side::sell : order_side::buy;
    book_result const r = book_.add(static_cast<std::uint16_t>(*id), m.order_id, side, m.quantity,
                                    static_cast<std::uint32_t>(m.price));
    if (r == book_result::duplicate_order) {
        ++stats_.duplicate_orders;
        return;
    }
    if (r == book_result::book_full) {
        ++stats_.book_full;
        return;
    }
    ++stats_.adds;
    event e = base;
    e.kind = event_kind::order_add;
    e.instrument = *id;
    e.side = static_cast<char>(side);
    e.order = {.id = m.order_id,
               .price = m.price,
               .quantity = m.quantity,
               .mpid = m.participant,
               .priority = 0};
    send(e);
    emit_changes(base, *id);
}

void pitch_book::apply(std::uint8_t unit, std::uint64_t sequence, message const& m,
                       std::uint64_t receive_ns, std::uint16_t flags) {
    pitch_unit& u = units_[unit];
    ++stats_.messages;
    ++u.messages;
    u.seen = true;
    event base{};
    base.sequence = sequence;
    base.receive_ns = receive_ns;
    base.exchange_ns = std::uint64_t{u.time} * 1'000'000'000 + m.time_offset;
    base.flags = flags;
    // The order as it is now (book_.find), for the events of changes by id.
    auto const live = [&](std::uint64_t order_id) {
        return book_.find(order_id);
    };
    switch (m.type) {
    case t::time:
        u.time = m.time;
        break;
    case t::time_reference:
        u.time = m.time;
        break;
    case t::add_order_long:
    case t::add_order_short:
    case t::add_order_expanded:
        add(unit, m, base);
        break;
    case t::order_executed:
    case t::order_executed_at_price: {
        std::optional<nasdaq::order> const before = live(m.order_id);
        if (!before) {
            ++stats_.unknown_orders;
            break;
        }
        std::uint32_t remaining = before->shares > m.quantity ? before->shares - m.quantity : 0;
        std::int64_t price = before->price;
        if (m.type == t::order_executed_at_price) {
            remaining = m.remaining;
            price = m.price;
        }
        if (remaining == 0) {
            (void)book_.remove(m.order_id);
        } else if (remaining < before->shares) {
            (void)book_.reduce(m.order_id, before->shares - remaining);
        } else if (remaining > before->shares) {
            (void)book_.replace(m.order_id, m.order_id, remaining, before->price);
        }
        ++stats_.executions;
        pitch_instrument& instrument = instruments_[before->locate];
        instrument.volume += m.quantity;
        instrument.last_price = price;
        event e = base;
        e.kind = event_kind::order_execute;
        e.instrument = before->locate;
        e.side = static_cast<char>(before->side);
        e.execute = {.id = m.order_id,
                     .price = price,
                     .executed = m.quantity,
                     .remaining = remaining,
                     .match = m.execution_id};
        send(e);
        e.kind = event_kind::trade;
        e.side = 0;
        e.trade = {.price = price,
                   .quantity = m.quantity,
                   .match = m.execution_id,
                   .order_id = m.order_id};
        send(e);
        emit_changes(base, before->locate);
        break;
    }
    case t::reduce_size_long:
    case t::reduce_size_short: {
        std::optional<nasdaq::order> const before = live(m.order_id);
        if (!before) {
            ++stats_.unknown_orders;
            break;
        }
        (void)book_.reduce(m.order_id, m.quantity);
        ++stats_.reductions;
        std::uint32_t const left = before->shares > m.quantity ? before->shares - m.quantity : 0;
        send_order(base, left == 0 ? event_kind::order_delete : event_kind::order_modify, *before,
                   before->price, left);
        emit_changes(base, before->locate);
        break;
    }
    case t::modify_order_long:
    case t::modify_order_short: {
        std::optional<nasdaq::order> const before = live(m.order_id);
        if (!before) {
            ++stats_.unknown_orders;
            break;
        }
        ++stats_.modifies;
        if (m.price > max_price || m.quantity == 0) {
            (void)book_.remove(m.order_id); // no longer representable, or nothing left
            stats_.price_out_of_range += m.price > max_price ? 1 : 0;
            send_order(base, event_kind::order_delete, *before, before->price, 0);
        } else {
            (void)book_.replace(m.order_id, m.order_id, m.quantity,
                                static_cast<std::uint32_t>(m.price));
            send_order(base, event_kind::order_modify, *before, m.price, m.quantity);
        }
        emit_changes(base, before->locate);
        break;
    }
    case t::delete_order: {
        std::optional<nasdaq::order> const before = live(m.order_id);
        if (!before) {
            ++stats_.unknown_orders;
            break;
        }
        (void)book_.remove(m.order_id);
        ++stats_.deletes;
        send_order(base, event_kind::order_delete, *before, before->price, 0);
        emit_changes(base, before->locate);
        break;
    }
    case t::trade_long:
    case t::trade_short:
    case t::trade_expanded: {
        ++stats_.trades;
        std::optional<std::uint32_t> const id = use(m.symbol, unit, base);
        if (!id) {
            break;
        }
        pitch_instrument& instrument = instruments_[*id];
        instrument.volume += m.quantity;
        instrument.last_price = m.price;
        event e = base;
        e.kind = event_kind::trade;
        e.instrument = *id;
        e.side = 0; // the side of a trade message is obfuscated ('B')
        e.trade = {
            .price = m.price, .quantity = m.quantity, .match = m.execution_id, .order_id = 0};
        send(e);
        break;
    }
    case t::trade_break:
        ++stats_.trade_breaks;
        break;
    case t::trading_status: {
        ++stats_.status_updates;
        std::optional<std::uint32_t> const id = use(m.symbol, unit, base);
        if (!id) {
            break;
        }
        instruments_[*id].status = m.status;
        event e = base;
        e.kind = event_kind::trading_status;
        e.instrument = *id;
        e.side = 0;
        e.status = {};
        e.status.state = state_of(m.status);
        e.status.code[0] = m.status;
        e.status.reason[0] = m.reg_sho;
        send(e);
        break;
    }
    case t::unit_clear:
        ++stats_.unit_clears;
        clear_unit(unit, sequence, receive_ns);
        break;
    case t::end_of_session:
        u.ended = true;
        break;
    case t::auction_update:
    case t::auction_summary:
    case t::retail_price_improvement:
    case t::transaction_begin:
    case t::transaction_end:
    case t::symbol_mapping:
        break; // known; nothing of a book's
    default:
        ++stats_.unknown_messages;
        break;
    }
}

void pitch_book::apply_block(std::span<std::byte const> block, std::uint64_t skip,
                             std::uint64_t receive_ns) {
    auto const unit = static_cast<std::uint8_t>(block[3]);
    std::uint64_t sequence = load_le<std::uint32_t>(block.data() + 4);
    std::uint64_t index = 0;
    for_each_message(block, [&](std::span<std::byte const> bytes) {
        if (index++ >= skip) {
            if (std::optional<message> const m = decode(bytes)) {
                apply(unit, sequence, *m, receive_ns);
            } else {
                ++stats_.unknown_messages; // validate_block() let only unknown types through
            }
        }
        ++sequence;
    });
}

void pitch_book::clear_unit(std::uint8_t unit, std::uint64_t sequence, std::uint64_t receive_ns) {
    clearing_.clear();
    book_.order_store().for_each([&](std::uint64_t ref, nasdaq::detail::order_record const& o) {
        if (instruments_[o.locate].unit == unit && clearing_.size() < clearing_.capacity()) {
            clearing_.push_back(ref);
        }
    });
    for (std::uint64_t const ref : clearing_) {
        (void)book_.remove(ref);
    }
    event base{};
    base.sequence = sequence;
    base.receive_ns = receive_ns;
    for (std::uint32_t id = 0; id < instruments_.size(); ++id) {
        if (instruments_[id].unit != unit) {
            continue;
        }
        event e = base;
        e.kind = event_kind::book_clear;
        e.instrument = id;
        send(e);
        emit_changes(base, id); // the empty bbo
    }
}

void pitch_book::snapshot_bounds(std::uint8_t unit, bool begin, std::uint64_t sequence) {
    event base{};
    base.sequence = sequence;
    base.kind = begin ? event_kind::snapshot_begin : event_kind::snapshot_end;
    base.flags = event_flag::from_snapshot;
    for (std::uint32_t id = 0; id < instruments_.size(); ++id) {
        if (instruments_[id].unit == unit) {
            event e = base;
            e.instrument = id;
            send(e);
        }
    }
}

void pitch_book::set_stale(std::uint8_t unit, bool stale, std::uint64_t sequence,
                           std::uint64_t receive_ns) {
    if (units_[unit].stale == stale) {
        return;
    }
    units_[unit].stale = stale;
    event base{};
    base.sequence = sequence;
    base.receive_ns = receive_ns;
    base.kind = stale ? event_kind::instrument_stale : event_kind::instrument_recovered;
    for (std::uint32_t id = 0; id < instruments_.size(); ++id) {
        if (instruments_[id].unit == unit) {
            event e = base;
            e.instrument = id;
            send(e);
        }
    }
}

} // namespace signet::md::cboe
