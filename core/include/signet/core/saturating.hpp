#pragma once

// saturating_add: a + b, or the largest value when that overflows — for counters and deadlines
// that forged input could push past 2^64 (they stay monotonic instead of wrapping).

#include <cstdint>
#include <limits>

namespace signet {

[[nodiscard]] constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
    return a > std::numeric_limits<std::uint64_t>::max() - b
               ? std::numeric_limits<std::uint64_t>::max()
               : a + b;
}

} // namespace signet
