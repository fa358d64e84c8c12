#include <gtest/gtest.h>

#include <signet/md/sequence_tracker.hpp>

namespace {

using signet::md::locate;
using signet::md::sequence_tracker;
using signet::md::sequence_tracker_options;
using signet::md::sequence_unit;
using signet::md::stream_key;

stream_key key(char c) {
    stream_key k{};
    k.fill(c);
    return k;
}

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
    EXPECT_EQ(t.stats().late_start, 999U); // 1..999 came before it: not a gap
    EXPECT_EQ(t.stats().gaps, 0U);
}

// The guard, for a protocol without a stream key (MDP 3.0: one unit per packet).
TEST(SequenceTracker, AFarAheadUnitIsIgnoredAndCountedAndTheStreamGoesOn) {
    sequence_tracker t(sequence_tracker_options{.first_sequence = 1, .max_jump = 1000});
    for (std::uint64_t q = 1; q <= 10; ++q) {
        EXPECT_EQ(t.track(q, 1).fresh, 1U);
    }
    EXPECT_FALSE(t.plausible(1'000'010));
    auto const forged = t.track(1'000'010, 1);
    EXPECT_TRUE(forged.ignored);
    EXPECT_FALSE(forged.foreign);
    EXPECT_EQ(t.next(), 11U);
    for (std::uint64_t q = 11; q <= 20; ++q) {
        auto const step = t.track(q, 1);
        EXPECT_FALSE(step.ignored);
        EXPECT_EQ(step.fresh, 1U);
    }
    EXPECT_EQ(t.stats().implausible, 1U);
    EXPECT_EQ(t.stats().gaps, 0U);
    EXPECT_EQ(t.stats().duplicates, 0U);
    EXPECT_EQ(t.stats().items, 20U);
}

TEST(SequenceTracker, AContiguousRunOfFarUnitsProvesTheStreamMoved) {
    sequence_tracker t(
        sequence_tracker_options{.first_sequence = 1, .max_jump = 100, .resync_units = 3});
    t.track(1, 5); // next 6
    EXPECT_TRUE(t.track(5000, 2).ignored);
    EXPECT_TRUE(t.track(5002, 2).ignored);
    auto const third = t.track(5004, 2); // the run: the anchor moves to 5000
    EXPECT_TRUE(third.resynced);
    EXPECT_FALSE(third.ignored);
    EXPECT_EQ(third.missing, 4U); // 5000..5003 were ignored: missing now
    EXPECT_EQ(t.next(), 5006U);
    EXPECT_EQ(t.stats().resyncs, 1U);
    EXPECT_EQ(t.stats().gaps, 2U); // the jump 6..4999, then the run's first two units
}

TEST(SequenceTracker, AForgedFirstUnitOfALateJoinIsReplacedByTheRealStream) {
    sequence_tracker t(
        sequence_tracker_options{.first_sequence = sequence_tracker::late_join, .max_jump = 100});
    EXPECT_EQ(t.track(9'000'000, 1).fresh, 1U); // cannot be told apart yet
    auto const real = t.track(500, 1);          // contradicts it, plausible before it
    EXPECT_TRUE(real.resynced);
    EXPECT_EQ(real.fresh, 1U);
    EXPECT_EQ(t.next(), 501U);
    EXPECT_EQ(t.track(501, 1).fresh, 1U); // confirmed
    EXPECT_TRUE(t.track(9'000'001, 1).ignored);
    EXPECT_EQ(t.stats().late_start, 499U);
}

TEST(SequenceTracker, AnotherKeyIsForeignAndAPinnedKeyNeverMoves) {
    sequence_tracker t(sequence_tracker_options{.max_jump = 100, .key = key('A')});
    t.track({1, 1, key('A'), false});
    for (std::uint64_t q = 2; q <= 6; ++q) { // a contiguous run, but of another key
        auto const step = t.track({q, 1, key('B'), false});
        EXPECT_TRUE(step.ignored);
        EXPECT_TRUE(step.foreign);
    }
    EXPECT_EQ(t.stats().foreign, 5U);
    EXPECT_EQ(t.stats().resyncs, 0U);
    EXPECT_EQ(t.track({2, 1, key('A'), false}).fresh, 1U);
}

TEST(SequenceTracker, AHeartbeatAheadRevealsAGapAndAnEndOfStreamLetsTheNextStreamStartAnywhere) {
    sequence_tracker t(sequence_tracker_options{.max_jump = 100});
    t.track({1, 3, key('A'), false});
    auto const heartbeat = t.track({10, 0, key('A'), false});
    EXPECT_EQ(heartbeat.missing, 6U);
    EXPECT_EQ(t.next(), 10U);
    EXPECT_EQ(t.stats().heartbeats, 1U);
    t.track({10, 0, key('A'), true});
    EXPECT_TRUE(t.stats().end_of_stream);
    auto const next_stream = t.track({1, 2, key('B'), false}); // tomorrow's session
    EXPECT_TRUE(next_stream.resynced);
    EXPECT_EQ(next_stream.fresh, 2U);
    EXPECT_EQ(t.key(), key('B'));
}

} // namespace
