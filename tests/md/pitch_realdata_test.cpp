// Cboe Multicast PITCH against real packets (../shared/realdata/cboe, provenance there; skipped
// when absent): every datagram of Cboe BYX production, the one-packet options captures and
// BATS's own real-time feed capture is one well-formed block whose messages all decode (no
// unknown type); the futures capture's Futures Instrument Definition (0xBB, a type the
// equities book does not know) is skipped by its own length and counted; and BATS's real-time
// unit 1 replays through the shared sequencing into the book with no unknown order reference,
// a gap where the capture starts late, and the book the messages leave behind. Field values are
// the ones an outside decoder (tshark 4.0 with the Open Markets Initiative's PITCH 2.41 Lua
// dissector) reads from the same bytes. The Gap Request Proxy and Spin captures (TCP) drive a
// session_client: their answers are what the capture's requests asked for.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cboe/pitch.hpp>
#include <signet/md/cboe/pitch_book.hpp>
#include <signet/md/cboe/pitch_session.hpp>
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

/// Every message of a capture's datagrams, decoded.
std::vector<cb::message> messages_of(std::string const& path) {
    std::vector<cb::message> out;
    for (auto const& d : signet::test::read_capture(path)) {
        if (cb::validate_block(d.payload)) {
            cb::for_each_message(d.payload, [&](std::span<std::byte const> m) {
                if (auto decoded = cb::decode(m)) {
                    out.push_back(*decoded);
                }
            });
        }
    }
    return out;
}

TEST(PitchRealData, FieldsAsAnOutsideDecoderReadsThem) {
    std::string const realtime = signet::test::realdata("cboe/bats/mcastpitch_realtime_useq.pcap");
    std::string const byx = signet::test::realdata(
        "cboe/omi/Byx.Equities.DepthOfBook.Pitch.v2.41/AddOrderShortMessage.pcap");
    if (realtime.empty() || byx.empty()) {
        GTEST_SKIP() << "no ../shared/realdata/cboe";
    }
    std::vector<cb::message> const rt = messages_of(realtime);
    auto const first = [&](std::vector<cb::message> const& all, std::uint8_t type) {
        for (cb::message const& m : all) {
            if (m.type == type) {
                return m;
            }
        }
        ADD_FAILURE() << "no message of type " << int(type);
        return cb::message{};
    };
    EXPECT_EQ(first(rt, mt::time).time, 76051U);
    cb::message const add = first(rt, mt::add_order_short);
    EXPECT_EQ(add.time_offset, 544822000U);
    EXPECT_EQ(add.order_id, 245620911467925505ULL); // base 36: 1V6HCH000001
    EXPECT_EQ(add.side, 'B');
    EXPECT_EQ(add.quantity, 100U);
    EXPECT_EQ(cb::trimmed(add.symbol), "A");
    EXPECT_EQ(add.price, 200000); // 20.00
    cb::message const along = first(rt, mt::add_order_long);
    EXPECT_EQ(along.order_id, 245620911467925511ULL);
    EXPECT_EQ(along.price, 25); // 0.0025
    cb::message const executed = first(rt, mt::order_executed);
    EXPECT_EQ(executed.order_id, 245620911467925505ULL);
    EXPECT_EQ(executed.execution_id, 146932807681ULL);
    cb::message const modify = first(rt, mt::modify_order_short);
    EXPECT_EQ(modify.quantity, 400U);
    EXPECT_EQ(modify.price, 200500);
    cb::message const trade = first(rt, mt::trade_short);
    EXPECT_EQ(trade.order_id, 245620911467925510ULL);
    EXPECT_EQ(trade.price, 200100);
    EXPECT_EQ(trade.execution_id, 146932807682ULL);
    std::vector<cb::message> const production = messages_of(byx);
    bool sell = false;
    for (cb::message const& m : production) {
        if (m.type == mt::add_order_short && m.side == 'S') {
            sell = true;
            EXPECT_EQ(cb::trimmed(m.symbol), "IWO");
            EXPECT_EQ(m.order_id, 2002657807619050523ULL);
            EXPECT_EQ(m.price, 2352600); // 235.26
        }
    }
    EXPECT_TRUE(sell);
}

/// The TCP payload of a capture (classic pcap, Ethernet, IPv4) from port `from`, in capture
/// order (loopback captures: no loss, no reordering).
std::vector<std::byte> tcp_stream(std::string const& path, std::uint16_t from) {
    std::ifstream in(path, std::ios::binary);
    std::vector<unsigned char> const file((std::istreambuf_iterator<char>(in)), {});
    std::vector<std::byte> out;
    auto const u16 = [&](std::size_t at) {
        return std::uint16_t(file[at] << 8 | file[at + 1]);
    };
    std::size_t at = 24;
    while (at + 16 <= file.size()) {
        std::uint32_t length = 0;
        std::memcpy(&length, &file[at + 8], 4);
        std::size_t const frame = at + 16;
        at = frame + length;
        if (at > file.size() || length < 14 + 20 + 20 || u16(frame + 12) != 0x0800 ||
            file[frame + 23] != 6) {
            continue; // not IPv4 TCP
        }
        std::size_t const ip = frame + 14;
        std::size_t const tcp = ip + (file[ip] & 0x0F) * 4U;
        std::size_t const data = tcp + (file[tcp + 12] >> 4) * 4U;
        std::size_t const end = ip + u16(ip + 2);
        if (u16(tcp) == from && data < end && end <= at) {
            for (std::size_t i = data; i < end; ++i) {
                out.push_back(std::byte{file[i]});
            }
        }
    }
    return out;
}

TEST(PitchRealData, TheCapturedSessionsAnswerTheirRequests) {
    std::string const grp = signet::test::realdata("cboe/bats/mcastpitch_grp_useq.pcap");
    std::string const spin = signet::test::realdata("cboe/bats/mcastpitch_spin_useq.pcap");
    if (grp.empty() || spin.empty()) {
        GTEST_SKIP() << "no ../shared/realdata/cboe";
    }
    // The servers' streams (ports 10503 and 18998), as a logged-in client reads them.
    for (auto const& [path, port] :
         {std::pair{grp, std::uint16_t{10503}}, std::pair{spin, std::uint16_t{18998}}}) {
        std::vector<std::byte> const stream = tcp_stream(path, port);
        ASSERT_FALSE(stream.empty()) << path;
        cb::session_client client({});
        client.start(0);
        std::vector<cb::message> got;
        EXPECT_EQ(client.on_bytes(stream, 0, [&](cb::message const& m) { got.push_back(m); }),
                  stream.size());
        EXPECT_EQ(client.state(), cb::session_state::logged_in) << path;
        if (port == 10503) {
            ASSERT_EQ(got.size(), 1U);
            EXPECT_EQ(got[0].type, mt::gap_response);
            EXPECT_EQ(got[0].unit, 1);
            EXPECT_EQ(got[0].sequence, 14U);
            EXPECT_EQ(got[0].count, 1U);
            EXPECT_EQ(got[0].status, 'A');
        } else {
            std::map<std::uint8_t, int> types;
            for (cb::message const& m : got) {
                ++types[m.type];
                if (m.type != mt::time) {
                    EXPECT_TRUE(m.sequence == 312 ||
                                (m.type == mt::spin_response && m.status == 'S'));
                }
            }
            EXPECT_EQ(types[mt::spin_response], 2); // accepted, then "already in progress"
            EXPECT_EQ(types[mt::spin_finished], 1);
            EXPECT_GE(types[mt::spin_image_available], 1);
        }
    }
}

} // namespace
