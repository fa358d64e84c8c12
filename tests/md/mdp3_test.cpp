// MDP 3.0 SBE decoding against packets built byte by byte here, from the layouts in
// docs/mdp3.md (little-endian written by shifting, independently of the library's loads):
// every field of the templates decoded at its offset; schema evolution (longer blocks and
// entries skipped by their own lengths, fields newer than the message's version read as
// null, unknown templates skipped by MsgSize); malformed framing and lying lengths refused.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cme/mdp3.hpp>

#include "mdp3_test_support.hpp"

namespace {

namespace m3 = signet::md::cme;
using namespace signet::md::test::mdp3;

// A packet walked: it owns the packet's bytes, which its messages view (moving it keeps them
// where they are).
struct walked {
    bytes data;
    std::vector<m3::message> messages;
    [[nodiscard]] std::size_t size() const noexcept { return messages.size(); }
    m3::message const& operator[](std::size_t i) const { return messages.at(i); }
};

walked walk(bytes p, m3::packet_walk* result = nullptr) {
    walked out{std::move(p), {}};
    m3::packet_walk const w =
        m3::for_each_message(out.data, [&](m3::message const& m) { out.messages.push_back(m); });
    if (result != nullptr) {
        *result = w;
    }
    return out;
}

TEST(Mdp3, PacketHeaderAndIncrementalBookFieldsAtTheirOffsets) {
    bytes const p = packet(
        77, {message(46, 13, 11, incremental_book_root(),
                     {group(32, {book_entry(4'512'250'000'000, 12, 991, 5001, 3, 1, 0, '0', 7),
                                 book_entry(m3::null_price, m3::null_int32, 991, 5002,
                                            m3::null_int32, 2, 2, '1', m3::null_int32)}),
                      group(24, {sbe{}.u64(123456789012ULL).u64(42).i32(5).u8(1).u8(0).b}, true)}),
             message(12, 13, 0, {})});
    auto const header = m3::read_packet_header(p);
    ASSERT_TRUE(header.has_value());
    EXPECT_EQ(header->sequence, 77U);
    EXPECT_EQ(header->sending_time_ns, 1'700'000'000'123'456'789ULL);
    m3::packet_walk w;
    auto const messages = walk(p, &w);
    EXPECT_FALSE(w.malformed);
    ASSERT_EQ(messages.size(), 2U);
    EXPECT_EQ(messages[1].template_id, m3::template_id::admin_heartbeat);
    EXPECT_TRUE(messages[1].root.empty());
    m3::message const& m = messages[0];
    EXPECT_EQ(m.template_id, m3::template_id::incremental_book);
    EXPECT_EQ(m.schema_id, m3::schema_id);
    EXPECT_EQ(m.version, 13);
    auto const book = m3::decode_incremental_book(m);
    ASSERT_TRUE(book.has_value());
    EXPECT_EQ(book->transact_time, 1'700'000'000'000'000'001ULL);
    EXPECT_EQ(book->match_event_indicator, 0x84);
    ASSERT_EQ(book->entries.size(), 2U);
    m3::book_entry const e = book->entries[0];
    EXPECT_EQ(e.price, 4'512'250'000'000);
    EXPECT_EQ(e.size, 12);
    EXPECT_EQ(e.security_id, 991);
    EXPECT_EQ(e.rpt_seq, 5001U);
    EXPECT_EQ(e.number_of_orders, 3);
    EXPECT_EQ(e.price_level, 1);
    EXPECT_EQ(e.action, m3::update_action::new_level);
    EXPECT_EQ(e.type, m3::entry_type::bid);
    EXPECT_EQ(e.tradeable_size, 7);
    m3::book_entry const d = book->entries[1];
    EXPECT_EQ(d.price, m3::null_price);
    EXPECT_EQ(d.action, m3::update_action::remove);
    EXPECT_EQ(d.type, m3::entry_type::offer);
    ASSERT_EQ(book->orders.size(), 1U);
    m3::order_id_entry const o = book->orders[0];
    EXPECT_EQ(o.order_id, 123456789012ULL);
    EXPECT_EQ(o.priority, 42U);
    EXPECT_EQ(o.display_qty, 5);
    EXPECT_EQ(o.reference_id, 1);
    EXPECT_EQ(o.order_update_action, 0);
}

TEST(Mdp3, OlderVersionsReadNewerFieldsAsNull) {
    bytes const p = packet(1, {message(46, 9, 11, incremental_book_root(),
                                       {group(32, {book_entry(1, 2, 3, 4, 5, 1, 1, '0', 99)})})});
    auto const messages = walk(p);
    ASSERT_EQ(messages.size(), 1U);
    auto const book = m3::decode_incremental_book(messages[0]);
    ASSERT_TRUE(book.has_value());
    EXPECT_EQ(book->entries[0].tradeable_size, m3::null_int32); // since version 10
    EXPECT_TRUE(book->orders.empty()); // a message that ends after the first group
}

TEST(Mdp3, LongerBlocksAndEntriesAreSkippedByTheirOwnLengths) {
    // A root of 20 bytes (9 more than today's) and entries of 40 (8 more): a newer schema.
    bytes const p = packet(1, {message(46, 14, 20, incremental_book_root(),
                                       {group(40, {book_entry(10, 1, 7, 1, 1, 1, 0, '0'),
                                                   book_entry(20, 2, 7, 2, 1, 2, 0, '0')}),
                                        group(24, {}, true)}),
                               message(12, 14, 0, {})});
    auto const messages = walk(p);
    ASSERT_EQ(messages.size(), 2U);
    auto const book = m3::decode_incremental_book(messages[0]);
    ASSERT_TRUE(book.has_value());
    ASSERT_EQ(book->entries.size(), 2U);
    EXPECT_EQ(book->entries[1].price, 20);
    EXPECT_EQ(book->entries[1].price_level, 2);
}

TEST(Mdp3, UnknownTemplatesAndSchemasAreSkippedByMsgSize) {
    bytes unknown = message(99, 13, 5, sbe{}.pad(5).b, {group(4, {sbe{}.u32(1).b})});
    bytes other_schema = message(46, 13, 11, incremental_book_root(), {group(32, {})});
    other_schema[6] = std::byte{2}; // schema id 2
    bytes const p = packet(1, {unknown, other_schema, message(12, 13, 0, {})});
    auto const messages = walk(p);
    ASSERT_EQ(messages.size(), 3U);
    EXPECT_EQ(messages[0].template_id, 99);
    EXPECT_EQ(messages[1].schema_id, 2);
    EXPECT_EQ(messages[2].template_id, m3::template_id::admin_heartbeat);
}

TEST(Mdp3, FramingThatLiesStopsTheWalkWithoutReadingPastThePacket) {
    bytes const good = message(12, 13, 0, {});
    m3::packet_walk w;
    // MsgSize beyond the datagram.
    bytes p = packet(1, {good, message(12, 13, 0, {})});
    p[packet(1, {}).size() + good.size()] = std::byte{200};
    EXPECT_EQ(walk(p, &w).size(), 1U);
    EXPECT_TRUE(w.malformed);
    // MsgSize below the header.
    p = packet(1, {good, sbe{}.u16(4).u16(0).u16(12).u16(1).u16(13).b});
    EXPECT_EQ(walk(p, &w).size(), 1U);
    EXPECT_TRUE(w.malformed);
    // BlockLength beyond MsgSize.
    bytes lying = message(30, 13, 30, {});
    lying[2] = std::byte{200};
    p = packet(1, {lying});
    EXPECT_EQ(walk(p, &w).size(), 0U);
    EXPECT_TRUE(w.malformed);
    // A packet shorter than its header, and one byte of a MsgSize.
    EXPECT_EQ(walk(bytes(11), &w).size(), 0U);
    EXPECT_TRUE(w.malformed);
    p = packet(1, {good});
    p.push_back(std::byte{1});
    EXPECT_EQ(walk(p, &w).size(), 1U);
    EXPECT_TRUE(w.malformed);
}

TEST(Mdp3, ShortBlocksAndLyingGroupCountsAreMalformedMessages) {
    // A root shorter than the fields read.
    auto messages = walk(packet(1, {message(46, 13, 5, incremental_book_root(), {group(32, {})})}));
    ASSERT_EQ(messages.size(), 1U);
    EXPECT_FALSE(m3::decode_incremental_book(messages[0]).has_value());
    // A group that claims 200 entries and holds one.
    bytes lying = group(32, {book_entry(1, 1, 1, 1, 1, 1, 0, '0')});
    lying[2] = std::byte{200};
    messages = walk(packet(1, {message(46, 13, 11, incremental_book_root(), {lying})}));
    ASSERT_EQ(messages.size(), 1U);
    EXPECT_FALSE(m3::decode_incremental_book(messages[0]).has_value());
    // Entries shorter than the fields read.
    messages =
        walk(packet(1, {message(46, 13, 11, incremental_book_root(), {group(20, {bytes(20)})})}));
    EXPECT_FALSE(m3::decode_incremental_book(messages[0]).has_value());
    // A missing group dimension.
    messages = walk(packet(1, {message(52, 13, 59, bytes(59))}));
    EXPECT_FALSE(m3::decode_snapshot_full_refresh(messages[0]).has_value());
    // The 8-byte dimension cut short.
    messages = walk(packet(1, {message(48, 13, 11, incremental_book_root(),
                                       {group(32, {}), sbe{}.u16(16).pad(3).b})}));
    EXPECT_FALSE(m3::decode_incremental_trade_summary(messages[0]).has_value());
}

TEST(Mdp3, APacketWithAMessageThatDoesNotDecodeIsNotValid) {
    // Issue 37.5: framing that holds is not enough to claim a MsgSeqNum; every message of a
    // template decoded here must decode.
    bytes const heartbeat = message(12, 13, 0, {});
    bytes const good =
        message(46, 13, 11, incremental_book_root(),
                {group(32, {book_entry(1, 1, 1, 1, 1, 1, 0, '0')}), group(24, {}, true)});
    EXPECT_TRUE(m3::validate_packet(packet(7, {heartbeat, good})).has_value());
    bytes lying = good; // NoMDEntries says 255 and holds one
    lying[m3::message_header_size + 11 + 2] = std::byte{255};
    EXPECT_FALSE(m3::validate_packet(packet(7, {heartbeat, lying})).has_value());
    EXPECT_FALSE(m3::validate_packet(packet(7, {lying, heartbeat})).has_value());
    // A root shorter than the fields read (SecurityStatus30 of 20 bytes).
    EXPECT_FALSE(m3::validate_packet(packet(7, {message(30, 13, 20, {})})).has_value());
    // Templates not decoded here are skipped, whatever they hold.
    EXPECT_TRUE(m3::validate_packet(packet(7, {message(99, 13, 3, {}, {bytes{std::byte{9}}})}))
                    .has_value());
}

TEST(Mdp3, ChannelResetSecurityStatusAndOrderBook) {
    auto const messages =
        walk(packet(9, {message(4, 13, 9, sbe{}.u64(5).u8(0x80).b, {group(2, {sbe{}.u16(310).b})}),
                        message(30, 13, 30,
                                sbe{}
                                    .u64(6)
                                    .text("ES", 6)
                                    .text("ES", 6)
                                    .i32(991)
                                    .u16(19000)
                                    .u8(0x80)
                                    .u8(17)
                                    .u8(0)
                                    .u8(4)
                                    .b),
                        message(47, 13, 11, incremental_book_root(),
                                {group(40, {sbe{}
                                                .u64(555)
                                                .u64(1000)
                                                .i64(4'500'000'000'000)
                                                .i32(3)
                                                .i32(991)
                                                .u8(1)
                                                .u8('1')
                                                .b})})}));
    ASSERT_EQ(messages.size(), 3U);
    auto const reset = m3::decode_channel_reset(messages[0]);
    ASSERT_TRUE(reset.has_value());
    EXPECT_EQ(reset->transact_time, 5U);
    EXPECT_EQ(reset->match_event_indicator & m3::end_of_event, m3::end_of_event);
    ASSERT_EQ(reset->entries.size(), 1U);
    EXPECT_EQ(reset->entries[0].appl_id, 310);
    auto const status = m3::decode_security_status(messages[1]);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(m3::text(status->security_group), "ES");
    EXPECT_EQ(status->security_id, 991);
    EXPECT_EQ(status->trade_date, 19000);
    EXPECT_EQ(status->trading_status, 17); // ready to trade
    EXPECT_EQ(status->trading_event, 4);
    auto const orders = m3::decode_incremental_order_book(messages[2]);
    ASSERT_TRUE(orders.has_value());
    m3::order_book_entry const o = orders->entries[0];
    EXPECT_EQ(o.order_id, 555U);
    EXPECT_EQ(o.priority, 1000U);
    EXPECT_EQ(o.price, 4'500'000'000'000);
    EXPECT_EQ(o.display_qty, 3);
    EXPECT_EQ(o.security_id, 991);
    EXPECT_EQ(o.action, m3::update_action::change);
    EXPECT_EQ(o.type, m3::entry_type::offer);
}

TEST(Mdp3, TradeSummaryAndSnapshots) {
    auto const messages = walk(packet(
        3, {message(48, 13, 11, incremental_book_root(),
                    {group(32, {sbe{}
                                    .i64(4'501'000'000'000)
                                    .i32(2)
                                    .i32(991)
                                    .u32(77)
                                    .i32(2)
                                    .u8(1)
                                    .u8(0)
                                    .u32(31337)
                                    .b}),
                     group(16, {sbe{}.u64(9).i32(1).b, sbe{}.u64(10).i32(1).b}, true)}),
            message(52, 13, 59,
                    sbe{}
                        .u32(1234)
                        .u32(50)
                        .i32(991)
                        .u32(88)
                        .u64(11)
                        .u64(12)
                        .u16(19001)
                        .u8(21)
                        .i64(4'600'000'000'000)
                        .i64(4'400'000'000'000)
                        .i64(m3::null_price)
                        .b,
                    {group(22, {sbe{}
                                    .i64(4'500'000'000'000)
                                    .i32(10)
                                    .i32(4)
                                    .u8(1)
                                    .u16(65535)
                                    .u8(255)
                                    .u8(0)
                                    .u8('0')
                                    .b})}),
            message(53, 13, 28, sbe{}.u32(1234).u32(3).i32(991).u32(2).u32(1).u64(13).b,
                    {group(29,
                           {sbe{}.u64(555).u64(1000).i64(4'500'000'000'000).i32(3).u8('0').b})})}));
    ASSERT_EQ(messages.size(), 3U);
    auto const trade = m3::decode_incremental_trade_summary(messages[0]);
    ASSERT_TRUE(trade.has_value());
    m3::trade_entry const t = trade->entries[0];
    EXPECT_EQ(t.price, 4'501'000'000'000);
    EXPECT_EQ(t.size, 2);
    EXPECT_EQ(t.rpt_seq, 77U);
    EXPECT_EQ(t.aggressor_side, 1);
    EXPECT_EQ(t.trade_entry_id, 31337U);
    ASSERT_EQ(trade->orders.size(), 2U);
    EXPECT_EQ(trade->orders[1].order_id, 10U);
    auto const snap = m3::decode_snapshot_full_refresh(messages[1]);
    ASSERT_TRUE(snap.has_value());
    EXPECT_EQ(snap->last_msg_seq_num_processed, 1234U);
    EXPECT_EQ(snap->tot_num_reports, 50U);
    EXPECT_EQ(snap->security_id, 991);
    EXPECT_EQ(snap->rpt_seq, 88U);
    EXPECT_EQ(snap->last_update_time, 12U);
    EXPECT_EQ(snap->trading_status, 21);
    EXPECT_EQ(snap->high_limit_price, 4'600'000'000'000); // odd offsets: 35, 43, 51
    EXPECT_EQ(snap->low_limit_price, 4'400'000'000'000);
    EXPECT_EQ(snap->max_price_variation, m3::null_price);
    m3::snapshot_entry const s = snap->entries[0];
    EXPECT_EQ(s.price, 4'500'000'000'000);
    EXPECT_EQ(s.size, 10);
    EXPECT_EQ(s.number_of_orders, 4);
    EXPECT_EQ(s.price_level, 1);
    EXPECT_EQ(s.type, m3::entry_type::bid);
    auto const mbo = m3::decode_snapshot_order_book(messages[2]);
    ASSERT_TRUE(mbo.has_value());
    EXPECT_EQ(mbo->no_chunks, 2U);
    EXPECT_EQ(mbo->current_chunk, 1U);
    EXPECT_EQ(mbo->transact_time, 13U);
    EXPECT_EQ(mbo->entries[0].order_id, 555U);
    EXPECT_EQ(mbo->entries[0].display_qty, 3);
}

bytes definition_root(std::int32_t security_id, std::string_view symbol) {
    sbe r;
    r.u8(0)                   // 0 MatchEventIndicator
        .u32(m3::null_uint32) // 1 TotNumReports
        .u8('A')              // 5 SecurityUpdateAction
        .u64(99)              // 6 LastUpdateTime
        .u8(17)               // 14 MDSecurityTradingStatus
        .le(310, 2)           // 15 ApplID
        .u8(1)                // 17 MarketSegmentID
        .u8(2)                // 18 UnderlyingProduct
        .text("XCME", 4)      // 19 SecurityExchange
        .text("ES", 6)        // 23 SecurityGroup
        .text("ES", 6)        // 29 Asset
        .text(symbol, 20)     // 35 Symbol
        .i32(security_id)     // 55 SecurityID
        .text("FUT", 6)       // 59 SecurityType
        .text("FFICSX", 6)    // 65 CFICode
        .u16(2026)
        .u8(12)
        .u8(255)
        .u8(255)            // 71 MaturityMonthYear
        .text("USD", 3)     // 76 Currency
        .text("USD", 3)     // 79 SettlCurrency
        .u8('F')            // 82 MatchAlgorithm
        .u32(1)             // 83 MinTradeVol
        .u32(3000)          // 87 MaxTradeVol
        .i64(250'000'000)   // 91 MinPriceIncrement (0.25)
        .i64(1'000'000'000) // 99 DisplayFactor (1)
        .u8(255)
        .u8(255)
        .u8(255)                // 107 fractions, display format
        .text("IPNT", 30)       // 110 UnitOfMeasure
        .i64(m3::null_price)    // 140 UnitOfMeasureQty
        .i64(4'500'000'000'000) // 148 TradingReferencePrice
        .u8(0)                  // 156 SettlPriceType
        .i32(m3::null_int32)
        .i32(m3::null_int32)    // 157 OpenInterestQty, 161 ClearedVolume
        .i64(4'700'000'000'000) // 165 HighLimitPrice
        .i64(4'300'000'000'000) // 173 LowLimitPrice
        .i64(m3::null_price)    // 181 MaxPriceVariation
        .i32(m3::null_int32)
        .u16(65535)
        .i32(m3::null_int32)
        .i32(m3::null_int32) // 189..199
        .u8(127)
        .u8(127)             // 203, 204
        .i64(m3::null_price) // 205 MinPriceIncrementAmount
        .u8('N')             // 213 UserDefinedInstrument
        .u16(65535)          // 214 TradingReferenceDate
        .u64(0xABCDEF);      // 216 InstrumentGUID
    EXPECT_EQ(r.b.size(), 224U);
    return r.b;
}

TEST(Mdp3, VolumeStatisticsAndLimitsEntriesAtTheirOffsets) {
    auto const messages =
        walk(packet(4, {message(37, 9, 11, incremental_book_root(),
                                {group(16, {sbe{}.i32(9541).i32(121933).u32(3072).u8(0).b})}),
                        message(49, 9, 11, incremental_book_root(),
                                {group(32, {sbe{}
                                                .i64(4'510'250'000'000)
                                                .i32(m3::null_int32)
                                                .i32(991)
                                                .u32(40)
                                                .u16(17800)
                                                .u8(0x03)
                                                .u8(1)
                                                .u8('6')
                                                .b})}),
                        message(50, 9, 11, incremental_book_root(),
                                {group(32, {sbe{}
                                                .i64(4'700'000'000'000)
                                                .i64(4'300'000'000'000)
                                                .i64(m3::null_price)
                                                .i32(991)
                                                .u32(41)
                                                .b})}),
                        message(51, 9, 11, incremental_book_root(),
                                {group(24, {sbe{}
                                                .i64(4'499'000'000'000)
                                                .i32(991)
                                                .u32(42)
                                                .u8(0)
                                                .u8(0)
                                                .u8('4')
                                                .i32(77)
                                                .b})})}));
    ASSERT_EQ(messages.size(), 4U);
    auto const volume = m3::decode_incremental_volume(messages[0]);
    ASSERT_TRUE(volume.has_value());
    ASSERT_EQ(volume->entries.size(), 1U);
    EXPECT_EQ(volume->transact_time, 1'700'000'000'000'000'001ULL);
    EXPECT_EQ(volume->entries[0].size, 9541);
    EXPECT_EQ(volume->entries[0].security_id, 121933);
    EXPECT_EQ(volume->entries[0].rpt_seq, 3072U);
    auto const daily = m3::decode_incremental_daily_statistics(messages[1]);
    ASSERT_TRUE(daily.has_value());
    m3::daily_statistics_entry const d = daily->entries[0];
    EXPECT_EQ(d.price, 4'510'250'000'000);
    EXPECT_EQ(d.size, m3::null_int32);
    EXPECT_EQ(d.security_id, 991);
    EXPECT_EQ(d.rpt_seq, 40U);
    EXPECT_EQ(d.trading_reference_date, 17800);
    EXPECT_EQ(d.settl_price_type, 0x03);
    EXPECT_EQ(d.action, m3::update_action::change);
    EXPECT_EQ(d.type, m3::entry_type::settlement_price);
    auto const limits = m3::decode_incremental_limits_banding(messages[2]);
    ASSERT_TRUE(limits.has_value());
    m3::limits_banding_entry const l = limits->entries[0];
    EXPECT_EQ(l.high_limit_price, 4'700'000'000'000);
    EXPECT_EQ(l.low_limit_price, 4'300'000'000'000);
    EXPECT_EQ(l.max_price_variation, m3::null_price);
    EXPECT_EQ(l.security_id, 991);
    EXPECT_EQ(l.rpt_seq, 41U);
    auto const session = m3::decode_incremental_session_statistics(messages[3]);
    ASSERT_TRUE(session.has_value());
    m3::session_statistics_entry const s = session->entries[0];
    EXPECT_EQ(s.price, 4'499'000'000'000);
    EXPECT_EQ(s.security_id, 991);
    EXPECT_EQ(s.rpt_seq, 42U);
    EXPECT_EQ(s.open_close_settl_flag, 0);
    EXPECT_EQ(s.type, m3::entry_type::open_price);
    EXPECT_EQ(s.size, 77);
    // Entries shorter than the fields read are malformed, not read past.
    auto const short_volume =
        walk(packet(5, {message(37, 9, 11, incremental_book_root(), {group(12, {bytes(12)})})}));
    EXPECT_FALSE(m3::decode_incremental_volume(short_volume[0]).has_value());
}

TEST(Mdp3, InstrumentDefinitionWithItsBookDepth) {
    for (std::uint16_t const version : {std::uint16_t{9}, std::uint16_t{13}}) {
        SCOPED_TRACE(version);
        std::uint16_t const block = version >= 10 ? 224 : 216;
        auto const messages = walk(packet(
            1,
            {message(54, version, block, definition_root(991, "ESZ6"),
                     {group(9, {sbe{}.u8(5).u64(100).b, sbe{}.u8(7).u64(200).b}),
                      group(4, {sbe{}.text("GBX", 3).u8(10).b, sbe{}.text("GBI", 3).u8(2).b}),
                      group(4, {sbe{}.u32(0x80001).b}), group(5, {sbe{}.u8(1).i32(10000).b})})}));
        ASSERT_EQ(messages.size(), 1U);
        auto const d = m3::decode_instrument_definition_future(messages[0]);
        ASSERT_TRUE(d.has_value());
        EXPECT_EQ(d->security_update_action, 'A');
        EXPECT_EQ(d->last_update_time, 99U);
        EXPECT_EQ(d->appl_id, 310);
        EXPECT_EQ(m3::text(d->symbol), "ESZ6");
        EXPECT_EQ(m3::text(d->security_exchange), "XCME");
        EXPECT_EQ(d->security_id, 991);
        EXPECT_EQ(m3::text(d->currency), "USD");
        EXPECT_EQ(d->max_trade_vol, 3000U);
        EXPECT_EQ(d->min_price_increment, 250'000'000);
        EXPECT_EQ(d->display_factor, 1'000'000'000);
        EXPECT_EQ(d->trading_reference_price, 4'500'000'000'000);
        EXPECT_EQ(d->high_limit_price, 4'700'000'000'000);
        EXPECT_EQ(d->low_limit_price, 4'300'000'000'000);
        EXPECT_EQ(d->instrument_guid, version >= 10 ? 0xABCDEFU : m3::null_uint64);
        ASSERT_EQ(d->events.size(), 2U);
        EXPECT_EQ(d->events[1].event_time_ns, 200U);
        EXPECT_EQ(d->outright_depth(), 10);
        EXPECT_EQ(d->attributes[0].value, 0x80001U);
        EXPECT_EQ(d->lot_types[0].min_lot_size, 10000);
    }
}

} // namespace
