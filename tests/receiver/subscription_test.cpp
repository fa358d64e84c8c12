// receiver subscriptions on loopback (an ITCH 5.0 feed over MoldUDP64): inline and queued
// subscribers each rebuild the receiver's book from their events alone; a symbol and kind filter
// passes only what it names; a subscriber that sleeps on every event delays neither the book nor
// another subscriber, loses events counted and is told so; wrong subscriptions are refused.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/events.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>
#include <signet/receiver/receiver.hpp>

#include "md/md_test_support.hpp"
#include "receiver/loopback_feed.hpp"
#include "support/stress.hpp"

namespace {

using namespace std::chrono_literals;
namespace t = signet::md::test;
namespace md = signet::md;
using signet::net::udp_endpoint;
using signet::net::udp_socket;
using signet::receiver::delivery_mode;
using signet::receiver::event_view;
using signet::receiver::feed_config;
using signet::receiver::receiver;
using signet::receiver::receiver_config;
using signet::receiver::subscription;
using signet::receiver::nasdaq::moldudp64_protocol;
using signet::receiver::nasdaq::moldudp64_settings;
using signet::test::book_of;
using signet::test::eventually;
using signet::test::one_feed;
using signet::test::send_stream;

// A consumer that knows only the events.
struct rebuilt {
    std::map<std::tuple<std::uint32_t, char, std::int64_t>, std::pair<std::uint64_t, std::uint32_t>>
        levels; // (instrument, side, price) -> (size, orders)
    std::map<std::uint32_t, md::event_bbo> bbo;
    std::vector<std::string> symbols; // of every event
    std::uint64_t events = 0;
    void on(event_view const& v) {
        ++events;
        md::event const& e = v.event;
        if (e.instrument != md::all_instruments) {
            symbols.emplace_back(v.symbol);
        }
        if (e.kind == md::event_kind::level_update) {
            if (e.level.size == 0) {
                levels.erase({e.instrument, e.side, e.level.price});
            } else {
                levels[{e.instrument, e.side, e.level.price}] = {e.level.size, e.level.orders};
            }
        } else if (e.kind == md::event_kind::bbo) {
            bbo[e.instrument] = e.bbo;
        }
    }
};

void expect_the_book(rebuilt const& c, md::nasdaq::itch_order_book const& book) {
    std::size_t levels = 0;
    book.for_each_stock([&](md::nasdaq::stock_view const& s) {
        for (auto [side, list] :
             {std::pair{'B', book.bids(s.locate)}, std::pair{'S', book.asks(s.locate)}}) {
            for (md::nasdaq::itch_price_level const l : list) {
                auto const it = c.levels.find({s.locate, side, l.price});
                ASSERT_NE(it, c.levels.end()) << s.symbol << " " << side << " " << l.price;
                EXPECT_EQ(it->second,
                          (std::pair<std::uint64_t, std::uint32_t>{l.shares, l.orders}));
                ++levels;
            }
        }
    });
    EXPECT_EQ(c.levels.size(), levels);
    EXPECT_GT(levels, 20U);
}

TEST(Subscriptions, InlineAndQueuedSubscribersRebuildTheBookAndFiltersPassWhatTheyName) {
    signet::test::watchdog dog(120s, "InlineAndQueuedSubscribersRebuildTheBook");
    std::vector<t::bytes> const stream = t::generated_stream(41, 20'000, 12);
    std::string const chosen = [&] { // the symbol of the first stock directory
        md::nasdaq::itch50_parser p({.max_orders = 1 << 16, .index_pages = 64});
        for (t::bytes const& m : stream) {
            p.on_message(t::view(m));
        }
        std::string s;
        p.book().for_each_stock([&](md::nasdaq::stock_view const& v) {
            if (s.empty()) {
                s = std::string(v.symbol);
            }
        });
        return s.substr(0, s.find(' '));
    }();
    ASSERT_FALSE(chosen.empty());
    receiver r(one_feed(), {.stats_lines = false});
    rebuilt in_line;
    rebuilt queued;
    rebuilt filtered;
    std::vector<md::event_kind> filtered_kinds;
    r.subscribe({.name = "inline", .mode = delivery_mode::inline_call},
                [&](event_view const& v) { in_line.on(v); });
    r.subscribe({.name = "queued", .queue_capacity = 1 << 20},
                [&](event_view const& v) { queued.on(v); });
    r.subscribe({.name = "bbo-trades",
                 .symbols = {chosen},
                 .kinds = md::event_mask::of({md::event_kind::bbo, md::event_kind::trade})},
                [&](event_view const& v) {
                    filtered.on(v);
                    filtered_kinds.push_back(v.event.kind);
                });
    r.start();
    send_stream(r, stream);
    r.stop();

    expect_the_book(in_line, book_of(r));
    expect_the_book(queued, book_of(r));
    EXPECT_EQ(queued.events, in_line.events);
    EXPECT_EQ(r.subscriber(0).delivered, in_line.events);
    EXPECT_EQ(r.subscriber(1).delivered, queued.events);
    EXPECT_EQ(r.subscriber(1).dropped, 0U);
    // The filtered one: its symbol only, bbos and trades only, the last bbo the book's.
    ASSERT_FALSE(filtered_kinds.empty());
    for (md::event_kind k : filtered_kinds) {
        EXPECT_TRUE(k == md::event_kind::bbo || k == md::event_kind::trade) << md::to_string(k);
    }
    for (std::string const& s : filtered.symbols) {
        ASSERT_EQ(s, chosen);
    }
    auto const locate = book_of(r).find_locate(chosen);
    ASSERT_TRUE(locate.has_value());
    md::nasdaq::top_of_book const top = book_of(r).top(*locate);
    md::event_bbo const& last = filtered.bbo.at(*locate);
    EXPECT_EQ(last.bid_price, top.bid_price);
    EXPECT_EQ(last.bid_size, top.bid_shares);
    EXPECT_EQ(last.ask_price, top.ask_price);
    EXPECT_EQ(last.ask_size, top.ask_shares);
    EXPECT_EQ(r.subscriber(2).delivered, filtered_kinds.size());
}

TEST(Subscriptions, ASleepingSubscriberDelaysNeitherTheBookNorAnotherAndIsToldItLostEvents) {
    signet::test::watchdog dog(120s, "ASleepingSubscriberDelaysNeitherTheBookNorAnother");
    std::vector<t::bytes> const stream = t::generated_stream(43, 4'000, 8);
    receiver r(one_feed(), {.stats_lines = false});
    // Counters the handlers write and this thread polls: relaxed (each is read on its own; the
    // receiver's stop() joins the event workers before the final reads).
    std::atomic<std::uint64_t> slow_seen{0};
    std::atomic<std::uint64_t> lost_told{0};
    std::atomic<std::uint64_t> fast_seen{0};
    std::uint64_t inline_seen = 0;
    r.subscribe({.name = "slow", .queue_capacity = 4}, [&](event_view const& v) {
        if (v.event.kind == md::event_kind::events_lost) {
            lost_told.fetch_add(v.event.lost.count, std::memory_order_relaxed);
        }
        slow_seen.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(100ms); // the slow consumer's own work, not a wait
    });
    r.subscribe({.name = "fast"},
                [&](event_view const&) { fast_seen.fetch_add(1, std::memory_order_relaxed); });
    r.subscribe({.name = "count", .mode = delivery_mode::inline_call},
                [&](event_view const&) { ++inline_seen; });
    r.start();
    std::uint64_t const next = send_stream(r, stream);
    // The book and the fast subscriber keep up while the slow one has seen a handful.
    ASSERT_TRUE(eventually([&] { return r.parser(0).live().messages == stream.size(); }));
    ASSERT_TRUE(eventually([&] { return r.subscriber(1).delivered == r.subscriber(2).delivered; }));
    EXPECT_LT(slow_seen.load(std::memory_order_relaxed), 100U);
    EXPECT_GT(r.subscriber(0).dropped, 1000U);
    EXPECT_EQ(r.subscriber(1).dropped, 0U);
    // Once the slow one made room, its next event comes after a notice of what it lost.
    ASSERT_TRUE(eventually([&] { return slow_seen.load(std::memory_order_relaxed) >= 5; }));
    send_stream(r, {t::add(1, 900'000'001, 'B', 100, 1'0000)}, next);
    ASSERT_TRUE(eventually([&] { return r.subscriber(0).lost_notices == 1; }));
    r.stop();
    // Every drop is told: in a notice while running, or in the last one stop() hands over.
    EXPECT_EQ(r.subscriber(0).dropped, lost_told.load(std::memory_order_relaxed));
    EXPECT_GT(lost_told.load(std::memory_order_relaxed), 1000U);
    EXPECT_EQ(r.subscriber(1).delivered, inline_seen);
    EXPECT_EQ(fast_seen.load(std::memory_order_relaxed), inline_seen);
}

TEST(Subscriptions, ABboConflatingSubscriberGetsEachInstrumentsLatestBbo) {
    signet::test::watchdog dog(120s, "ABboConflatingSubscriber");
    std::vector<t::bytes> const stream = t::generated_stream(45, 6'000, 6);
    receiver r(one_feed(), {.stats_lines = false});
    std::atomic<bool> release{false};
    std::map<std::uint32_t, md::event_bbo> latest;
    r.subscribe({.name = "conflated",
                 .kinds = md::event_mask::of({md::event_kind::bbo}),
                 .queue_capacity = 16,
                 .conflate_bbo = true},
                [&](event_view const& v) {
                    while (!release.load(std::memory_order_acquire)) { // held until the end
                        std::this_thread::yield();
                    }
                    if (v.event.kind == md::event_kind::bbo) {
                        latest[v.event.instrument] = v.event.bbo;
                    }
                });
    r.start();
    std::uint64_t const next = send_stream(r, stream);
    release.store(true, std::memory_order_release);
    // Once the queue is drained, one more packet: the producer hands over what it kept.
    ASSERT_TRUE(eventually([&] { return r.subscriber(0).delivered >= 16; }));
    send_stream(r, {t::directory(900, "ZZZZ")}, next);
    r.stop();
    auto const s = r.subscriber(0);
    EXPECT_GT(s.conflated, 100U);
    EXPECT_EQ(s.dropped, 0U) << "bbos are kept, never dropped";
    book_of(r).for_each_stock([&](md::nasdaq::stock_view const& v) {
        auto const it = latest.find(v.locate);
        if (v.locate == 900) {
            return; // the last directory's stock: never quoted
        }
        ASSERT_NE(it, latest.end()) << v.symbol;
        EXPECT_EQ(it->second.bid_price, v.top.bid_price) << v.symbol;
        EXPECT_EQ(it->second.ask_price, v.top.ask_price) << v.symbol;
        EXPECT_EQ(it->second.bid_size, v.top.bid_shares) << v.symbol;
        EXPECT_EQ(it->second.ask_size, v.top.ask_shares) << v.symbol;
    });
}

TEST(Subscriptions, WrongSubscriptionsAreRefused) {
    receiver_config config = one_feed();
    config.feeds.push_back(config.feeds.front());
    config.feeds.back().name = "second";
    receiver r(config, {.stats_lines = false});
    auto const handler = [](event_view const&) {
    };
    EXPECT_THROW(r.subscribe({.feeds = {"nope"}}, handler), std::invalid_argument);
    EXPECT_THROW(r.subscribe({.mode = delivery_mode::inline_call}, handler), std::invalid_argument);
    EXPECT_NO_THROW(
        r.subscribe({.feeds = {"second"}, .mode = delivery_mode::inline_call}, handler));
    EXPECT_THROW(r.subscribe({.queue_capacity = 0}, handler), std::invalid_argument);
    EXPECT_THROW(r.subscribe({}, nullptr), std::invalid_argument);
    r.start();
    EXPECT_THROW(r.subscribe({}, handler), std::logic_error);
    r.stop();
}

} // namespace
