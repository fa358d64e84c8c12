// cme::mdp3_channel: books kept right through late joins, lost packets, old snapshots and channel
// resets — each case against a reference channel that saw every packet from sequence 1. The
// packets come from a seeded generator of MBP updates (new, change, delete at random levels of
// three instruments, depth 3), built byte by byte (mdp3_test_support.hpp). Events: a consumer of
// the channel's events alone ends with its books through loss and late joins, and sees each
// recovery as stale -> snapshot (clear, the book) -> recovered; trades and definitions.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cme/mdp3_channel.hpp>
#include <signet/md/events.hpp>

#include "mdp3_test_support.hpp"

namespace {

namespace m3 = signet::md::cme;
using namespace signet::md::test::mdp3;

constexpr std::size_t depth = 3;
std::vector<std::int32_t> const ids = {101, 202, 303};

bytes definitions(std::vector<std::int32_t> const& of = ids) {
    sbe all;
    all.u32(1).u64(0); // packet header of the definition feed
    for (std::int32_t const id : of) {
        all.raw(definition_message(id, "FUT" + std::to_string(id), depth));
    }
    return all.b;
}

// packets[k] carries MsgSeqNum k + 1: one book entry each, valid for the model book.
std::vector<bytes> stream(std::uint64_t seed, std::size_t count) {
    std::mt19937_64 random(seed);
    std::map<std::int32_t, m3::mdp3_price_book> model;
    std::map<std::int32_t, std::uint32_t> rpt;
    std::vector<bytes> packets;
    for (std::size_t k = 0; k < count; ++k) {
        std::int32_t const id = ids[random() % ids.size()];
        m3::mdp3_price_book& book = model.try_emplace(id, depth).first->second;
        bool const bid = random() % 2 == 0;
        std::size_t const levels = bid ? book.bids().size() : book.offers().size();
        m3::book_entry e;
        e.security_id = id;
        e.type = bid ? m3::entry_type::bid : m3::entry_type::offer;
        e.size = static_cast<std::int32_t>(1 + random() % 100);
        e.number_of_orders = static_cast<std::int32_t>(1 + random() % 9);
        auto const roll = random() % 10;
        if (levels == 0 || (roll < 4 && levels < depth)) {
            e.action = m3::update_action::new_level;
            e.price_level = static_cast<std::uint8_t>(1 + random() % (levels + 1));
            e.price = static_cast<std::int64_t>(1000 + random() % 500) * 250'000'000;
        } else {
            e.price_level = static_cast<std::uint8_t>(1 + random() % levels);
            auto const side = bid ? book.bids() : book.offers();
            e.price = side[e.price_level - 1u].price;
            e.action = roll < 7 ? m3::update_action::change : m3::update_action::remove;
        }
        e.rpt_seq = ++rpt[id];
        EXPECT_EQ(book.apply(e), m3::book_update::applied);
        packets.push_back(
            packet(static_cast<std::uint32_t>(k + 1),
                   {message(46, 13, 11, incremental_book_root(),
                            {group(32, {book_entry(e.price, e.size, e.security_id, e.rpt_seq,
                                                   e.number_of_orders, e.price_level,
                                                   static_cast<std::uint8_t>(e.action), e.type)}),
                             group(24, {}, true)})}));
    }
    return packets;
}

// A channel fed the definitions and packets [0, end).
std::unique_ptr<m3::mdp3_channel> reference(std::vector<bytes> const& packets, std::size_t end) {
    auto c = std::make_unique<m3::mdp3_channel>();
    c->on_definition(definitions(), 0);
    for (std::size_t k = 0; k < end; ++k) {
        c->on_incremental(packets[k], 0);
    }
    return c;
}

// SnapshotFullRefresh52 of instrument `i`, valid as of incremental packet `last`, in a loop of
// `reports` instruments.
bytes snapshot_message(m3::mdp3_instrument const& i, std::uint32_t last, std::size_t reports) {
    std::vector<bytes> entries;
    auto add = [&](std::span<m3::mdp3_price_level const> side, char type) {
        for (std::size_t l = 0; l < side.size(); ++l) {
            entries.push_back(sbe{}
                                  .i64(side[l].price)
                                  .i32(side[l].size)
                                  .i32(side[l].orders)
                                  .u8(l + 1)
                                  .u16(65535)
                                  .u8(255)
                                  .u8(0)
                                  .u8(static_cast<std::uint8_t>(type))
                                  .b);
        }
    };
    add(i.book.bids(), m3::entry_type::bid);
    add(i.book.offers(), m3::entry_type::offer);
    bytes root = sbe{}.u32(last).u32(reports).i32(i.security_id).u32(i.rpt_seq).b;
    return message(52, 13, 59, root, {group(22, entries)});
}

// One loop of the market recovery feed: SnapshotFullRefresh52 of every instrument of `at` (or
// of those in `only`), valid as of incremental packet `last`.
bytes snapshot_loop(m3::mdp3_channel const& at, std::uint32_t last, std::uint32_t loop_sequence = 1,
                    std::vector<std::int32_t> const& only = {}) {
    sbe p;
    p.u32(loop_sequence).u64(0);
    at.for_each_instrument([&](m3::mdp3_instrument const& i) {
        if (only.empty() || std::find(only.begin(), only.end(), i.security_id) != only.end()) {
            p.raw(snapshot_message(i, last, at.instrument_count()));
        }
    });
    return p.b;
}

void expect_same_books(m3::mdp3_channel const& got, m3::mdp3_channel const& want) {
    want.for_each_instrument([&](m3::mdp3_instrument const& w) {
        m3::mdp3_instrument const* g = got.find(w.security_id);
        ASSERT_NE(g, nullptr) << w.security_id;
        EXPECT_FALSE(g->stale) << w.security_id;
        EXPECT_EQ(g->rpt_seq, w.rpt_seq) << w.security_id;
        EXPECT_EQ(std::vector<m3::mdp3_price_level>(g->book.bids().begin(), g->book.bids().end()),
                  std::vector<m3::mdp3_price_level>(w.book.bids().begin(), w.book.bids().end()))
            << "bids of " << w.security_id;
        EXPECT_EQ(
            std::vector<m3::mdp3_price_level>(g->book.offers().begin(), g->book.offers().end()),
            std::vector<m3::mdp3_price_level>(w.book.offers().begin(), w.book.offers().end()))
            << "offers of " << w.security_id;
    });
}

TEST(Mdp3Channel, FromTheStartDuplicatesAreDroppedAndBooksBuilt) {
    std::vector<bytes> const packets = stream(1, 300);
    m3::mdp3_channel c;
    c.on_definition(definitions(), 0);
    ASSERT_EQ(c.instrument_count(), ids.size());
    EXPECT_EQ(c.find(101)->book.depth(), depth);
    for (bytes const& p : packets) {
        c.on_incremental(p, 0);
        c.on_incremental(p, 0); // line B's copy
    }
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(c.sequencing().duplicates, 300U);
    EXPECT_EQ(c.stats().book_entries, 300U);
    EXPECT_EQ(c.sequencing().gaps, 0U);
    EXPECT_EQ(c.stats().rpt_seq_gaps, 0U);
    EXPECT_EQ(c.next_sequence(), 301U);
    expect_same_books(c, *reference(packets, 300));
}

TEST(Mdp3Channel, ALateJoinerRecoversFromTheSnapshotLoopAndReplaysWhatItHeld) {
    std::vector<bytes> const packets = stream(2, 400);
    for (std::size_t const join : {1U, 40U, 150U, 290U}) {
        SCOPED_TRACE(join);
        m3::mdp3_channel late;
        late.on_definition(definitions(), 0);
        std::size_t const snapshot_at = join + 60; // the loop comes round a little later
        for (std::size_t k = join; k < snapshot_at + 30; ++k) {
            late.on_incremental(packets[k], 0);
        }
        EXPECT_TRUE(late.recovering());
        late.on_snapshot(snapshot_loop(*reference(packets, snapshot_at),
                                       static_cast<std::uint32_t>(snapshot_at)),
                         0);
        EXPECT_FALSE(late.recovering());
        EXPECT_EQ(late.stats().snapshots_applied, ids.size());
        for (std::size_t k = snapshot_at + 30; k < packets.size(); ++k) {
            late.on_incremental(packets[k], 0);
        }
        expect_same_books(late, *reference(packets, packets.size()));
    }
}

TEST(Mdp3Channel, ALostPacketMakesEveryInstrumentStaleUntilTheLoopRecoversIt) {
    std::vector<bytes> const packets = stream(3, 400);
    m3::mdp3_channel c;
    c.on_definition(definitions(), 0);
    std::size_t const lost = 100;
    for (std::size_t k = 0; k < 200; ++k) {
        if (k != lost) {
            c.on_incremental(packets[k], 0);
        }
    }
    EXPECT_EQ(c.sequencing().gaps, 1U);
    EXPECT_TRUE(c.recovering());
    // Which instruments the lost packet touched is unknown: every one waits for its snapshot.
    c.for_each_instrument([&](m3::mdp3_instrument const& i) {
        EXPECT_TRUE(i.stale) << i.security_id;
        EXPECT_TRUE(i.orders_stale) << i.security_id;
    });
    EXPECT_EQ(c.stats().rpt_seq_gaps, 0U); // no entry was applied after the gap to show one
    c.on_snapshot(snapshot_loop(*reference(packets, 180), 180), 0);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(c.stats().snapshots_applied, ids.size());
    EXPECT_EQ(c.stats().snapshots_confirmed, 0U);
    for (std::size_t k = 200; k < packets.size(); ++k) {
        c.on_incremental(packets[k], 0);
    }
    expect_same_books(c, *reference(packets, packets.size()));
}

TEST(Mdp3Channel, ASnapshotOlderThanTheHeldPacketsWaitsForTheNextLoop) {
    std::vector<bytes> const packets = stream(4, 300);
    m3::mdp3_channel late;
    late.on_definition(definitions(), 0);
    for (std::size_t k = 100; k < 200; ++k) {
        late.on_incremental(packets[k], 0);
    }
    late.on_snapshot(snapshot_loop(*reference(packets, 50), 50), 0); // before packet 101
    EXPECT_TRUE(late.recovering());
    EXPECT_EQ(late.stats().snapshots_too_old, ids.size());
    late.on_snapshot(snapshot_loop(*reference(packets, 150), 150, 2), 0);
    EXPECT_FALSE(late.recovering());
    for (std::size_t k = 200; k < packets.size(); ++k) {
        late.on_incremental(packets[k], 0);
    }
    expect_same_books(late, *reference(packets, packets.size()));
}

TEST(Mdp3Channel, AChannelResetEmptiesEveryBookAndRestartsRptSeq) {
    std::vector<bytes> const packets = stream(5, 100);
    auto const owner = reference(packets, 100);
    m3::mdp3_channel& c = *owner;
    ASSERT_FALSE(c.find(101)->book.bids().empty() && c.find(101)->book.offers().empty());
    c.on_incremental(
        packet(101, {message(4, 13, 9, sbe{}.u64(1).u8(0x80).b, {group(2, {sbe{}.u16(310).b})})}),
        0);
    EXPECT_EQ(c.stats().channel_resets, 1U);
    c.for_each_instrument([](m3::mdp3_instrument const& i) {
        EXPECT_TRUE(i.book.bids().empty());
        EXPECT_TRUE(i.book.offers().empty());
        EXPECT_EQ(i.rpt_seq, 0U);
    });
    c.on_incremental(packet(102, {message(46, 13, 11, incremental_book_root(),
                                          {group(32, {book_entry(5, 1, 202, 1, 1, 1, 0, '0')}),
                                           group(24, {}, true)})}),
                     0);
    EXPECT_EQ(c.find(202)->book.bids().size(), 1U);
    EXPECT_FALSE(c.recovering());
}

TEST(Mdp3Channel, AChannelResetMidRecoveryEndsItWithEmptyBooks) {
    std::vector<bytes> const packets = stream(7, 200);
    m3::mdp3_channel late;
    late.on_definition(definitions(), 0);
    for (std::size_t k = 50; k < 100; ++k) { // a late start: recovering, every book stale
        late.on_incremental(packets[k], 0);
    }
    ASSERT_TRUE(late.recovering());
    late.on_incremental(
        packet(101, {message(4, 13, 9, sbe{}.u64(1).u8(0x80).b, {group(2, {sbe{}.u16(310).b})})}),
        0);
    EXPECT_FALSE(late.recovering());
    late.for_each_instrument([](m3::mdp3_instrument const& i) {
        EXPECT_FALSE(i.stale);
        EXPECT_TRUE(i.book.bids().empty() && i.book.offers().empty());
    });
    // CME re-sends the books as incrementals from RptSeq 1: they apply.
    late.on_incremental(packet(102, {message(46, 13, 11, incremental_book_root(),
                                             {group(32, {book_entry(7, 2, 303, 1, 1, 1, 0, '1')}),
                                              group(24, {}, true)})}),
                        0);
    EXPECT_EQ(late.find(303)->book.offers().size(), 1U);
    // A snapshot loop after the reset changes nothing: the channel is not recovering.
    late.on_snapshot(snapshot_loop(*reference(packets, 60), 60), 0);
    EXPECT_EQ(late.stats().snapshots_applied, 0U);
}

TEST(Mdp3Channel, EveryTemplateThatCarriesRptSeqAdvancesIt) {
    // One RptSeq per instrument runs across the book (46), trades (48), volume (37) and the
    // statistics (49, 50, 51): skipping any of them would make the next book entry a gap.
    m3::mdp3_channel c;
    c.on_definition(definitions(), 0);
    auto const root = incremental_book_root();
    std::uint32_t rpt = 0;
    auto const book = [&](std::uint8_t action, std::int64_t price) {
        return message(46, 13, 11, root,
                       {group(32, {book_entry(price, 5, 101, ++rpt, 1, 1, action, '0')}),
                        group(24, {}, true)});
    };
    std::vector<bytes> const packets{
        packet(1, {book(0, 100)}),
        packet(
            2,
            {message(
                 48, 13, 11, root,
                 {group(32,
                        {sbe{}.i64(100).i32(1).i32(101).u32(++rpt).i32(1).u8(1).u8(0).u32(7).b}),
                  group(16, {}, true)}),
             message(37, 13, 11, root, {group(16, {sbe{}.i32(1).i32(101).u32(++rpt).u8(0).b})})}),
        packet(
            3,
            {message(49, 13, 11, root,
                     {group(32, {sbe{}
                                     .i64(99)
                                     .i32(m3::null_int32)
                                     .i32(101)
                                     .u32(++rpt)
                                     .u16(1)
                                     .u8(0)
                                     .u8(0)
                                     .u8('6')
                                     .b})}),
             message(
                 50, 13, 11, root,
                 {group(32, {sbe{}.i64(200).i64(50).i64(m3::null_price).i32(101).u32(++rpt).b})}),
             message(
                 51, 13, 11, root,
                 {group(24, {sbe{}.i64(98).i32(101).u32(++rpt).u8(0).u8(0).u8('7').i32(0).b})})}),
        packet(4, {book(1, 100)}),
    };
    for (bytes const& p : packets) {
        c.on_incremental(p, 0);
    }
    m3::mdp3_instrument const* i = c.find(101);
    ASSERT_NE(i, nullptr);
    EXPECT_EQ(c.stats().rpt_seq_gaps, 0U);
    EXPECT_FALSE(i->stale);
    EXPECT_EQ(i->rpt_seq, rpt);
    EXPECT_EQ(c.stats().book_entries, 2U);
    EXPECT_EQ(c.stats().trade_entries, 1U);
    EXPECT_EQ(c.stats().statistics_entries, 4U);
    EXPECT_EQ(i->statistics.volume, 1);
    EXPECT_EQ(i->statistics.settlement_price, 99);
    EXPECT_EQ(i->statistics.high_limit_price, 200);
    EXPECT_EQ(i->statistics.low_limit_price, 50);
    EXPECT_EQ(i->statistics.session_high_trade, 98);
    EXPECT_EQ(c.stats().unknown_messages, 0U);
}

TEST(Mdp3Channel, ASilentLoopAndMalformedInputAreCounted) {
    std::vector<bytes> const packets = stream(6, 20);
    m3::mdp3_channel c;
    c.on_definition(definitions(), 0);
    c.on_incremental(packets[10], 1'000); // a late start
    ASSERT_TRUE(c.recovering());
    c.on_time(1'000 + 1'000'000'000);
    EXPECT_EQ(c.stats().snapshot_silences, 0U);
    c.on_time(1'000 + 3'000'000'000ULL);
    EXPECT_EQ(c.stats().snapshot_silences, 1U);
    bytes cut = packets[11];
    cut.resize(cut.size() - 5); // MsgSize beyond the datagram
    c.on_incremental(cut, 0);
    EXPECT_EQ(c.stats().malformed_packets, 1U);
    c.on_incremental(bytes(5), 0);
    EXPECT_EQ(c.stats().malformed_packets, 2U);
    bytes unknown_instrument = packet(
        13, {message(46, 13, 11, incremental_book_root(),
                     {group(32, {book_entry(5, 1, 999, 1, 1, 1, 0, '0')}), group(24, {}, true)})});
    c.on_incremental(unknown_instrument, 0);
    EXPECT_EQ(c.stats().unknown_instrument_entries, 1U);
}

TEST(Mdp3Channel, ASecurityStatusWithoutAnIdSetsItsGroupOrAssetAndNoChangeKeepsTheStatus) {
    // SecurityStatus30's root: TransactTime, SecurityGroup, Asset, SecurityID (null: the
    // group's), TradeDate, MatchEventIndicator, SecurityTradingStatus, HaltReason, TradingEvent.
    auto const status = [](std::string_view group, std::int32_t id, std::uint8_t trading,
                           std::string_view asset = "") {
        return message(30, 13, 30,
                       sbe{}
                           .u64(1)
                           .text(group, 6)
                           .text(asset, 6)
                           .i32(id)
                           .u16(0)
                           .u8(0)
                           .u8(trading)
                           .u8(0)
                           .u8(0)
                           .b,
                       {});
    };
    m3::mdp3_channel c;
    sbe all;
    all.u32(1).u64(0);
    all.raw(definition_message(101, "GEZ6", depth, "GE", "GE"));
    all.raw(definition_message(202, "GEH7", depth, "GE", "GE"));
    all.raw(definition_message(303, "ZNZ6", depth, "ZN", "ZN"));
    all.raw(definition_message(404, "ZFZ6", depth, "ZN", "ZF"));
    c.on_definition(all.b, 0);
    c.on_incremental(packet(1, {status("GE", m3::null_int32, 2)}), 0); // the GE group halts
    EXPECT_EQ(c.find(101)->trading_status, 2);
    EXPECT_EQ(c.find(202)->trading_status, 2);
    EXPECT_NE(c.find(303)->trading_status, 2) << "another group";
    c.on_incremental(packet(2, {status("GE", 202, 17)}), 0); // one instrument opens
    EXPECT_EQ(c.find(202)->trading_status, 17);
    EXPECT_EQ(c.find(101)->trading_status, 2);
    c.on_incremental(packet(3, {status("GE", m3::null_int32, 103)}), 0); // no change
    EXPECT_EQ(c.find(101)->trading_status, 2);
    EXPECT_EQ(c.find(202)->trading_status, 17);
    c.on_incremental(packet(4, {status("", m3::null_int32, 17)}), 0); // names no group: nothing
    EXPECT_EQ(c.find(101)->trading_status, 2);
    // By asset alone: every instrument of that asset, whatever its group.
    c.on_incremental(packet(5, {status("", m3::null_int32, 21, "ZF")}), 0);
    EXPECT_EQ(c.find(404)->trading_status, 21);
    EXPECT_NE(c.find(303)->trading_status, 21) << "another asset of the same group";
    // By group and asset: the instruments that have both.
    c.on_incremental(packet(6, {status("ZN", m3::null_int32, 4, "ZN")}), 0);
    EXPECT_EQ(c.find(303)->trading_status, 4);
    EXPECT_EQ(c.find(404)->trading_status, 21) << "the group's other asset";
    EXPECT_EQ(c.find(101)->trading_status, 2);
    EXPECT_EQ(c.stats().malformed_messages, 0U);
}

// What a consumer knows from the events alone.
struct event_consumer final : signet::md::event_sink {
    using ev = signet::md::event;
    using kind = signet::md::event_kind;
    std::map<std::tuple<std::uint32_t, char, std::int64_t>, std::pair<std::uint64_t, std::uint32_t>>
        levels; // (instrument, side, price) -> (size, orders)
    std::map<std::uint32_t, signet::md::event_bbo> bbo;
    std::map<std::uint32_t, std::string> symbols;
    std::map<std::uint32_t, std::vector<kind>> markers; // per instrument
    std::vector<ev> trades;
    void on_event(ev const& e) noexcept override {
        switch (e.kind) {
        case kind::instrument_definition:
            symbols[e.instrument] = e.definition.symbol.data();
            EXPECT_EQ(e.definition.price_exponent, -9);
            break;
        case kind::level_update:
            if (e.level.size == 0) {
                levels.erase({e.instrument, e.side, e.level.price});
            } else {
                levels[{e.instrument, e.side, e.level.price}] = {e.level.size, e.level.orders};
            }
            break;
        case kind::bbo:
            bbo[e.instrument] = e.bbo;
            break;
        case kind::trade:
            trades.push_back(e);
            break;
        case kind::book_clear:
            std::erase_if(levels,
                          [&](auto const& l) { return std::get<0>(l.first) == e.instrument; });
            markers[e.instrument].push_back(e.kind);
            break;
        case kind::snapshot_begin:
        case kind::snapshot_end:
        case kind::instrument_stale:
        case kind::instrument_recovered:
            markers[e.instrument].push_back(e.kind);
            break;
        default:
            break;
        }
    }
    void expect_books_of(m3::mdp3_channel const& c) const {
        std::size_t count = 0;
        std::uint32_t index = 0;
        c.for_each_instrument([&](m3::mdp3_instrument const& i) {
            for (auto [side, list] :
                 {std::pair{'B', i.book.bids()}, std::pair{'S', i.book.offers()}}) {
                for (m3::mdp3_price_level const& l : list) {
                    auto const it = levels.find({index, side, l.price});
                    ASSERT_NE(it, levels.end()) << i.security_id << side << l.price;
                    EXPECT_EQ(it->second.first, static_cast<std::uint64_t>(l.size));
                    EXPECT_EQ(it->second.second, static_cast<std::uint32_t>(l.orders));
                    ++count;
                }
            }
            auto const b = bbo.find(index);
            if (b != bbo.end()) {
                EXPECT_EQ(b->second.bid_price, i.book.bids().empty() ? 0 : i.book.bids()[0].price);
                EXPECT_EQ(b->second.ask_price,
                          i.book.offers().empty() ? 0 : i.book.offers()[0].price);
            } else {
                EXPECT_TRUE(i.book.bids().empty() && i.book.offers().empty()) << i.security_id;
            }
            ++index;
        });
        EXPECT_EQ(levels.size(), count);
    }
};

TEST(Mdp3ChannelEvents, ALostPacketMakesEveryInstrumentStaleThenRecoversAndTheEventsRebuildThem) {
    std::vector<bytes> const packets = stream(3, 400);
    m3::mdp3_channel c;
    event_consumer consumer;
    c.set_event_sink(&consumer);
    c.on_definition(definitions(), 0);
    ASSERT_EQ(consumer.symbols.size(), ids.size());
    EXPECT_EQ(consumer.symbols.at(0), "FUT101");
    for (std::size_t k = 0; k < 200; ++k) {
        if (k != 100) {
            c.on_incremental(packets[k], 0);
        }
    }
    c.on_snapshot(snapshot_loop(*reference(packets, 180), 180), 0);
    ASSERT_FALSE(c.recovering());
    for (std::size_t k = 200; k < packets.size(); ++k) {
        c.on_incremental(packets[k], 0);
    }
    using kind = signet::md::event_kind;
    std::size_t recovered = 0;
    for (auto const& [instrument, seen] : consumer.markers) {
        EXPECT_EQ(seen,
                  (std::vector<kind>{kind::instrument_stale, kind::snapshot_begin, kind::book_clear,
                                     kind::snapshot_end, kind::instrument_recovered}))
            << instrument;
        ++recovered;
    }
    EXPECT_EQ(recovered, ids.size()); // the lost packet may have touched any of them
    consumer.expect_books_of(c);
}

TEST(Mdp3ChannelEvents, ALateJoinersEventsRebuildEveryBookFromTheLoop) {
    std::vector<bytes> const packets = stream(2, 400);
    m3::mdp3_channel late;
    event_consumer consumer;
    late.set_event_sink(&consumer);
    late.on_definition(definitions(), 0);
    for (std::size_t k = 150; k < 240; ++k) {
        late.on_incremental(packets[k], 0);
    }
    late.on_snapshot(snapshot_loop(*reference(packets, 210), 210), 0);
    ASSERT_FALSE(late.recovering());
    for (std::size_t k = 240; k < packets.size(); ++k) {
        late.on_incremental(packets[k], 0);
    }
    EXPECT_EQ(consumer.markers.size(), ids.size());
    consumer.expect_books_of(late);
    EXPECT_EQ(late.stats().snapshots_applied, ids.size());
}

TEST(Mdp3ChannelEvents, ATradeSummaryIsATradeWithItsAggressorAndAChannelResetClearsAll) {
    m3::mdp3_channel c;
    event_consumer consumer;
    c.set_event_sink(&consumer);
    c.on_definition(definitions(), 0);
    auto const root = incremental_book_root();
    c.on_incremental(packet(1, {message(48, 13, 11, root,
                                        {group(32, {sbe{}
                                                        .i64(12'500'000'000)
                                                        .i32(3)
                                                        .i32(202)
                                                        .u32(1)
                                                        .i32(2)
                                                        .u8(2)
                                                        .u8(0)
                                                        .u32(77)
                                                        .b}),
                                         group(16, {}, true)})}),
                     0);
    ASSERT_EQ(consumer.trades.size(), 1U);
    signet::md::event const& t = consumer.trades.front();
    EXPECT_EQ(t.instrument, 1U); // 202: the second defined
    EXPECT_EQ(t.side, 'S');
    EXPECT_EQ(t.trade.price, 12'500'000'000);
    EXPECT_EQ(t.trade.quantity, 3U);
    EXPECT_EQ(t.trade.match, 77U);
    EXPECT_EQ(t.sequence, 1U);
    c.on_incremental(
        packet(2, {message(4, 13, 9, sbe{}.u64(1).u8(0x80).b, {group(2, {sbe{}.u16(310).b})})}), 0);
    EXPECT_EQ(consumer.markers.at(signet::md::all_instruments),
              std::vector<signet::md::event_kind>{signet::md::event_kind::book_clear});
}

TEST(Mdp3ChannelEvents, OnlyTheKindsAskedForAreMade) {
    std::vector<bytes> const packets = stream(1, 200);
    m3::mdp3_channel c;
    struct counter final : signet::md::event_sink {
        std::map<signet::md::event_kind, std::size_t> n;
        void on_event(signet::md::event const& e) noexcept override { ++n[e.kind]; }
    } only_bbo;
    c.set_event_sink(&only_bbo, signet::md::event_mask::of({signet::md::event_kind::bbo}));
    c.on_definition(definitions(), 0);
    for (bytes const& p : packets) {
        c.on_incremental(p, 0);
    }
    ASSERT_EQ(only_bbo.n.size(), 1U);
    EXPECT_GT(only_bbo.n[signet::md::event_kind::bbo], 50U);
}

// The exchange's books after each packet: [s] holds them after MsgSeqNum s (0: before any).
using levels = std::vector<m3::mdp3_price_level>;
using exchange_books = std::vector<std::map<std::int32_t, std::pair<levels, levels>>>;

exchange_books books_after_each(std::vector<bytes> const& packets) {
    m3::mdp3_channel c;
    c.on_definition(definitions(), 0);
    exchange_books out;
    auto const capture = [&] {
        auto& at = out.emplace_back();
        c.for_each_instrument([&](m3::mdp3_instrument const& i) {
            at[i.security_id] = {levels(i.book.bids().begin(), i.book.bids().end()),
                                 levels(i.book.offers().begin(), i.book.offers().end())};
        });
    };
    capture(); // the empty books before the first packet
    for (bytes const& p : packets) {
        c.on_incremental(p, 0);
        capture();
    }
    return out;
}

// A consumer that acts at every event and checks, as each arrives, what it may rely on: the
// sequence never goes back; a rebuild and instrument_recovered only follow instrument_stale;
// at instrument_recovered the instrument's book (the consumer's, from the events alone, and the
// channel's) is the exchange's as of the event's sequence. With `live_checked`, whenever the
// sequence moves on, every defined instrument not stale has the exchange's book as of the
// sequence before (for runs that lose no packet).
struct recovery_checker final : signet::md::event_sink {
    using ev = signet::md::event;
    using kind = signet::md::event_kind;
    m3::mdp3_channel const* channel = nullptr;
    exchange_books const* exchange = nullptr;
    bool live_checked = false;
    std::uint64_t last_sequence = 0;
    std::map<std::uint32_t, bool> stale; // defined ones
    std::map<std::pair<std::uint32_t, char>, std::map<std::int64_t, m3::mdp3_price_level>> book;
    std::size_t recovered = 0;
    std::size_t rebuilt = 0;

    /// Checks the events of `c` against `e` from now on (and every live book when `live`).
    void attach(m3::mdp3_channel& c, exchange_books const& e, bool live = false) {
        channel = &c;
        exchange = &e;
        live_checked = live;
        c.set_event_sink(this);
    }

    // A side's levels by price (the consumer knows each level's depth only as it was sent).
    [[nodiscard]] levels side_of(std::uint32_t instrument, char side) const {
        levels out;
        if (auto const it = book.find({instrument, side}); it != book.end()) {
            for (auto const& [price, level] : it->second) {
                out.push_back(level);
            }
        }
        return out;
    }
    static levels by_price(levels l) {
        std::sort(l.begin(), l.end(),
                  [](auto const& a, auto const& b) { return a.price < b.price; });
        return l;
    }
    // The consumer's book of `instrument` is the exchange's as of `sequence`; so is the
    // channel's when `channel_too` (the channel has applied nothing after it).
    void expect_exchange_book(std::uint32_t instrument, std::uint64_t sequence, bool channel_too,
                              std::string_view when) const {
        m3::mdp3_instrument const* const i = channel->at(instrument);
        ASSERT_NE(i, nullptr);
        ASSERT_LT(sequence, exchange->size());
        auto const& [bids, offers] = (*exchange)[sequence].at(i->security_id);
        EXPECT_EQ(side_of(instrument, 'B'), by_price(bids))
            << when << ": bids of " << i->security_id << " as of " << sequence;
        EXPECT_EQ(side_of(instrument, 'S'), by_price(offers))
            << when << ": offers of " << i->security_id << " as of " << sequence;
        if (channel_too) {
            EXPECT_EQ(levels(i->book.bids().begin(), i->book.bids().end()), bids) << when;
            EXPECT_EQ(levels(i->book.offers().begin(), i->book.offers().end()), offers) << when;
        }
    }
    void on_event(ev const& e) noexcept override {
        EXPECT_GE(e.sequence, last_sequence) << "the sequence went back at a " << int(e.kind);
        if (live_checked && e.sequence > last_sequence) {
            for (auto const& [instrument, is_stale] : stale) {
                if (!is_stale) {
                    expect_exchange_book(instrument, last_sequence, false, "live");
                }
            }
        }
        last_sequence = std::max(last_sequence, e.sequence);
        switch (e.kind) {
        case kind::instrument_definition:
            stale.emplace(e.instrument, false);
            break;
        case kind::instrument_stale:
            stale.at(e.instrument) = true;
            break;
        case kind::snapshot_begin:
            EXPECT_TRUE(stale.at(e.instrument))
                << "a rebuild of " << e.instrument << " never declared stale";
            ++rebuilt;
            break;
        case kind::instrument_recovered:
            EXPECT_TRUE(stale.at(e.instrument)) << e.instrument << " recovered, never stale";
            expect_exchange_book(e.instrument, e.sequence, true, "recovered");
            stale.at(e.instrument) = false;
            ++recovered;
            break;
        case kind::book_clear:
            ASSERT_NE(e.instrument, signet::md::all_instruments);
            book.erase({e.instrument, 'B'});
            book.erase({e.instrument, 'S'});
            break;
        case kind::level_update:
            if (e.level.size == 0) {
                book[{e.instrument, e.side}].erase(e.level.price);
            } else {
                book[{e.instrument, e.side}][e.level.price] = {
                    e.level.price, static_cast<std::int32_t>(e.level.size),
                    static_cast<std::int32_t>(e.level.orders)};
            }
            break;
        default:
            break;
        }
    }
};

TEST(Mdp3ChannelEvents, AnInstrumentTheLoopShowedBeforeItsDefinitionWaitsForItsSnapshot) {
    // Issue 37.1: a snapshot of a SecurityID not yet defined counts towards the loop; once it is
    // defined, that loop did show it, so it is not "absent from a whole loop" (an empty book):
    // it waits for its snapshot in the next loop.
    std::vector<bytes> const packets = stream(8, 300);
    exchange_books const exchange = books_after_each(packets);
    m3::mdp3_channel c;
    recovery_checker checker;
    checker.attach(c, exchange, true);      // no packet is lost
    for (std::size_t k = 0; k < 100; ++k) { // the definitions come late
        c.on_incremental(packets[k], 0);
    }
    c.on_definition(definitions({101}), 0);
    ASSERT_TRUE(c.recovering());
    ASSERT_TRUE(checker.stale.at(0));
    c.on_snapshot(snapshot_loop(*reference(packets, 100), 100, 1, {202, 303}), 0); // undefined
    for (std::size_t k = 100; k < 120; ++k) {
        c.on_incremental(packets[k], 0);
    }
    c.on_definition(definitions({202, 303}), 0);
    c.on_snapshot(snapshot_loop(*reference(packets, 110), 110, 2, {101}), 0); // the loop's end
    EXPECT_EQ(checker.recovered, 1U); // 101 alone: 202 and 303 wait for their snapshots
    EXPECT_TRUE(c.recovering());
    EXPECT_TRUE(c.find(202)->stale);
    EXPECT_TRUE(c.find(303)->stale);
    for (std::size_t k = 120; k < 140; ++k) {
        c.on_incremental(packets[k], 0);
    }
    c.on_snapshot(snapshot_loop(*reference(packets, 130), 130, 3), 0);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(checker.recovered, ids.size());
    for (std::size_t k = 140; k < packets.size(); ++k) {
        c.on_incremental(packets[k], 0);
    }
    expect_same_books(c, *reference(packets, packets.size()));
}

// The instrument of a stream() packet (one book entry each).
std::int32_t security_of(bytes const& p) {
    std::int32_t id = 0;
    (void)m3::for_each_message(p, [&](m3::message const& m) {
        id = m3::decode_incremental_book(m)->entries[0].security_id;
    });
    return id;
}

// The first packet from `from` on whose instrument's next entry (which would show a RptSeq gap
// if it were lost) is 4 or more packets later: {that packet, the next entry's}.
std::pair<std::size_t, std::size_t> quiet_after(std::vector<bytes> const& packets,
                                                std::size_t from) {
    for (std::size_t lost = from; lost + 1 < packets.size(); ++lost) {
        std::size_t next = lost + 1;
        while (next < packets.size() && security_of(packets[next]) != security_of(packets[lost])) {
            ++next;
        }
        if (next > lost + 3) {
            return {lost, next};
        }
    }
    ADD_FAILURE() << "no quiet packet after " << from;
    return {from, from + 1};
}

TEST(Mdp3ChannelEvents, ASnapshotShowingAnInstrumentBehindMakesItStaleBeforeItsRebuild) {
    // Issue 37.2: the lost packet's instrument has had no entry since, so no RptSeq gap shows
    // that it lost one: instrument_stale comes before its rebuild all the same (the gap made
    // every instrument stale: which ones the packet touched is unknown).
    std::vector<bytes> const packets = stream(3, 400);
    exchange_books const exchange = books_after_each(packets);
    auto const [lost, next] = quiet_after(packets, 100);
    ASSERT_LT(lost, 300U);
    std::int32_t const touched = security_of(packets[lost]);
    m3::mdp3_channel c;
    recovery_checker checker;
    checker.attach(c, exchange);
    c.on_definition(definitions(), 0);
    for (std::size_t k = 0; k < next; ++k) {
        if (k != lost) {
            c.on_incremental(packets[k], 0);
        }
    }
    ASSERT_TRUE(c.recovering());
    ASSERT_TRUE(c.find(touched)->stale);
    auto const last = static_cast<std::uint32_t>(lost + 2); // after the lost one (lost + 1)
    c.on_snapshot(snapshot_loop(*reference(packets, last), last), 0);
    EXPECT_EQ(checker.rebuilt, ids.size());
    EXPECT_EQ(checker.recovered, ids.size());
    EXPECT_FALSE(c.recovering());
    for (std::size_t k = next; k < packets.size(); ++k) {
        c.on_incremental(packets[k], 0);
    }
    expect_same_books(c, *reference(packets, packets.size()));
}

TEST(Mdp3ChannelEvents, ARebuildsEventsCarryTheLastAppliedSequenceNeverAnOlderOne) {
    // Issue 37.2: the snapshot (as of 180) and the held packets replayed over it (181 to 200)
    // bring the instrument up to packet 200: their events never go back to 181.
    std::vector<bytes> const packets = stream(3, 400);
    exchange_books const exchange = books_after_each(packets);
    m3::mdp3_channel c;
    recovery_checker checker;
    checker.attach(c, exchange);
    c.on_definition(definitions(), 0);
    for (std::size_t k = 0; k < 200; ++k) {
        if (k != 100) {
            c.on_incremental(packets[k], 0);
        }
    }
    std::uint64_t const replayed = c.stats().replayed_entries;
    c.on_snapshot(snapshot_loop(*reference(packets, 180), 180), 0);
    EXPECT_GT(c.stats().replayed_entries, replayed);
    EXPECT_EQ(checker.last_sequence, 200U);
    EXPECT_EQ(checker.recovered, ids.size());
    for (std::size_t k = 200; k < packets.size(); ++k) {
        c.on_incremental(packets[k], 0);
    }
    expect_same_books(c, *reference(packets, packets.size()));
}

TEST(Mdp3ChannelEvents, ASnapshotAheadOfTheAppliedPacketsIsKeptUntilItsPacketIsApplied) {
    // A late joiner: a snapshot as of packet 170 while 150 is the last applied would show a
    // book the MsgSeqNum has not reached. It is kept, and applied once packet 170 is.
    std::vector<bytes> const packets = stream(9, 300);
    exchange_books const exchange = books_after_each(packets);
    m3::mdp3_channel late;
    recovery_checker checker;
    checker.attach(late, exchange, true);
    late.on_definition(definitions(), 0);
    for (std::size_t k = 100; k < 150; ++k) {
        late.on_incremental(packets[k], 0);
    }
    late.on_snapshot(snapshot_loop(*reference(packets, 170), 170), 0);
    EXPECT_EQ(late.stats().snapshots_ahead, ids.size());
    EXPECT_EQ(checker.recovered, 0U);
    EXPECT_TRUE(late.recovering());
    for (std::size_t k = 150; k < 169; ++k) { // MsgSeqNum 151 to 169
        late.on_incremental(packets[k], 0);
    }
    EXPECT_EQ(checker.recovered, 0U);
    late.on_incremental(packets[169], 0); // 170
    EXPECT_FALSE(late.recovering());
    EXPECT_EQ(checker.recovered, ids.size());
    EXPECT_EQ(checker.last_sequence, 170U);
    EXPECT_EQ(late.stats().snapshots_applied, ids.size());
    for (std::size_t k = 170; k < packets.size(); ++k) {
        late.on_incremental(packets[k], 0);
    }
    expect_same_books(late, *reference(packets, packets.size()));
}

TEST(Mdp3ChannelEvents, ALoopAheadOfTheIncrementalsRecoversALossAtItsPacketNotAtTheTail) {
    // Under load the receiver takes the snapshot socket's packet before the incremental
    // packets still queued: after a lost packet every loop is ahead of the packets applied.
    // The first loop's snapshots (as of 170) are kept, the next loop's (as of 185, ahead too)
    // are not (the older applies first), and each instrument recovers at packet 170: books
    // right at every event (live_checked), the sequence never back.
    std::vector<bytes> const packets = stream(14, 300);
    exchange_books const exchange = books_after_each(packets);
    m3::mdp3_channel c;
    recovery_checker checker;
    checker.attach(c, exchange, true);
    c.on_definition(definitions(), 0);
    for (std::size_t k = 0; k < 150; ++k) {
        if (k != 100) { // MsgSeqNum 101, lost on both lines
            c.on_incremental(packets[k], 0);
        }
    }
    ASSERT_TRUE(c.recovering());
    ASSERT_EQ(checker.recovered, 0U);
    c.on_snapshot(snapshot_loop(*reference(packets, 170), 170), 0);
    for (std::size_t k = 150; k < 160; ++k) {
        c.on_incremental(packets[k], 0);
    }
    c.on_snapshot(snapshot_loop(*reference(packets, 185), 185, 2), 0);
    EXPECT_EQ(c.stats().snapshots_ahead, 2 * ids.size());
    for (std::size_t k = 160; k < 169; ++k) { // up to 169
        c.on_incremental(packets[k], 0);
    }
    EXPECT_EQ(checker.recovered, 0U);
    EXPECT_TRUE(c.recovering());
    c.on_incremental(packets[169], 0); // 170: the kept snapshots apply
    EXPECT_EQ(checker.recovered, ids.size());
    EXPECT_EQ(checker.rebuilt, ids.size());
    EXPECT_EQ(checker.last_sequence, 170U);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(c.stats().snapshots_applied, ids.size());
    for (std::size_t k = 170; k < packets.size(); ++k) {
        c.on_incremental(packets[k], 0);
    }
    EXPECT_EQ(c.stats().book_entries, 100U + 130U); // 1 to 100 live, again from 171 on
    expect_same_books(c, *reference(packets, packets.size()));
}

TEST(Mdp3ChannelEvents, AKeptSnapshotAppliesWhenTheLoopShowsItsPacketLostOrIsDroppedTooOld) {
    // Packet 101 is lost; the loop (as of 200) is kept. Packet 200, the stream's last, is lost
    // on both lines: once loop_ahead_ns passed, packets up to 200 count as applied and the
    // kept snapshots apply then, as of 200. Mid-stream: the packet a kept snapshot is of (180)
    // is lost on both lines; the next packet (181) shows the gap, and the snapshot, which has
    // 180 in it, applies with 181 replayed over it. Packets 180 and 181 lost: 182 shows the
    // gap, the kept snapshot is too old for the packets held since (dropped), the next loop
    // recovers.
    std::vector<bytes> const packets = stream(15, 200);
    exchange_books const exchange = books_after_each(packets);
    m3::mdp3_channel_options const options{};
    std::uint64_t const wait = options.loop_ahead_ns;
    std::uint64_t const now = 1'000'000'000;
    {
        m3::mdp3_channel c(options);
        recovery_checker checker;
        checker.attach(c, exchange, true);
        c.on_definition(definitions(), 0);
        for (std::size_t k = 0; k < 150; ++k) {
            if (k != 100) {
                c.on_incremental(packets[k], now);
            }
        }
        c.on_snapshot(snapshot_loop(*reference(packets, 200), 200), now);
        EXPECT_EQ(c.next_deadline(), now + wait);
        for (std::size_t k = 150; k < 199; ++k) { // up to 199
            c.on_incremental(packets[k], now + 1);
        }
        EXPECT_EQ(checker.recovered, 0U);
        c.on_time(now + 1 + wait - 1);
        EXPECT_EQ(checker.recovered, 0U);
        c.on_time(now + 1 + wait);
        EXPECT_EQ(c.stats().loop_revealed_gaps, 1U);
        EXPECT_EQ(c.next_sequence(), 201U);
        EXPECT_EQ(checker.recovered, ids.size());
        EXPECT_EQ(checker.last_sequence, 200U);
        EXPECT_EQ(c.stats().snapshots_applied, ids.size());
        EXPECT_EQ(c.next_deadline(), 0U);
        // Recovery's end waits for a whole loop since the tail's gap: the next one.
        c.on_snapshot(snapshot_loop(*reference(packets, 200), 200, 2), now + wait + 2);
        EXPECT_FALSE(c.recovering());
        expect_same_books(c, *reference(packets, 200));
    }
    {
        m3::mdp3_channel c(options);
        recovery_checker checker;
        checker.attach(c, exchange, true);
        c.on_definition(definitions(), 0);
        for (std::size_t k = 0; k < 150; ++k) {
            if (k != 100) {
                c.on_incremental(packets[k], now);
            }
        }
        c.on_snapshot(snapshot_loop(*reference(packets, 180), 180), now);
        for (std::size_t k = 150; k < 179; ++k) { // up to 179
            c.on_incremental(packets[k], now);
        }
        std::uint64_t const replayed = c.stats().replayed_entries;
        c.on_incremental(packets[180], now); // 181: 180 is lost on both lines
        EXPECT_EQ(c.sequencing().gaps, 2U);
        EXPECT_EQ(checker.recovered, ids.size());
        EXPECT_EQ(checker.last_sequence, 181U);
        EXPECT_EQ(c.stats().replayed_entries, replayed + 1);
        EXPECT_TRUE(c.recovering()); // a whole loop since the gap
        for (std::size_t k = 181; k < 190; ++k) {
            c.on_incremental(packets[k], now);
        }
        c.on_snapshot(snapshot_loop(*reference(packets, 185), 185, 2), now);
        EXPECT_FALSE(c.recovering());
        for (std::size_t k = 190; k < packets.size(); ++k) {
            c.on_incremental(packets[k], now);
        }
        expect_same_books(c, *reference(packets, packets.size()));
    }
    {
        m3::mdp3_channel c(options);
        recovery_checker checker;
        checker.attach(c, exchange, true);
        c.on_definition(definitions(), 0);
        for (std::size_t k = 0; k < 150; ++k) {
            if (k != 100) {
                c.on_incremental(packets[k], now);
            }
        }
        c.on_snapshot(snapshot_loop(*reference(packets, 180), 180), now);
        for (std::size_t k = 150; k < 190; ++k) {
            if (k != 179 && k != 180) { // 180 and 181, lost on both lines
                c.on_incremental(packets[k], now);
            }
        }
        EXPECT_EQ(checker.recovered, 0U);
        EXPECT_EQ(c.stats().snapshots_too_old, ids.size());
        EXPECT_TRUE(c.recovering());
        c.on_snapshot(snapshot_loop(*reference(packets, 185), 185, 2), now);
        EXPECT_FALSE(c.recovering());
        EXPECT_EQ(checker.recovered, ids.size());
        EXPECT_EQ(checker.last_sequence, 190U);
        for (std::size_t k = 190; k < packets.size(); ++k) {
            c.on_incremental(packets[k], now);
        }
        expect_same_books(c, *reference(packets, packets.size()));
    }
}

// An incremental packet adding order `id` of instrument 101 (47), and 53 chunks of orders.
bytes order_add_packet(std::uint32_t sequence, std::uint64_t id) {
    bytes const entry = sbe{}
                            .u64(id)
                            .u64(id) // priority
                            .i64(static_cast<std::int64_t>(1000 + id) * 250'000'000)
                            .i32(5)
                            .i32(101)
                            .u8(0) // new
                            .u8(static_cast<std::uint8_t>(m3::entry_type::bid))
                            .b;
    return packet(sequence,
                  {message(47, 13, 11, incremental_book_root(), {group(40, {entry}, false)})});
}

bytes order_snapshot(std::uint32_t last, std::uint32_t chunk, std::uint32_t chunks,
                     std::vector<std::uint64_t> const& orders) {
    std::vector<bytes> entries;
    for (std::uint64_t const id : orders) {
        entries.push_back(sbe{}
                              .u64(id)
                              .u64(id)
                              .i64(static_cast<std::int64_t>(1000 + id) * 250'000'000)
                              .i32(5)
                              .u8(static_cast<std::uint8_t>(m3::entry_type::bid))
                              .b);
    }
    sbe p;
    p.u32(chunk).u64(0);
    p.raw(message(53, 13, 28, sbe{}.u32(last).u32(1).i32(101).u32(chunks).u32(chunk).b,
                  {group(29, entries)}));
    return p.b;
}

TEST(Mdp3Channel, AnOrderSnapshotAheadOfTheAppliedPacketsIsKeptUntilItsPacketIsApplied) {
    // A late joiner's first packet is 2; the loop's by-order snapshot of 101 (two chunks) is as
    // of 3: kept, assembled, and committed once packet 3 is applied; a later loop's (as of 4,
    // ahead too) is ignored meanwhile. Packet 4's order is live on top.
    m3::mdp3_channel c;
    c.on_definition(definitions({101}), 0);
    c.on_incremental(order_add_packet(2, 2), 0);
    ASSERT_TRUE(c.recovering());
    c.on_snapshot(order_snapshot(3, 1, 2, {1, 2}), 0);
    c.on_snapshot(order_snapshot(3, 2, 2, {3}), 0);
    c.on_snapshot(order_snapshot(4, 1, 1, {1, 2, 3, 4}), 0);
    EXPECT_EQ(c.stats().snapshots_ahead, 1U); // the later one is not even assembled
    EXPECT_TRUE(c.find(101)->orders_stale);
    c.on_incremental(order_add_packet(3, 3), 0);
    EXPECT_FALSE(c.find(101)->orders_stale);
    EXPECT_EQ(c.stats().order_snapshots_applied, 1U);
    EXPECT_EQ(c.find(101)->orders.size(), 3U);
    c.on_incremental(order_add_packet(4, 4), 0);
    EXPECT_EQ(c.find(101)->orders.size(), 4U);
    EXPECT_NE(c.find(101)->orders.find(4), nullptr);
    EXPECT_EQ(c.stats().order_entries, 1U); // 4 (2 and 3 came before the book was good)
}

TEST(Mdp3Channel, APacketWithAMalformedMessageClaimsNoSequence) {
    // Issue 37.5: line A's copy of packet 51 says its 46 holds 255 entries and holds one; it is
    // refused before it claims MsgSeqNum 51, so line B's good copy is applied, not a duplicate.
    std::vector<bytes> const packets = stream(10, 100);
    m3::mdp3_channel c;
    c.on_definition(definitions(), 0);
    for (std::size_t k = 0; k < 50; ++k) {
        c.on_incremental(packets[k], 0);
    }
    bytes lying = packets[50];
    std::size_t const count_at = m3::packet_header_size + m3::message_header_size + 11 + 2;
    ASSERT_EQ(lying.at(count_at), std::byte{1});
    lying[count_at] = std::byte{255};
    EXPECT_FALSE(m3::validate_packet(lying).has_value());
    c.on_incremental(lying, 0);
    EXPECT_EQ(c.stats().malformed_packets, 1U);
    EXPECT_EQ(c.stats().malformed_messages, 0U);
    EXPECT_EQ(c.next_sequence(), 51U);
    c.on_incremental(packets[50], 0); // line B's copy
    EXPECT_EQ(c.sequencing().duplicates, 0U);
    EXPECT_EQ(c.next_sequence(), 52U);
    for (std::size_t k = 51; k < packets.size(); ++k) {
        c.on_incremental(packets[k], 0);
    }
    EXPECT_FALSE(c.recovering());
    expect_same_books(c, *reference(packets, packets.size()));
}

TEST(Mdp3ChannelEvents, AfterALostPacketNoInstrumentIsUnmarkedAndWrongUntilItsRecovery) {
    // Which instruments a lost packet touched is unknown, and a touched one whose next entry is
    // far off shows no RptSeq gap: at every event from the gap to the recovery, no instrument
    // is both unmarked and different from the exchange's book (live_checked), and each
    // recovers from its snapshot. Twice: a second loss after the first recovery.
    std::vector<bytes> const packets = stream(12, 400);
    exchange_books const exchange = books_after_each(packets);
    auto const [first_lost, first_next] = quiet_after(packets, 100);
    auto const [second_lost, second_next] = quiet_after(packets, 250);
    ASSERT_LT(first_lost, 180U);
    ASSERT_LT(second_lost, 290U);
    m3::mdp3_channel c;
    recovery_checker checker;
    checker.attach(c, exchange, true);
    c.on_definition(definitions(), 0);
    for (std::size_t k = 0; k < 200; ++k) {
        if (k != first_lost) {
            c.on_incremental(packets[k], 0);
        }
    }
    ASSERT_TRUE(c.recovering());
    for (auto const& [instrument, is_stale] : checker.stale) {
        EXPECT_TRUE(is_stale) << instrument;
    }
    c.on_snapshot(snapshot_loop(*reference(packets, 190), 190), 0);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(checker.recovered, ids.size());
    for (std::size_t k = 200; k < 300; ++k) {
        if (k != second_lost) {
            c.on_incremental(packets[k], 0);
        }
    }
    ASSERT_TRUE(c.recovering());
    c.on_snapshot(snapshot_loop(*reference(packets, 295), 295, 2), 0);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(checker.recovered, 2 * ids.size());
    EXPECT_EQ(checker.rebuilt, 2 * ids.size());
    for (std::size_t k = 300; k < packets.size(); ++k) {
        c.on_incremental(packets[k], 0);
    }
    EXPECT_EQ(c.sequencing().gaps, 2U);
    expect_same_books(c, *reference(packets, packets.size()));
}

TEST(Mdp3ChannelEvents, TheLastPacketLostOnBothLinesIsShownByTheLoopAndRecovered) {
    // Issue 37.3: no later packet shows that the stream's last packet was lost; the snapshot
    // loop does (LastMsgSeqNumProcessed past the last packet applied). A packet that comes
    // within loop_ahead_ns fills it; once none came for that long, the packets up to the
    // loop's are lost: a gap (counted in packets), every instrument stale, each recovered from
    // the loop, the events' sequence at the loop's packet.
    std::vector<bytes> const packets = stream(13, 200);
    exchange_books const exchange = books_after_each(packets);
    m3::mdp3_channel_options const options{};
    std::uint64_t const wait = options.loop_ahead_ns;
    m3::mdp3_channel c(options);
    recovery_checker checker;
    checker.attach(c, exchange, true);
    c.on_definition(definitions(), 0);
    std::uint64_t now = 1'000'000'000;
    c.on_time(now); // before the first packet: nothing is awaited
    EXPECT_EQ(c.next_deadline(), 0U);
    EXPECT_FALSE(c.recovering());
    for (std::size_t k = 0; k < 198; ++k) { // MsgSeqNum 1 to 198
        c.on_incremental(packets[k], now);
    }
    // The loop is as of 199, which is on its way and comes in time.
    c.on_snapshot(snapshot_loop(*reference(packets, 199), 199), now);
    EXPECT_EQ(c.next_deadline(), now + wait);
    c.on_time(now + wait - 1);
    c.on_incremental(packets[198], now + wait - 1);
    EXPECT_EQ(c.next_deadline(), 0U);
    c.on_time(now + 10 * wait);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(c.sequencing().gaps, 0U);
    // The last packet (200) is lost on both lines: the loop says 200 from here on.
    now += 20 * wait;
    c.on_snapshot(snapshot_loop(*reference(packets, 200), 200, 2), now);
    c.on_snapshot(snapshot_loop(*reference(packets, 200), 200, 3), now + wait / 2);
    c.on_time(now + wait - 1);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(checker.recovered, 0U);
    c.on_time(now + wait);
    EXPECT_TRUE(c.recovering());
    for (auto const& [instrument, is_stale] : checker.stale) {
        EXPECT_TRUE(is_stale) << instrument;
    }
    EXPECT_EQ(c.sequencing().gaps, 1U);
    EXPECT_EQ(c.sequencing().missing, 1U);
    EXPECT_EQ(c.stats().loop_revealed_gaps, 1U);
    EXPECT_EQ(c.next_sequence(), 201U);
    c.on_snapshot(snapshot_loop(*reference(packets, 200), 200, 4), now + wait + 1);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(checker.recovered, ids.size());
    EXPECT_EQ(checker.last_sequence, 200U);
    expect_same_books(c, *reference(packets, 200));
    // Packet 200 after all, late: it is in the books already.
    c.on_incremental(packets[199], now + wait + 2);
    EXPECT_EQ(c.stats().incremental_packets, 199U);
    EXPECT_EQ(c.sequencing().duplicates, 1U);
    expect_same_books(c, *reference(packets, 200));
}

} // namespace
