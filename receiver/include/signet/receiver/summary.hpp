#pragma once

// The end-of-run summary of a stopped receiver: one JSON document (md_receiver --summary-json)
// and a short text for a terminal. Each feed has the protocol-neutral fields (feed_counters,
// its lines' receive counters, the shared sequencing's, the stage latencies) and its protocol's
// section under the protocol's name. The fields are lists with their
// meaning — here for the neutral ones, in each protocol's registration for its section:
// summary_fields() returns them all, md_receiver --summary-fields prints them, and
// docs/md_receiver.md holds that output (a test checks they agree).
//
// Threading: after receiver::stop() (the books and counters are final then).

#include <span>
#include <string>

#include <signet/receiver/feed_protocol.hpp>
#include <signet/receiver/publish.hpp>
#include <signet/receiver/receiver.hpp>

namespace signet::receiver {

/// The summary JSON's layout version ("schema"): 2 since the protocol-neutral counters (1 had
/// one protocol's fields at the top of every feed).
inline constexpr int summary_schema = 2;

/// Every field of summary_json(), in output order: the top-level fields, the per-feed ones,
/// then each registered protocol's section.
[[nodiscard]] std::span<summary_field const> summary_fields() noexcept;

/// The summary as one line of ASCII JSON (wire bytes as md::wire_text).
[[nodiscard]] std::string summary_json(receiver const& receiver);

/// The summary for a terminal: per feed its counts, its protocol's lines and the top of book of
/// the first `books` instruments; then the latency percentiles.
[[nodiscard]] std::string summary_text(receiver const& receiver, std::size_t books = 5);

/// The NATS bridge in one line ("publish nats nats://...: connected; N published, ..."): the
/// stats line's and the text summary's.
[[nodiscard]] std::string nats_line(nats_stats const& n);

} // namespace signet::receiver
