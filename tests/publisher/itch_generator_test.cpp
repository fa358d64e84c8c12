// itch_generator: determinism, stream structure, live references only, counts.
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/itch50.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using signet::publisher::nasdaq::itch_generator;
using signet::publisher::nasdaq::itch_generator_options;

// Every message of a finished stream, concatenated, and each message's bounds.
struct stream {
    std::vector<std::byte> bytes;
    std::vector<std::pair<std::size_t, std::size_t>> messages; // offset, length
};

stream generate(itch_generator& gen, std::size_t limit = 10'000'000) {
    stream s;
    std::array<std::byte, itch50::max_message_length> buffer{};
    while (!gen.finished() && s.messages.size() < limit) {
        std::size_t const n = gen.next(buffer);
        EXPECT_GT(n, 0U);
        EXPECT_EQ(n, itch50::message_length(static_cast<char>(buffer[0])));
        s.messages.emplace_back(s.bytes.size(), n);
        s.bytes.insert(s.bytes.end(), buffer.begin(), buffer.begin() + static_cast<long>(n));
    }
    return s;
}

std::span<std::byte const> message(stream const& s, std::size_t i) {
    return std::span<std::byte const>(s.bytes).subspan(s.messages[i].first, s.messages[i].second);
}

TEST(ItchGenerator, SameSeedGivesSameBytes) {
    itch_generator a({.seed = 99, .symbols = 8, .messages = 5000});
    itch_generator b({.seed = 99, .symbols = 8, .messages = 5000});
    itch_generator c({.seed = 100, .symbols = 8, .messages = 5000});
    stream const sa = generate(a);
    stream const sb = generate(b);
    stream const sc = generate(c);
    EXPECT_EQ(sa.bytes, sb.bytes);
    EXPECT_NE(sa.bytes, sc.bytes);
    EXPECT_EQ(a.generated_by_type(), b.generated_by_type());
}

TEST(ItchGenerator, StreamOpensListsAndCloses) {
    itch_generator gen({.seed = 3, .symbols = 5, .messages = 1000});
    stream const s = generate(gen);
    ASSERT_EQ(s.messages.size(), 3U + 5U + 1000U + 3U);
    std::array<char, 3> const opening = {'O', 'S', 'Q'};
    std::array<char, 3> const closing = {'M', 'E', 'C'};
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(itch50::message_type(message(s, i)), 'S');
        EXPECT_EQ(static_cast<char>(message(s, i)[11]), opening[i]);
        auto const last = message(s, s.messages.size() - 3 + i);
        EXPECT_EQ(itch50::message_type(last), 'S');
        EXPECT_EQ(static_cast<char>(last[11]), closing[i]);
    }
    for (std::size_t i = 0; i < 5; ++i) {
        auto const r = message(s, 3 + i);
        EXPECT_EQ(itch50::message_type(r), 'R');
        EXPECT_EQ(itch50::stock_locate(r), i + 1);
    }
    EXPECT_EQ(gen.symbol(0), "AAPL");
    std::uint64_t previous = 0;
    for (std::size_t i = 0; i < s.messages.size(); ++i) {
        std::uint64_t const ts = itch50::timestamp(message(s, i));
        EXPECT_GT(ts, previous) << "timestamps strictly increase, message " << i;
        previous = ts;
    }
    std::array<std::byte, 64> buffer{};
    EXPECT_EQ(gen.next(buffer), 0U) << "a finished generator emits nothing";
}

TEST(ItchGenerator, OnlyLiveRefsAndCountsMatchTheParser) {
    itch_generator gen({.seed = 5, .symbols = 40, .messages = 100'000, .target_live_orders = 2000});
    itch50_parser parser({.max_orders = 1 << 16});
    std::array<std::byte, itch50::max_message_length> buffer{};
    while (!gen.finished()) {
        std::size_t const n = gen.next(buffer);
        ASSERT_GT(n, 0U);
        parser.on_message(std::span<std::byte const>(buffer.data(), n));
    }
    itch50_stats const& st = parser.stats();
    EXPECT_EQ(st.unknown_order_refs, 0U);
    EXPECT_EQ(st.duplicate_order_refs, 0U);
    EXPECT_EQ(st.malformed_messages, 0U);
    EXPECT_EQ(st.unknown_messages, 0U);
    EXPECT_EQ(st.book_full_drops, 0U);
    EXPECT_EQ(st.messages, gen.generated());
    EXPECT_EQ(st.messages_by_type, gen.generated_by_type());
    EXPECT_EQ(parser.book().size(), gen.live_orders());
    EXPECT_TRUE(parser.book().check_invariants());
    // A realistic mix: every book-changing type and every other type shows up.
    for (char const type : itch50::message_types) {
        EXPECT_GT(gen.generated(type), 0U) << type;
    }
    EXPECT_GT(gen.generated('A'), gen.generated('F'));
    EXPECT_EQ(gen.generated('R'), 40U);
    EXPECT_EQ(gen.generated('S'), 6U);
    // The book stays near the target (and holds something on both sides of a busy stock).
    EXPECT_GT(gen.live_orders(), 1000U);
    EXPECT_LT(gen.live_orders(), 4000U);
    parser.book().for_each_stock([](stock_view const& s) {
        EXPECT_GT(s.top.bid_price, 0U) << s.symbol;
        EXPECT_GT(s.top.ask_price, s.top.bid_price) << s.symbol << ": the book never crosses";
    });
}

TEST(ItchGenerator, WritesOnlyItsOwnMessageBytes) {
    itch_generator gen({.seed = 17, .symbols = 4, .messages = 50'000});
    std::array<std::byte, itch50::max_message_length + 8> buffer{};
    while (!gen.finished()) {
        buffer.fill(std::byte{0xA5});
        std::size_t const n = gen.next(buffer);
        ASSERT_GT(n, 0U);
        for (std::size_t i = n; i < buffer.size(); ++i) {
            ASSERT_EQ(buffer[i], std::byte{0xA5})
                << "type " << static_cast<char>(buffer[0]) << " wrote byte " << i;
        }
    }
}

TEST(ItchGenerator, ShortBufferConsumesNothing) {
    itch_generator a({.seed = 8, .symbols = 2, .messages = 100});
    itch_generator b({.seed = 8, .symbols = 2, .messages = 100});
    std::array<std::byte, itch50::max_message_length - 1> small{};
    EXPECT_EQ(a.next(small), 0U);
    EXPECT_EQ(a.generated(), 0U);
    EXPECT_EQ(generate(a).bytes, generate(b).bytes);
}

TEST(ItchGenerator, CloseEndsTheBody) {
    itch_generator gen({.seed = 1, .symbols = 3});
    std::array<std::byte, itch50::max_message_length> buffer{};
    for (int i = 0; i < 3 + 3 + 50; ++i) {
        ASSERT_GT(gen.next(buffer), 0U);
    }
    gen.close();
    std::vector<char> events;
    while (!gen.finished()) {
        ASSERT_GT(gen.next(buffer), 0U);
        ASSERT_EQ(static_cast<char>(buffer[0]), 'S');
        events.push_back(static_cast<char>(buffer[11]));
    }
    EXPECT_EQ(events, (std::vector<char>{'M', 'E', 'C'}));
    EXPECT_EQ(gen.generated(), 3U + 3U + 50U + 3U);
}

TEST(ItchGenerator, RespectsMaxLiveOrdersAndNamesManySymbols) {
    itch_generator gen({.seed = 2,
                        .symbols = 1000,
                        .messages = 20'000,
                        .target_live_orders = 5000,
                        .max_live_orders = 300});
    itch50_parser parser({.max_orders = 300});
    std::array<std::byte, itch50::max_message_length> buffer{};
    std::size_t peak = 0;
    while (!gen.finished()) {
        std::size_t const n = gen.next(buffer);
        parser.on_message(std::span<std::byte const>(buffer.data(), n));
        peak = std::max(peak, gen.live_orders());
    }
    EXPECT_EQ(peak, 300U);
    EXPECT_EQ(parser.stats().book_full_drops, 0U);
    EXPECT_EQ(parser.stats().unknown_order_refs, 0U);
    EXPECT_EQ(gen.symbol(0), "SYM00001");
    EXPECT_EQ(gen.symbol(999), "SYM01000");
    EXPECT_EQ(parser.book().symbol(1000), "SYM01000");
}

TEST(ItchGenerator, RejectsBadOptions) {
    EXPECT_THROW(itch_generator({.symbols = 0}), std::invalid_argument);
    EXPECT_THROW(itch_generator({.symbols = 65536}), std::invalid_argument);
    EXPECT_THROW(itch_generator({.max_live_orders = 0}), std::invalid_argument);
}

} // namespace
