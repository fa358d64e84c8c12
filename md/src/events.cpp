#include <signet/md/events.hpp>

namespace signet::md {

std::string_view to_string(event_kind kind) noexcept {
    switch (kind) {
    case event_kind::instrument_definition:
        return "instrument_definition";
    case event_kind::trading_status:
        return "trading_status";
    case event_kind::order_add:
        return "order_add";
    case event_kind::order_modify:
        return "order_modify";
    case event_kind::order_delete:
        return "order_delete";
    case event_kind::order_execute:
        return "order_execute";
    case event_kind::level_update:
        return "level_update";
    case event_kind::bbo:
        return "bbo";
    case event_kind::trade:
        return "trade";
    case event_kind::book_clear:
        return "book_clear";
    case event_kind::snapshot_begin:
        return "snapshot_begin";
    case event_kind::snapshot_end:
        return "snapshot_end";
    case event_kind::instrument_stale:
        return "instrument_stale";
    case event_kind::instrument_recovered:
        return "instrument_recovered";
    case event_kind::events_lost:
        return "events_lost";
    }
    return "?";
}

std::optional<event_kind> parse_event_kind(std::string_view text) noexcept {
    for (std::size_t k = 0; k < event_kinds; ++k) {
        if (to_string(static_cast<event_kind>(k)) == text) {
            return static_cast<event_kind>(k);
        }
    }
    return std::nullopt;
}

std::optional<event_mask> parse_event_kinds(std::string_view list, std::string_view* bad) noexcept {
    event_mask mask;
    while (!list.empty()) {
        std::size_t const comma = list.find(',');
        std::string_view const name = list.substr(0, comma);
        std::optional<event_kind> const kind = parse_event_kind(name);
        if (!kind) {
            if (bad != nullptr) {
                *bad = name;
            }
            return std::nullopt;
        }
        mask = mask | event_mask::of({*kind});
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    }
    if (mask.empty()) {
        return std::nullopt;
    }
    return mask;
}

std::string_view to_string(trading_state state) noexcept {
    switch (state) {
    case trading_state::unknown:
        return "unknown";
    case trading_state::pre_open:
        return "pre_open";
    case trading_state::open:
        return "open";
    case trading_state::paused:
        return "paused";
    case trading_state::halted:
        return "halted";
    case trading_state::closed:
        return "closed";
    case trading_state::quote_only:
        return "quote_only";
    }
    return "?";
}

} // namespace signet::md
