#pragma once

/// Fixed-width ASCII fields as Nasdaq's protocols carry them: alpha fields (text left-aligned,
/// padded on the right with spaces: ITCH symbols, MoldUDP64 session ids, SoupBinTCP logins)
/// and numeric fields (digits right-aligned, padded on the left with spaces: SoupBinTCP's
/// sequence numbers, GLIMPSE's End of Snapshot).
///
/// Threading: none. Costs: one pass over the field; no allocation, no exceptions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace signet::md {

/// `field` without its right padding.
[[nodiscard]] constexpr std::string_view trim_padding(std::string_view field) noexcept {
    return field.substr(0, field.find_last_not_of(' ') + 1);
}

/// A fixed-width alpha field.
template <std::size_t N>
struct alpha {
    std::array<char, N> chars{};
    /// Without the right padding.
    [[nodiscard]] std::string_view text() const noexcept {
        return trim_padding(std::string_view(chars.data(), N));
    }
};

/// `text` into an alpha field (cut to N).
template <std::size_t N>
[[nodiscard]] alpha<N> make_alpha(std::string_view text) noexcept {
    alpha<N> a;
    a.chars.fill(' ');
    text = text.substr(0, N);
    for (std::size_t i = 0; i < text.size(); ++i) {
        a.chars[i] = text[i];
    }
    return a;
}

/// Spaces, then digits; leading zeros are digits too; a blank field is 0. nullopt for anything
/// else (a space after a digit, a sign, a letter) and for a value above 2^64 - 1.
[[nodiscard]] std::optional<std::uint64_t> read_ascii_number(std::byte const* field,
                                                             std::size_t width) noexcept;
/// Writes `value` right-aligned, padded with spaces. False (nothing written) if it has more
/// digits than `width`.
[[nodiscard]] bool write_ascii_number(std::byte* field, std::size_t width,
                                      std::uint64_t value) noexcept;

} // namespace signet::md
