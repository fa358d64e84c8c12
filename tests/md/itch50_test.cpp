// ITCH 5.0 framing: the length table, big-endian readers, and the parser's per-type decoding,
// malformed and unknown handling (the book rules are in order_book_test.cpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/itch50.hpp>

#include "md_test_support.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using signet::md::test::bytes;
using signet::md::test::itch_message;
using signet::md::test::view;

struct spec_length {
    char type;
    std::size_t length;
};

// Straight from the TotalView-ITCH 5.0 specification, independent of the library's table.
constexpr std::array<spec_length, 23> spec = {
    {{'S', 12}, {'R', 39}, {'H', 25}, {'Y', 20}, {'L', 26}, {'V', 35}, {'W', 12}, {'K', 28},
     {'J', 35}, {'h', 21}, {'A', 36}, {'F', 40}, {'E', 31}, {'C', 36}, {'X', 23}, {'D', 19},
     {'U', 35}, {'P', 44}, {'Q', 40}, {'B', 19}, {'I', 50}, {'N', 20}, {'O', 48}}};

// A message of `length` bytes that is valid for its type (A and F need a side).
bytes valid_message(char type, std::size_t length) {
    bytes b = itch_message(type, length);
    if ((type == 'A' || type == 'F') && length > 19) {
        b[19] = std::byte{'B'};
    }
    return b;
}

TEST(Itch50, MessageLengthMatchesSpec) {
    for (spec_length const& s : spec) {
        EXPECT_EQ(itch50::message_length(s.type), s.length) << s.type;
    }
    static_assert(itch50::message_length('A') == 36);
    EXPECT_EQ(itch50::message_types.size(), spec.size());
    std::size_t known = 0;
    for (int c = -128; c < 128; ++c) {
        known += itch50::message_length(static_cast<char>(c)) != 0 ? 1U : 0U;
    }
    EXPECT_EQ(known, 23U);
    EXPECT_EQ(itch50::message_length('Z'), 0U);
    EXPECT_EQ(itch50::message_length('a'), 0U);
    EXPECT_EQ(itch50::message_length('\0'), 0U);
    EXPECT_EQ(itch50::message_length(static_cast<char>(0xC1)), 0U);
}

TEST(Itch50, BigEndianReadersHandleUnalignedData) {
    std::array<std::byte, 17> raw{};
    for (std::size_t i = 0; i < raw.size(); ++i) {
        raw[i] = static_cast<std::byte>(i + 1);
    }
    std::byte const* const odd = raw.data() + 1; // deliberately misaligned
    EXPECT_EQ(load_be16(odd), 0x0203U);
    EXPECT_EQ(load_be32(odd), 0x02030405U);
    EXPECT_EQ(load_be48(odd), 0x020304050607ULL);
    EXPECT_EQ(load_be64(odd), 0x0203040506070809ULL);
    std::array<std::byte, 17> out{};
    store_be16(out.data() + 1, 0xA1B2);
    store_be32(out.data() + 3, 0xC1D2E3F4);
    store_be48(out.data() + 7, 0x112233445566ULL);
    EXPECT_EQ(out[1], std::byte{0xA1});
    EXPECT_EQ(out[2], std::byte{0xB2});
    EXPECT_EQ(load_be32(out.data() + 3), 0xC1D2E3F4U);
    EXPECT_EQ(out[7], std::byte{0x11});
    EXPECT_EQ(load_be48(out.data() + 7), 0x112233445566ULL);
    store_be64(out.data() + 9, 0x0102030405060708ULL);
    EXPECT_EQ(out[9], std::byte{0x01});
    EXPECT_EQ(out[16], std::byte{0x08});
}

TEST(Itch50, HeaderReaders) {
    bytes const m = itch_message('S', 12, 0xBEEF, 0x0000123456789ABCULL);
    EXPECT_EQ(itch50::message_type(view(m)), 'S');
    EXPECT_EQ(itch50::stock_locate(view(m)), 0xBEEF);
    EXPECT_EQ(itch50::tracking_number(view(m)), 7);
    EXPECT_EQ(itch50::timestamp(view(m)), 0x0000123456789ABCULL);
}

TEST(Itch50Parser, EveryTypeAtSpecLengthDecodesAndIsCounted) {
    for (spec_length const& s : spec) {
        itch50_parser parser({.max_orders = 16});
        parser.on_message(view(valid_message(s.type, s.length)));
        itch50_stats const& st = parser.stats();
        EXPECT_EQ(st.count(s.type), 1U) << s.type;
        EXPECT_EQ(st.messages_by_type[static_cast<unsigned char>(s.type)], 1U) << s.type;
        EXPECT_EQ(st.messages, 1U) << s.type;
        EXPECT_EQ(st.malformed_messages, 0U) << s.type;
        EXPECT_EQ(st.unknown_messages, 0U) << s.type;
    }
}

TEST(Itch50Parser, EveryTypeOneByteShortIsMalformed) {
    for (spec_length const& s : spec) {
        itch50_parser parser({.max_orders = 16});
        // An exactly sized buffer: ASan reports any read of the missing byte.
        bytes const m = valid_message(s.type, s.length - 1);
        parser.on_message(view(m));
        EXPECT_EQ(parser.stats().malformed_messages, 1U) << s.type;
        EXPECT_EQ(parser.stats().count(s.type), 0U) << s.type;
        EXPECT_EQ(parser.stats().messages, 0U) << s.type;
        EXPECT_EQ(parser.book().size(), 0U) << s.type;
    }
}

TEST(Itch50Parser, LongerMessageDecodes) {
    itch50_parser parser({.max_orders = 16});
    parser.on_message(view(valid_message('A', 36 + 4)));
    EXPECT_EQ(parser.stats().count('A'), 1U);
    EXPECT_EQ(parser.book().size(), 1U);
}

TEST(Itch50Parser, UnknownTypeIsCountedAndSkipped) {
    itch50_parser parser({.max_orders = 16});
    parser.on_message(view(itch_message('Z', 30)));
    parser.on_message(view(itch_message('Z', 1)));
    bytes high(5, std::byte{0xF0});
    parser.on_message(view(high));
    EXPECT_EQ(parser.stats().unknown_messages, 3U);
    EXPECT_EQ(parser.stats().malformed_messages, 0U);
    EXPECT_EQ(parser.stats().messages, 0U);
    parser.on_message(view(valid_message('S', 12)));
    EXPECT_EQ(parser.stats().count('S'), 1U);
}

TEST(Itch50Parser, EmptyMessageIsMalformed) {
    itch50_parser parser({.max_orders = 16});
    parser.on_message({});
    EXPECT_EQ(parser.stats().malformed_messages, 1U);
}

TEST(Itch50Parser, AddWithBadSideIsMalformed) {
    itch50_parser parser({.max_orders = 16});
    bytes a = signet::md::test::add(1, 5, 'B', 100, 10'000);
    a[19] = std::byte{'Z'};
    parser.on_message(view(a));
    bytes f = signet::md::test::add_mpid(1, 6, 'S', 100, 10'000);
    f[19] = std::byte{0};
    parser.on_message(view(f));
    EXPECT_EQ(parser.stats().malformed_messages, 2U);
    EXPECT_EQ(parser.stats().count('A') + parser.stats().count('F'), 0U);
    EXPECT_EQ(parser.book().size(), 0U);
}

TEST(Itch50Parser, PushAppliesLateButInOrderAndCompletelyOnFlush) {
    itch50_parser parser({.max_orders = 64});
    for (std::uint64_t ref = 1; ref <= 20; ++ref) {
        parser.push(view(signet::md::test::add(1, ref, 'B', 100, 10'000)));
    }
    // Up to prefetch_far messages wait in the ring; the rest are applied.
    EXPECT_EQ(parser.pending(), itch50_parser::prefetch_far);
    EXPECT_EQ(parser.book().size(), 20U - itch50_parser::prefetch_far);
    // A message longer than a slot flushes the ring first, then is applied in place: the
    // delete of ref 20 must come after its add.
    bytes long_delete = signet::md::test::delete_order(20);
    long_delete.resize(itch50_parser::slot_size + 6);
    parser.push(view(long_delete));
    EXPECT_EQ(parser.pending(), 0U);
    EXPECT_EQ(parser.book().size(), 19U);
    EXPECT_EQ(parser.stats().unknown_order_refs, 0U);
    // Bad input keeps its counting through the pipeline.
    parser.push(view(itch_message('Z', 30)));
    parser.push(view(signet::md::test::executed(999, 5)));
    parser.flush();
    EXPECT_EQ(parser.stats().unknown_messages, 1U);
    EXPECT_EQ(parser.stats().unknown_order_refs, 1U);
    EXPECT_TRUE(parser.book().check_invariants());
}

TEST(Itch50Parser, PlugsIntoSessionDeliverSignature) {
    itch50_parser parser({.max_orders = 16});
    parser(1, view(valid_message('S', 12)));
    EXPECT_EQ(parser.stats().count('S'), 1U);
}

} // namespace
