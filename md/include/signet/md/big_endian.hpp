#pragma once

/// Big-endian (network order) loads and stores on unaligned bytes, as MoldUDP64 and ITCH 5.0 use
/// them. Each goes through std::memcpy, so any address is fine (no aliasing or alignment UB); the
/// compiler turns memcpy + bswap into one mov + bswap (or movbe). The caller guarantees that
/// [p, p + width) is readable or writable: these helpers do no bounds checks.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace signet::md {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "mixed-endian targets are not supported");

namespace detail {

// std::byteswap is C++23; these builtins are what libstdc++ implements it with.
constexpr std::uint16_t byteswap(std::uint16_t v) noexcept {
    return __builtin_bswap16(v);
}
constexpr std::uint32_t byteswap(std::uint32_t v) noexcept {
    return __builtin_bswap32(v);
}
constexpr std::uint64_t byteswap(std::uint64_t v) noexcept {
    return __builtin_bswap64(v);
}

template <typename T>
T load_be(std::byte const* p) noexcept {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::endian::native == std::endian::little) {
        v = byteswap(v);
    }
    return v;
}

template <typename T>
void store_be(std::byte* p, T v) noexcept {
    if constexpr (std::endian::native == std::endian::little) {
        v = byteswap(v);
    }
    std::memcpy(p, &v, sizeof(T));
}

} // namespace detail

inline std::uint16_t load_be16(std::byte const* p) noexcept {
    return detail::load_be<std::uint16_t>(p);
}
inline std::uint32_t load_be32(std::byte const* p) noexcept {
    return detail::load_be<std::uint32_t>(p);
}
inline std::uint64_t load_be64(std::byte const* p) noexcept {
    return detail::load_be<std::uint64_t>(p);
}
/// The 6-byte ITCH timestamp (nanoseconds since midnight).
inline std::uint64_t load_be48(std::byte const* p) noexcept {
    return (std::uint64_t{load_be16(p)} << 32) | load_be32(p + 2);
}

inline void store_be16(std::byte* p, std::uint16_t v) noexcept {
    detail::store_be(p, v);
}
inline void store_be32(std::byte* p, std::uint32_t v) noexcept {
    detail::store_be(p, v);
}
inline void store_be64(std::byte* p, std::uint64_t v) noexcept {
    detail::store_be(p, v);
}
/// Stores the low 48 bits of v (an ITCH timestamp).
inline void store_be48(std::byte* p, std::uint64_t v) noexcept {
    store_be16(p, static_cast<std::uint16_t>(v >> 32));
    store_be32(p + 2, static_cast<std::uint32_t>(v));
}

} // namespace signet::md
