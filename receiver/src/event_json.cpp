#include <algorithm>
#include <charconv>
#include <iterator>
#include <string_view>

#include <signet/receiver/event_json.hpp>

#include <fmt/format.h>

namespace signet::receiver {

namespace {

/// A JSON string of `text` (up to its first NUL, without trailing spaces).
void append_string(std::string& out, std::string_view text) {
    text = text.substr(0, text.find('\0'));
    while (!text.empty() && text.back() == ' ') {
        text.remove_suffix(1);
    }
    out += '"';
    for (char const c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
            out += c;
        }
    }
    out += '"';
}

template <std::size_t N>
std::string_view chars(std::array<char, N> const& a) {
    return {a.data(), a.size()};
}

} // namespace

void append_event_json(std::string& out, event_view const& view) {
    md::event const& e = view.event;
    auto it = std::back_inserter(out);
    out += "{\"feed\":";
    append_string(out, view.feed);
    out += ",\"symbol\":";
    append_string(out, view.symbol);
    if (e.instrument == md::all_instruments) {
        out += ",\"instrument\":\"all\"";
    } else {
        fmt::format_to(it, ",\"instrument\":{}", e.instrument);
    }
    fmt::format_to(it, ",\"kind\":\"{}\"", md::to_string(e.kind));
    if (e.side != 0) {
        out += ",\"side\":";
        append_string(out, std::string_view(&e.side, 1));
    }
    if (e.flags != 0) {
        fmt::format_to(it, ",\"flags\":{}", e.flags);
    }
    fmt::format_to(it, ",\"sequence\":{},\"receive_ns\":{},\"exchange_ns\":{}", e.sequence,
                   e.receive_ns, e.exchange_ns);
    switch (e.kind) {
    case md::event_kind::instrument_definition:
        out += ",\"definition_symbol\":";
        append_string(out, chars(e.definition.symbol));
        fmt::format_to(it, ",\"price_exponent\":{},\"tick\":{}", e.definition.price_exponent,
                       e.definition.tick);
        break;
    case md::event_kind::trading_status:
        fmt::format_to(it, ",\"state\":\"{}\",\"code\":", md::to_string(e.status.state));
        append_string(out, chars(e.status.code));
        out += ",\"reason\":";
        append_string(out, chars(e.status.reason));
        break;
    case md::event_kind::order_add:
    case md::event_kind::order_modify:
    case md::event_kind::order_delete:
        fmt::format_to(it, ",\"id\":{},\"price\":{},\"quantity\":{},\"priority\":{},\"mpid\":",
                       e.order.id, e.order.price, e.order.quantity, e.order.priority);
        append_string(out, chars(e.order.mpid));
        break;
    case md::event_kind::order_execute:
        fmt::format_to(it, ",\"id\":{},\"price\":{},\"executed\":{},\"remaining\":{},\"match\":{}",
                       e.execute.id, e.execute.price, e.execute.executed, e.execute.remaining,
                       e.execute.match);
        break;
    case md::event_kind::level_update:
        fmt::format_to(it, ",\"price\":{},\"size\":{},\"orders\":{},\"depth\":{}", e.level.price,
                       e.level.size, e.level.orders, e.level.depth);
        break;
    case md::event_kind::bbo:
        fmt::format_to(it, ",\"bid_price\":{},\"bid_size\":{},\"ask_price\":{},\"ask_size\":{}",
                       e.bbo.bid_price, e.bbo.bid_size, e.bbo.ask_price, e.bbo.ask_size);
        break;
    case md::event_kind::trade:
        fmt::format_to(it, ",\"price\":{},\"quantity\":{},\"match\":{},\"order_id\":{}",
                       e.trade.price, e.trade.quantity, e.trade.match, e.trade.order_id);
        break;
    case md::event_kind::events_lost:
        fmt::format_to(it, ",\"count\":{}", e.lost.count);
        break;
    default:
        break;
    }
    out += '}';
}

std::optional<std::uint64_t> json_number(std::string_view text, std::string_view key) {
    std::string const quoted = "\"" + std::string(key) + "\":";
    std::size_t const at = text.find(quoted);
    if (at == std::string_view::npos) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    char const* begin = text.data() + at + quoted.size();
    auto const [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec != std::errc() || end == begin) {
        return std::nullopt;
    }
    return value;
}

} // namespace signet::receiver
