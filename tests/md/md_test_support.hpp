#pragma once

// Hand-built MoldUDP64 packets and ITCH 5.0 messages for the md tests. Every builder writes the
// wire format byte by byte (big-endian by shifting), independently of the library's readers.
// And for the late-join tests: a generated stream, the publisher's snapshot after a prefix of
// it, and a comparison of two books.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_snapshot.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

namespace signet::md::test {

using namespace signet::md::nasdaq; // the ITCH 5.0 side of md these helpers build for
using publisher::nasdaq::itch_generator;
using publisher::nasdaq::itch_generator_options;

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
                      std::uint32_t price, std::string_view mpid = "GSCO") {
    bytes b = itch_message('F', 40, locate);
    put_be(b, 11, ref, 8);
    b.at(19) = static_cast<std::byte>(side);
    put_be(b, 20, shares, 4);
    put_text(b, 24, "TEST", 8);
    put_be(b, 32, price, 4);
    put_text(b, 36, mpid, 4);
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

/// A generated stream of `symbols` stocks; message i carries sequence i + 1.
inline std::vector<bytes> generated_stream(std::uint64_t seed, std::uint64_t messages,
                                           std::size_t symbols, std::size_t live_orders = 2000) {
    itch_generator generator({.seed = seed,
                              .symbols = symbols,
                              .messages = messages,
                              .target_live_orders = live_orders});
    std::vector<bytes> out;
    std::vector<std::byte> buffer(itch50::max_message_length);
    while (std::size_t const n = generator.next(buffer)) {
        out.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    }
    return out;
}

/// The same levels, symbols, order counts and live orders for locates 0 to `symbols`.
inline void expect_same_books(itch_order_book const& got, itch_order_book const& want,
                              std::size_t symbols) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t s = 0; s <= symbols; ++s) {
        auto const locate = static_cast<std::uint16_t>(s);
        ASSERT_EQ(std::vector<itch_price_level>(got.bids(locate).begin(), got.bids(locate).end()),
                  std::vector<itch_price_level>(want.bids(locate).begin(), want.bids(locate).end()))
            << "bids of " << locate;
        ASSERT_EQ(std::vector<itch_price_level>(got.asks(locate).begin(), got.asks(locate).end()),
                  std::vector<itch_price_level>(want.asks(locate).begin(), want.asks(locate).end()))
            << "asks of " << locate;
        EXPECT_EQ(got.symbol(locate), want.symbol(locate));
        EXPECT_EQ(got.order_count(locate), want.order_count(locate));
    }
}

/// The publisher's book after the first `count` messages of `all`, as snapshot messages.
inline std::vector<bytes> snapshot_after(std::vector<bytes> const& all, std::size_t count,
                                         itch_order_book_options const& book) {
    itch50_parser publisher(book);
    for (std::size_t i = 0; i < count; ++i) {
        publisher.on_message(view(all[i]));
    }
    std::vector<bytes> out;
    std::size_t const orders = write_itch_snapshot(
        publisher.book(), [&](auto m) { out.emplace_back(m.begin(), m.end()); });
    EXPECT_EQ(orders, publisher.book().size());
    return out;
}

} // namespace signet::md::test
