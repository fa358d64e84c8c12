// Cboe Multicast PITCH against real packets (../shared/realdata/cboe, provenance there; skipped
// when absent): every datagram of Cboe BYX production, the one-packet options captures and
// BATS's own real-time feed capture is one well-formed block whose messages all decode (no
// unknown type); the futures capture's Futures Instrument Definition (0xBB, a type the
// equities book does not know) is skipped by its own length and counted; and BATS's real-time
// unit 1 replays through the shared sequencing into the book with no unknown order reference,
// a gap where the capture starts late, and the book the messages leave behind.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cboe/pitch.hpp>
#include <signet/md/cboe/pitch_book.hpp>
#include <signet/md/sequence_tracker.hpp>

#include "support/realdata.hpp"

namespace {

namespace cb = signet::md::cboe;
namespace mt = cb::message_type;

/// Message counts by type over every datagram of a capture; fails on a block that does not
/// validate or a known message that does not decode.
std::map<std::uint8_t, int> type_counts(std::string const& path, int& unknown, int& blocks) {
    std::map<std::uint8_t, int> counts;
    for (auto const& d : signet::test::read_capture(path)) {
        std::optional<cb::block_check> const check = cb::validate_block(d.payload);
        EXPECT_TRUE(check.has_value()) << path;
        if (!check) {
            continue;
        }
        ++blocks;
        unknown += check->unknown;
        cb::for_each_message(d.payload, [&](std::span<std::byte const> m) {
            auto const type = static_cast<std::uint8_t>(m[1]);
            if (cb::layout_length(type) != 0) {
                EXPECT_TRUE(cb::decode(m).has_value()) << path << " type " << int(type);
                ++counts[type];
            }
        });
    }
    return counts;
}

TEST(PitchRealData, ByxProductionPacketsDecode) {
    std::string const dir = signet::test::realdata("cboe/omi/Byx.Equities.DepthOfBook.Pitch.v2.41");
    if (dir.empty()) {
        GTEST_SKIP() << "no ../shared/realdata/cboe";
    }
    int unknown = 0;
    int blocks = 0;
    auto const adds = type_counts(dir + "/AddOrderShortMessage.pcap", unknown, blocks);
    EXPECT_EQ(blocks, 5);
    EXPECT_EQ(adds, (std::map<std::uint8_t, int>{{mt::time, 2}, {mt::add_order_short, 7}}));
    auto const modify = type_counts(dir + "/ModifyOrderShortMessage.pcap", unknown, blocks);
    EXPECT_EQ(modify, (std::map<std::uint8_t, int>{{mt::modify_order_short, 1}}));
    auto const multiple = type_counts(dir + "/MultipleMessages.pcap", unknown, blocks);
    EXPECT_EQ(multiple, (std::map<std::uint8_t, int>{{mt::time, 1}, {mt::add_order_short, 2}}));
    EXPECT_EQ(unknown, 0);
}

TEST(PitchRealData, OptionsAndFuturesCapturesFrame) {
    std::string const options =
        signet::test::realdata("cboe/omi/Options.DepthOfBook.Pitch.v2.39.4");
    std::string const futures = signet::test::realdata(
        "cboe/omi/Futures.DepthOfBook.Pitch.v1.1.12/FutureInstrumentDefinitionMessage.pcap");
    if (options.empty() || futures.empty()) {
        GTEST_SKIP() << "no ../shared/realdata/cboe";
    }
    int unknown = 0;
    int blocks = 0;
    for (char const* file : {"AddOrderLongMessage.pcap", "DeleteOrderMessage.pcap",
                             "Heartbeat.pcap", "ModifyOrderLongMessage.pcap"}) {
        (void)type_counts(options + "/" + file, unknown, blocks);
    }
    EXPECT_EQ(blocks, 4);
    EXPECT_EQ(unknown, 0);
    auto const definition = type_counts(futures, unknown, blocks);
    EXPECT_TRUE(definition.empty());
    EXPECT_EQ(unknown, 1); // 0xBB Futures Instrument Definition, 65 bytes, skipped
}

TEST(PitchRealData, BatsRealtimeUnitReplaysIntoTheBook) {
    std::string const path = signet::test::realdata("cboe/bats/mcastpitch_realtime_useq.pcap");
    if (path.empty()) {
        GTEST_SKIP() << "no ../shared/realdata/cboe";
    }
    int unknown = 0;
    int blocks = 0;
    auto const counts = type_counts(path, unknown, blocks);
    EXPECT_EQ(blocks, 739);
    EXPECT_EQ(unknown, 0);
    EXPECT_EQ(counts, (std::map<std::uint8_t, int>{{mt::time, 19},
                                                   {mt::add_order_long, 4},
                                                   {mt::add_order_short, 3},
                                                   {mt::order_executed, 3},
                                                   {mt::reduce_size_short, 2},
                                                   {mt::modify_order_long, 1},
                                                   {mt::modify_order_short, 1},
                                                   {mt::delete_order, 4},
                                                   {mt::trade_long, 2},
                                                   {mt::trade_short, 1}}));

    // The real-time group (239.39.62.190): unit 1 from sequence 1.
    constexpr std::uint32_t realtime_group = 0xEF273EBE;
    signet::md::sequence_tracker tracker(1);
    cb::pitch_book book;
    bool first_checked = false;
    for (auto const& d : signet::test::read_capture(path)) {
        if (d.destination_address != realtime_group) {
            continue;
        }
        std::optional<cb::block_check> const check = cb::validate_block(d.payload);
        ASSERT_TRUE(check.has_value());
        signet::md::sequence_step const step =
            tracker.track(check->header.sequence, check->header.count);
        ASSERT_FALSE(step.ignored);
        book.apply_block(d.payload, step.skip, 0);
        if (!first_checked && check->header.count != 0) {
            first_checked = true; // Time, then a buy of 100 A at 20.00
            std::optional<std::uint32_t> const a = book.find(cb::make_symbol("A"));
            ASSERT_TRUE(a.has_value());
            EXPECT_EQ(book.top(*a).bid_price, 200000U);
            EXPECT_EQ(book.top(*a).bid_shares, 100U);
        }
    }
    // The capture starts at sequence 3: 1 and 2 are missing, nothing after.
    EXPECT_EQ(tracker.stats().gaps, 1U);
    EXPECT_EQ(tracker.stats().missing, 2U);
    EXPECT_EQ(tracker.next(), 43U);
    cb::pitch_book_stats const& s = book.stats();
    EXPECT_EQ(s.unknown_orders, 0U);
    EXPECT_EQ(s.adds, 7U);
    EXPECT_EQ(s.executions, 3U);
    EXPECT_EQ(s.reductions, 2U);
    EXPECT_EQ(s.modifies, 2U);
    EXPECT_EQ(s.deletes, 4U);
    EXPECT_EQ(s.trades, 3U);
    EXPECT_EQ(book.instrument_count(), 1U);
    EXPECT_EQ(book.orders().size(), 0U); // every order added was executed, reduced or deleted
    EXPECT_EQ(book.instrument(0)->volume, 300U + 400U);
}

} // namespace
