// Differential test: a generated ITCH 5.0 day, with forged messages mixed in (unknown and
// duplicate references, replaces onto live references, stray references far ahead and far
// behind, old references reused), played into itch50_parser's order_book and into a
// deliberately simple reference book (std::map per side); full depth of every stock, order
// counts, tops and the validation counters compared at checkpoints.
//
// The book options are chosen so that every path of the order store runs: pages falling
// sparse and moving to the table, directory collisions, no free page (index_pages small), and
// a full book (max_orders below the live count).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_order_book.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

#include "md_test_support.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using signet::publisher::nasdaq::itch_generator;
using signet::publisher::nasdaq::itch_generator_options;
namespace t = signet::md::test;
namespace f = itch50::field;

/// The order book's rules, written for clarity: one std::map of orders, one std::map of
/// levels per stock and side.
class reference_book {
public:
    explicit reference_book(std::size_t capacity)
        : capacity_(capacity) {}

    void on_message(std::span<std::byte const> m) {
        char const type = itch50::message_type(m);
        std::byte const* p = m.data();
        switch (type) {
        case 'A':
        case 'F': {
            auto const side = static_cast<char>(p[f::side]);
            add(itch50::stock_locate(m), load_be64(p + f::order_ref), side,
                load_be32(p + f::shares), load_be32(p + f::price));
            break;
        }
        case 'E':
        case 'C':
            reduce(load_be64(p + f::order_ref), load_be32(p + f::executed_shares));
            break;
        case 'X':
            reduce(load_be64(p + f::order_ref), load_be32(p + f::cancelled_shares));
            break;
        case 'D': {
            auto const it = orders_.find(load_be64(p + f::order_ref));
            if (it == orders_.end()) {
                ++unknown;
            } else {
                erase(it);
            }
            break;
        }
        case 'U': {
            auto const it = orders_.find(load_be64(p + f::original_ref));
            if (it == orders_.end()) {
                ++unknown;
                break;
            }
            order const original = it->second;
            erase(it);
            add(original.locate, load_be64(p + f::new_ref), static_cast<char>(original.side),
                load_be32(p + f::new_shares), load_be32(p + f::new_price));
            break;
        }
        default:
            break;
        }
    }

    /// Worst first, best last, as order_book::bids/asks.
    [[nodiscard]] std::vector<itch_price_level> side(std::uint16_t locate, char side) const {
        std::vector<itch_price_level> out;
        auto const it = levels_.find({locate, side});
        if (it != levels_.end()) {
            for (auto const& [price, level] : it->second) {
                out.push_back(level);
            }
        }
        if (side == 'S') {
            std::reverse(out.begin(), out.end()); // asks: the highest (worst) first
        }
        return out;
    }
    [[nodiscard]] std::size_t size() const { return orders_.size(); }
    [[nodiscard]] bool live(std::uint64_t ref) const { return orders_.contains(ref); }

    std::uint64_t unknown = 0;
    std::uint64_t duplicate = 0;
    std::uint64_t full = 0;

private:
    using levels = std::map<std::uint32_t, itch_price_level>; // ascending price

    void add(std::uint16_t locate, std::uint64_t ref, char side, std::uint32_t shares,
             std::uint32_t price) {
        if (orders_.contains(ref)) {
            ++duplicate;
            return;
        }
        if (orders_.size() == capacity_) {
            ++full;
            return;
        }
        orders_[ref] = order{ref, locate, static_cast<order_side>(side), shares, price};
        itch_price_level& level = levels_[{locate, side}][price];
        level.price = price;
        ++level.orders;
        level.shares += shares;
    }
    void reduce(std::uint64_t ref, std::uint32_t shares) {
        auto const it = orders_.find(ref);
        if (it == orders_.end()) {
            ++unknown;
            return;
        }
        std::uint32_t const cut = std::min(shares, it->second.shares);
        if (cut == it->second.shares) {
            erase(it);
            return;
        }
        it->second.shares -= cut;
        level_of(it->second).shares -= cut;
    }
    void erase(std::map<std::uint64_t, order>::iterator it) {
        order const& o = it->second;
        levels& side = levels_[{o.locate, static_cast<char>(o.side)}];
        itch_price_level& level = side[o.price];
        level.shares -= o.shares;
        if (--level.orders == 0) {
            side.erase(o.price);
        }
        orders_.erase(it);
    }
    itch_price_level& level_of(order const& o) {
        return levels_[{o.locate, static_cast<char>(o.side)}][o.price];
    }

    std::size_t capacity_;
    std::map<std::uint64_t, order> orders_;
    std::map<std::pair<std::uint16_t, char>, levels> levels_;
};

struct scenario {
    std::uint64_t seed;
    std::size_t symbols;
    std::size_t live_orders;
    std::uint64_t messages;
    itch_order_book_options book;
    /// How the parser gets the messages: one on_message() each; on_messages() in batches of
    /// 1 to 64; or push() (both prefetch ahead).
    enum class path : std::uint8_t { single, batches, pipeline } feed = path::single;
};

/// Forged messages mixed into the generated stream.
class forger {
public:
    forger(std::uint64_t seed, std::size_t symbols)
        : rng_(seed)
        , symbols_(symbols) {}

    /// Watches the generated stream (to know recent and past references).
    void saw(std::span<std::byte const> m) {
        char const type = itch50::message_type(m);
        if (type == 'A' || type == 'F') {
            remember(load_be64(m.data() + f::order_ref));
        } else if (type == 'U') {
            remember(load_be64(m.data() + f::new_ref));
        }
    }

    /// A forged message, or none (empty) most of the time.
    t::bytes next(reference_book const& reference) {
        if (recent_.empty() || rng_() % 40 != 0) {
            return {};
        }
        auto const locate = static_cast<std::uint16_t>(1 + rng_() % symbols_);
        char const side = rng_() % 2 == 0 ? 'B' : 'S';
        auto const price = static_cast<std::uint32_t>(1'000'000 + (rng_() % 64) * 100);
        auto const shares = static_cast<std::uint32_t>(1 + rng_() % 500);
        std::uint64_t const recent = recent_[rng_() % recent_.size()];
        switch (rng_() % 9) {
        case 0: // duplicate add of a recent (probably live) reference
            return t::add(locate, recent, side, shares, price);
        case 1: // unknown references
            return t::executed(unknown_ref_++, shares);
        case 2:
            return t::delete_order(unknown_ref_++);
        case 3: {
            std::uint64_t const original = unknown_ref_++;
            return t::replace(original, unknown_ref_++, shares, price);
        }
        case 4: { // stray far ahead: the same directory entry as the head, or anywhere
            std::uint64_t const ref =
                rng_() % 2 == 0 ? max_ref_ + (1 + rng_() % 3) * (std::uint64_t{4096} << 12)
                                : (std::uint64_t{1} << 40) + rng_() % 100'000;
            strays_.push_back(ref);
            return t::add(locate, ref, side, shares, price);
        }
        case 5: { // a stray goes again
            if (strays_.empty()) {
                return {};
            }
            std::size_t const i = rng_() % strays_.size();
            std::uint64_t const ref = strays_[i];
            strays_[i] = strays_.back();
            strays_.pop_back();
            return rng_() % 2 == 0 ? t::delete_order(ref) : t::executed(ref, shares);
        }
        case 6: { // an old reference, no longer live, reused
            std::uint64_t const ref = 1 + rng_() % max_ref_;
            if (reference.live(ref)) {
                return {};
            }
            strays_.push_back(ref);
            return t::add_mpid(locate, ref, side, shares, price);
        }
        case 7: // a replace onto a live reference: the original goes, the new one is refused
            return t::replace(recent_[rng_() % recent_.size()], recent, shares, price);
        default: // partial execute of a recent order
            return t::cancel(recent, static_cast<std::uint32_t>(1 + rng_() % 50));
        }
    }

private:
    void remember(std::uint64_t ref) {
        max_ref_ = std::max(max_ref_, ref);
        if (recent_.size() < 256) {
            recent_.push_back(ref);
        } else {
            recent_[rng_() % recent_.size()] = ref;
        }
    }

    std::mt19937_64 rng_;
    std::size_t symbols_;
    std::vector<std::uint64_t> recent_;
    std::vector<std::uint64_t> strays_;
    std::uint64_t max_ref_ = 1;
    std::uint64_t unknown_ref_ = std::uint64_t{1} << 50;
};

void expect_same(itch50_parser const& parser, reference_book const& reference, std::size_t symbols,
                 std::uint64_t at) {
    SCOPED_TRACE("after " + std::to_string(at) + " messages");
    itch_order_book const& book = parser.book();
    ASSERT_TRUE(book.check_invariants());
    ASSERT_EQ(book.size(), reference.size());
    EXPECT_EQ(parser.stats().unknown_order_refs, reference.unknown);
    EXPECT_EQ(parser.stats().duplicate_order_refs, reference.duplicate);
    EXPECT_EQ(parser.stats().book_full_drops, reference.full);
    for (std::size_t s = 0; s <= symbols; ++s) {
        auto const locate = static_cast<std::uint16_t>(s);
        std::vector<itch_price_level> const bids = reference.side(locate, 'B');
        std::vector<itch_price_level> const asks = reference.side(locate, 'S');
        ASSERT_EQ(std::vector<itch_price_level>(book.bids(locate).begin(), book.bids(locate).end()),
                  bids)
            << "bids of locate " << locate;
        ASSERT_EQ(std::vector<itch_price_level>(book.asks(locate).begin(), book.asks(locate).end()),
                  asks)
            << "asks of locate " << locate;
        std::uint32_t orders = 0;
        for (itch_price_level const& l : bids) {
            orders += l.orders;
        }
        for (itch_price_level const& l : asks) {
            orders += l.orders;
        }
        EXPECT_EQ(book.order_count(locate), orders) << "locate " << locate;
        top_of_book const top = book.top(locate);
        EXPECT_EQ(top.bid_price, bids.empty() ? 0 : bids.back().price);
        EXPECT_EQ(top.ask_shares, asks.empty() ? 0 : asks.back().shares);
    }
}

void play(scenario const& s) {
    SCOPED_TRACE("seed " + std::to_string(s.seed));
    itch_generator generator({.seed = s.seed,
                              .symbols = s.symbols,
                              .messages = s.messages,
                              .target_live_orders = s.live_orders,
                              .max_live_orders = 2 * s.live_orders});
    itch50_parser parser(s.book);
    reference_book reference(s.book.max_orders);
    forger forge(s.seed ^ 0x5EED, s.symbols);
    std::vector<std::byte> buffer(itch50::max_message_length);
    std::uint64_t played = 0;
    std::size_t most_in_table = 0;
    std::mt19937_64 batch_sizes(s.seed);
    std::vector<t::bytes> pending; // batches: what the parser has not seen yet
    std::size_t batch = 1;
    auto const flush = [&] {
        std::vector<std::span<std::byte const>> views;
        for (t::bytes const& m : pending) {
            views.push_back(t::view(m));
        }
        parser.on_messages(views);
        pending.clear();
        batch = 1 + batch_sizes() % 64;
        parser.flush();
    };
    auto const apply = [&](std::span<std::byte const> m) {
        switch (s.feed) {
        case scenario::path::single:
            parser.on_message(m);
            break;
        case scenario::path::batches:
            pending.emplace_back(m.begin(), m.end());
            if (pending.size() == batch) {
                flush();
            }
            break;
        case scenario::path::pipeline:
            parser.push(m);
            break;
        }
        reference.on_message(m);
        ++played;
        most_in_table = std::max(most_in_table, parser.book().order_store().table_size());
        if (played % 40'000 == 0) {
            flush();
            expect_same(parser, reference, s.symbols, played);
        }
    };
    while (std::size_t const n = generator.next(buffer)) {
        std::span<std::byte const> const m(buffer.data(), n);
        forge.saw(m);
        apply(m);
        t::bytes const forged = forge.next(reference);
        if (!forged.empty()) {
            apply(t::view(forged));
        }
        if (::testing::Test::HasFatalFailure()) {
            return;
        }
    }
    flush();
    expect_same(parser, reference, s.symbols, played);
    // The stream exercised what it was meant to.
    EXPECT_GT(parser.stats().count('h'), 0U);
    EXPECT_GT(parser.stats().count('O'), 0U);
    EXPECT_GT(parser.stats().count('U'), 0U);
    EXPECT_GT(reference.unknown, 0U);
    EXPECT_GT(reference.duplicate, 0U);
    // Both stores held orders: pages, and the table (sparse pages, collisions, strays).
    EXPECT_GT(parser.book().order_store().pages_high_water(), 1U);
    EXPECT_GT(most_in_table, 0U);
}

TEST(OrderBookDifferential, GeneratedDayWithForgedMessagesMatchesTheReference) {
    // Index pages to spare: pages fill, fall sparse and move to the table.
    play({.seed = 11,
          .symbols = 40,
          .live_orders = 3000,
          .messages = 300'000,
          .book = {.max_orders = 16384, .index_pages = 64}});
}

TEST(OrderBookDifferential, BatchesWithPrefetchingMatchTheReference) {
    play({.seed = 14,
          .symbols = 40,
          .live_orders = 3000,
          .messages = 200'000,
          .book = {.max_orders = 16384, .index_pages = 16},
          .feed = scenario::path::batches});
}

TEST(OrderBookDifferential, PipelineMatchesTheReference) {
    play({.seed = 15,
          .symbols = 40,
          .live_orders = 3000,
          .messages = 200'000,
          .book = {.max_orders = 16384, .index_pages = 16},
          .feed = scenario::path::pipeline});
}

TEST(OrderBookDifferential, FewIndexPagesMatchTheReference) {
    // Two pages: most orders live in the table; strays collide in the directory.
    play({.seed = 12,
          .symbols = 20,
          .live_orders = 2000,
          .messages = 150'000,
          .book = {.max_orders = 8192, .index_pages = 2, .level_reserve = 1}});
}

TEST(OrderBookDifferential, FullBookMatchesTheReference) {
    // max_orders below the generator's live count: adds are dropped and counted, and the
    // generator's later messages for them are unknown references on both sides.
    play({.seed = 13,
          .symbols = 30,
          .live_orders = 3000,
          .messages = 150'000,
          .book = {.max_orders = 2500, .index_pages = 16}});
}

TEST(OrderBookDifferential, RandomSeedMatchesTheReference) {
    std::uint64_t const seed = std::random_device{}();
    play({.seed = seed,
          .symbols = 25,
          .live_orders = 2000,
          .messages = 100'000,
          .book = {.max_orders = 8192, .index_pages = 8}});
}

} // namespace
