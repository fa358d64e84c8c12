#pragma once

/// GLIMPSE 5.0 (Nasdaq): a point-in-time snapshot of the book as ITCH 5.0 messages over
/// SoupBinTCP (write_itch_snapshot writes the messages), closed by an End of Snapshot message:
/// type 'G', then the ITCH sequence number from which to process the live feed, 20 ASCII
/// digits right-aligned and padded with spaces (docs/soupbintcp.md, "GLIMPSE").
///
/// Threading: none. Costs: no allocation, no exceptions.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace signet::md::nasdaq::glimpse {

inline constexpr char end_of_snapshot_type = 'G';
inline constexpr std::size_t sequence_length = 20;
inline constexpr std::size_t end_of_snapshot_length = 1 + sequence_length;

/// The message into `out`; its size, or 0 when `out` is too small.
[[nodiscard]] std::size_t write_end_of_snapshot(std::span<std::byte> out,
                                                std::uint64_t next_sequence) noexcept;
[[nodiscard]] inline bool is_end_of_snapshot(std::span<std::byte const> message) noexcept {
    return !message.empty() && static_cast<char>(message[0]) == end_of_snapshot_type;
}
/// The sequence an End of Snapshot carries; nullopt if it is short or its number does not
/// parse (a longer message is read: later revisions may append fields).
[[nodiscard]] std::optional<std::uint64_t>
parse_end_of_snapshot(std::span<std::byte const> message) noexcept;

} // namespace signet::md::nasdaq::glimpse
