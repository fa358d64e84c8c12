#pragma once

// Hand-built MoldUDP64 packets and ITCH 5.0 messages for the md tests. Every builder writes the
// wire format byte by byte (big-endian by shifting), independently of the library's readers.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

namespace signet::md::test {

using bytes = std::vector<std::byte>;

inline void put_be(bytes& b, std::size_t offset, std::uint64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
        b.at(offset + i) = static_cast<std::byte>(value >> (8 * (width - 1 - i)));
    }
}

inline void put_text(bytes& b, std::size_t offset, std::string_view text, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
        b.at(offset + i) = static_cast<std::byte>(i < text.size() ? text[i] : ' ');
    }
}

inline bytes text_bytes(std::string_view text) {
    bytes b(text.size());
    put_text(b, 0, text, text.size());
    return b;
}

// ---- MoldUDP64 -------------------------------------------------------------------------------

inline bytes mold_header(std::string_view session, std::uint64_t sequence, std::uint16_t count) {
    bytes b(20);
    put_text(b, 0, session, 10);
    put_be(b, 10, sequence, 8);
    put_be(b, 18, count, 2);
    return b;
}

/// A well-formed packet carrying `messages` (count = messages.size()).
inline bytes mold_packet(std::string_view session, std::uint64_t sequence,
                         std::vector<bytes> const& messages) {
    bytes b = mold_header(session, sequence, static_cast<std::uint16_t>(messages.size()));
    for (bytes const& m : messages) {
        std::size_t const at = b.size();
        b.resize(at + 2 + m.size());
        put_be(b, at, m.size(), 2);
        std::copy(m.begin(), m.end(), b.begin() + static_cast<std::ptrdiff_t>(at + 2));
    }
    return b;
}

// ---- ITCH 5.0 --------------------------------------------------------------------------------

/// A message of `length` bytes: type, locate, tracking number, timestamp; the body zeroed.
inline bytes itch_message(char type, std::size_t length, std::uint16_t locate = 1,
                          std::uint64_t timestamp = 34'200'000'000'000) {
    bytes b(length);
    b.at(0) = static_cast<std::byte>(type);
    if (length >= 11) {
        put_be(b, 1, locate, 2);
        put_be(b, 3, 7, 2);
        put_be(b, 5, timestamp, 6);
    }
    return b;
}

inline bytes directory(std::uint16_t locate, std::string_view symbol) {
    bytes b = itch_message('R', 39, locate);
    put_text(b, 11, symbol, 8);
    return b;
}

inline bytes add(std::uint16_t locate, std::uint64_t ref, char side, std::uint32_t shares,
                 std::uint32_t price, std::string_view symbol = "TEST") {
    bytes b = itch_message('A', 36, locate);
    put_be(b, 11, ref, 8);
    b.at(19) = static_cast<std::byte>(side);
    put_be(b, 20, shares, 4);
    put_text(b, 24, symbol, 8);
    put_be(b, 32, price, 4);
    return b;
}

inline bytes add_mpid(std::uint16_t locate, std::uint64_t ref, char side, std::uint32_t shares,
                      std::uint32_t price) {
    bytes b = itch_message('F', 40, locate);
    put_be(b, 11, ref, 8);
    b.at(19) = static_cast<std::byte>(side);
    put_be(b, 20, shares, 4);
    put_text(b, 24, "TEST", 8);
    put_be(b, 32, price, 4);
    put_text(b, 36, "GSCO", 4);
    return b;
}

inline bytes executed(std::uint64_t ref, std::uint32_t shares, std::uint64_t match = 1) {
    bytes b = itch_message('E', 31);
    put_be(b, 11, ref, 8);
    put_be(b, 19, shares, 4);
    put_be(b, 23, match, 8);
    return b;
}

inline bytes executed_with_price(std::uint64_t ref, std::uint32_t shares, std::uint32_t price) {
    bytes b = itch_message('C', 36);
    put_be(b, 11, ref, 8);
    put_be(b, 19, shares, 4);
    put_be(b, 23, 99, 8);
    b.at(31) = static_cast<std::byte>('Y');
    put_be(b, 32, price, 4);
    return b;
}

inline bytes cancel(std::uint64_t ref, std::uint32_t shares) {
    bytes b = itch_message('X', 23);
    put_be(b, 11, ref, 8);
    put_be(b, 19, shares, 4);
    return b;
}

inline bytes delete_order(std::uint64_t ref) {
    bytes b = itch_message('D', 19);
    put_be(b, 11, ref, 8);
    return b;
}

inline bytes replace(std::uint64_t original, std::uint64_t new_ref, std::uint32_t shares,
                     std::uint32_t price) {
    bytes b = itch_message('U', 35);
    put_be(b, 11, original, 8);
    put_be(b, 19, new_ref, 8);
    put_be(b, 27, shares, 4);
    put_be(b, 31, price, 4);
    return b;
}

inline bytes trade(std::uint16_t locate, std::uint64_t ref, char side, std::uint32_t shares,
                   std::uint32_t price) {
    bytes b = itch_message('P', 44, locate);
    put_be(b, 11, ref, 8);
    b.at(19) = static_cast<std::byte>(side);
    put_be(b, 20, shares, 4);
    put_text(b, 24, "TEST", 8);
    put_be(b, 32, price, 4);
    put_be(b, 36, 5, 8); // match number: P is 44 bytes, so it sits at 36
    return b;
}

inline std::span<std::byte const> view(bytes const& b) {
    return {b.data(), b.size()};
}

} // namespace signet::md::test
