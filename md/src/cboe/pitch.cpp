#include <algorithm>
#include <cstring>

#include <signet/md/cboe/pitch.hpp>
#include <signet/md/little_endian.hpp>

namespace signet::md::cboe {

namespace {

namespace t = message_type;

struct layout {
    std::uint8_t type;
    std::uint8_t length;
    std::string_view name;
};

// US equities 2.41 (options 2.39 append a trade condition to executions and trades: longer
// messages, read by these layouts). docs/pitch.md, "Messages".
constexpr layout layouts[] = {
    {t::login, 22, "Login"},
    {t::login_response, 3, "Login Response"},
    {t::gap_request, 9, "Gap Request"},
    {t::gap_response, 10, "Gap Response"},
    {t::spin_image_available, 6, "Spin Image Available"},
    {t::spin_request, 6, "Spin Request"},
    {t::spin_response, 11, "Spin Response"},
    {t::spin_finished, 6, "Spin Finished"},
    {t::time, 6, "Time"},
    {t::add_order_long, 34, "Add Order Long"},
    {t::add_order_short, 26, "Add Order Short"},
    {t::order_executed, 26, "Order Executed"},
    {t::order_executed_at_price, 38, "Order Executed at Price/Size"},
    {t::reduce_size_long, 18, "Reduce Size Long"},
    {t::reduce_size_short, 16, "Reduce Size Short"},
    {t::modify_order_long, 27, "Modify Order Long"},
    {t::modify_order_short, 19, "Modify Order Short"},
    {t::delete_order, 14, "Delete Order"},
    {t::trade_long, 41, "Trade Long"},
    {t::trade_short, 33, "Trade Short"},
    {t::trade_break, 14, "Trade Break"},
    {t::end_of_session, 6, "End of Session"},
    {t::symbol_mapping, 30, "Symbol Mapping"},
    {t::add_order_expanded, 41, "Add Order Expanded"},
    {t::trade_expanded, 43, "Trade Expanded"},
    {t::trading_status, 18, "Trading Status"},
    {t::auction_update, 47, "Auction Update"},
    {t::auction_summary, 27, "Auction Summary"},
    {t::unit_clear, 6, "Unit Clear"},
    {t::retail_price_improvement, 15, "Retail Price Improvement"},
    {t::time_reference, 18, "Time Reference"},
    {t::transaction_begin, 6, "Transaction Begin"},
    {t::transaction_end, 6, "Transaction End"},
};

constexpr std::array<std::uint8_t, 256> make_lengths() {
    std::array<std::uint8_t, 256> lengths{};
    for (layout const& l : layouts) {
        lengths[l.type] = l.length;
    }
    return lengths;
}
constexpr std::array<std::uint8_t, 256> lengths = make_lengths();

template <typename T>
T le(std::byte const* p, std::size_t at) noexcept {
    return load_le<T>(p + at);
}

template <std::size_t N>
std::array<char, N> text(std::byte const* p, std::size_t at) noexcept {
    std::array<char, N> out;
    std::memcpy(out.data(), p + at, N);
    return out;
}

/// A 6-character wire symbol, padded to 8.
symbol_text symbol6(std::byte const* p, std::size_t at) noexcept {
    symbol_text out;
    out.fill(' ');
    std::memcpy(out.data(), p + at, 6);
    return out;
}

template <typename T>
void put(std::byte* p, std::size_t at, T value) noexcept {
    store_le<T>(p + at, value);
}

template <std::size_t N>
void put_text(std::byte* p, std::size_t at, char const* text) noexcept {
    std::memcpy(p + at, text, N);
}

bool fits_symbol6(symbol_text const& s) noexcept {
    return s[6] == ' ' && s[7] == ' ';
}

bool short_price(std::int64_t price, std::uint16_t& out) noexcept {
    if (price < 0 || price % short_price_scale != 0 || price / short_price_scale > 0xFFFF) {
        return false;
    }
    out = static_cast<std::uint16_t>(price / short_price_scale);
    return true;
}

bool long_price(std::int64_t price) noexcept {
    return price >= 0;
}

} // namespace

std::size_t layout_length(std::uint8_t type) noexcept {
    return lengths[type];
}

std::string_view type_name(std::uint8_t type) noexcept {
    for (layout const& l : layouts) {
        if (l.type == type) {
            return l.name;
        }
    }
    return {};
}

std::optional<block_check> validate_block(std::span<std::byte const> datagram) noexcept {
    if (datagram.size() < header_size) {
        return std::nullopt;
    }
    std::byte const* const p = datagram.data();
    block_check check;
    check.header = {le<std::uint16_t>(p, 0), le<std::uint8_t>(p, 2), le<std::uint8_t>(p, 3),
                    le<std::uint32_t>(p, 4)};
    if (check.header.length != datagram.size()) {
        return std::nullopt; // the block says it is another size: it lies, or bytes are missing
    }
    std::size_t at = header_size;
    for (unsigned i = 0; i < check.header.count; ++i) {
        if (datagram.size() - at < 2) {
            return std::nullopt;
        }
        std::size_t const length = static_cast<std::uint8_t>(p[at]);
        std::uint8_t const type = static_cast<std::uint8_t>(p[at + 1]);
        if (length < 2 || length > datagram.size() - at) {
            return std::nullopt;
        }
        if (lengths[type] == 0) {
            ++check.unknown;
        } else if (length < lengths[type]) {
            return std::nullopt; // shorter than its layout: its fields cannot be read
        }
        at += length;
    }
    if (at != datagram.size()) {
        return std::nullopt; // bytes after the last message
    }
    return check;
}

symbol_text make_symbol(std::string_view text) noexcept {
    symbol_text out;
    out.fill(' ');
    std::copy_n(text.begin(), std::min(text.size(), out.size()), out.begin());
    return out;
}

std::string_view trimmed(symbol_text const& symbol) noexcept {
    std::string_view s(symbol.data(), symbol.size());
    while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) {
        s.remove_suffix(1);
    }
    return s;
}

std::optional<message> decode(std::span<std::byte const> bytes) noexcept {
    if (bytes.size() < 2) {
        return std::nullopt;
    }
    std::byte const* const p = bytes.data();
    message m;
    m.type = static_cast<std::uint8_t>(p[1]);
    if (lengths[m.type] == 0 || bytes.size() < lengths[m.type] ||
        static_cast<std::uint8_t>(p[0]) != bytes.size()) {
        return std::nullopt;
    }
    auto const offset = [&] {
        m.time_offset = le<std::uint32_t>(p, 2);
    };
    switch (m.type) {
    case t::login:
        m.session_sub_id = text<4>(p, 2);
        m.username = text<4>(p, 6);
        m.password = text<10>(p, 12);
        break;
    case t::login_response:
        m.status = static_cast<char>(p[2]);
        break;
    case t::gap_request:
    case t::gap_response:
        m.unit = le<std::uint8_t>(p, 2);
        m.sequence = le<std::uint32_t>(p, 3);
        m.count = le<std::uint16_t>(p, 7);
        if (m.type == t::gap_response) {
            m.status = static_cast<char>(p[9]);
        }
        break;
    case t::spin_image_available:
    case t::spin_request:
    case t::spin_finished:
        m.sequence = le<std::uint32_t>(p, 2);
        break;
    case t::spin_response:
        m.sequence = le<std::uint32_t>(p, 2);
        m.count = le<std::uint32_t>(p, 6);
        m.status = static_cast<char>(p[10]);
        break;
    case t::time:
        m.time = le<std::uint32_t>(p, 2);
        if (bytes.size() >= 10) {
            m.epoch = le<std::uint32_t>(p, 6);
        }
        break;
    case t::time_reference:
        m.epoch = le<std::uint32_t>(p, 2); // midnight reference
        m.time = le<std::uint32_t>(p, 6);
        m.time_offset = le<std::uint32_t>(p, 10);
        m.trade_date = le<std::uint32_t>(p, 14);
        break;
    case t::add_order_long:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.side = static_cast<char>(p[14]);
        m.quantity = le<std::uint32_t>(p, 15);
        m.symbol = symbol6(p, 19);
        m.price = static_cast<std::int64_t>(le<std::uint64_t>(p, 25));
        m.flags = le<std::uint8_t>(p, 33);
        break;
    case t::add_order_short:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.side = static_cast<char>(p[14]);
        m.quantity = le<std::uint16_t>(p, 15);
        m.symbol = symbol6(p, 17);
        m.price = le<std::uint16_t>(p, 23) * short_price_scale;
        m.flags = le<std::uint8_t>(p, 25);
        break;
    case t::add_order_expanded:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.side = static_cast<char>(p[14]);
        m.quantity = le<std::uint32_t>(p, 15);
        m.symbol = text<8>(p, 19);
        m.price = static_cast<std::int64_t>(le<std::uint64_t>(p, 27));
        m.flags = le<std::uint8_t>(p, 35);
        m.participant = text<4>(p, 36);
        m.customer = static_cast<char>(p[40]);
        break;
    case t::order_executed:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.quantity = le<std::uint32_t>(p, 14);
        m.execution_id = le<std::uint64_t>(p, 18);
        break;
    case t::order_executed_at_price:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.quantity = le<std::uint32_t>(p, 14);
        m.remaining = le<std::uint32_t>(p, 18);
        m.execution_id = le<std::uint64_t>(p, 22);
        m.price = static_cast<std::int64_t>(le<std::uint64_t>(p, 30));
        break;
    case t::reduce_size_long:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.quantity = le<std::uint32_t>(p, 14);
        break;
    case t::reduce_size_short:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.quantity = le<std::uint16_t>(p, 14);
        break;
    case t::modify_order_long:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.quantity = le<std::uint32_t>(p, 14);
        m.price = static_cast<std::int64_t>(le<std::uint64_t>(p, 18));
        m.flags = le<std::uint8_t>(p, 26);
        break;
    case t::modify_order_short:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.quantity = le<std::uint16_t>(p, 14);
        m.price = le<std::uint16_t>(p, 16) * short_price_scale;
        m.flags = le<std::uint8_t>(p, 18);
        break;
    case t::delete_order:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        break;
    case t::trade_long:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.side = static_cast<char>(p[14]);
        m.quantity = le<std::uint32_t>(p, 15);
        m.symbol = symbol6(p, 19);
        m.price = static_cast<std::int64_t>(le<std::uint64_t>(p, 25));
        m.execution_id = le<std::uint64_t>(p, 33);
        break;
    case t::trade_short:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.side = static_cast<char>(p[14]);
        m.quantity = le<std::uint16_t>(p, 15);
        m.symbol = symbol6(p, 17);
        m.price = le<std::uint16_t>(p, 23) * short_price_scale;
        m.execution_id = le<std::uint64_t>(p, 25);
        break;
    case t::trade_expanded:
        offset();
        m.order_id = le<std::uint64_t>(p, 6);
        m.side = static_cast<char>(p[14]);
        m.quantity = le<std::uint32_t>(p, 15);
        m.symbol = text<8>(p, 19);
        m.price = static_cast<std::int64_t>(le<std::uint64_t>(p, 27));
        m.execution_id = le<std::uint64_t>(p, 35);
        break;
    case t::trade_break:
        offset();
        m.execution_id = le<std::uint64_t>(p, 6);
        break;
    case t::trading_status:
        offset();
        m.symbol = text<8>(p, 6);
        m.status = static_cast<char>(p[14]);
        m.reg_sho = static_cast<char>(p[15]);
        break;
    case t::auction_update:
    case t::auction_summary:
        offset();
        m.symbol = text<8>(p, 6);
        m.status = static_cast<char>(p[14]); // the auction type
        m.price = static_cast<std::int64_t>(le<std::uint64_t>(p, 15));
        if (m.type == t::auction_summary) {
            m.quantity = le<std::uint32_t>(p, 23);
        }
        break;
    case t::retail_price_improvement:
        offset();
        m.symbol = text<8>(p, 6);
        m.status = static_cast<char>(p[14]);
        break;
    case t::symbol_mapping:
        m.symbol = symbol6(p, 2); // the feed symbol (the OSI symbol is not kept)
        m.status = static_cast<char>(p[29]);
        break;
    default: // end of session, unit clear, transaction begin/end: the time offset alone
        offset();
        break;
    }
    return m;
}

std::size_t encoded_length(message const& m) noexcept {
    switch (m.type) {
    case t::symbol_mapping:
    case t::auction_update:
    case t::retail_price_improvement:
        return 0; // decoded, never sent by signet
    case t::time:
        return m.epoch != 0 ? 10 : 6; // the 10-byte form carries the epoch second too
    default:
        return lengths[m.type];
    }
}

std::size_t encode(message const& m, std::span<std::byte> out) noexcept {
    std::size_t const length = encoded_length(m);
    if (length == 0 || out.size() < length) {
        return 0;
    }
    std::byte* const p = out.data();
    std::memset(p, 0, length);
    p[0] = static_cast<std::byte>(length);
    p[1] = static_cast<std::byte>(m.type);
    auto const offset = [&] {
        put<std::uint32_t>(p, 2, m.time_offset);
    };
    std::uint16_t price16 = 0;
    switch (m.type) {
    case t::login:
        put_text<4>(p, 2, m.session_sub_id.data());
        put_text<4>(p, 6, m.username.data());
        put_text<2>(p, 10, "  ");
        put_text<10>(p, 12, m.password.data());
        break;
    case t::login_response:
        p[2] = static_cast<std::byte>(m.status);
        break;
    case t::gap_request:
    case t::gap_response:
        if (m.count > 0xFFFF) {
            return 0;
        }
        put<std::uint8_t>(p, 2, m.unit);
        put<std::uint32_t>(p, 3, m.sequence);
        put<std::uint16_t>(p, 7, static_cast<std::uint16_t>(m.count));
        if (m.type == t::gap_response) {
            p[9] = static_cast<std::byte>(m.status);
        }
        break;
    case t::spin_image_available:
    case t::spin_request:
    case t::spin_finished:
        put<std::uint32_t>(p, 2, m.sequence);
        break;
    case t::spin_response:
        put<std::uint32_t>(p, 2, m.sequence);
        put<std::uint32_t>(p, 6, m.count);
        p[10] = static_cast<std::byte>(m.status);
        break;
    case t::time:
        put<std::uint32_t>(p, 2, m.time);
        if (length == 10) {
            put<std::uint32_t>(p, 6, m.epoch);
        }
        break;
    case t::time_reference:
        put<std::uint32_t>(p, 2, m.epoch);
        put<std::uint32_t>(p, 6, m.time);
        put<std::uint32_t>(p, 10, m.time_offset);
        put<std::uint32_t>(p, 14, m.trade_date);
        break;
    case t::add_order_long:
    case t::trade_long:
        if (!fits_symbol6(m.symbol) || !long_price(m.price)) {
            return 0;
        }
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        p[14] = static_cast<std::byte>(m.side);
        put<std::uint32_t>(p, 15, m.quantity);
        put_text<6>(p, 19, m.symbol.data());
        put<std::uint64_t>(p, 25, static_cast<std::uint64_t>(m.price));
        if (m.type == t::add_order_long) {
            put<std::uint8_t>(p, 33, m.flags);
        } else {
            put<std::uint64_t>(p, 33, m.execution_id);
        }
        break;
    case t::add_order_short:
    case t::trade_short:
        if (!fits_symbol6(m.symbol) || m.quantity > 0xFFFF || !short_price(m.price, price16)) {
            return 0;
        }
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        p[14] = static_cast<std::byte>(m.side);
        put<std::uint16_t>(p, 15, static_cast<std::uint16_t>(m.quantity));
        put_text<6>(p, 17, m.symbol.data());
        put<std::uint16_t>(p, 23, price16);
        if (m.type == t::add_order_short) {
            put<std::uint8_t>(p, 25, m.flags);
        } else {
            put<std::uint64_t>(p, 25, m.execution_id);
        }
        break;
    case t::add_order_expanded:
    case t::trade_expanded:
        if (!long_price(m.price)) {
            return 0;
        }
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        p[14] = static_cast<std::byte>(m.side);
        put<std::uint32_t>(p, 15, m.quantity);
        put_text<8>(p, 19, m.symbol.data());
        put<std::uint64_t>(p, 27, static_cast<std::uint64_t>(m.price));
        if (m.type == t::add_order_expanded) {
            put<std::uint8_t>(p, 35, m.flags);
            put_text<4>(p, 36, m.participant.data());
            p[40] = static_cast<std::byte>(m.customer);
        } else {
            put<std::uint64_t>(p, 35, m.execution_id);
        }
        break;
    case t::order_executed:
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        put<std::uint32_t>(p, 14, m.quantity);
        put<std::uint64_t>(p, 18, m.execution_id);
        break;
    case t::order_executed_at_price:
        if (!long_price(m.price)) {
            return 0;
        }
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        put<std::uint32_t>(p, 14, m.quantity);
        put<std::uint32_t>(p, 18, m.remaining);
        put<std::uint64_t>(p, 22, m.execution_id);
        put<std::uint64_t>(p, 30, static_cast<std::uint64_t>(m.price));
        break;
    case t::reduce_size_long:
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        put<std::uint32_t>(p, 14, m.quantity);
        break;
    case t::reduce_size_short:
        if (m.quantity > 0xFFFF) {
            return 0;
        }
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        put<std::uint16_t>(p, 14, static_cast<std::uint16_t>(m.quantity));
        break;
    case t::modify_order_long:
        if (!long_price(m.price)) {
            return 0;
        }
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        put<std::uint32_t>(p, 14, m.quantity);
        put<std::uint64_t>(p, 18, static_cast<std::uint64_t>(m.price));
        put<std::uint8_t>(p, 26, m.flags);
        break;
    case t::modify_order_short:
        if (m.quantity > 0xFFFF || !short_price(m.price, price16)) {
            return 0;
        }
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        put<std::uint16_t>(p, 14, static_cast<std::uint16_t>(m.quantity));
        put<std::uint16_t>(p, 16, price16);
        put<std::uint8_t>(p, 18, m.flags);
        break;
    case t::delete_order:
        offset();
        put<std::uint64_t>(p, 6, m.order_id);
        break;
    case t::trade_break:
        offset();
        put<std::uint64_t>(p, 6, m.execution_id);
        break;
    case t::trading_status:
        offset();
        put_text<8>(p, 6, m.symbol.data());
        p[14] = static_cast<std::byte>(m.status);
        p[15] = static_cast<std::byte>(m.reg_sho);
        break;
    case t::auction_summary:
        if (!long_price(m.price)) {
            return 0;
        }
        offset();
        put_text<8>(p, 6, m.symbol.data());
        p[14] = static_cast<std::byte>(m.status);
        put<std::uint64_t>(p, 15, static_cast<std::uint64_t>(m.price));
        put<std::uint32_t>(p, 23, m.quantity);
        break;
    default: // end of session, unit clear, transaction begin/end
        offset();
        break;
    }
    return length;
}

void block_writer::begin(std::uint8_t unit, std::uint32_t sequence) noexcept {
    size_ = header_size;
    count_ = 0;
    unit_ = unit;
    sequence_ = sequence;
}

bool block_writer::fits(message const& m) const noexcept {
    std::size_t const length = encoded_length(m);
    return length != 0 && count_ < 255 && buffer_.size() >= size_ + length &&
           size_ + length <= 0xFFFF;
}

bool block_writer::add(message const& m) noexcept {
    if (!fits(m)) {
        return false;
    }
    std::size_t const n = encode(m, buffer_.subspan(size_));
    if (n == 0) {
        return false;
    }
    size_ += n;
    ++count_;
    return true;
}

std::span<std::byte const> block_writer::finish() noexcept {
    std::byte* const p = buffer_.data();
    put<std::uint16_t>(p, 0, static_cast<std::uint16_t>(size_));
    put<std::uint8_t>(p, 2, count_);
    put<std::uint8_t>(p, 3, unit_);
    put<std::uint32_t>(p, 4, sequence_);
    return {buffer_.data(), size_};
}

} // namespace signet::md::cboe
