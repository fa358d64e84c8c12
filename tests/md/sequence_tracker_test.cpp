#include <gtest/gtest.h>

#include <signet/md/sequence_tracker.hpp>

namespace {

using signet::md::locate;
using signet::md::sequence_tracker;

TEST(SequenceTracker, LocateSplitsAUnitIntoMissingSeenAndFresh) {
    auto const in_order = locate(10, 10, 3);
    EXPECT_EQ(in_order.missing, 0U);
    EXPECT_EQ(in_order.skip, 0U);
    EXPECT_EQ(in_order.fresh, 3U);
    auto const gap = locate(10, 15, 2);
    EXPECT_EQ(gap.missing, 5U);
    EXPECT_EQ(gap.fresh, 2U);
    auto const overlap = locate(10, 8, 5); // 8, 9 seen; 10..12 new
    EXPECT_EQ(overlap.skip, 2U);
    EXPECT_EQ(overlap.fresh, 3U);
    auto const duplicate = locate(10, 2, 4);
    EXPECT_EQ(duplicate.skip, 4U);
    EXPECT_EQ(duplicate.fresh, 0U);
}

TEST(SequenceTracker, CountsGapsDuplicatesAndOverlaps) {
    sequence_tracker t;
    t.track(1, 2);                        // 1, 2
    EXPECT_EQ(t.track(5, 1).missing, 2U); // 3, 4 missing
    EXPECT_EQ(t.track(5, 1).fresh, 0U);   // duplicate
    EXPECT_EQ(t.track(6, 2).fresh, 2U);   // 6, 7
    auto const step = t.track(7, 2);      // 7 seen, 8 new
    EXPECT_EQ(step.skip, 1U);
    EXPECT_EQ(step.fresh, 1U);
    EXPECT_EQ(t.next(), 9U);
    auto const& s = t.stats();
    EXPECT_EQ(s.units, 5U);
    EXPECT_EQ(s.items, 6U);
    EXPECT_EQ(s.gaps, 1U);
    EXPECT_EQ(s.missing, 2U);
    EXPECT_EQ(s.duplicates, 1U);
    EXPECT_EQ(s.overlaps, 1U);
}

TEST(SequenceTracker, LateJoinAdoptsTheFirstUnitsSequence) {
    sequence_tracker t(0);
    EXPECT_EQ(t.next(), 0U);
    auto const step = t.track(1000, 4);
    EXPECT_EQ(step.missing, 0U);
    EXPECT_EQ(step.fresh, 4U);
    EXPECT_EQ(t.next(), 1004U);
}

} // namespace
