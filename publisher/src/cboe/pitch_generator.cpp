#include <algorithm>
#include <stdexcept>

#include <signet/publisher/cboe/pitch_generator.hpp>

namespace signet::publisher::cboe {

namespace {

namespace mt = md::cboe::message_type;

constexpr std::array<char, 4> participant{'S', 'G', 'N', 'T'};

bool short_price(std::int64_t price) noexcept {
    return price % md::cboe::short_price_scale == 0 &&
           price / md::cboe::short_price_scale <= 0xFFFF;
}

bool short_form(md::cboe::message const& m) noexcept {
    return m.quantity <= 0xFFFF && short_price(m.price) && m.symbol[6] == ' ';
}

} // namespace

pitch_generator::pitch_generator(pitch_generator_options const& options)
    : options_(options)
    , random_(options.seed)
    , next_order_id_(options.first_order_id) {
    if (options.units < 1 || options.units > 64 || options.symbols < 1 || options.symbols > 4096 ||
        options.max_orders < 2 || options.max_orders > 10000) {
        throw std::invalid_argument("pitch_generator: units 1 to 64, symbols 1 to 4096, "
                                    "max_orders 2 to 10000");
    }
    symbols_.resize(options.symbols);
    for (std::size_t i = 0; i < symbols_.size(); ++i) {
        symbol_state& s = symbols_[i];
        // "ZA", "ZB", ...; every 5th a 7-character symbol (expanded forms only).
        std::string name =
            "Z" + std::string(1, static_cast<char>('A' + i % 26)) + std::to_string(i / 26);
        if (i % 5 == 4) {
            name += "WIDE";
        }
        s.symbol = md::cboe::make_symbol(name);
        s.base_price = 200'000 + static_cast<std::int64_t>(i) * 10'000; // $20.00, $21.00, ...
        s.orders.reserve(options.max_orders);
    }
    next_symbol_.assign(options.units + 1, 0);
}

std::string_view pitch_generator::symbol(std::size_t index) const noexcept {
    std::string_view name(symbols_[index].symbol.data(), symbols_[index].symbol.size());
    return name.substr(0, name.find_last_not_of(' ') + 1);
}

void pitch_generator::book_change(std::size_t symbol, order const& o, std::int64_t quantity,
                                  std::int32_t orders) const {
    if (options_.on_book_change) {
        options_.on_book_change({messages_, symbol, o.side, o.price, quantity, orders});
    }
}

std::size_t pitch_generator::orders(std::uint8_t unit) const noexcept {
    std::size_t n = 0;
    for (std::size_t s = unit - 1U; s < symbols_.size(); s += options_.units) {
        n += symbols_[s].orders.size();
    }
    return n;
}

md::cboe::message pitch_generator::add_message(symbol_state const& s, order const& o) {
    md::cboe::message m;
    m.order_id = o.id;
    m.side = o.side;
    m.quantity = o.quantity;
    m.price = o.price;
    m.symbol = s.symbol;
    m.flags = 1;
    if (o.attributed) {
        m.type = mt::add_order_expanded;
        m.participant = participant;
        m.customer = ' ';
    } else {
        m.type = short_form(m) ? mt::add_order_short : mt::add_order_long;
        if (m.type == mt::add_order_long && m.symbol[6] != ' ') {
            m.type = mt::add_order_expanded;
            m.participant = {' ', ' ', ' ', ' '};
            m.customer = ' ';
        }
    }
    return m;
}

std::int64_t pitch_generator::price_near(symbol_state const& s, char side) {
    // Bids below the base, offers above, 1 to 10 ticks away; one price in 8 sub-penny.
    std::int64_t const ticks = 1 + static_cast<std::int64_t>(random_() % 10);
    std::int64_t price = side == 'B' ? s.base_price - ticks * 100 : s.base_price + ticks * 100;
    if (random_() % 8 == 0) {
        price += side == 'B' ? 50 : -50;
    }
    return price;
}

void pitch_generator::next(std::uint8_t unit, md::cboe::message& m) {
    // Round robin over the unit's symbols.
    std::size_t const count = (symbols_.size() - (unit - 1U) + options_.units - 1) / options_.units;
    std::size_t const k = next_symbol_[unit]++ % std::max<std::size_t>(count, 1);
    std::size_t const index = unit - 1U + k * options_.units;
    symbol_state& s = symbols_[index];
    ++messages_;
    m = {};
    std::uint64_t const roll = random_() % 100;
    std::size_t const live = s.orders.size();
    if (live < 2 || (live < options_.max_orders && roll < 40)) {
        order o;
        o.id = next_order_id_++;
        o.side = random_() % 2 == 0 ? 'B' : 'S';
        o.quantity = static_cast<std::uint32_t>(100 * (1 + random_() % 10));
        if (random_() % 50 == 0) {
            o.quantity = 70'000 + static_cast<std::uint32_t>(random_() % 1000); // long form
        }
        o.price = price_near(s, o.side);
        o.attributed = random_() % 10 == 0;
        s.orders.push_back(o);
        book_change(index, o, o.quantity, 1);
        m = add_message(s, o);
        return;
    }
    std::size_t const pick = random_() % live;
    order& o = s.orders[pick];
    m.order_id = o.id;
    if (roll < 52) { // an execution: part or all
        m.quantity = std::min<std::uint32_t>(o.quantity, 100);
        m.execution_id = next_execution_id_++;
        if (roll < 46) {
            m.type = mt::order_executed;
            o.quantity -= m.quantity;
        } else { // at a price, with the remainder stated
            m.type = mt::order_executed_at_price;
            m.price = o.price + (o.side == 'B' ? 100 : -100);
            o.quantity -= m.quantity;
            m.remaining = o.quantity;
        }
        book_change(index, o, -std::int64_t{m.quantity}, o.quantity == 0 ? -1 : 0);
    } else if (roll < 64) { // a partial cancel
        m.quantity = std::max<std::uint32_t>(1, o.quantity / 2);
        m.type = m.quantity <= 0xFFFF ? mt::reduce_size_short : mt::reduce_size_long;
        o.quantity -= m.quantity;
        book_change(index, o, -std::int64_t{m.quantity}, o.quantity == 0 ? -1 : 0);
    } else if (roll < 80) { // a modify, same id: new price and size
        book_change(index, o, -std::int64_t{o.quantity}, -1);
        o.price = price_near(s, o.side);
        o.quantity = static_cast<std::uint32_t>(100 * (1 + random_() % 10));
        book_change(index, o, o.quantity, 1);
        m.quantity = o.quantity;
        m.price = o.price;
        m.flags = md::cboe::modify_flag::display;
        m.type = short_price(m.price) ? mt::modify_order_short : mt::modify_order_long;
        std::rotate(s.orders.begin() + static_cast<std::ptrdiff_t>(pick),
                    s.orders.begin() + static_cast<std::ptrdiff_t>(pick) + 1, s.orders.end());
        return; // (loses its time priority: now the youngest)
    } else if (roll < 94) {
        m.type = mt::delete_order;
        book_change(index, o, -std::int64_t{o.quantity}, -1);
        o.quantity = 0;
    } else { // a trade of a non-displayed order
        m = {};
        m.type = mt::trade_short;
        m.order_id = next_order_id_++;
        m.side = 'B';
        m.quantity = 100;
        m.price = s.base_price;
        m.symbol = s.symbol;
        m.execution_id = next_execution_id_++;
        if (m.symbol[6] != ' ') {
            m.type = mt::trade_expanded;
        } else if (!short_price(m.price)) {
            m.type = mt::trade_long;
        }
        return;
    }
    if (o.quantity == 0) {
        s.orders.erase(s.orders.begin() + static_cast<std::ptrdiff_t>(pick));
    }
}

} // namespace signet::publisher::cboe
