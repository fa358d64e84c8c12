// itch_feed_handler: MoldUDP64 datagrams in, session stats, ITCH stats and the book out.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/itch_feed_handler.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

#include "md_test_support.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using signet::publisher::nasdaq::itch_generator;
using signet::publisher::nasdaq::itch_generator_options;
namespace t = signet::md::test;
using t::view;

TEST(ItchFeedHandler, DatagramsDriveSessionParserAndBook) {
    itch_feed_handler handler({.session = {.first_sequence = 1}, .book = {.max_orders = 64}});
    handler.on_datagram(view(t::mold_packet(
        "FEED", 1, {t::directory(5, "MSFT"), t::add(5, 1, 'B', 100, 300'0000, "MSFT")})));
    handler(view(t::mold_packet("FEED", 3, {t::add(5, 2, 'S', 50, 301'0000, "MSFT")})));
    EXPECT_EQ(handler.book().top(5), (top_of_book{300'0000, 100, 301'0000, 50}));
    EXPECT_EQ(handler.book().symbol(5), "MSFT");
    EXPECT_EQ(handler.session_stats().messages, 3U);
    EXPECT_EQ(handler.itch_stats().count('A'), 2U);

    // A duplicate packet does not add the order twice; a gap is counted.
    handler(view(t::mold_packet("FEED", 3, {t::add(5, 2, 'S', 50, 301'0000, "MSFT")})));
    handler(view(t::mold_packet("FEED", 10, {t::delete_order(1)})));
    EXPECT_EQ(handler.session_stats().duplicate_packets, 1U);
    EXPECT_EQ(handler.session_stats().gaps, 1U);
    EXPECT_EQ(handler.session_stats().missing_messages, 6U);
    EXPECT_EQ(handler.itch_stats().duplicate_order_refs, 0U);
    EXPECT_EQ(handler.book().top(5), (top_of_book{0, 0, 301'0000, 50}));
    EXPECT_EQ(handler.session().next_sequence(), 11U);
    EXPECT_EQ(handler.parser().stats().count('D'), 1U);

    // Malformed datagrams reach neither the parser nor the book.
    t::bytes cut = t::mold_packet("FEED", 11, {t::delete_order(2)});
    cut.pop_back();
    handler(view(cut));
    EXPECT_EQ(handler.session_stats().malformed_packets, 1U);
    EXPECT_EQ(handler.book().order_count(5), 1U);
}

// Pipelined (the receiver's setting): messages wait in the parser's ring, across datagrams,
// until flush(); the session has delivered them all the while, and the tap saw each once.
TEST(ItchFeedHandler, PipelineHoldsMessagesUntilFlush) {
    itch_feed_handler handler({.book = {.max_orders = 64}, .pipeline = true});
    std::size_t tapped = 0;
    for (std::uint64_t ref = 1; ref <= 20; ++ref) {
        handler.on_datagram(view(t::mold_packet("FEED", ref, {t::add(5, ref, 'B', 10, 100)})),
                            [&](std::uint64_t, std::span<std::byte const>) { ++tapped; });
    }
    EXPECT_EQ(handler.session_stats().messages, 20U);
    EXPECT_EQ(tapped, 20U);
    EXPECT_EQ(handler.book().size() + handler.parser().pending(), 20U);
    EXPECT_GT(handler.parser().pending(), 0U) << "the ring spans datagrams";
    handler.flush();
    EXPECT_EQ(handler.parser().pending(), 0U);
    EXPECT_EQ(handler.book().size(), 20U);
    EXPECT_EQ(handler.book().top(5), (top_of_book{100, 200, 0, 0}));
}

// Generator -> packer -> handler: a realistic stream reconstructs the generator's live orders.
TEST(ItchFeedHandler, GeneratedStreamOverMoldUdp64) {
    itch_generator gen({.seed = 11, .symbols = 20, .messages = 30'000});
    std::array<std::byte, 1400> buffer{};
    moldudp64_packer packer(buffer, "GEN");
    itch_feed_handler handler({.book = {.max_orders = 1 << 16}});
    std::size_t datagrams = 0;
    while (!gen.finished()) {
        std::size_t const n = gen.next(packer.message_space());
        if (n == 0) {
            handler(packer.finish());
            ++datagrams;
            continue;
        }
        packer.commit(n);
    }
    handler(packer.finish());
    ++datagrams;
    EXPECT_EQ(handler.session_stats().messages, gen.generated());
    EXPECT_EQ(handler.session_stats().packets, datagrams);
    EXPECT_EQ(handler.session_stats().gaps + handler.session_stats().malformed_packets, 0U);
    EXPECT_EQ(handler.itch_stats().messages, gen.generated());
    EXPECT_EQ(handler.itch_stats().unknown_order_refs, 0U);
    EXPECT_EQ(handler.book().size(), gen.live_orders());
    std::size_t listed = 0;
    handler.book().for_each_stock([&](stock_view const& s) {
        ++listed;
        EXPECT_EQ(s.symbol, gen.symbol(s.locate - 1U));
    });
    EXPECT_EQ(listed, 20U);
}

} // namespace
