// mdp3_generator: its packets decode, every book entry fits, and a channel fed them holds the
// generator's books — from the start, and after a late join through the generator's snapshot
// loop; sorted sides (bids falling, offers rising).
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cme/mdp3_channel.hpp>
#include <signet/publisher/cme/mdp3_generator.hpp>

namespace {

namespace m3 = signet::md::cme;
using signet::publisher::cme::mdp3_generator;

void expect_generator_books(m3::mdp3_channel const& c, mdp3_generator const& g) {
    for (std::size_t i = 0; i < g.instruments(); ++i) {
        m3::mdp3_instrument const* got = c.find(g.security_id(i));
        ASSERT_NE(got, nullptr);
        EXPECT_FALSE(got->stale);
        EXPECT_EQ(got->rpt_seq, g.rpt_seq(i));
        auto const& want = g.book(i);
        EXPECT_EQ(
            std::vector<m3::mdp3_price_level>(got->book.bids().begin(), got->book.bids().end()),
            std::vector<m3::mdp3_price_level>(want.bids().begin(), want.bids().end()));
        EXPECT_EQ(
            std::vector<m3::mdp3_price_level>(got->book.offers().begin(), got->book.offers().end()),
            std::vector<m3::mdp3_price_level>(want.offers().begin(), want.offers().end()));
        for (std::size_t l = 1; l < want.bids().size(); ++l) {
            EXPECT_GT(want.bids()[l - 1].price, want.bids()[l].price);
        }
        for (std::size_t l = 1; l < want.offers().size(); ++l) {
            EXPECT_LT(want.offers()[l - 1].price, want.offers()[l].price);
        }
        // Market by order: the same live orders.
        EXPECT_FALSE(got->orders_stale);
        ASSERT_EQ(got->orders.size(), g.orders(i).size()) << i;
        for (auto const& o : g.orders(i)) {
            m3::mdp3_order const* found = got->orders.find(o.id);
            ASSERT_NE(found, nullptr) << o.id;
            EXPECT_EQ(*found, o.order) << o.id;
        }
    }
}

void define(m3::mdp3_channel& c, mdp3_generator const& g) {
    std::vector<std::byte> buffer(mdp3_generator::max_packet);
    for (std::size_t i = 0; i < g.instruments(); ++i) {
        std::size_t const n = g.definition(buffer, i, static_cast<std::uint32_t>(i + 1));
        ASSERT_GT(n, 0U);
        c.on_definition(std::span(buffer).first(n), 0);
    }
}

TEST(Mdp3Generator, AChannelFromTheStartHoldsItsBooks) {
    mdp3_generator g({.seed = 3, .instruments = 5, .depth = 10});
    m3::mdp3_channel c;
    define(c, g);
    ASSERT_EQ(c.instrument_count(), 5U);
    EXPECT_EQ(c.find(g.security_id(0))->book.depth(), 10U);
    std::vector<std::byte> buffer(mdp3_generator::max_packet);
    for (int k = 0; k < 20'000; ++k) {
        std::size_t const n = g.next_incremental(buffer);
        ASSERT_GT(n, 0U);
        c.on_incremental(std::span(buffer).first(n), 0);
    }
    EXPECT_EQ(c.stats().inconsistent_updates, 0U);
    EXPECT_EQ(c.stats().rpt_seq_gaps, 0U);
    EXPECT_EQ(c.stats().malformed_messages + c.stats().malformed_packets, 0U);
    EXPECT_EQ(c.stats().book_entries, g.book_entries());
    EXPECT_EQ(c.stats().order_entries, g.order_entries());
    EXPECT_GT(g.order_entries(), 0U);
    EXPECT_GT(g.trades(), 0U);
    EXPECT_FALSE(c.recovering());
    expect_generator_books(c, g);
}

TEST(Mdp3Generator, ALateJoinerRecoversThroughItsSnapshotLoop) {
    mdp3_generator g({.seed = 4, .instruments = 3, .depth = 5, .max_orders = 100});
    std::vector<std::byte> buffer(mdp3_generator::max_packet);
    for (int k = 0; k < 5'000; ++k) { // before the receiver starts
        (void)g.next_incremental(buffer);
    }
    m3::mdp3_channel c;
    define(c, g);
    for (int k = 0; k < 100; ++k) {
        std::size_t const n = g.next_incremental(buffer);
        c.on_incremental(std::span(buffer).first(n), 0);
    }
    ASSERT_TRUE(c.recovering());
    ASSERT_GT(g.order_chunks(0), 1U); // books of several chunks
    std::uint32_t loop_sequence = 0;
    for (std::size_t i = 0; i < g.instruments(); ++i) { // one loop: 52, then the 53 chunks
        std::size_t const n = g.snapshot(buffer, i, ++loop_sequence);
        c.on_snapshot(std::span(buffer).first(n), 0);
        for (std::uint32_t chunk = 1; chunk <= g.order_chunks(i); ++chunk) {
            std::size_t const m = g.order_snapshot(buffer, i, chunk, ++loop_sequence);
            ASSERT_GT(m, 0U);
            c.on_snapshot(std::span(buffer).first(m), 0);
        }
        // The stream goes on between the loop's packets.
        std::size_t const m = g.next_incremental(buffer);
        c.on_incremental(std::span(buffer).first(m), 0);
    }
    EXPECT_FALSE(c.recovering());
    for (int k = 0; k < 1'000; ++k) {
        std::size_t const n = g.next_incremental(buffer);
        c.on_incremental(std::span(buffer).first(n), 0);
    }
    expect_generator_books(c, g);
}

TEST(Mdp3Generator, OrdersPastTheBudgetAreCountedAndTheInstrumentRecoveredWhenThereIsRoom) {
    // 3 instruments of up to 100 live orders each, a channel with room for 150 order slots:
    // books that outgrow it are counted and stale (their orders wait for the loop), and a
    // loop whose books do not fit either leaves them stale; the by-price books stay right.
    mdp3_generator g({.seed = 6, .instruments = 3, .depth = 5, .max_orders = 100});
    m3::mdp3_channel c({.max_orders = 150});
    define(c, g);
    std::vector<std::byte> buffer(mdp3_generator::max_packet);
    for (int k = 0; k < 5'000; ++k) {
        std::size_t const n = g.next_incremental(buffer);
        c.on_incremental(std::span(buffer).first(n), 0);
    }
    EXPECT_GT(c.stats().order_budget_full, 0U);
    EXPECT_TRUE(c.recovering());
    std::size_t stale = 0;
    c.for_each_instrument([&](m3::mdp3_instrument const& i) { stale += i.orders_stale ? 1 : 0; });
    EXPECT_GT(stale, 0U);
    std::uint64_t const full_before_loop = c.stats().order_budget_full;
    std::uint32_t loop_sequence = 0;
    for (std::size_t i = 0; i < g.instruments(); ++i) {
        std::size_t const n = g.snapshot(buffer, i, ++loop_sequence);
        c.on_snapshot(std::span(buffer).first(n), 0);
        for (std::uint32_t chunk = 1; chunk <= g.order_chunks(i); ++chunk) {
            std::size_t const m = g.order_snapshot(buffer, i, chunk, ++loop_sequence);
            c.on_snapshot(std::span(buffer).first(m), 0);
        }
    }
    EXPECT_GT(c.stats().order_budget_full, full_before_loop); // the loop's books did not fit
    for (std::size_t i = 0; i < g.instruments(); ++i) {
        m3::mdp3_instrument const* got = c.find(g.security_id(i));
        ASSERT_NE(got, nullptr);
        EXPECT_EQ(got->book.bids().size(), g.book(i).bids().size());
    }
    // The same stream into a channel with room: no order refused, every book right.
    mdp3_generator g2({.seed = 6, .instruments = 3, .depth = 5, .max_orders = 100});
    m3::mdp3_channel roomy({.max_orders = 4096});
    define(roomy, g2);
    for (int k = 0; k < 5'000; ++k) {
        std::size_t const n = g2.next_incremental(buffer);
        roomy.on_incremental(std::span(buffer).first(n), 0);
    }
    EXPECT_EQ(roomy.stats().order_budget_full, 0U);
    expect_generator_books(roomy, g2);
}

} // namespace
