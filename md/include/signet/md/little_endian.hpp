#pragma once

/// Little-endian loads and stores on unaligned bytes, as SBE (CME MDP 3.0) uses them: memcpy,
/// plus a byte swap on a big-endian host (detail::byteswap of big_endian.hpp). The caller
/// guarantees that [p, p + sizeof(T)) is readable or writable: no bounds checks here.

#include <bit>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include <signet/md/big_endian.hpp>

namespace signet::md {

/// T: an integer of 1, 2, 4 or 8 bytes.
template <typename T>
[[nodiscard]] T load_le(std::byte const* p) noexcept {
    static_assert(std::is_integral_v<T>);
    using U = std::make_unsigned_t<T>;
    U v;
    std::memcpy(&v, p, sizeof(U));
    if constexpr (std::endian::native == std::endian::big && sizeof(U) > 1) {
        v = detail::byteswap(v);
    }
    return static_cast<T>(v);
}

template <typename T>
void store_le(std::byte* p, T value) noexcept {
    static_assert(std::is_integral_v<T>);
    using U = std::make_unsigned_t<T>;
    auto v = static_cast<U>(value);
    if constexpr (std::endian::native == std::endian::big && sizeof(U) > 1) {
        v = detail::byteswap(v);
    }
    std::memcpy(p, &v, sizeof(U));
}

} // namespace signet::md
