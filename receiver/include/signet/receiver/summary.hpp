#pragma once

// The end-of-run summary of a stopped itch_receiver: one JSON document (md_receiver
// --summary-json) and a short text for a terminal. The JSON's per-feed fields are one list in
// summary.cpp, with their meaning: summary_fields() returns it, md_receiver --summary-fields
// prints it, and docs/md_receiver.md holds that output (a test checks they agree).
//
// Threading: after itch_receiver::stop() (the books and session counters are final then).

#include <span>
#include <string>
#include <string_view>

#include <signet/receiver/itch_receiver.hpp>

namespace signet::receiver {

/// One field of the summary JSON: its name (top level, or in each element of "feeds") and what
/// it holds.
struct summary_field {
    std::string_view name;
    std::string_view meaning;
    bool per_feed = true;
};

/// Every field of summary_json(), in output order: the top-level fields, then the per-feed ones.
[[nodiscard]] std::span<summary_field const> summary_fields() noexcept;

/// The summary as one line of ASCII JSON (wire bytes as md::wire_text).
[[nodiscard]] std::string summary_json(itch_receiver const& receiver);

/// The summary for a terminal: per feed its counts, the order book's counters and the top of
/// book of the first `books` stocks; then the latency percentiles.
[[nodiscard]] std::string summary_text(itch_receiver const& receiver, std::size_t books = 5);

} // namespace signet::receiver
