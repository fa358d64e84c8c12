#pragma once

// feed_report: what every publisher's run reports first, one meaning for every protocol —
// md_feed's report starts with these fields (then its protocol's own), and scripts/md-verdict
// compares them with md_receiver's protocol-neutral counters. Sequence numbers are the
// protocol's: messages for MoldUDP64, packets for MDP 3.0.
//
// Threading: none (values). Costs: built once, after a run.

#include <cstdint>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

namespace signet::publisher {

struct feed_counts {
    std::uint64_t packets = 0;  ///< data packets that left on a line (a duplicate counts once)
    std::uint64_t messages = 0; ///< the protocol's messages in them
    std::uint64_t dropped_packets = 0;   ///< data packets fault injection kept off every line
    std::uint64_t dropped_sequences = 0; ///< the sequence numbers those took away
    std::uint64_t dropped_one_line_packets = 0; ///< kept off one line of two
    std::uint64_t duplicated_packets = 0;
    std::uint64_t reordered_packets = 0;
    std::uint64_t heartbeats = 0;             ///< on each line
    std::uint64_t end_of_session_packets = 0; ///< on each line
    /// Packets on the protocol's other lines (an MDP 3.0 snapshot loop, definitions).
    std::uint64_t side_packets = 0;
    std::uint64_t next_sequence = 0; ///< the sequence after the last one sent
};

/// {"protocol", "elapsed_s", then the counts in feed_counts' order}.
[[nodiscard]] nlohmann::ordered_json feed_report_json(std::string_view protocol, double elapsed_s,
                                                      feed_counts const& counts);
/// The names feed_report_json() writes, in order.
[[nodiscard]] std::span<std::string_view const> feed_report_fields() noexcept;

} // namespace signet::publisher
