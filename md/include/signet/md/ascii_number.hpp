#pragma once

/// Fixed-width ASCII numbers as Nasdaq's TCP protocols carry them (SoupBinTCP's sequence
/// numbers, GLIMPSE's End of Snapshot): digits right-aligned in the field, padded on the left
/// with spaces.
///
/// Threading: none. Costs: one pass over the field; no allocation, no exceptions.

#include <cstddef>
#include <cstdint>
#include <optional>

namespace signet::md {

/// Spaces, then digits; leading zeros are digits too; a blank field is 0. nullopt for anything
/// else (a space after a digit, a sign, a letter) and for a value above 2^64 - 1.
[[nodiscard]] std::optional<std::uint64_t> read_ascii_number(std::byte const* field,
                                                             std::size_t width) noexcept;
/// Writes `value` right-aligned, padded with spaces. False (nothing written) if it has more
/// digits than `width`.
[[nodiscard]] bool write_ascii_number(std::byte* field, std::size_t width,
                                      std::uint64_t value) noexcept;

} // namespace signet::md
