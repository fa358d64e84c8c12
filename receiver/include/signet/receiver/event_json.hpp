#pragma once

// event_json: a market event (subscription.hpp's event_view) as one line of JSON, for people and
// scripts (md_receiver --events). Every line has feed, symbol, instrument, kind, sequence,
// receive_ns and exchange_ns (side and flags when set), then the kind's own fields under the
// names md/events.hpp gives them (prices as the integers the events carry; the instrument's
// instrument_definition line says its price_exponent).
//
// Threading: none (a function of its arguments). Costs: formatting into `out` (appends).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <signet/receiver/subscription.hpp>

namespace signet::receiver {

/// Appends the event's JSON object (no newline) to `out`.
void append_event_json(std::string& out, event_view const& view);

/// The unsigned number after `"key":` in such a line (or any flat JSON object), e.g. its
/// "sequence", or the "index" and "previous" a NATS message adds; nullopt: none there.
[[nodiscard]] std::optional<std::uint64_t> json_number(std::string_view text, std::string_view key);

} // namespace signet::receiver
