// Order book rules, driven by hand-built ITCH 5.0 messages through itch50_parser, plus the
// order table under churn against a reference model.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_order_book.hpp>

#include "md_test_support.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
namespace t = signet::md::test;
using t::view;

class OrderBookTest : public ::testing::Test {
protected:
    void feed(t::bytes const& m) { parser_.on_message(view(m)); }
    [[nodiscard]] top_of_book top(std::uint16_t locate = 1) const {
        return parser_.book().top(locate);
    }
    [[nodiscard]] itch_order_book const& book() const { return parser_.book(); }
    [[nodiscard]] itch50_stats const& stats() const { return parser_.stats(); }
    void TearDown() override { EXPECT_TRUE(book().check_invariants()); }

    itch50_parser parser_{itch_order_book_options{.max_orders = 64, .level_reserve = 4}};
};

TEST_F(OrderBookTest, DirectoryNamesStocksWithTrailingSpacesTrimmed) {
    feed(t::directory(7, "AAPL"));
    feed(t::directory(9, "GOOGLXYZ"));
    EXPECT_EQ(book().symbol(7), "AAPL");
    EXPECT_EQ(book().symbol(9), "GOOGLXYZ");
    EXPECT_TRUE(book().listed(7));
    EXPECT_FALSE(book().listed(8));
    EXPECT_EQ(book().symbol(8), "");
    EXPECT_EQ(book().find_locate("AAPL"), std::optional<std::uint16_t>(7));
    EXPECT_FALSE(book().find_locate("MSFT").has_value());
    feed(t::add(7, 1, 'B', 100, 1'500'000));
    std::vector<stock_view> seen;
    book().for_each_stock([&](stock_view const& s) { seen.push_back(s); });
    ASSERT_EQ(seen.size(), 2U);
    EXPECT_EQ(seen[0].locate, 7);
    EXPECT_EQ(seen[0].symbol, "AAPL");
    EXPECT_EQ(seen[0].orders, 1U);
    EXPECT_EQ(seen[0].top, (top_of_book{1'500'000, 100, 0, 0}));
    EXPECT_EQ(seen[1].symbol, "GOOGLXYZ");
    EXPECT_EQ(seen[1].orders, 0U);
}

TEST_F(OrderBookTest, EmptySideIsZeroPriceZeroShares) {
    EXPECT_EQ(top(), (top_of_book{0, 0, 0, 0}));
    feed(t::add(1, 1, 'S', 300, 101'0000));
    EXPECT_EQ(top(), (top_of_book{0, 0, 101'0000, 300}));
    feed(t::delete_order(1));
    EXPECT_EQ(top(), (top_of_book{0, 0, 0, 0}));
}

TEST_F(OrderBookTest, AddsBuildTopOfBook) {
    feed(t::add(1, 1, 'B', 100, 99'0000));
    feed(t::add(1, 2, 'B', 200, 100'0000));
    feed(t::add_mpid(1, 3, 'B', 50, 100'0000));
    feed(t::add(1, 4, 'S', 300, 102'0000));
    feed(t::add_mpid(1, 5, 'S', 400, 101'0000));
    feed(t::add(2, 6, 'B', 1, 5'0000)); // another stock
    EXPECT_EQ(top(), (top_of_book{100'0000, 250, 101'0000, 400}));
    EXPECT_EQ(top(2), (top_of_book{5'0000, 1, 0, 0}));
    EXPECT_EQ(book().order_count(1), 5U);
    EXPECT_EQ(book().order_count(2), 1U);
    EXPECT_EQ(book().size(), 6U);
    ASSERT_EQ(book().bids(1).size(), 2U);
    EXPECT_EQ(book().bids(1).back().orders, 2U);
    std::optional<order> const o = book().find(5);
    ASSERT_TRUE(o.has_value());
    EXPECT_EQ(o->side, order_side::sell);
    EXPECT_EQ(o->shares, 400U);
    EXPECT_EQ(o->price, 101'0000U);
    EXPECT_EQ(o->locate, 1);
}

TEST_F(OrderBookTest, PartialExecuteReducesShares) {
    feed(t::add(1, 1, 'B', 100, 50'0000));
    feed(t::executed(1, 30));
    EXPECT_EQ(top(), (top_of_book{50'0000, 70, 0, 0}));
    EXPECT_EQ(book().find(1)->shares, 70U);
    EXPECT_EQ(book().order_count(1), 1U);
}

TEST_F(OrderBookTest, CompleteExecuteRemovesOrder) {
    feed(t::add(1, 1, 'B', 100, 50'0000));
    feed(t::add(1, 2, 'B', 10, 49'0000));
    feed(t::executed(1, 60));
    feed(t::executed(1, 40));
    EXPECT_FALSE(book().find(1).has_value());
    EXPECT_EQ(top(), (top_of_book{49'0000, 10, 0, 0}));
    EXPECT_EQ(book().order_count(1), 1U);
    EXPECT_EQ(stats().count('E'), 2U);
}

TEST_F(OrderBookTest, ExecuteWithPriceReducesLikeExecute) {
    feed(t::add(1, 1, 'S', 100, 50'0000));
    feed(t::executed_with_price(1, 25, 49'9000)); // the execution price does not move the order
    EXPECT_EQ(top(), (top_of_book{0, 0, 50'0000, 75}));
    feed(t::executed_with_price(1, 75, 49'9000));
    EXPECT_EQ(top(), (top_of_book{0, 0, 0, 0}));
    EXPECT_EQ(book().size(), 0U);
    EXPECT_EQ(stats().count('C'), 2U);
}

TEST_F(OrderBookTest, CancelReducesAndRemovesAtZero) {
    feed(t::add(1, 1, 'S', 100, 50'0000));
    feed(t::cancel(1, 40));
    EXPECT_EQ(book().find(1)->shares, 60U);
    EXPECT_EQ(top().ask_shares, 60U);
    feed(t::cancel(1, 60));
    EXPECT_FALSE(book().find(1).has_value());
    EXPECT_EQ(book().order_count(1), 0U);
}

TEST_F(OrderBookTest, OverCancelAndOverExecuteClampAtZero) {
    feed(t::add(1, 1, 'B', 100, 50'0000));
    feed(t::add(1, 2, 'B', 100, 50'0000));
    feed(t::cancel(1, 1'000'000));
    EXPECT_FALSE(book().find(1).has_value());
    EXPECT_EQ(top(), (top_of_book{50'0000, 100, 0, 0})) << "the other order's shares stay";
    feed(t::executed(2, 0xFFFFFFFF));
    EXPECT_EQ(top(), (top_of_book{0, 0, 0, 0}));
    EXPECT_EQ(stats().unknown_order_refs, 0U);
}

TEST_F(OrderBookTest, DeleteRemovesOrder) {
    feed(t::add(1, 1, 'B', 100, 50'0000));
    feed(t::add(1, 2, 'B', 100, 50'0000));
    feed(t::delete_order(1));
    EXPECT_EQ(top(), (top_of_book{50'0000, 100, 0, 0}));
    EXPECT_EQ(book().order_count(1), 1U);
    EXPECT_FALSE(book().find(1).has_value());
    EXPECT_TRUE(book().find(2).has_value());
}

TEST_F(OrderBookTest, ReplaceKeepsSideAndStock) {
    feed(t::add(3, 10, 'S', 100, 60'0000));
    feed(t::add(3, 11, 'S', 100, 61'0000));
    feed(t::replace(10, 20, 250, 62'0000));
    EXPECT_FALSE(book().find(10).has_value());
    std::optional<order> const o = book().find(20);
    ASSERT_TRUE(o.has_value());
    EXPECT_EQ(o->side, order_side::sell);
    EXPECT_EQ(o->locate, 3);
    EXPECT_EQ(o->shares, 250U);
    EXPECT_EQ(o->price, 62'0000U);
    EXPECT_EQ(top(3), (top_of_book{0, 0, 61'0000, 100}));
    EXPECT_EQ(book().order_count(3), 2U);
    EXPECT_EQ(stats().count('U'), 1U);
}

TEST_F(OrderBookTest, BestBidAndAskAfterRemovals) {
    feed(t::add(1, 1, 'B', 100, 10'0000));
    feed(t::add(1, 2, 'B', 200, 10'0100));
    feed(t::add(1, 3, 'B', 300, 10'0200));
    feed(t::add(1, 4, 'S', 400, 10'0500));
    feed(t::add(1, 5, 'S', 500, 10'0400));
    feed(t::add(1, 6, 'S', 600, 10'0300));
    EXPECT_EQ(top(), (top_of_book{10'0200, 300, 10'0300, 600}));
    feed(t::delete_order(3));
    feed(t::executed(6, 600));
    EXPECT_EQ(top(), (top_of_book{10'0100, 200, 10'0400, 500}));
    feed(t::cancel(2, 200));
    feed(t::replace(5, 7, 50, 10'0600)); // the best ask moves behind the 10.05 level
    EXPECT_EQ(top(), (top_of_book{10'0000, 100, 10'0500, 400}));
    feed(t::delete_order(1));
    feed(t::delete_order(4));
    EXPECT_EQ(top(), (top_of_book{0, 0, 10'0600, 50}));
}

TEST_F(OrderBookTest, UnknownOrderRefsAreCounted) {
    feed(t::add(1, 1, 'B', 100, 10'0000));
    feed(t::executed(99, 1));
    feed(t::executed_with_price(99, 1, 1));
    feed(t::cancel(99, 1));
    feed(t::delete_order(99));
    feed(t::replace(99, 100, 1, 1));
    EXPECT_EQ(stats().unknown_order_refs, 5U);
    EXPECT_EQ(stats().messages, 6U) << "unknown refs are still decoded messages";
    EXPECT_EQ(top(), (top_of_book{10'0000, 100, 0, 0}));
    EXPECT_FALSE(book().find(100).has_value());
}

TEST_F(OrderBookTest, DuplicateRefsAreCounted) {
    feed(t::add(1, 1, 'B', 100, 10'0000));
    feed(t::add(1, 1, 'S', 5, 11'0000));
    feed(t::add(1, 2, 'B', 7, 9'0000));
    feed(t::replace(1, 2, 50, 10'0000)); // the new ref is live: original removed, not re-added
    EXPECT_EQ(stats().duplicate_order_refs, 2U);
    EXPECT_EQ(top(), (top_of_book{9'0000, 7, 0, 0}));
    EXPECT_EQ(book().size(), 1U);
}

TEST_F(OrderBookTest, TradesDoNotChangeTheBook) {
    feed(t::add(1, 1, 'B', 100, 10'0000));
    feed(t::trade(1, 1, 'B', 100, 10'0000));
    t::bytes cross = t::itch_message('Q', 40);
    feed(cross);
    t::bytes broken = t::itch_message('B', 19);
    feed(broken);
    EXPECT_EQ(top(), (top_of_book{10'0000, 100, 0, 0}));
    EXPECT_EQ(stats().count('P') + stats().count('Q') + stats().count('B'), 3U);
    EXPECT_EQ(stats().unknown_order_refs, 0U);
}

TEST(OrderBook, FullBookDropsAndCounts) {
    itch50_parser parser({.max_orders = 2});
    parser.on_message(view(t::add(1, 1, 'B', 100, 10'0000)));
    parser.on_message(view(t::add(1, 2, 'B', 100, 10'0000)));
    parser.on_message(view(t::add(1, 3, 'S', 100, 11'0000)));
    EXPECT_EQ(parser.stats().book_full_drops, 1U);
    EXPECT_EQ(parser.book().top(1), (top_of_book{10'0000, 200, 0, 0}));
    EXPECT_FALSE(parser.book().find(3).has_value());
    parser.on_message(view(t::delete_order(3))); // the dropped order is unknown later
    EXPECT_EQ(parser.stats().unknown_order_refs, 1U);
    parser.on_message(view(t::delete_order(1)));
    parser.on_message(view(t::add(1, 3, 'S', 100, 11'0000)));
    EXPECT_EQ(parser.stats().book_full_drops, 1U);
    EXPECT_EQ(parser.book().top(1), (top_of_book{10'0000, 100, 11'0000, 100}));
    parser.on_message(view(t::replace(2, 4, 1, 9'0000))); // a replace frees its own slot
    EXPECT_EQ(parser.stats().book_full_drops, 1U);
    EXPECT_EQ(parser.book().size(), 2U);
    EXPECT_TRUE(parser.book().check_invariants());
}

TEST(OrderBook, RejectsBadCapacity) {
    EXPECT_THROW(itch_order_book({.max_orders = 0}), std::invalid_argument);
    EXPECT_THROW(itch_order_book({.max_orders = (std::size_t{1} << 31) + 1}),
                 std::invalid_argument);
}

// Change tracking, after each writer: with depths every level it changed; without, only what
// may have moved a side's best (a level at depth 0, or one that stays, of unknown depth).
TEST(OrderBook, TrackingWithoutDepthsRecordsOnlyWhatMayMoveTheBest) {
    struct seen {
        std::uint32_t price;
        std::uint32_t depth;
        std::uint32_t orders;
        bool operator==(seen const&) const = default;
    };
    auto const changes = [](itch_order_book const& book) {
        std::vector<seen> out;
        for (level_change const& c : book.changes()) {
            out.push_back({c.price, c.depth, c.orders});
        }
        return out;
    };
    constexpr std::uint32_t unknown = level_change::unknown_depth;
    for (bool const depth : {true, false}) {
        SCOPED_TRACE(depth ? "with depths" : "without depths");
        auto const with_depths_only = [&](std::vector<seen> v) {
            return depth ? v : std::vector<seen>{};
        };
        itch_order_book book({.max_orders = 16});
        book.track_changes(true, depth);
        ASSERT_EQ(book.add(1, 1, order_side::buy, 100, 10'0000), book_result::ok);
        EXPECT_EQ(changes(book), (std::vector<seen>{{10'0000, 0, 1}})); // a new best
        ASSERT_EQ(book.add(1, 2, order_side::buy, 100, 9'0000), book_result::ok);
        EXPECT_EQ(changes(book), with_depths_only({{9'0000, 1, 1}}));
        ASSERT_EQ(book.add(1, 3, order_side::buy, 50, 9'0000), book_result::ok); // grows depth 1
        EXPECT_EQ(changes(book), with_depths_only({{9'0000, 1, 2}}));
        ASSERT_EQ(book.add(1, 4, order_side::buy, 50, 10'0000), book_result::ok); // grows the best
        EXPECT_EQ(changes(book), (std::vector<seen>{{10'0000, 0, 2}}));
        ASSERT_EQ(book.reduce(3, 10), book_result::ok); // stays: its depth is known with depths
        EXPECT_EQ(changes(book), (std::vector<seen>{{9'0000, depth ? 1 : unknown, 2}}));
        ASSERT_EQ(book.remove(3), book_result::ok); // leaves an order: the level stays
        EXPECT_EQ(changes(book), (std::vector<seen>{{9'0000, depth ? 1 : unknown, 1}}));
        ASSERT_EQ(book.remove(2), book_result::ok); // the level below the best leaves
        EXPECT_EQ(changes(book), with_depths_only({{9'0000, 1, 0}}));
        ASSERT_EQ(book.replace(4, 5, 100, 8'0000), book_result::ok); // best stays; depth 1 new
        EXPECT_EQ(changes(book), depth ? (std::vector<seen>{{10'0000, 0, 1}, {8'0000, 1, 1}})
                                       : (std::vector<seen>{{10'0000, unknown, 1}}));
        ASSERT_EQ(book.remove(1), book_result::ok); // the best leaves: the next is named
        ASSERT_EQ(book.changes().size(), 1U);
        EXPECT_EQ(book.changes()[0].depth, 0U);
        EXPECT_EQ(book.changes()[0].orders, 0U);
        EXPECT_EQ(book.changes()[0].next_best_price, 8'0000U);
        EXPECT_EQ(book.changes()[0].next_best_shares, 100U);
        EXPECT_TRUE(book.check_invariants());
    }
}

// The hash table's backward-shift deletion and the levels under churn, against std::map.
TEST(OrderBook, ChurnMatchesReferenceModel) {
    std::uint64_t const seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    itch_order_book book({.max_orders = 512, .level_reserve = 2});
    std::map<std::uint64_t, order> model;
    std::uint64_t next_ref = 1;
    for (int step = 0; step < 20'000; ++step) {
        std::uint64_t const op = rng() % 4;
        if (op == 0 || model.empty()) {
            // Refs that collide in the table: multiples of a large power of two, plus fresh ones.
            std::uint64_t const ref = (rng() % 2 == 0) ? next_ref++ : (rng() % 4096) << 20;
            auto const locate = static_cast<std::uint16_t>(rng() % 3);
            order_side const side = rng() % 2 == 0 ? order_side::buy : order_side::sell;
            auto const shares = static_cast<std::uint32_t>(rng() % 300);
            auto const price = static_cast<std::uint32_t>(1 + rng() % 20);
            book_result const r = book.add(locate, ref, side, shares, price);
            if (model.contains(ref)) {
                EXPECT_EQ(r, book_result::duplicate_order);
            } else if (model.size() == 512) {
                EXPECT_EQ(r, book_result::book_full);
            } else {
                EXPECT_EQ(r, book_result::ok);
                model[ref] = order{ref, locate, side, shares, price};
            }
            continue;
        }
        auto it = model.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng() % model.size()));
        std::uint64_t const ref = it->first;
        if (op == 1) {
            auto const cut = static_cast<std::uint32_t>(rng() % 200);
            EXPECT_EQ(book.reduce(ref, cut), book_result::ok);
            it->second.shares -= std::min(cut, it->second.shares);
            if (it->second.shares == 0) {
                model.erase(it);
            }
        } else if (op == 2) {
            EXPECT_EQ(book.remove(ref), book_result::ok);
            model.erase(it);
        } else {
            std::uint64_t const new_ref = next_ref++;
            order const old = it->second;
            EXPECT_EQ(book.replace(ref, new_ref, 10, 7), book_result::ok);
            model.erase(it);
            model[new_ref] = order{new_ref, old.locate, old.side, 10, 7};
        }
        if (step % 1000 == 0) {
            ASSERT_TRUE(book.check_invariants()) << "step " << step;
        }
    }
    ASSERT_TRUE(book.check_invariants());
    ASSERT_EQ(book.size(), model.size());
    for (auto const& [ref, o] : model) {
        std::optional<order> const got = book.find(ref);
        ASSERT_TRUE(got.has_value()) << ref;
        EXPECT_EQ(got->shares, o.shares);
        EXPECT_EQ(got->price, o.price);
        EXPECT_EQ(got->side, o.side);
        EXPECT_EQ(got->locate, o.locate);
    }
    EXPECT_FALSE(book.find(0xFFFFFFFFFFFFFFFFULL).has_value());
}

} // namespace
