// pitch_book: what each PITCH message does to the books and which events it emits; units
// apart (a Unit Clear or a stale unit touches only its own symbols); what it refuses.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cboe/pitch_book.hpp>

namespace {

namespace cb = signet::md::cboe;
namespace mt = cb::message_type;
using signet::md::event;
using signet::md::event_kind;

struct recorder final : signet::md::event_sink {
    void on_event(event const& e) noexcept override { events.push_back(e); }
    std::vector<event_kind> kinds() const {
        std::vector<event_kind> k;
        for (event const& e : events) {
            k.push_back(e.kind);
        }
        return k;
    }
    std::vector<event> events;
};

cb::message add(std::uint64_t id, char side, std::uint32_t quantity, std::int64_t price,
                char const* symbol) {
    cb::message m;
    m.type = mt::add_order_long;
    m.order_id = id;
    m.side = side;
    m.quantity = quantity;
    m.price = price;
    m.symbol = cb::make_symbol(symbol);
    return m;
}

cb::message by_id(std::uint8_t type, std::uint64_t id, std::uint32_t quantity = 0,
                  std::int64_t price = 0) {
    cb::message m;
    m.type = type;
    m.order_id = id;
    m.quantity = quantity;
    m.price = price;
    return m;
}

TEST(PitchBook, OrdersMoveTheLevelsAndEmitTheirEvents) {
    cb::pitch_book book;
    recorder r;
    book.set_event_sink(&r);
    book.apply(1, 1, add(10, 'B', 300, 200000, "ABC"), 5);
    book.apply(1, 2, add(11, 'B', 100, 199900, "ABC"), 5);
    book.apply(1, 3, add(12, 'S', 200, 200100, "ABC"), 5);
    std::uint32_t const abc = book.find(cb::make_symbol("ABC")).value();
    EXPECT_EQ(book.top(abc), (signet::md::nasdaq::top_of_book{200000, 300, 200100, 200}));
    EXPECT_EQ(r.kinds().front(), event_kind::instrument_definition);
    EXPECT_EQ(r.events.front().definition.price_exponent, -4);

    r.events.clear();
    book.apply(1, 4, by_id(mt::order_executed, 10, 100), 6); // 200 left at the best bid
    EXPECT_EQ(book.top(abc).bid_shares, 200U);
    EXPECT_EQ(r.kinds(), (std::vector<event_kind>{event_kind::order_execute, event_kind::trade,
                                                  event_kind::level_update, event_kind::bbo}));
    EXPECT_EQ(r.events[0].execute.remaining, 200U);
    EXPECT_EQ(r.events[1].trade.price, 200000);
    EXPECT_EQ(r.events[0].sequence, 4U);
    EXPECT_EQ(r.events[0].receive_ns, 6U);

    // Executed at another price with a stated remainder: the remainder is the order's size.
    cb::message at_price = by_id(mt::order_executed_at_price, 10, 50, 200050);
    at_price.remaining = 20;
    book.apply(1, 5, at_price, 6);
    EXPECT_EQ(book.top(abc).bid_shares, 20U);
    EXPECT_EQ(book.instrument(abc)->last_price, 200050);
    EXPECT_EQ(book.instrument(abc)->volume, 150U);

    // Modify keeps the id: the order moves to its new price and size.
    book.apply(1, 6, by_id(mt::modify_order_long, 12, 500, 200200), 7);
    EXPECT_EQ(book.top(abc).ask_price, 200200U);
    EXPECT_EQ(book.top(abc).ask_shares, 500U);
    book.apply(1, 7, by_id(mt::reduce_size_long, 12, 100), 7);
    EXPECT_EQ(book.top(abc).ask_shares, 400U);
    book.apply(1, 8, by_id(mt::delete_order, 12), 7);
    EXPECT_EQ(book.top(abc).ask_shares, 0U);
    EXPECT_EQ(book.order_count(abc), 2U);

    cb::pitch_book_stats const& s = book.stats();
    EXPECT_EQ(s.adds, 3U);
    EXPECT_EQ(s.executions, 2U);
    EXPECT_EQ(s.modifies, 1U);
    EXPECT_EQ(s.reductions, 1U);
    EXPECT_EQ(s.deletes, 1U);
    EXPECT_EQ(s.unknown_orders, 0U);
}

TEST(PitchBook, RefusesWhatItCannotHoldAndCountsIt) {
    cb::pitch_book book({.max_orders = 2, .max_instruments = 1});
    book.apply(1, 1, add(1, 'B', 1, 100, "A"), 0);
    book.apply(1, 2, add(1, 'B', 1, 100, "A"), 0);           // the same id again
    book.apply(1, 3, add(2, 'B', 1, 5'000'000'000, "A"), 0); // above the 32-bit price range
    book.apply(1, 4, add(3, 'B', 1, 100, "B"), 0);           // a second symbol: none left
    book.apply(1, 5, by_id(mt::delete_order, 99), 0);        // no such order
    book.apply(1, 6, add(4, 'S', 1, 100, "A"), 0);
    book.apply(1, 7, add(5, 'S', 1, 100, "A"), 0); // a third live order
    cb::pitch_book_stats const& s = book.stats();
    EXPECT_EQ(s.duplicate_orders, 1U);
    EXPECT_EQ(s.price_out_of_range, 1U);
    EXPECT_EQ(s.instruments_full, 1U);
    EXPECT_EQ(s.unknown_orders, 1U);
    EXPECT_EQ(s.book_full, 1U);
    EXPECT_EQ(s.adds, 2U);
}

TEST(PitchBook, UnitClearAndStalenessTouchOnlyTheirUnit) {
    cb::pitch_book book;
    recorder r;
    book.set_event_sink(
        &r, signet::md::event_mask::of({event_kind::book_clear, event_kind::instrument_stale,
                                        event_kind::instrument_recovered}));
    book.apply(1, 1, add(1, 'B', 100, 100, "ONE"), 0);
    book.apply(2, 1, add(2, 'B', 100, 100, "TWO"), 0);
    book.apply(2, 2, add(3, 'S', 100, 200, "TWO"), 0);
    std::uint32_t const one = book.find(cb::make_symbol("ONE")).value();
    std::uint32_t const two = book.find(cb::make_symbol("TWO")).value();
    cb::message clear;
    clear.type = mt::unit_clear;
    book.apply(2, 3, clear, 0);
    EXPECT_EQ(book.order_count(two), 0U);
    EXPECT_EQ(book.order_count(one), 1U);
    ASSERT_EQ(r.events.size(), 1U);
    EXPECT_EQ(r.events[0].kind, event_kind::book_clear);
    EXPECT_EQ(r.events[0].instrument, two);

    r.events.clear();
    book.set_stale(1, true, 2, 0);
    book.set_stale(1, true, 2, 0); // no change: nothing emitted
    EXPECT_TRUE(book.unit(1).stale);
    EXPECT_FALSE(book.unit(2).stale);
    book.set_stale(1, false, 3, 0);
    ASSERT_EQ(r.events.size(), 2U);
    EXPECT_EQ(r.events[0].kind, event_kind::instrument_stale);
    EXPECT_EQ(r.events[0].instrument, one);
    EXPECT_EQ(r.events[1].kind, event_kind::instrument_recovered);
}

TEST(PitchBook, TradesAndStatusNameTheirSymbol) {
    cb::pitch_book book;
    recorder r;
    book.set_event_sink(&r);
    cb::message status;
    status.type = mt::trading_status;
    status.symbol = cb::make_symbol("XYZ");
    status.status = 'H';
    book.apply(3, 1, status, 0);
    cb::message trade;
    trade.type = mt::trade_short;
    trade.symbol = cb::make_symbol("XYZ");
    trade.quantity = 100;
    trade.price = 150000;
    trade.execution_id = 77;
    book.apply(3, 2, trade, 0);
    std::uint32_t const xyz = book.find(cb::make_symbol("XYZ")).value();
    EXPECT_EQ(book.instrument(xyz)->status, 'H');
    EXPECT_EQ(book.instrument(xyz)->unit, 3);
    EXPECT_EQ(book.instrument(xyz)->volume, 100U);
    EXPECT_EQ(r.kinds(), (std::vector<event_kind>{event_kind::instrument_definition,
                                                  event_kind::trading_status, event_kind::trade}));
    EXPECT_EQ(r.events[1].status.state, signet::md::trading_state::halted);
    EXPECT_EQ(r.events[2].trade.match, 77U);
}

} // namespace
