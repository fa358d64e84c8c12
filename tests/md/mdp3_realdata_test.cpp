// CME MDP 3.0 against real packets (../shared/realdata/cme, provenance there; skipped when
// absent). The decoders read what the captures carry (values cross-checked with an independent
// decode of the same bytes), and every channel of CME's certification capture (schema 1
// version 9, 9 channels on lines A and B, 2018-09-12) replays into books with no RptSeq gap.
//
// The replay has no definitions or snapshot loop from CME, so the test makes them from the
// packets themselves: a definition per security id the packets name, and a snapshot loop as of
// the packet before the first one whose books hold exactly the levels and orders the packets
// go on to change or delete (inferred by running each side's updates over unknown levels).
// Each channel's lines A and B are merged by MsgSeqNum, as the sequence arbiter merges them.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cme/mdp3_channel.hpp>

#include "mdp3_test_support.hpp"
#include "support/realdata.hpp"

namespace {

namespace m3 = signet::md::cme;
using namespace signet::md::test::mdp3;
using signet::test::captured_datagram;

constexpr int depth = 10;

std::span<std::byte const> view(bytes const& b) {
    return {b.data(), b.size()};
}

/// The MDIncrementalRefreshVolume37 entries of a packet, decoded by the library.
std::vector<m3::volume_entry> volumes(std::span<std::byte const> packet) {
    std::vector<m3::volume_entry> out;
    m3::packet_walk const walk = m3::for_each_message(packet, [&](m3::message const& m) {
        if (m.template_id == m3::template_id::incremental_volume) {
            auto const v = m3::decode_incremental_volume(m);
            EXPECT_TRUE(v.has_value());
            if (v) {
                v->entries.for_each([&](m3::volume_entry const& e) { out.push_back(e); });
            }
        }
    });
    EXPECT_FALSE(walk.malformed);
    return out;
}

TEST(Mdp3RealData, VolumeEntriesDecodeAsCaptured) {
    std::string const v9 =
        signet::test::realdata("cme/single/v1.9/MdIncrementalRefreshVolume.pcap");
    std::string const v5 =
        signet::test::realdata("cme/single/v1.5/MdIncrementalRefreshVolume.pcap");
    if (v9.empty() || v5.empty()) {
        GTEST_SKIP() << "no real CME captures in ../shared/realdata/ beside the checkout";
    }
    auto const a = signet::test::read_capture(v9);
    ASSERT_EQ(a.size(), 1U);
    auto const from_v9 = volumes(a[0].payload);
    ASSERT_EQ(from_v9.size(), 2U); // instrument 121933's volume after each of its two trades
    EXPECT_EQ(from_v9[0].security_id, 121933);
    EXPECT_EQ(from_v9[0].size, 9541);
    EXPECT_EQ(from_v9[0].rpt_seq, 3072U);
    EXPECT_EQ(from_v9[1].size, 9550);
    EXPECT_EQ(from_v9[1].rpt_seq, 3075U);
    EXPECT_EQ(from_v9[1].action, m3::update_action::new_level);
    auto const b = signet::test::read_capture(v5);
    ASSERT_EQ(b.size(), 1U);
    auto const from_v5 = volumes(b[0].payload);
    ASSERT_EQ(from_v5.size(), 1U);
    EXPECT_EQ(from_v5[0].security_id, 13950);
    EXPECT_EQ(from_v5[0].size, 1340718);
    EXPECT_EQ(from_v5[0].rpt_seq, 20707882U);
}

/// The price of a starting level that must exist but whose price no packet tells.
constexpr std::int64_t unknown_price = 1;

/// A level of an inferred starting book: known once a packet changes or deletes it.
struct inferred_level {
    int origin = -1; ///< index in the starting book; -1: added by a packet
    std::int64_t price = 0;
};

/// What one instrument's starting book must hold for its packets to apply.
struct inferred_instrument {
    std::map<int, std::int64_t> bids, offers; ///< starting level index -> price
    std::vector<inferred_level> bid_now, offer_now;
    std::map<std::uint64_t, m3::order_book_entry> orders; ///< MBO orders live at the start
    std::set<std::uint64_t> added;
    std::uint32_t first_rpt_seq = 0;
    std::uint32_t last_rpt_seq = 0;
    std::int32_t volume = m3::null_int32;
};

void infer_level(inferred_instrument& i, m3::book_entry const& e) {
    bool const bid = e.type == m3::entry_type::bid;
    if (!bid && e.type != m3::entry_type::offer) {
        return;
    }
    auto& now = bid ? i.bid_now : i.offer_now;
    auto& start = bid ? i.bids : i.offers;
    if (now.empty() && start.empty()) {
        for (int k = 0; k < depth; ++k) {
            now.push_back({k, 0}); // unknown levels of the starting book
        }
    }
    std::size_t const at = e.price_level - 1U;
    auto const known = [&](inferred_level const& l, std::int64_t price) {
        if (l.origin >= 0) {
            start.try_emplace(l.origin, price);
        }
    };
    switch (e.action) {
    case m3::update_action::new_level:
        // The levels above it must exist (a new level below a hole is inconsistent).
        for (std::size_t k = 0; k < std::min(at, now.size()); ++k) {
            if (now[k].origin >= 0) {
                start.try_emplace(now[k].origin, unknown_price);
            }
        }
        now.insert(now.begin() + static_cast<std::ptrdiff_t>(std::min(at, now.size())),
                   {-1, e.price});
        if (now.size() > static_cast<std::size_t>(depth)) {
            now.pop_back();
        }
        break;
    case m3::update_action::change:
    case m3::update_action::overlay:
        known(now.at(at), e.price);
        now.at(at) = {-1, e.price};
        break;
    case m3::update_action::remove:
        known(now.at(at), e.price);
        now.erase(now.begin() + static_cast<std::ptrdiff_t>(at));
        break;
    default:
        FAIL() << "an action the capture was not seen to use";
    }
}

/// A SnapshotFullRefresh52 entry of the starting book.
bytes snapshot_level(std::int64_t price, int level, char type) {
    return sbe{}
        .i64(price)
        .i32(1)
        .i32(1)
        .u8(static_cast<std::uint64_t>(level))
        .u16(65535)
        .u8(255)
        .u8(0)
        .u8(static_cast<std::uint8_t>(type))
        .b;
}

struct channel_capture {
    std::vector<bytes> packets; ///< lines A and B merged by MsgSeqNum
    std::map<std::int32_t, inferred_instrument> instruments;
};

channel_capture merge_and_infer(std::vector<captured_datagram const*> const& datagrams) {
    channel_capture c;
    std::map<std::uint32_t, bytes> by_sequence;
    for (auto const* d : datagrams) {
        auto const header = m3::read_packet_header(d->payload);
        EXPECT_TRUE(header.has_value());
        by_sequence.try_emplace(header->sequence, d->payload);
    }
    for (auto& [sequence, packet] : by_sequence) {
        auto const rpt = [&](std::int32_t id, std::uint32_t rpt_seq) -> inferred_instrument& {
            inferred_instrument& i = c.instruments[id];
            if (i.first_rpt_seq == 0) {
                i.first_rpt_seq = rpt_seq;
            }
            i.last_rpt_seq = rpt_seq;
            return i;
        };
        m3::for_each_message(view(packet), [&](m3::message const& m) {
            switch (m.template_id) {
            case m3::template_id::incremental_book:
                m3::decode_incremental_book(m)->entries.for_each([&](m3::book_entry const& e) {
                    infer_level(rpt(e.security_id, e.rpt_seq), e);
                });
                break;
            case m3::template_id::incremental_trade_summary:
                m3::decode_incremental_trade_summary(m)->entries.for_each(
                    [&](m3::trade_entry const& e) { rpt(e.security_id, e.rpt_seq); });
                break;
            case m3::template_id::incremental_volume:
                m3::decode_incremental_volume(m)->entries.for_each([&](m3::volume_entry const& e) {
                    rpt(e.security_id, e.rpt_seq).volume = e.size;
                });
                break;
            case m3::template_id::incremental_order_book:
                m3::decode_incremental_order_book(m)->entries.for_each(
                    [&](m3::order_book_entry const& e) {
                        inferred_instrument& i = c.instruments[e.security_id];
                        if (e.action == m3::update_action::new_level) {
                            i.added.insert(e.order_id);
                        } else if (i.added.count(e.order_id) == 0) {
                            i.orders.try_emplace(e.order_id, e); // live before the capture
                        }
                    });
                break;
            default:
                break;
            }
        });
        c.packets.push_back(std::move(packet));
    }
    return c;
}

TEST(Mdp3RealData, CertificationChannelsReplayWithoutRptSeqGap) {
    std::string const path = signet::test::realdata("cme/Cme.Mdp3.Sbe.v9.1.Example.pcap");
    if (path.empty()) {
        GTEST_SKIP() << "no real CME captures in ../shared/realdata/ beside the checkout";
    }
    auto const datagrams = signet::test::read_capture(path);
    // Channel C's incrementals go to port 14000 + C on line A and 15000 + C on line B.
    std::map<int, std::vector<captured_datagram const*>> channels;
    for (auto const& d : datagrams) {
        channels[d.destination_port % 1000].push_back(&d);
    }
    ASSERT_EQ(channels.size(), 9U);
    for (auto const& [id, lines] : channels) {
        SCOPED_TRACE("channel " + std::to_string(id));
        channel_capture const c = merge_and_infer(lines);
        auto const first = m3::read_packet_header(view(c.packets.front()))->sequence;
        m3::mdp3_channel channel;
        sbe definitions;
        definitions.u32(1).u64(0);
        for (auto const& [security_id, i] : c.instruments) {
            definitions.raw(
                definition_message(security_id, "I" + std::to_string(security_id), depth));
        }
        channel.on_definition(view(definitions.b), 1);
        channel.on_incremental(view(c.packets.front()), 2); // joined late: recovering
        ASSERT_TRUE(channel.recovering());
        sbe loop;
        loop.u32(1).u64(0);
        auto const count = static_cast<std::uint32_t>(c.instruments.size());
        for (auto const& [security_id, i] : c.instruments) {
            std::vector<bytes> levels;
            for (auto const& [side, type] : {std::pair{&i.bids, m3::entry_type::bid},
                                             std::pair{&i.offers, m3::entry_type::offer}}) {
                int const known = side->empty() ? 0 : side->rbegin()->first + 1;
                for (int k = 0; k < known; ++k) {
                    auto const it = side->find(k); // a level no packet touched: any price
                    levels.push_back(snapshot_level(it != side->end() ? it->second : unknown_price,
                                                    k + 1, type));
                }
            }
            std::uint32_t const rpt_seq = i.first_rpt_seq == 0 ? 0 : i.first_rpt_seq - 1;
            loop.raw(message(52, 9, 59,
                             sbe{}.u32(first - 1).u32(count).i32(security_id).u32(rpt_seq).b,
                             {group(22, levels)}));
            std::vector<bytes> orders;
            for (auto const& [order_id, o] : i.orders) {
                orders.push_back(sbe{}
                                     .u64(order_id)
                                     .u64(o.priority)
                                     .i64(o.price)
                                     .i32(o.display_qty)
                                     .u8(static_cast<std::uint8_t>(o.type))
                                     .b);
            }
            loop.raw(message(53, 9, 28,
                             sbe{}.u32(first - 1).u32(count).i32(security_id).u32(1).u32(1).b,
                             {group(29, orders)}));
        }
        channel.on_snapshot(view(loop.b), 3);
        for (std::size_t k = 1; k < c.packets.size(); ++k) {
            channel.on_incremental(view(c.packets[k]), 4);
        }
        m3::mdp3_channel_stats const& s = channel.stats();
        EXPECT_EQ(s.rpt_seq_gaps, 0U);
        EXPECT_EQ(channel.sequencing().gaps, 0U);
        EXPECT_EQ(s.inconsistent_updates, 0U);
        EXPECT_EQ(s.malformed_packets + s.malformed_messages, 0U);
        EXPECT_EQ(s.unknown_messages, 0U);
        EXPECT_EQ(s.recoveries_completed, 1U);
        EXPECT_FALSE(channel.recovering());
        for (auto const& [security_id, i] : c.instruments) {
            m3::mdp3_instrument const* got = channel.find(security_id);
            ASSERT_NE(got, nullptr);
            EXPECT_FALSE(got->stale) << security_id;
            EXPECT_FALSE(got->orders_stale) << security_id;
            if (i.last_rpt_seq != 0) {
                EXPECT_EQ(got->rpt_seq, i.last_rpt_seq) << security_id;
            }
            EXPECT_EQ(got->statistics.volume, i.volume) << security_id;
        }
    }
}

} // namespace
