// itch_snapshot_sync and write_itch_snapshot: receivers that join a generated stream at arbitrary
// points, from a snapshot of the publisher's book, end with the book of a receiver that saw
// the whole stream; snapshots that are too old, aborted, or newer than what was buffered; live
// gaps while buffering.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/glimpse.hpp>
#include <signet/md/nasdaq/itch_snapshot.hpp>
#include <signet/md/nasdaq/itch_snapshot_sync.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

#include "md_test_support.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
namespace t = signet::md::test;

constexpr std::size_t symbols = 30;
// Books sized for the streams here (at most 4000 live orders): quick to construct.
constexpr itch_order_book_options book{.max_orders = 1 << 14, .index_pages = 64};

std::vector<t::bytes> stream(std::uint64_t seed, std::uint64_t messages) {
    return t::generated_stream(seed, messages, symbols);
}

void expect_same_books(itch_order_book const& got, itch_order_book const& want) {
    t::expect_same_books(got, want, symbols);
}

std::vector<t::bytes> snapshot_after(std::vector<t::bytes> const& all, std::size_t count) {
    return t::snapshot_after(all, count, book);
}

TEST(ItchSnapshot, RebuildsTheBookItWasWrittenFrom) {
    std::vector<t::bytes> const all = stream(3, 20'000);
    itch50_parser original(book);
    for (t::bytes const& m : all) {
        original.on_message(t::view(m));
    }
    itch50_parser rebuilt(book);
    for (t::bytes const& m : snapshot_after(all, all.size())) {
        rebuilt.on_message(t::view(m));
    }
    EXPECT_EQ(rebuilt.stats().malformed_messages, 0U);
    expect_same_books(rebuilt.book(), original.book());
    ASSERT_TRUE(original.book().size() > 100U);
    EXPECT_TRUE(rebuilt.book().check_invariants());
}

// A by-order view of a stream, independent of the book: each price level's queue of live orders
// in time priority (an add joins the back; a replace leaves its place and joins the back of its
// new level with its MPID; executions and cancels keep the place).
class by_order_model {
public:
    struct order {
        std::uint64_t ref;
        std::uint32_t shares;
        std::string mpid; // "" for an unattributed add
        bool operator==(order const&) const = default;
    };
    using level = std::tuple<std::uint16_t, char, std::uint32_t>; // locate, side, price

    void on_message(std::span<std::byte const> m) {
        auto const be = [&](std::size_t at, std::size_t width) {
            std::uint64_t v = 0;
            for (std::size_t i = 0; i < width; ++i) {
                v = v << 8 | std::to_integer<std::uint64_t>(m[at + i]);
            }
            return v;
        };
        char const type = static_cast<char>(m[0]);
        if (m.size() < 19) {
            return; // no order reference (system event, ...)
        }
        std::uint64_t const ref = be(11, 8);
        switch (type) {
        case 'A':
        case 'F':
            push({static_cast<std::uint16_t>(be(1, 2)), static_cast<char>(m[19]),
                  static_cast<std::uint32_t>(be(32, 4))},
                 {ref, static_cast<std::uint32_t>(be(20, 4)),
                  type == 'F' ? std::string(reinterpret_cast<char const*>(m.data()) + 36, 4)
                              : std::string()});
            break;
        case 'E':
        case 'C':
        case 'X':
            if (auto* o = find(ref)) {
                o->shares -=
                    std::min<std::uint32_t>(o->shares, static_cast<std::uint32_t>(be(19, 4)));
                if (o->shares == 0) {
                    remove(ref);
                }
            }
            break;
        case 'D':
            remove(ref);
            break;
        case 'U':
            if (auto const it = where_.find(ref); it != where_.end()) {
                level const old = it->second;
                std::string const mpid = find(ref)->mpid;
                remove(ref);
                push({std::get<0>(old), std::get<1>(old), static_cast<std::uint32_t>(be(31, 4))},
                     {be(19, 8), static_cast<std::uint32_t>(be(27, 4)), mpid});
            }
            break;
        default:
            break;
        }
    }
    [[nodiscard]] std::map<level, std::vector<order>> const& levels() const { return levels_; }

private:
    void push(level const& l, order const& o) {
        levels_[l].push_back(o);
        where_[o.ref] = l;
    }
    order* find(std::uint64_t ref) {
        auto const it = where_.find(ref);
        if (it == where_.end()) {
            return nullptr;
        }
        for (order& o : levels_[it->second]) {
            if (o.ref == ref) {
                return &o;
            }
        }
        return nullptr;
    }
    void remove(std::uint64_t ref) {
        auto const it = where_.find(ref);
        if (it == where_.end()) {
            return;
        }
        std::vector<order>& q = levels_[it->second];
        std::erase_if(q, [&](order const& o) { return o.ref == ref; });
        if (q.empty()) {
            levels_.erase(it->second);
        }
        where_.erase(it);
    }
    std::map<level, std::vector<order>> levels_;
    std::map<std::uint64_t, level> where_;
};

std::vector<t::bytes> snapshot_with_origins(std::vector<t::bytes> const& all) {
    itch50_parser publisher(book);
    itch_snapshot_state state(book.max_orders);
    for (t::bytes const& m : all) {
        publisher.on_message(t::view(m));
        state.on_message(t::view(m));
    }
    std::vector<t::bytes> out;
    (void)write_itch_snapshot(publisher.book(), &state,
                              [&](auto m) { out.emplace_back(m.begin(), m.end()); });
    return out;
}

TEST(ItchSnapshot, KeepsEachLevelsQueueInTimePriorityAndTheAttribution) {
    // References out of time order, a partial execution (keeps its place), a replace (goes to
    // the back, keeps its MPID) and a delete: the snapshot rebuilds every queue as it was.
    std::vector<t::bytes> const stream{
        t::directory(1, "TEST"),
        t::add(1, 50, 'B', 100, 1000),
        t::add_mpid(1, 10, 'B', 200, 1000, "MSCO"),
        t::add(1, 30, 'B', 300, 1000),
        t::add(1, 20, 'B', 400, 1000),
        t::executed(30, 100),         // 30 keeps its place with 200 left
        t::replace(10, 5, 250, 1000), // 10 leaves; 5 joins the back, still MSCO's
        t::delete_order(20),
        t::add_mpid(1, 1, 'S', 100, 1100, "UBSS"),
        t::add(1, 2, 'S', 100, 1100),
    };
    by_order_model from_start;
    for (t::bytes const& m : stream) {
        from_start.on_message(t::view(m));
    }
    std::vector<t::bytes> const snapshot = snapshot_with_origins(stream);
    by_order_model rebuilt;
    std::vector<std::pair<std::uint64_t, char>> adds; // as the snapshot sends them
    for (t::bytes const& m : snapshot) {
        rebuilt.on_message(t::view(m));
        if (m[0] == std::byte{'A'} || m[0] == std::byte{'F'}) {
            adds.emplace_back(load_be64(m.data() + itch50::field::order_ref),
                              static_cast<char>(m[0]));
        }
    }
    EXPECT_EQ(rebuilt.levels(), from_start.levels());
    using add = std::pair<std::uint64_t, char>;
    EXPECT_EQ(adds, (std::vector<add>{{50, 'A'}, {30, 'A'}, {5, 'F'}, {1, 'F'}, {2, 'A'}}));
    auto const bids = from_start.levels().at({1, 'B', 1000});
    ASSERT_EQ(bids.size(), 3U);
    EXPECT_EQ(bids[2], (by_order_model::order{5, 250, "MSCO"}));
}

TEST(ItchSnapshot, AByOrderBookFromTheSnapshotEqualsTheFromStartOne) {
    std::vector<t::bytes> const all = stream(21, 30'000);
    by_order_model from_start;
    for (t::bytes const& m : all) {
        from_start.on_message(t::view(m));
    }
    by_order_model rebuilt;
    std::size_t attributed = 0;
    for (t::bytes const& m : snapshot_with_origins(all)) {
        rebuilt.on_message(t::view(m));
        attributed += m[0] == std::byte{'F'} ? 1U : 0U;
    }
    EXPECT_EQ(rebuilt.levels(), from_start.levels());
    EXPECT_GT(attributed, 0U);
}

TEST(ItchSnapshot, CarriesTheSystemEventDirectoryTradingActionAndRegShoAsReceived) {
    std::vector<t::bytes> const all = stream(9, 3000);
    itch50_parser publisher(book);
    itch_snapshot_state state;
    std::map<std::pair<char, std::uint16_t>, t::bytes> last; // the stream's last of each kind
    t::bytes system_event;
    for (auto const& m : all) {
        publisher.on_message(t::view(m));
        state.on_message(t::view(m));
        char const type = static_cast<char>(m[0]);
        if (type == 'S') {
            system_event = m;
        } else if (type == 'R' || type == 'H' || type == 'Y') {
            last[{type, itch50::stock_locate(t::view(m))}] = m;
        }
    }
    ASSERT_FALSE(system_event.empty());
    std::vector<t::bytes> snapshot;
    (void)write_itch_snapshot(publisher.book(), &state,
                              [&](auto m) { snapshot.emplace_back(m.begin(), m.end()); });
    ASSERT_FALSE(snapshot.empty());
    EXPECT_EQ(snapshot.front(), system_event);
    std::size_t kept = 0;
    for (auto const& m : snapshot) {
        char const type = static_cast<char>(m[0]);
        if (type == 'R' || type == 'H' || type == 'Y') {
            auto const it = last.find({type, itch50::stock_locate(t::view(m))});
            ASSERT_NE(it, last.end()) << type;
            EXPECT_EQ(m, it->second) << "the " << type << " message is the one received";
            ++kept;
        }
    }
    EXPECT_EQ(kept, last.size()) << "every stock's directory, trading action and Reg SHO";
    itch50_parser rebuilt(book);
    for (auto const& m : snapshot) {
        rebuilt.on_message(t::view(m));
    }
    expect_same_books(rebuilt.book(), publisher.book());
}

// Joins at `join` (0-based index of the first live message seen), the snapshot taken by the
// publisher after `snapshot_at` messages and loaded while live messages keep arriving.
void late_join(std::vector<t::bytes> const& all, std::size_t join, std::size_t snapshot_at,
               itch50_parser const& reference) {
    SCOPED_TRACE("join " + std::to_string(join) + ", snapshot at " + std::to_string(snapshot_at));
    itch_snapshot_sync sync({.book = book});
    sync.start_buffering();
    std::size_t next = join;
    auto const live = [&](std::size_t n) {
        for (std::size_t end = std::min(all.size(), next + n); next < end; ++next) {
            sync.on_live(next + 1, t::view(all[next]));
        }
    };
    live(snapshot_at - join + 300); // the snapshot arrives after the stream moved on
    sync.start_snapshot();
    std::vector<t::bytes> const snapshot = snapshot_after(all, snapshot_at);
    for (std::size_t i = 0; i < snapshot.size(); ++i) {
        sync.on_snapshot(t::view(snapshot[i]));
        if (i % 50 == 0) {
            live(1); // live traffic interleaves with the snapshot
        }
    }
    // GLIMPSE closes the snapshot with End of Snapshot: the sequence to resume from.
    std::array<std::byte, glimpse::end_of_snapshot_length> end{};
    ASSERT_EQ(glimpse::write_end_of_snapshot(end, snapshot_at + 1), end.size());
    ASSERT_EQ(sync.on_snapshot(end), itch_snapshot_sync::end_result::synchronized);
    EXPECT_EQ(sync.phase(), sync_phase::live);
    live(all.size());
    expect_same_books(sync.parser().book(), reference.book());
    EXPECT_EQ(sync.stats().orders_loaded, snapshot.size() - symbols);
    EXPECT_GT(sync.stats().replayed_messages, 0U);
    // Sequences join + 1 ..= snapshot_at were buffered and are in the snapshot.
    EXPECT_EQ(sync.stats().covered_messages, snapshot_at - join);
}

TEST(SnapshotSync, LateJoinersAtFiveRandomPointsEndWithTheSameBooks) {
    std::vector<t::bytes> const all = stream(5, 60'000);
    itch50_parser reference(book);
    for (t::bytes const& m : all) {
        reference.on_message(t::view(m));
    }
    std::uint64_t const seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 5; ++i) {
        std::size_t const join = rng() % (all.size() - 2000);
        late_join(all, join, join + rng() % 1000, reference);
    }
}

TEST(SnapshotSync, ASnapshotOlderThanTheBufferIsRefusedAndANewerOneTaken) {
    std::vector<t::bytes> const all = stream(7, 20'000);
    itch50_parser reference(book);
    for (t::bytes const& m : all) {
        reference.on_message(t::view(m));
    }
    itch_snapshot_sync sync({.book = book, .buffer_messages = 100, .buffer_bytes = 100 * 64});
    sync.start_buffering();
    for (std::size_t i = 5000; i < 5500; ++i) { // 500 messages into a 100-message buffer
        sync.on_live(i + 1, t::view(all[i]));
    }
    EXPECT_EQ(sync.stats().buffer_evictions, 400U);
    sync.start_snapshot();
    for (t::bytes const& m : snapshot_after(all, 5000)) {
        sync.on_snapshot(t::view(m));
    }
    EXPECT_EQ(sync.end(5001), itch_snapshot_sync::end_result::too_old);
    EXPECT_EQ(sync.phase(), sync_phase::buffering);
    EXPECT_EQ(sync.stats().too_old, 1U);
    sync.start_snapshot(); // a newer snapshot: within what the buffer holds
    for (t::bytes const& m : snapshot_after(all, 5450)) {
        sync.on_snapshot(t::view(m));
    }
    ASSERT_EQ(sync.end(5451), itch_snapshot_sync::end_result::synchronized);
    for (std::size_t i = 5500; i < all.size(); ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    expect_same_books(sync.parser().book(), reference.book());
    EXPECT_EQ(sync.stats().snapshots_started, 2U);
    EXPECT_EQ(sync.stats().snapshots_completed, 1U);
}

TEST(SnapshotSync, AnAbortedSnapshotChangesNothing) {
    std::vector<t::bytes> const all = stream(9, 10'000);
    itch_snapshot_sync sync({.book = book});
    for (std::size_t i = 0; i < 3000; ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    std::size_t const orders = sync.parser().book().size();
    sync.start_snapshot();
    std::vector<t::bytes> const snapshot = snapshot_after(all, 3000);
    for (std::size_t i = 0; i < snapshot.size() / 2; ++i) {
        sync.on_snapshot(t::view(snapshot[i]));
    }
    sync.abort(); // the connection dropped half-way
    EXPECT_EQ(sync.phase(), sync_phase::buffering);
    EXPECT_EQ(sync.parser().book().size(), orders) << "nothing half-applied";
    EXPECT_EQ(sync.stats().aborted, 1U);
    EXPECT_EQ(sync.end(3001), itch_snapshot_sync::end_result::not_loading);
}

TEST(SnapshotSync, ASnapshotNewerThanTheBufferSkipsWhatItHolds) {
    std::vector<t::bytes> const all = stream(11, 10'000);
    itch50_parser reference(book);
    for (t::bytes const& m : all) {
        reference.on_message(t::view(m));
    }
    itch_snapshot_sync sync({.book = book});
    sync.start_buffering();
    for (std::size_t i = 2000; i < 2100; ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    sync.start_snapshot();
    for (t::bytes const& m : snapshot_after(all, 2500)) { // ahead of the live stream
        sync.on_snapshot(t::view(m));
    }
    ASSERT_EQ(sync.end(2501), itch_snapshot_sync::end_result::synchronized);
    for (std::size_t i = 2100; i < all.size(); ++i) { // 2101..2500 are in the snapshot
        sync.on_live(i + 1, t::view(all[i]));
    }
    expect_same_books(sync.parser().book(), reference.book());
    EXPECT_EQ(sync.stats().replayed_messages, 0U);
    // 2001..2100 were buffered, 2101..2500 arrived after: all in the snapshot.
    EXPECT_EQ(sync.stats().covered_messages, 500U);
}

TEST(SnapshotSync, ASnapshotFarBeyondTheStreamIsRefusedAndNothingChanges) {
    std::vector<t::bytes> const all = stream(13, 10'000);
    itch50_parser reference(book);
    for (t::bytes const& m : all) {
        reference.on_message(t::view(m));
    }
    itch_snapshot_sync sync({.book = book, .max_ahead = 1000});
    sync.start_buffering();
    for (std::size_t i = 2000; i < 2100; ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    sync.stream_position(2105); // a heartbeat: the stream is at 2105
    EXPECT_EQ(sync.stream_next(), 2105U);
    std::vector<t::bytes> const snapshot = snapshot_after(all, 2100);
    // One past the allowance is refused; the fresh book is dropped, the buffer kept.
    sync.start_snapshot();
    for (t::bytes const& m : snapshot) {
        sync.on_snapshot(t::view(m));
    }
    EXPECT_EQ(sync.end(2105 + 1001), itch_snapshot_sync::end_result::future);
    EXPECT_EQ(sync.phase(), sync_phase::buffering);
    EXPECT_EQ(sync.stats().future, 1U);
    EXPECT_EQ(sync.stats().last_future_resume, 3106U);
    EXPECT_EQ(sync.stats().snapshots_completed, 0U);
    EXPECT_EQ(sync.buffer_first(), 2001U) << "the buffered live messages are kept";
    // A trillion ahead, the probe's server: refused too.
    sync.start_snapshot();
    EXPECT_EQ(sync.end(1'000'000'000'000), itch_snapshot_sync::end_result::future);
    // The right snapshot then synchronizes with nothing lost.
    sync.start_snapshot();
    for (t::bytes const& m : snapshot) {
        sync.on_snapshot(t::view(m));
    }
    ASSERT_EQ(sync.end(2101), itch_snapshot_sync::end_result::synchronized);
    for (std::size_t i = 2100; i < all.size(); ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    expect_same_books(sync.parser().book(), reference.book());
    EXPECT_EQ(sync.stats().future, 2U);
    EXPECT_EQ(sync.stats().covered_messages, 100U);
}

TEST(SnapshotSync, WithinTheAllowanceASnapshotAheadOfTheStreamIsTaken) {
    // The server's view runs ahead of what has arrived here (packets in flight): taken, and
    // the live messages it holds are skipped as they arrive, counted.
    std::vector<t::bytes> const all = stream(17, 10'000);
    itch50_parser reference(book);
    for (t::bytes const& m : all) {
        reference.on_message(t::view(m));
    }
    itch_snapshot_sync sync({.book = book, .max_ahead = 1000});
    sync.start_buffering();
    for (std::size_t i = 2000; i < 2100; ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    sync.start_snapshot();
    for (t::bytes const& m : snapshot_after(all, 3100)) { // 1000 beyond the stream's 2101
        sync.on_snapshot(t::view(m));
    }
    ASSERT_EQ(sync.end(3101), itch_snapshot_sync::end_result::synchronized);
    for (std::size_t i = 2100; i < all.size(); ++i) {
        sync.on_live(i + 1, t::view(all[i]));
    }
    expect_same_books(sync.parser().book(), reference.book());
    EXPECT_EQ(sync.stats().covered_messages, 1100U);
}

TEST(Glimpse, EndOfSnapshotCarriesTwentyDigitsRightAligned) {
    std::array<std::byte, 32> out{};
    ASSERT_EQ(glimpse::write_end_of_snapshot(out, 123456789), glimpse::end_of_snapshot_length);
    EXPECT_EQ(std::string(reinterpret_cast<char const*>(out.data()), 21),
              "G" + std::string(11, ' ') + "123456789");
    EXPECT_EQ(glimpse::parse_end_of_snapshot(std::span<std::byte const>(out.data(), 21)),
              std::optional<std::uint64_t>(123456789));
    t::bytes const zeros = t::text_bytes("G00000000000000000042");
    EXPECT_EQ(glimpse::parse_end_of_snapshot(t::view(zeros)), std::optional<std::uint64_t>(42));
    t::bytes const letters = t::text_bytes("G0000000000000000004x");
    EXPECT_FALSE(glimpse::parse_end_of_snapshot(t::view(letters)).has_value());
    EXPECT_FALSE(glimpse::parse_end_of_snapshot(std::span<std::byte const>(out.data(), 20)));
    EXPECT_EQ(glimpse::write_end_of_snapshot(std::span<std::byte>(out.data(), 20), 1), 0U);
}

TEST(SnapshotSync, AMalformedEndOfSnapshotAbortsTheAttempt) {
    itch_snapshot_sync sync({.book = book});
    sync.start_snapshot();
    sync.on_snapshot(t::view(t::directory(1, "AAPL")));
    t::bytes const bad = t::text_bytes("G       not a number");
    EXPECT_EQ(sync.on_snapshot(t::view(bad)), itch_snapshot_sync::end_result::malformed);
    EXPECT_EQ(sync.phase(), sync_phase::buffering);
    EXPECT_EQ(sync.stats().malformed_end, 1U);
    EXPECT_EQ(sync.stats().aborted, 1U);
    EXPECT_EQ(sync.parser().book().symbol(1), "") << "nothing of the snapshot applied";
}

TEST(SnapshotSync, ALiveGapWhileBufferingRestartsTheBuffer) {
    itch_snapshot_sync sync({.book = book});
    sync.start_buffering();
    t::bytes const m = t::delete_order(1);
    sync.on_live(10, t::view(m));
    sync.on_live(11, t::view(m));
    sync.on_live(15, t::view(m));
    EXPECT_EQ(sync.stats().buffer_restarts, 1U);
    EXPECT_EQ(sync.buffer_first(), 15U);
    sync.start_snapshot();
    EXPECT_EQ(sync.end(12), itch_snapshot_sync::end_result::too_old) << "12 to 14 were never seen";
}

} // namespace
