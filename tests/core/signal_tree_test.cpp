#include <algorithm>
#include <cstddef>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/signal_tree.hpp>

namespace {

using signet::lane;
using signet::signal_tree;

std::vector<std::size_t> drain(signal_tree& tree, std::size_t bias = 0) {
    std::vector<std::size_t> out;
    for (std::size_t s = tree.select(bias); s != signal_tree::npos; s = tree.select(bias)) {
        out.push_back(s);
    }
    return out;
}

TEST(SignalTree, CapacityRoundsUpToWholeLeaves) {
    EXPECT_EQ(signal_tree(1).capacity(), 64U);
    EXPECT_EQ(signal_tree(64).capacity(), 64U);
    EXPECT_EQ(signal_tree(65).capacity(), 128U);
    EXPECT_EQ(signal_tree(512).capacity(), 512U);
    EXPECT_EQ(signal_tree(100'000).capacity(), 100'032U);
}

TEST(SignalTree, InvalidCapacityThrows) {
    EXPECT_THROW(signal_tree(0), std::invalid_argument);
    EXPECT_THROW(signal_tree(signal_tree::max_capacity + 1), std::invalid_argument);
}

TEST(SignalTree, EmptyTreeSelectsNothing) {
    signal_tree tree(512);
    EXPECT_TRUE(tree.empty());
    EXPECT_EQ(tree.select(0), signal_tree::npos);
    EXPECT_EQ(tree.select(300), signal_tree::npos);
}

TEST(SignalTree, SetReportsOnlyNewSignals) {
    signal_tree tree(128);
    EXPECT_TRUE(tree.set(70));
    EXPECT_FALSE(tree.set(70)); // coalesced
    EXPECT_FALSE(tree.empty());
    EXPECT_TRUE(tree.test(70));
    EXPECT_EQ(tree.select(0), 70U);
    EXPECT_FALSE(tree.test(70));
    EXPECT_EQ(tree.select(0), signal_tree::npos);
    EXPECT_TRUE(tree.empty());
    EXPECT_TRUE(tree.set(70)); // new again after selection
}

// Every shape of tree: leaf only, 8-ary, 4-ary (16-bit counters) and 2-ary (32-bit) levels,
// and capacities that leave part of the top node unused.
class SignalTreeShapes : public ::testing::TestWithParam<std::size_t> {};

TEST_P(SignalTreeShapes, SelectReturnsEverySetSlotExactlyOnce) {
    signal_tree tree(GetParam());
    std::mt19937_64 rng(GetParam());
    std::set<std::size_t> expected;
    for (int i = 0; i < 3000; ++i) {
        std::size_t const s = rng() % tree.capacity();
        EXPECT_EQ(tree.set(s), expected.insert(s).second) << "slot " << s;
    }
    expected.insert(tree.capacity() - 1);
    tree.set(tree.capacity() - 1);
    std::size_t const bias = rng() % tree.capacity();
    auto got = drain(tree, bias);
    std::set<std::size_t> const unique(got.begin(), got.end());
    EXPECT_EQ(got.size(), unique.size()) << "a slot was selected twice";
    EXPECT_EQ(unique, expected);
    EXPECT_TRUE(tree.empty());
}

INSTANTIATE_TEST_SUITE_P(Capacities, SignalTreeShapes,
                         ::testing::Values(64, 200, 512, 600, 2048, 8192, 40'000, 1 << 20));

TEST(SignalTree, BiasPicksFirstSetSlotAtOrAfterItCyclically) {
    signal_tree tree(512);
    for (std::size_t s : {3U, 10U, 200U}) {
        tree.set(s);
    }
    EXPECT_EQ(tree.select(4), 10U);   // at or after the bias
    EXPECT_EQ(tree.select(11), 200U); // nothing after the bias in its leaf: the next leaf on
    EXPECT_EQ(tree.select(201), 3U);  // wraps around the whole tree
    EXPECT_EQ(tree.select(0), signal_tree::npos);
}

TEST(SignalTree, CyclicOrderCrossesSummaryWords) {
    signal_tree tree(1 << 16); // 1024 leaves: two summary levels
    for (std::size_t s : {5U, 4096U + 7U, 60'000U}) {
        tree.set(s);
    }
    EXPECT_EQ(tree.select(6), 4096U + 7U); // skips the rest of leaf 0 and of summary word 0
    EXPECT_EQ(tree.select(4104), 60'000U);
    EXPECT_EQ(tree.select(60'001), 5U);
    EXPECT_TRUE(tree.select(0) == signal_tree::npos && tree.empty());
}

TEST(SignalTree, BiasWrapsAroundTheWholeTree) {
    signal_tree tree(2048);
    tree.set(5);
    tree.set(1500);
    // Nothing set in the top-level quarter holding 1536..2047: cyclic to the first quarter.
    EXPECT_EQ(tree.select(1536), 5U);
    EXPECT_EQ(tree.select(1536), 1500U);
}

TEST(SignalTree, CursorGivesRoundRobinWhenEverythingIsSet) {
    for (std::size_t capacity : {64U, 512U, 4096U}) {
        signal_tree tree(capacity);
        for (std::size_t s = 0; s < capacity; ++s) {
            tree.set(s);
        }
        std::size_t cursor = 0;
        for (std::size_t i = 0; i < 3 * capacity; ++i) {
            std::size_t const s = tree.select(cursor);
            ASSERT_EQ(s, i % capacity) << "capacity " << capacity;
            cursor = s + 1 == capacity ? 0 : s + 1;
            tree.set(s); // re-signal, as a self-rescheduling contract does
        }
    }
}

TEST(SignalTree, LaneIsPreferredWhileItHasSignals) {
    signal_tree tree(512);
    tree.set(5);
    tree.set(300);
    tree.set(310);
    lane const hot{256, 64};
    EXPECT_EQ(tree.select(256, hot), 300U);
    EXPECT_EQ(tree.select(301, hot), 310U);
    EXPECT_EQ(tree.select(311, hot), 5U); // lane empty: falls back to the rest
    EXPECT_EQ(tree.select(256, hot), signal_tree::npos);
}

TEST(SignalTree, LaneSpanningLeavesWrapsInsideTheLaneFirst) {
    signal_tree tree(512);
    lane const hot{128, 128}; // leaves 2 and 3
    tree.set(130);            // leaf 2
    tree.set(260);            // leaf 4, outside the lane, after the cursor
    // Cursor in leaf 3, which is empty: the lane's leaf 2 comes before leaf 4.
    EXPECT_EQ(tree.select(200, hot), 130U);
    EXPECT_EQ(tree.select(200, hot), 260U);
}

TEST(SignalTree, LaneOnDeepTreeFindsItsSlot) {
    signal_tree tree(1 << 20);
    tree.set(1);
    tree.set(700'000);
    lane const hot{700'000 - 64, 1024};
    EXPECT_EQ(tree.select(0, hot), 700'000U);
    EXPECT_EQ(tree.select(0, hot), 1U);
}

TEST(SignalTree, BiasOutsideLaneIsMovedIntoIt) {
    signal_tree tree(512);
    tree.set(64);
    tree.set(70);
    EXPECT_EQ(tree.select(500, lane{64, 64}), 64U);
}

} // namespace
