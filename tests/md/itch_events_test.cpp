// itch50_parser's events: byte-exact ITCH messages -> the expected events (kinds, fields, the
// levels' depths, bbo only when the best moved), and a generated stream whose events alone
// rebuild every level, order and best bid/offer of the parser's book; through a GLIMPSE
// synchronization: stale, then clear, the snapshot's book, recovered, live.
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/events.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_snapshot_sync.hpp>

#include "md_test_support.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
namespace t = signet::md::test;

constexpr itch_order_book_options book{.max_orders = 1 << 14, .index_pages = 64};

struct recorder final : event_sink {
    std::vector<event> events;
    void on_event(event const& e) noexcept override { events.push_back(e); }
    [[nodiscard]] std::vector<event_kind> kinds() const {
        std::vector<event_kind> out;
        for (event const& e : events) {
            out.push_back(e.kind);
        }
        return out;
    }
};

t::bytes trading_action(std::uint16_t locate, char state) {
    t::bytes b = t::itch_message('H', 25, locate);
    t::put_text(b, 11, "TEST", 8);
    b.at(19) = static_cast<std::byte>(state);
    t::put_text(b, 21, "MWCB", 4);
    return b;
}

t::bytes cross(std::uint16_t locate, std::uint64_t shares, std::uint32_t price) {
    t::bytes b = t::itch_message('Q', 40, locate);
    t::put_be(b, 11, shares, 8);
    t::put_text(b, 19, "TEST", 8);
    t::put_be(b, 27, price, 4);
    t::put_be(b, 31, 77, 8);
    b.at(39) = static_cast<std::byte>('O');
    return b;
}

class ItchEvents : public ::testing::Test {
protected:
    ItchEvents() { parser.set_event_sink(&sink); }
    /// The events of one message, given sequence `sequence`.
    std::vector<event> run(t::bytes const& m, std::uint64_t sequence = 1) {
        sink.events.clear();
        parser.on_message(t::view(m), {.sequence = sequence, .receive_ns = 5000 + sequence});
        return sink.events;
    }
    itch50_parser parser{book};
    recorder sink;
};

TEST_F(ItchEvents, DefinitionStatusAndAnAddWithItsLevelAndBbo) {
    std::vector<event> e = run(t::directory(3, "ABCD"), 10);
    ASSERT_EQ(e.size(), 1U);
    EXPECT_EQ(e[0].kind, event_kind::instrument_definition);
    EXPECT_EQ(e[0].instrument, 3U);
    EXPECT_EQ(std::string(e[0].definition.symbol.data()), "ABCD");
    EXPECT_EQ(e[0].definition.price_exponent, -4);
    EXPECT_EQ(e[0].sequence, 10U);
    EXPECT_EQ(e[0].receive_ns, 5010U);
    EXPECT_EQ(e[0].exchange_ns, 34'200'000'000'000U) << "the message's timestamp";

    e = run(trading_action(3, 'H'));
    ASSERT_EQ(e.size(), 1U);
    EXPECT_EQ(e[0].kind, event_kind::trading_status);
    EXPECT_EQ(e[0].status.state, trading_state::halted);
    EXPECT_EQ(e[0].status.code[0], 'H');
    EXPECT_EQ(std::string(e[0].status.reason.data(), 4), "MWCB");

    e = run(t::add_mpid(3, 11, 'B', 100, 10'0000, "MSCO"));
    ASSERT_EQ(e.size(), 3U);
    EXPECT_EQ(e[0].kind, event_kind::order_add);
    EXPECT_EQ(e[0].side, 'B');
    EXPECT_EQ(e[0].order.id, 11U);
    EXPECT_EQ(e[0].order.price, 10'0000);
    EXPECT_EQ(e[0].order.quantity, 100U);
    EXPECT_EQ(std::string(e[0].order.mpid.data(), 4), "MSCO");
    EXPECT_EQ(e[1].kind, event_kind::level_update);
    EXPECT_EQ(e[1].level.price, 10'0000);
    EXPECT_EQ(e[1].level.size, 100U);
    EXPECT_EQ(e[1].level.orders, 1U);
    EXPECT_EQ(e[1].level.depth, 0U);
    EXPECT_EQ(e[2].kind, event_kind::bbo);
    EXPECT_EQ(e[2].bbo.bid_price, 10'0000);
    EXPECT_EQ(e[2].bbo.bid_size, 100U);
    EXPECT_EQ(e[2].bbo.ask_size, 0U);
    for (event const& x : e) {
        EXPECT_EQ(x.instrument, 3U);
    }

    // A worse bid: its level at depth 1, and no bbo (the best did not move).
    e = run(t::add(3, 12, 'B', 50, 9'0000));
    EXPECT_EQ(e.size(), 2U);
    EXPECT_EQ(e[1].level.depth, 1U);
}

TEST_F(ItchEvents, AReplaceThatLeavesTheBestAsItWasIsNoBboChange) {
    run(t::directory(1, "TEST"));
    run(t::add(1, 11, 'B', 300, 10'0000));
    run(t::add(1, 12, 'B', 100, 10'0000));
    // Order 11 leaves the best level and comes back at the same price and size (a new
    // reference, the back of the queue): two level updates, the best bid unchanged.
    std::vector<event> e = run(t::replace(11, 13, 300, 10'0000));
    std::size_t levels = 0;
    for (event const& x : e) {
        EXPECT_NE(x.kind, event_kind::bbo);
        levels += x.kind == event_kind::level_update ? 1 : 0;
    }
    EXPECT_EQ(levels, 2U);
    // At another size it is one.
    e = run(t::replace(13, 14, 200, 10'0000));
    EXPECT_EQ(e.back().kind, event_kind::bbo);
    EXPECT_EQ(e.back().bbo.bid_size, 300U);
}

TEST_F(ItchEvents, ExecutionsCancelsDeletesAndReplaces) {
    run(t::directory(1, "TEST"));
    run(t::add(1, 11, 'S', 300, 10'0000));
    run(t::add(1, 12, 'S', 100, 10'0000));

    std::vector<event> e = run(t::executed(11, 100, 42));
    ASSERT_EQ(e.size(), 4U);
    EXPECT_EQ(e[0].kind, event_kind::order_execute);
    EXPECT_EQ(e[0].execute.id, 11U);
    EXPECT_EQ(e[0].execute.price, 10'0000);
    EXPECT_EQ(e[0].execute.executed, 100U);
    EXPECT_EQ(e[0].execute.remaining, 200U);
    EXPECT_EQ(e[0].execute.match, 42U);
    EXPECT_EQ(e[1].kind, event_kind::trade);
    EXPECT_EQ(e[1].side, 'B') << "the aggressor bought from the resting sell";
    EXPECT_EQ(e[1].trade.quantity, 100U);
    EXPECT_EQ(e[1].trade.order_id, 11U);
    EXPECT_EQ(e[2].kind, event_kind::level_update);
    EXPECT_EQ(e[2].level.size, 300U);
    EXPECT_EQ(e[2].level.orders, 2U);
    EXPECT_EQ(e[3].kind, event_kind::bbo);
    EXPECT_EQ(e[3].bbo.ask_size, 300U);

    // With price, printable: the trade at the execution price; not printable: no trade.
    e = run(t::executed_with_price(11, 50, 10'0100));
    EXPECT_EQ(e[1].kind, event_kind::trade);
    EXPECT_EQ(e[1].trade.price, 10'0100);
    t::bytes quiet = t::executed_with_price(11, 50, 10'0100);
    quiet.at(31) = static_cast<std::byte>('N');
    e = run(quiet);
    EXPECT_EQ(e.size(), 3U);
    EXPECT_EQ(e[0].kind, event_kind::order_execute);
    EXPECT_EQ(e[0].execute.remaining, 100U) << "300 - 100 - 50 - 50";

    e = run(t::cancel(11, 20));
    EXPECT_EQ(e[0].kind, event_kind::order_modify);
    EXPECT_EQ(e[0].order.quantity, 80U);
    e = run(t::cancel(11, 999));
    EXPECT_EQ(e[0].kind, event_kind::order_delete) << "nothing left";

    // A replace at a new price: the old order leaves (level gone: size 0), the new one joins.
    e = run(t::replace(12, 13, 70, 10'0500));
    ASSERT_EQ(e.size(), 5U);
    EXPECT_EQ(e[0].kind, event_kind::order_delete);
    EXPECT_EQ(e[0].order.id, 12U);
    EXPECT_EQ(e[0].flags, event_flag::replace);
    EXPECT_EQ(e[1].kind, event_kind::order_add);
    EXPECT_EQ(e[1].order.id, 13U);
    EXPECT_EQ(e[1].flags, event_flag::replace);
    EXPECT_EQ(e[2].kind, event_kind::level_update);
    EXPECT_EQ(e[2].level.price, 10'0000);
    EXPECT_EQ(e[2].level.size, 0U) << "the old level is gone";
    EXPECT_EQ(e[2].flags, 0U);
    EXPECT_EQ(e[3].level.price, 10'0500);
    EXPECT_EQ(e[3].level.size, 70U);
    EXPECT_EQ(e[4].kind, event_kind::bbo);
    EXPECT_EQ(e[4].bbo.ask_price, 10'0500);

    e = run(t::delete_order(13));
    EXPECT_EQ(e.size(), 3U);
    EXPECT_EQ(e[2].bbo.ask_size, 0U);

    EXPECT_TRUE(run(t::delete_order(99)).empty()) << "an unknown order changes nothing";
}

TEST_F(ItchEvents, TradesOfNonDisplayedOrdersAndCrosses) {
    run(t::directory(1, "TEST"));
    std::vector<event> e = run(t::trade(1, 0, 'B', 300, 10'0000));
    ASSERT_EQ(e.size(), 1U);
    EXPECT_EQ(e[0].kind, event_kind::trade);
    EXPECT_EQ(e[0].trade.quantity, 300U);
    EXPECT_EQ(e[0].trade.match, 5U);
    e = run(cross(1, 1'000'000, 10'0100));
    ASSERT_EQ(e.size(), 1U);
    EXPECT_EQ(e[0].trade.price, 10'0100);
    EXPECT_EQ(e[0].trade.quantity, 1'000'000U);
    EXPECT_EQ(e[0].trade.match, 77U);
}

TEST_F(ItchEvents, WithoutASinkNothingIsEmitted) {
    parser.set_event_sink(nullptr);
    EXPECT_TRUE(run(t::add(1, 11, 'B', 100, 10'0000)).empty());
}

// A consumer that knows only the events: levels from level_update, orders from the order
// events, the best bid/offer from bbo. It checks what it is told at every event: a
// level_update's depth is the number of better levels it knows at that point (a level that
// left: the number it had), a bbo is the best of its levels, and once a message's events are
// over (the next sequence begins) the bbo it last got is still the best of its levels — no
// change of the best goes unreported.
struct rebuilt final : event_sink {
    using level_key = std::tuple<std::uint32_t, char, std::int64_t>;     // instrument, side, price
    std::map<level_key, std::pair<std::uint64_t, std::uint32_t>> levels; // -> size, orders
    std::map<std::uint64_t, std::pair<std::int64_t, std::uint32_t>> orders; // id -> price, qty
    std::map<std::uint32_t, event_bbo> bbo;
    std::vector<event_kind> markers; // clear, snapshot, stale, recovered
    std::uint64_t level_updates = 0;
    std::uint64_t bbo_checks = 0;
    std::uint64_t sequence = 0;
    std::vector<std::uint32_t> touched; // instruments of the current sequence's events

    /// Levels of the side better than `price`.
    [[nodiscard]] std::size_t better(std::uint32_t instrument, char side,
                                     std::int64_t price) const {
        std::size_t n = 0;
        for (auto it = levels.lower_bound({instrument, side, 0});
             it != levels.end() && std::get<0>(it->first) == instrument &&
             std::get<1>(it->first) == side;
             ++it) {
            std::int64_t const p = std::get<2>(it->first);
            if (side == 'B' ? p > price : p < price) {
                ++n;
            }
        }
        return n;
    }
    /// The best (price, size) of a side as the levels say; 0/0 when it is empty.
    [[nodiscard]] std::pair<std::int64_t, std::uint64_t> best(std::uint32_t instrument,
                                                              char side) const {
        std::pair<std::int64_t, std::uint64_t> b{0, 0};
        for (auto it = levels.lower_bound({instrument, side, 0});
             it != levels.end() && std::get<0>(it->first) == instrument &&
             std::get<1>(it->first) == side;
             ++it) {
            std::int64_t const p = std::get<2>(it->first);
            if (b.second == 0 || (side == 'B' ? p > b.first : p < b.first)) {
                b = {p, it->second.first};
            }
        }
        return b;
    }
    void expect_bbo_is_best(std::uint32_t instrument, event_bbo const& got) {
        ++bbo_checks;
        auto const [bid_price, bid_size] = best(instrument, 'B');
        auto const [ask_price, ask_size] = best(instrument, 'S');
        EXPECT_EQ(got.bid_price, bid_price) << "instrument " << instrument << " at " << sequence;
        EXPECT_EQ(got.bid_size, bid_size) << "instrument " << instrument << " at " << sequence;
        EXPECT_EQ(got.ask_price, ask_price) << "instrument " << instrument << " at " << sequence;
        EXPECT_EQ(got.ask_size, ask_size) << "instrument " << instrument << " at " << sequence;
    }
    /// The bbo last reported of every instrument the current sequence touched is its best.
    void end_of_message() {
        for (std::uint32_t const instrument : touched) {
            if (instrument != all_instruments) {
                expect_bbo_is_best(instrument, bbo[instrument]);
            }
        }
        touched.clear();
    }
    void on_event(event const& e) noexcept override {
        if (e.sequence != sequence) {
            end_of_message();
            sequence = e.sequence;
        }
        touched.push_back(e.instrument);
        switch (e.kind) {
        case event_kind::book_clear:
            EXPECT_EQ(e.instrument, all_instruments);
            levels.clear();
            orders.clear();
            bbo.clear();
            touched.clear();
            markers.push_back(e.kind);
            break;
        case event_kind::snapshot_begin:
        case event_kind::snapshot_end:
        case event_kind::instrument_stale:
        case event_kind::instrument_recovered:
            markers.push_back(e.kind);
            break;
        case event_kind::level_update:
            ++level_updates;
            EXPECT_EQ(e.level.depth, better(e.instrument, e.side, e.level.price))
                << "instrument " << e.instrument << " side " << e.side << " price " << e.level.price
                << " size " << e.level.size << " at " << e.sequence;
            if (e.level.size == 0) {
                levels.erase({e.instrument, e.side, e.level.price});
            } else {
                levels[{e.instrument, e.side, e.level.price}] = {e.level.size, e.level.orders};
            }
            break;
        case event_kind::order_add:
        case event_kind::order_modify:
            orders[e.order.id] = {e.order.price, e.order.quantity};
            break;
        case event_kind::order_delete:
            orders.erase(e.order.id);
            break;
        case event_kind::order_execute:
            if (e.execute.remaining == 0) {
                orders.erase(e.execute.id);
            } else {
                orders[e.execute.id].second = e.execute.remaining;
            }
            break;
        case event_kind::bbo:
            expect_bbo_is_best(e.instrument, e.bbo);
            bbo[e.instrument] = e.bbo;
            break;
        default:
            break;
        }
    }
};

void expect_rebuilt(rebuilt& consumer, itch_order_book const& want);

TEST(ItchEventsRebuild, AGeneratedStreamsEventsRebuildTheWholeBook) {
    itch50_parser parser(book);
    rebuilt consumer;
    parser.set_event_sink(&consumer);
    std::vector<t::bytes> const all = t::generated_stream(31, 40'000, 24);
    std::uint64_t sequence = 0;
    for (t::bytes const& m : all) {
        parser.push(t::view(m), {.sequence = ++sequence, .receive_ns = 0}); // the pipelined path
    }
    parser.flush();
    consumer.end_of_message();
    EXPECT_GT(consumer.level_updates, 10'000U);
    EXPECT_GT(consumer.bbo_checks, 10'000U);
    EXPECT_TRUE(parser.book().check_invariants()) << "with tracking: every level's slot too";
    expect_rebuilt(consumer, parser.book());
}

TEST(ItchEventsRebuild, AGlimpseSynchronizationGoesStaleClearsRebuildsAndRecovers) {
    std::vector<t::bytes> const all = t::generated_stream(37, 8'000, 16);
    itch50_parser reference(book);
    for (t::bytes const& m : all) {
        reference.on_message(t::view(m));
    }
    itch_snapshot_sync sync({.book = book});
    rebuilt consumer;
    sync.set_event_sink(&consumer);
    for (std::size_t i = 0; i < 3000; ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    sync.start_buffering(); // a gap the book cannot survive
    for (std::size_t i = 3000; i < 3300; ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    sync.start_snapshot();
    for (t::bytes const& m : t::snapshot_after(all, 3100, book)) {
        sync.on_snapshot(t::view(m));
    }
    ASSERT_EQ(sync.end(3101), itch_snapshot_sync::end_result::synchronized);
    for (std::size_t i = 3300; i < all.size(); ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    EXPECT_EQ(consumer.markers,
              (std::vector<event_kind>{event_kind::instrument_stale, event_kind::snapshot_begin,
                                       event_kind::book_clear, event_kind::snapshot_end,
                                       event_kind::instrument_recovered}));
    expect_rebuilt(consumer, reference.book());
}

void expect_rebuilt(rebuilt& consumer, itch_order_book const& want) {
    std::size_t levels = 0;
    want.for_each_stock([&](stock_view const& s) {
        for (auto [side, list] :
             {std::pair{'B', want.bids(s.locate)}, std::pair{'S', want.asks(s.locate)}}) {
            for (itch_price_level const l : list) {
                auto const it = consumer.levels.find({s.locate, side, l.price});
                ASSERT_NE(it, consumer.levels.end()) << s.symbol << " " << side << " " << l.price;
                EXPECT_EQ(it->second.first, l.shares);
                EXPECT_EQ(it->second.second, l.orders);
                ++levels;
            }
        }
        event_bbo const& b = consumer.bbo[s.locate];
        EXPECT_EQ(b.bid_price, s.top.bid_price);
        EXPECT_EQ(b.bid_size, s.top.bid_shares);
        EXPECT_EQ(b.ask_price, s.top.ask_price);
        EXPECT_EQ(b.ask_size, s.top.ask_shares);
    });
    EXPECT_EQ(consumer.levels.size(), levels) << "no level the book does not have";
    ASSERT_GT(levels, 50U);
    EXPECT_EQ(consumer.orders.size(), want.size());
    want.order_store().for_each(
        [&](std::uint64_t ref, signet::md::nasdaq::detail::order_record const& o) {
            auto const it = consumer.orders.find(ref);
            ASSERT_NE(it, consumer.orders.end()) << ref;
            EXPECT_EQ(it->second.first, o.price);
            EXPECT_EQ(it->second.second, o.shares);
        });
}

TEST(ItchEventsRebuild, EmitBookRebuildsTheBookFromNothing) {
    itch50_parser parser(book);
    for (t::bytes const& m : t::generated_stream(33, 20'000, 16)) {
        parser.on_message(t::view(m));
    }
    rebuilt consumer;
    recorder flags;
    parser.set_event_sink(&consumer);
    parser.emit_book(event_flag::from_snapshot, {});
    EXPECT_EQ(consumer.orders.size(), parser.book().size());
    EXPECT_EQ(consumer.levels.size(), parser.book().level_count());
    parser.set_event_sink(&flags);
    parser.emit_book(event_flag::from_snapshot, {});
    for (event const& e : flags.events) {
        EXPECT_EQ(e.flags, event_flag::from_snapshot);
    }
}

TEST(ItchEventsRebuild, ASinkSetMidStreamReportsTrueDepthsFromItsFirstEvent) {
    // The book keeps its levels' places only while it tracks changes: a sink set on a book
    // already built numbers them all, so the first live events' depths are already right.
    std::vector<t::bytes> const all = t::generated_stream(39, 24'000, 16);
    itch50_parser parser(book);
    std::uint64_t sequence = 0;
    for (std::size_t i = 0; i < all.size() / 2; ++i) {
        parser.on_message(t::view(all[i]), {.sequence = ++sequence, .receive_ns = 0});
    }
    rebuilt consumer;
    parser.set_event_sink(&consumer);
    parser.emit_book(event_flag::from_snapshot, {.sequence = sequence, .receive_ns = 0});
    ASSERT_TRUE(parser.book().check_invariants());
    for (std::size_t i = all.size() / 2; i < all.size(); ++i) {
        parser.on_message(t::view(all[i]), {.sequence = ++sequence, .receive_ns = 0});
    }
    consumer.end_of_message();
    EXPECT_GT(consumer.level_updates, 5'000U);
    EXPECT_TRUE(parser.book().check_invariants());
    expect_rebuilt(consumer, parser.book());
    // Off and on again: the places were not kept meanwhile, and are numbered again.
    parser.set_event_sink(nullptr);
    for (std::size_t i = 0; i < 200; ++i) {
        parser.on_message(t::view(all[i]), {.sequence = ++sequence, .receive_ns = 0});
    }
    parser.set_event_sink(&consumer);
    EXPECT_TRUE(parser.book().check_invariants());
}

TEST(ItchEventsRebuild, OnlyTheKindsAskedForAndTheSameBbo) {
    // A bbo-and-trades subscriber: the bbo events are those of a parser asked for everything,
    // one for one.
    itch50_parser all_kinds(book);
    itch50_parser some(book);
    recorder everything;
    recorder chosen;
    all_kinds.set_event_sink(&everything);
    some.set_event_sink(&chosen, event_mask::of({event_kind::bbo, event_kind::trade}));
    std::uint64_t sequence = 0;
    for (t::bytes const& m : t::generated_stream(35, 30'000, 16)) {
        ++sequence;
        all_kinds.on_message(t::view(m), {.sequence = sequence, .receive_ns = 0});
        some.on_message(t::view(m), {.sequence = sequence, .receive_ns = 0});
    }
    std::vector<event> expected;
    for (event const& e : everything.events) {
        if (e.kind == event_kind::bbo || e.kind == event_kind::trade) {
            expected.push_back(e);
        }
    }
    ASSERT_GT(expected.size(), 1000U);
    for (std::size_t i = 0; i < std::min(expected.size(), chosen.events.size()); ++i) {
        ASSERT_EQ(std::memcmp(&chosen.events[i], &expected[i], sizeof(event)), 0)
            << i << ": kind " << to_string(chosen.events[i].kind) << " vs "
            << to_string(expected[i].kind) << ", sequence " << chosen.events[i].sequence << " vs "
            << expected[i].sequence << ", instrument " << chosen.events[i].instrument;
    }
    ASSERT_EQ(chosen.events.size(), expected.size());
}

TEST(ItchEventsRebuild, BatchesEmitWhatOneMessageACallEmits) {
    // on_messages() runs its own loop with a sink (apply_each<true>): the same events, one for
    // one, as on_message() per message, for every kind and for a bbo-and-trades subscriber
    // (the bbo's own decision without depths), in batches of 1 to 64.
    std::vector<t::bytes> const stream = t::generated_stream(36, 30'000, 16);
    for (event_mask const kinds :
         {event_mask::all(), event_mask::of({event_kind::bbo, event_kind::trade})}) {
        itch50_parser one(book);
        itch50_parser batched(book);
        recorder singles;
        recorder batches;
        one.set_event_sink(&singles, kinds);
        batched.set_event_sink(&batches, kinds);
        std::vector<std::span<std::byte const>> views;
        std::size_t batch = 1;
        for (std::size_t i = 0; i < stream.size(); ++i) {
            one.on_message(t::view(stream[i]));
            views.push_back(t::view(stream[i]));
            if (views.size() == batch || i + 1 == stream.size()) {
                batched.on_messages(views);
                views.clear();
                batch = batch % 64 + 1;
            }
        }
        ASSERT_GT(singles.events.size(), 5'000U);
        ASSERT_EQ(batches.events.size(), singles.events.size());
        for (std::size_t i = 0; i < singles.events.size(); ++i) {
            ASSERT_EQ(std::memcmp(&batches.events[i], &singles.events[i], sizeof(event)), 0)
                << i << ": kind " << to_string(batches.events[i].kind) << " vs "
                << to_string(singles.events[i].kind);
        }
    }
}

TEST(EventKinds, ParsedByNameFromACommaSeparatedList) {
    std::string_view bad;
    auto const mask = parse_event_kinds("bbo,trade,level_update", &bad);
    ASSERT_TRUE(mask.has_value());
    EXPECT_TRUE(mask->has(event_kind::bbo) && mask->has(event_kind::trade) &&
                mask->has(event_kind::level_update));
    EXPECT_FALSE(mask->has(event_kind::order_add));
    EXPECT_FALSE(parse_event_kinds("bbo,nope", &bad).has_value());
    EXPECT_EQ(bad, "nope");
    EXPECT_FALSE(parse_event_kinds("").has_value());
    for (std::size_t k = 0; k < event_kinds; ++k) {
        auto const kind = static_cast<event_kind>(k);
        EXPECT_EQ(parse_event_kind(to_string(kind)), kind);
    }
}

} // namespace
