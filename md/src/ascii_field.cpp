#include <algorithm>

#include <signet/md/ascii_field.hpp>

namespace signet::md {

std::optional<std::uint64_t> read_ascii_number(std::byte const* field, std::size_t width) noexcept {
    std::size_t i = 0;
    while (i < width && static_cast<char>(field[i]) == ' ') {
        ++i;
    }
    std::uint64_t value = 0;
    for (; i < width; ++i) {
        auto const c = static_cast<char>(field[i]);
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        auto const digit = static_cast<std::uint64_t>(c - '0');
        if (value > (UINT64_MAX - digit) / 10) {
            return std::nullopt; // does not fit 64 bits
        }
        value = value * 10 + digit;
    }
    return value;
}

bool write_ascii_number(std::byte* field, std::size_t width, std::uint64_t value) noexcept {
    std::size_t digits = 1;
    for (std::uint64_t v = value; v >= 10; v /= 10) {
        ++digits;
    }
    if (digits > width) {
        return false;
    }
    std::fill(field, field + width, std::byte{' '});
    for (std::size_t i = width; i-- > width - digits; value /= 10) {
        field[i] = static_cast<std::byte>('0' + value % 10);
    }
    return true;
}

} // namespace signet::md
