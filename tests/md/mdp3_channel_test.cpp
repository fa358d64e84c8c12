// cme::mdp3_channel: books kept right through late joins, lost packets, old snapshots and channel
// resets — each case against a reference channel that saw every packet from sequence 1. The
// packets come from a seeded generator of MBP updates (new, change, delete at random levels of
// three instruments, depth 3), built byte by byte (mdp3_test_support.hpp). Events: a consumer of
// the channel's events alone ends with its books through loss and late joins, and sees each
// recovery as stale -> snapshot (clear, the book) -> recovered; trades and definitions.
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

bytes definitions() {
    sbe all;
    all.u32(1).u64(0); // packet header of the definition feed
    for (std::int32_t const id : ids) {
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

// One loop of the market recovery feed: SnapshotFullRefresh52 of every instrument of `at`,
// valid as of incremental packet `last`.
bytes snapshot_loop(m3::mdp3_channel const& at, std::uint32_t last,
                    std::uint32_t loop_sequence = 1) {
    sbe p;
    p.u32(loop_sequence).u64(0);
    at.for_each_instrument([&](m3::mdp3_instrument const& i) {
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
        bytes root = sbe{}.u32(last).u32(at.instrument_count()).i32(i.security_id).u32(i.rpt_seq).b;
        p.raw(message(52, 13, 59, root, {group(22, entries)}));
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

TEST(Mdp3Channel, ALostPacketRecoversTheInstrumentItHeldWhileTheOthersGoOn) {
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
    EXPECT_GE(c.stats().rpt_seq_gaps, 1U);
    // The instruments the lost packet did not touch kept up.
    auto const at_200 = reference(packets, 200);
    std::size_t stale = 0;
    c.for_each_instrument([&](m3::mdp3_instrument const& i) {
        if (i.stale) {
            ++stale;
        } else {
            EXPECT_EQ(i.rpt_seq, at_200->find(i.security_id)->rpt_seq) << i.security_id;
        }
    });
    EXPECT_EQ(stale, 1U);
    c.on_snapshot(snapshot_loop(*reference(packets, 180), 180), 0);
    EXPECT_FALSE(c.recovering());
    EXPECT_EQ(c.stats().snapshots_applied, 1U);
    EXPECT_EQ(c.stats().snapshots_confirmed, ids.size() - 1);
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

TEST(Mdp3ChannelEvents, ALostPacketsInstrumentGoesStaleThenRecoversAndTheEventsRebuildTheBooks) {
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
    EXPECT_EQ(recovered, 1U); // the lost packet's instrument only
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

} // namespace
