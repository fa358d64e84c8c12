// The shared-memory segment ([publish] shm): a reader in its own mapping sees the receiver's
// books level by level, the definitions and every event in order; a reader lapped by the writer
// is told and resynchronizes; a restarted receiver replaces the segment and old readers notice;
// readers racing the writer never see a torn slot or event (stress, under ThreadSanitizer).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <signet/md/events.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/receiver/nasdaq/itch_book_levels.hpp>
#include <signet/receiver/receiver.hpp>
#include <signet/receiver/shm_reader.hpp>

#include "md/md_test_support.hpp"
#include "receiver/loopback_feed.hpp"
#include "shm_publisher.hpp"
#include "support/stress.hpp"

namespace {

using namespace std::chrono_literals;
namespace t = signet::md::test;
namespace md = signet::md;
namespace shm = signet::receiver::shm;
using signet::receiver::receiver;
using signet::receiver::receiver_config;
using signet::test::book_of;
using signet::test::one_feed;
using signet::test::send_stream;

std::string segment_name(char const* test) {
    return "signet-test-" + std::string(test) + "-" + std::to_string(::getpid());
}

receiver_config with_shm(std::string const& name, std::size_t events = 1 << 16) {
    receiver_config config = one_feed();
    config.shm = name;
    config.shm_events = events;
    return config;
}

// Removes the segment a test made (a receiver leaves it for readers of the final state).
struct unlink_at_end {
    std::string name;
    ~unlink_at_end() { ::shm_unlink(("/" + name).c_str()); }
};

// A protocol that is only a book (the shm writer reads its levels): no lines, no framing.
class book_only_protocol : public signet::receiver::feed_protocol {
public:
    std::vector<signet::receiver::line_spec> lines() const override { return {}; }
    std::optional<md::sequence_unit> frame(std::span<std::byte const>) const noexcept override {
        return std::nullopt;
    }
    void deliver(signet::receiver::delivery const&) override {}
    signet::receiver::protocol_counters counters() const noexcept override { return {}; }
};

// A protocol with one ask level per instrument, which the test sets as the book changes.
class one_level_protocol final : public book_only_protocol {
public:
    std::array<signet::receiver::book_level, 4> ask{}; // by instrument; size 0: no level
    std::size_t book_levels(std::uint32_t id, char side,
                            std::span<signet::receiver::book_level> out) const override {
        if (side != 'S' || ask[id].size == 0) {
            return 0;
        }
        out[0] = ask[id];
        return 1;
    }
};

TEST(SharedMemory, AReaderSeesTheBooksLevelByLevelTheDefinitionsAndEveryEvent) {
    signet::test::watchdog dog(120s, "AReaderSeesTheBooks");
    unlink_at_end const segment{segment_name("books")};
    std::vector<t::bytes> const stream = t::generated_stream(51, 20'000, 12);
    receiver r(with_shm(segment.name), {.stats_lines = false});
    r.start();
    send_stream(r, stream);
    r.stop();

    shm::reader reader(segment.name);
    ASSERT_EQ(reader.feeds(), 1U);
    EXPECT_EQ(reader.feed_name(0), "itch");
    EXPECT_TRUE(reader.closed());
    EXPECT_FALSE(reader.replaced());
    std::size_t stocks = 0;
    book_of(r).for_each_stock([&](md::nasdaq::stock_view const& s) {
        shm::instrument_slot slot{};
        ASSERT_TRUE(reader.read_instrument(0, s.locate, slot)) << s.symbol;
        EXPECT_EQ(slot.defined, 1);
        EXPECT_EQ(std::string_view(slot.symbol.data()).substr(0, s.symbol.size()), s.symbol);
        EXPECT_EQ(slot.price_exponent, -4);
        EXPECT_EQ(slot.stale, 0);
        for (auto [side, count, levels] : {std::tuple{'B', slot.bid_levels, slot.bids.data()},
                                           std::tuple{'S', slot.ask_levels, slot.asks.data()}}) {
            auto const book = side == 'B' ? book_of(r).bids(s.locate) : book_of(r).asks(s.locate);
            ASSERT_EQ(count, std::min<std::size_t>(book.size(), shm::depth)) << s.symbol << side;
            for (std::size_t i = 0; i < count; ++i) { // best first; a book_side is best last
                md::nasdaq::itch_price_level const want = book[book.size() - 1 - i];
                EXPECT_EQ(levels[i].price, want.price) << s.symbol << side << i;
                EXPECT_EQ(levels[i].size, want.shares) << s.symbol << side << i;
                EXPECT_EQ(levels[i].orders, want.orders) << s.symbol << side << i;
            }
        }
        ++stocks;
    });
    EXPECT_GE(stocks, 8U);

    // The ring holds every event the shm subscriber was given, in order (it is large enough).
    shm::cursor c{};
    md::event e{};
    std::uint64_t events = 0;
    std::uint64_t adds = 0;
    std::uint64_t last_sequence = 0;
    while (reader.next(c, e) == shm::poll::event) {
        ++events;
        adds += e.kind == md::event_kind::order_add ? 1 : 0;
        EXPECT_GE(e.sequence, last_sequence);
        last_sequence = e.sequence;
    }
    EXPECT_EQ(events, r.subscriber(0).delivered);
    EXPECT_EQ(events, reader.feed(0).written);
    EXPECT_GT(adds, 1000U);
    EXPECT_EQ(reader.lost(), 0U);
}

TEST(SharedMemory, AReaderLappedByTheWriterIsToldAndResynchronizes) {
    signet::test::watchdog dog(120s, "AReaderLappedByTheWriter");
    unlink_at_end const segment{segment_name("lapped")};
    receiver r(with_shm(segment.name, 64), {.stats_lines = false});
    shm::reader reader(segment.name); // the segment exists from construction
    shm::cursor c = reader.tail(0);
    EXPECT_EQ(c.position, 0U);
    md::event e{};
    EXPECT_EQ(reader.next(c, e), shm::poll::none); // nothing written yet
    r.start();
    send_stream(r, t::generated_stream(53, 4'000, 6));
    r.stop();
    std::uint64_t const written = reader.feed(0).written;
    ASSERT_GT(written, 1000U);
    EXPECT_EQ(reader.next(c, e), shm::poll::overrun);
    EXPECT_GT(reader.lost(), written - 64);
    std::uint64_t after = 0;
    while (reader.next(c, e) == shm::poll::event) {
        ++after;
    }
    EXPECT_EQ(c.position, written); // caught up: the rest of the ring was whole
    EXPECT_GT(after, 0U);
    EXPECT_LE(after, 64U);
}

TEST(SharedMemory, ARestartedReceiverReplacesTheSegmentAndOldReadersNotice) {
    unlink_at_end const segment{segment_name("restart")};
    auto first = std::make_unique<receiver>(
        with_shm(segment.name), signet::receiver::receiver_options{.stats_lines = false});
    shm::reader old(segment.name);
    EXPECT_FALSE(old.closed());
    EXPECT_FALSE(old.replaced());
    first.reset(); // stops: the segment says closed and stays for readers
    EXPECT_TRUE(old.closed());
    EXPECT_FALSE(old.replaced());
    receiver second(with_shm(segment.name), {.stats_lines = false});
    EXPECT_TRUE(old.replaced());
    shm::reader fresh(segment.name);
    EXPECT_GT(fresh.generation(), old.generation());
    EXPECT_FALSE(fresh.closed());
}

TEST(SharedMemory, ASecondReceiverOnTheSameNameIsOneClearError) {
    unlink_at_end const segment{segment_name("twice")};
    receiver first(with_shm(segment.name), {.stats_lines = false});
    try {
        receiver second(with_shm(segment.name), {.stats_lines = false});
        ADD_FAILURE() << "a second writer took the segment";
    } catch (std::runtime_error const& e) {
        EXPECT_NE(std::string(e.what()).find("in use by another running receiver"),
                  std::string::npos)
            << e.what();
    }
    shm::reader reader(segment.name); // the first one's segment is untouched
    EXPECT_FALSE(reader.closed());
}

// A reader in another process (fork): it follows a writer's events as they come and sees
// every one whole, in order.
TEST(SharedMemory, AReaderInAnotherProcessFollowsTheEvents) {
    signet::test::watchdog dog(120s, "AReaderInAnotherProcess");
    unlink_at_end const segment{segment_name("fork")};
    constexpr std::uint64_t events = 100'000;
    signet::receiver::shm_publisher writer(segment.name, {"fork"}, 4, 1 << 18);
    pid_t const child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) { // the reader: exit 0 when it saw every event whole and in order
        shm::reader reader(segment.name);
        shm::cursor c{};
        md::event e{};
        std::uint64_t seen = 0;
        while (seen < events) {
            shm::poll const p = reader.next(c, e);
            if (p == shm::poll::overrun || (p == shm::poll::event && e.sequence != seen + 1)) {
                ::_exit(1);
            }
            seen += p == shm::poll::event ? 1 : 0;
        }
        ::_exit(0);
    }
    for (std::uint64_t k = 1; k <= events; ++k) {
        md::event e{};
        e.kind = md::event_kind::trade;
        e.instrument = static_cast<std::uint32_t>(k % 4);
        e.sequence = k;
        writer.on_event(0, e);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A reader killed mid-read (SIGKILL while it copies slots in a loop) leaves nothing behind: the
// writer goes on, and a new reader sees every slot consistent, with its last change, and
// every event.
TEST(SharedMemory, AReaderKilledMidReadLeavesNothingBehind) {
    signet::test::watchdog dog(120s, "AReaderKilledMidRead");
    unlink_at_end const segment{segment_name("killed")};
    signet::receiver::shm_publisher writer(segment.name, {"killed"}, 4, 1 << 15);
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t const child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) { // reads for ever, until killed
        shm::reader reader(segment.name);
        shm::instrument_slot s{};
        char const go = 1;
        (void)::write(ready[1], &go, 1);
        for (std::uint32_t id = 0;; id = (id + 1) % 4) {
            (void)reader.read_instrument(0, id, s);
        }
    }
    char go = 0;
    ASSERT_EQ(::read(ready[0], &go, 1), 1); // the child has the segment mapped and reads
    one_level_protocol book;
    md::event e{};
    e.kind = md::event_kind::trading_status;
    for (std::uint64_t k = 1; k <= 20'000; ++k) { // the writer, while the child copies slots
        e.instrument = static_cast<std::uint32_t>(k % 4);
        e.sequence = k;
        writer.on_event(0, e);
        writer.end_of_run(0, book, signet::receiver::book_state::complete);
        if (k == 10'000) {
            ASSERT_EQ(::kill(child, SIGKILL), 0);
        }
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status));
    shm::reader after(segment.name);
    EXPECT_FALSE(after.closed());
    for (std::uint32_t id = 0; id < 4; ++id) {
        shm::instrument_slot s{};
        ASSERT_TRUE(after.read_instrument(0, id, s)) << id;
        EXPECT_EQ(s.version % 2, 0U) << id;  // no write left half done
        EXPECT_EQ(s.sequence % 4, id) << id; // its own last change
        EXPECT_GE(s.sequence, 20'000U - 4) << id;
    }
    EXPECT_EQ(after.retries(), 0U); // nothing in the segment waits on the dead reader
    shm::cursor c{};
    md::event got{};
    std::uint64_t events = 0;
    while (after.next(c, got) == shm::poll::event) {
        ++events;
    }
    EXPECT_EQ(events, 20'000U);
    ::close(ready[0]);
    ::close(ready[1]);
}

TEST(SharedMemory, ABadSegmentIsOneClearError) {
    EXPECT_THROW(shm::reader("signet-test-no-such-segment"), std::runtime_error);
    receiver_config config = with_shm("signet-test-bad/name");
    EXPECT_THROW(receiver(config, {.stats_lines = false}), std::runtime_error);
}

// Item 37.4: a slot is the instrument's state as of its sequence, never a mix. The events of a
// parser run go to the ring as they come; a status, stale or recovered event must not show in
// the slot before the levels of the same run (a reader re-reading the books after an overrun
// applies the ring events after the slot's sequence, and would miss the level change for good),
// and a cleared stale flag shows only with the recovered book. Checked after every event.
TEST(SharedMemory, ASlotIsTheBookAsOfItsSequenceNeverAMix) {
    unlink_at_end const segment{segment_name("consistent")};
    signet::receiver::shm_publisher writer(segment.name, {"itch"}, 2, 256);
    shm::reader reader(segment.name);
    one_level_protocol book;
    struct state { // what instrument 1's slot must say as of a sequence
        std::int64_t ask_price = 0;
        std::uint64_t ask_size = 0;
        std::uint8_t trading = 0;
        std::uint8_t stale = 0;
    };
    state now;
    std::map<std::uint64_t, state> as_of{{0, {}}}; // by the sequence of the event that made it
    auto const check = [&](char const* after) {
        shm::instrument_slot s{};
        if (!reader.read_instrument(0, 1, s) || s.version == 0) {
            return; // not written yet
        }
        auto const it = as_of.find(s.sequence);
        ASSERT_NE(it, as_of.end()) << after << ": slot sequence " << s.sequence;
        state const& want = it->second;
        EXPECT_EQ(s.ask_levels, want.ask_size != 0 ? 1 : 0) << after << " @" << s.sequence;
        EXPECT_EQ(s.asks[0].price, want.ask_price) << after << " @" << s.sequence;
        EXPECT_EQ(s.asks[0].size, want.ask_size) << after << " @" << s.sequence;
        EXPECT_EQ(s.trading_state, want.trading) << after << " @" << s.sequence;
        EXPECT_EQ(s.stale, want.stale) << after << " @" << s.sequence;
    };
    auto const send = [&](char const* what, md::event e) {
        writer.on_event(0, e);
        if (e.kind == md::event_kind::level_update) {
            book.ask[1] = {.price = e.level.price, .size = e.level.size, .orders = 1};
            now.ask_price = e.level.price;
            now.ask_size = e.level.size;
        } else if (e.kind == md::event_kind::trading_status) {
            now.trading = static_cast<std::uint8_t>(e.status.state);
        } else if (e.kind == md::event_kind::instrument_stale) {
            now.stale = 1;
        } else if (e.kind == md::event_kind::instrument_recovered) {
            now.stale = 0;
        } else if (e.kind == md::event_kind::book_clear) {
            book.ask[1] = {};
            now.ask_price = 0;
            now.ask_size = 0;
        }
        as_of[e.sequence] = now;
        check(what);
    };
    auto const end_of_run = [&](char const* what) {
        writer.end_of_run(0, book, signet::receiver::book_state::complete);
        check(what);
    };
    auto const event = [](md::event_kind kind, std::uint32_t id, std::uint64_t sequence) {
        md::event e{};
        e.kind = kind;
        e.instrument = id;
        e.sequence = sequence;
        return e;
    };
    md::event definition = event(md::event_kind::instrument_definition, 1, 10);
    definition.definition.symbol = {'G', 'O', 'O', 'G', 'L'};
    definition.definition.price_exponent = -4;
    auto const level = [&](std::uint64_t sequence, std::int64_t price, std::uint64_t size) {
        md::event e = event(md::event_kind::level_update, 1, sequence);
        e.side = 'S';
        e.level = {.price = price, .size = size, .orders = 1, .depth = 0, .reserved = {}};
        return e;
    };
    auto const status = [&](std::uint64_t sequence, md::trading_state state) {
        md::event e = event(md::event_kind::trading_status, 1, sequence);
        e.status.state = state;
        return e;
    };

    send("definition", definition);
    send("level 6869x16", level(43900, 2520600, 6869));
    end_of_run("run 1");
    shm::instrument_slot s{};
    ASSERT_TRUE(reader.read_instrument(0, 1, s));
    EXPECT_EQ(s.sequence, 43900U);
    EXPECT_EQ(s.defined, 1);

    // The issue's case: the level change at 43938, then a status event at 43950, one run.
    send("level 7869x17", level(43938, 2520600, 7869));
    send("status", status(43950, md::trading_state::open));
    end_of_run("run 2");
    ASSERT_TRUE(reader.read_instrument(0, 1, s));
    EXPECT_EQ(s.sequence, 43950U);
    EXPECT_EQ(s.asks[0].size, 7869U);
    EXPECT_EQ(s.trading_state, static_cast<std::uint8_t>(md::trading_state::open));

    // Data lost, then a recovery in one run: clear, the rebuilt book, recovered. The slot says
    // stale with the old book until the run ends, then not stale with the rebuilt book.
    send("stale", event(md::event_kind::instrument_stale, md::all_instruments, 44000));
    end_of_run("run 3");
    ASSERT_TRUE(reader.read_instrument(0, 1, s));
    EXPECT_EQ(s.stale, 1);
    EXPECT_EQ(s.sequence, 44000U);
    EXPECT_EQ(s.asks[0].size, 7869U);
    send("clear", event(md::event_kind::book_clear, md::all_instruments, 44100));
    send("rebuilt level", level(44101, 2520700, 100));
    send("recovered", event(md::event_kind::instrument_recovered, md::all_instruments, 44102));
    end_of_run("run 4");
    ASSERT_TRUE(reader.read_instrument(0, 1, s));
    EXPECT_EQ(s.stale, 0);
    EXPECT_EQ(s.sequence, 44102U);
    EXPECT_EQ(s.asks[0].price, 2520700);
    EXPECT_EQ(s.asks[0].size, 100U);

    // The same for the instrument's own stale and recovered events, and a run whose only
    // change is the status: the levels stay, the sequence is the status event's.
    send("own stale", event(md::event_kind::instrument_stale, 1, 44200));
    send("own rebuilt level", level(44201, 2520800, 5));
    send("own recovered", event(md::event_kind::instrument_recovered, 1, 44202));
    end_of_run("run 5");
    send("halt", status(44300, md::trading_state::halted));
    end_of_run("run 6");
    ASSERT_TRUE(reader.read_instrument(0, 1, s));
    EXPECT_EQ(s.sequence, 44300U);
    EXPECT_EQ(s.stale, 0);
    EXPECT_EQ(s.ask_levels, 1);
    EXPECT_EQ(s.asks[0].size, 5U);
    EXPECT_EQ(s.trading_state, static_cast<std::uint8_t>(md::trading_state::halted));
    EXPECT_EQ(std::string_view(s.symbol.data()), "GOOGL");
}

// The ITCH parser's book as a feed_protocol's levels, counting the reads.
class parser_protocol final : public book_only_protocol {
public:
    md::nasdaq::itch50_parser parser{
        md::nasdaq::itch_order_book_options{.max_orders = 1 << 14, .index_pages = 64}};
    mutable std::uint64_t reads = 0;
    std::size_t book_levels(std::uint32_t id, char side,
                            std::span<signet::receiver::book_level> out) const override {
        ++reads;
        return signet::receiver::nasdaq::itch_book_levels(
            parser.book(), static_cast<std::uint16_t>(id), side, out);
    }
};

TEST(SharedMemory, EverySlotIsTheTopOfItsBookAfterEveryRunAndDeepChangesReadNoLevels) {
    // One message a run through the ITCH parser's events: after each run every stock's slot
    // holds its book's best shm::depth levels a side and the run's last sequence. A run whose
    // book events are only deeper than that (a level_update at depth >= shm::depth, order
    // events) moves the sequence and reads no levels.
    unlink_at_end const segment{segment_name("top")};
    signet::receiver::shm_publisher writer(segment.name, {"itch"}, 16, 1 << 12);
    shm::reader reader(segment.name);
    parser_protocol protocol;
    struct forward final : md::event_sink {
        signet::receiver::shm_publisher* writer = nullptr;
        bool shallow = false; // this run: a change the slot's levels must show
        bool book = false;    // this run: any book event
        void on_event(md::event const& e) noexcept override {
            writer->on_event(0, e);
            bool const level = e.kind == md::event_kind::level_update;
            shallow = shallow || (level && e.level.depth < shm::depth) ||
                      e.kind == md::event_kind::bbo || e.kind == md::event_kind::book_clear;
            book = book || level || e.kind == md::event_kind::order_add ||
                   e.kind == md::event_kind::order_delete ||
                   e.kind == md::event_kind::order_execute ||
                   e.kind == md::event_kind::order_modify;
        }
    } sink;
    sink.writer = &writer;
    protocol.parser.set_event_sink(&sink);
    std::vector<t::bytes> const stream = t::generated_stream(53, 6'000, 4);
    std::uint64_t deep_runs = 0;
    std::uint64_t checked_levels = 0;
    for (std::size_t i = 0; i < stream.size(); ++i) {
        sink.shallow = false;
        sink.book = false;
        std::uint64_t const sequence = i + 1;
        protocol.parser.on_message(t::view(stream[i]), {.sequence = sequence, .receive_ns = 0});
        std::uint64_t const reads = protocol.reads;
        writer.end_of_run(0, protocol, signet::receiver::book_state::complete);
        if (sink.book && !sink.shallow) {
            ++deep_runs;
            EXPECT_EQ(protocol.reads, reads) << "message " << sequence << " read levels";
        }
        protocol.parser.book().for_each_stock([&](md::nasdaq::stock_view const& s) {
            shm::instrument_slot slot{};
            ASSERT_TRUE(reader.read_instrument(0, s.locate, slot));
            for (auto [side, count, levels] :
                 {std::tuple{'B', slot.bid_levels, slot.bids.data()},
                  std::tuple{'S', slot.ask_levels, slot.asks.data()}}) {
                auto const book = side == 'B' ? protocol.parser.book().bids(s.locate)
                                              : protocol.parser.book().asks(s.locate);
                ASSERT_EQ(count, std::min<std::size_t>(book.size(), shm::depth))
                    << s.symbol << side << " after message " << sequence;
                for (std::size_t l = 0; l < count; ++l) {
                    md::nasdaq::itch_price_level const want = book[book.size() - 1 - l];
                    ASSERT_EQ(levels[l].price, want.price)
                        << s.symbol << side << l << " @" << sequence;
                    ASSERT_EQ(levels[l].size, want.shares)
                        << s.symbol << side << l << " @" << sequence;
                    ASSERT_EQ(levels[l].orders, want.orders)
                        << s.symbol << side << l << " @" << sequence;
                    ++checked_levels;
                }
            }
        });
        if (sink.book) { // the slot says the run's last sequence, deep changes included
            shm::instrument_slot slot{};
            std::uint16_t const locate = md::nasdaq::itch50::stock_locate(t::view(stream[i]));
            ASSERT_TRUE(reader.read_instrument(0, locate, slot));
            EXPECT_EQ(slot.sequence, sequence);
        }
    }
    EXPECT_GT(deep_runs, 500U) << "the stream must change levels below the slot's";
    EXPECT_GT(checked_levels, 100'000U);
}

// A protocol whose every level is the writer's current round `k`: a torn copy shows two rounds.
class rounds_protocol final : public book_only_protocol {
public:
    std::uint64_t k = 0; // the writer thread's own
    std::size_t book_levels(std::uint32_t, char side,
                            std::span<signet::receiver::book_level> out) const override {
        std::size_t const n = side == 'B' ? k % (shm::depth + 1) : shm::depth;
        for (std::size_t i = 0; i < n; ++i) {
            out[i] = {.price = static_cast<std::int64_t>(k),
                      .size = k,
                      .orders = static_cast<std::uint32_t>(k)};
        }
        return n;
    }
};

TEST(SharedMemoryStress, ReadersRacingTheWriterNeverSeeATornSlotOrEvent) {
    signet::test::watchdog dog(120s, "ReadersRacingTheWriter");
    unlink_at_end const segment{segment_name("race")};
    constexpr std::uint32_t instruments = 4;
    constexpr std::uint64_t rounds = 200'000;
    signet::receiver::shm_publisher writer(segment.name, {"race"}, instruments, 256);
    std::atomic<bool> done{false}; // release by the writer, acquire by the readers
    std::thread write([&] {
        rounds_protocol book;
        for (std::uint64_t k = 1; k <= rounds; ++k) {
            book.k = k;
            md::event e{};
            e.kind = md::event_kind::bbo;
            e.instrument = static_cast<std::uint32_t>(k % instruments);
            e.sequence = k;
            e.receive_ns = k;
            e.exchange_ns = k;
            e.bbo = {.bid_price = static_cast<std::int64_t>(k),
                     .bid_size = k,
                     .ask_price = static_cast<std::int64_t>(k),
                     .ask_size = k};
            writer.on_event(0, e);
            writer.end_of_run(0, book, signet::receiver::book_state::complete);
        }
        done.store(true, std::memory_order_release);
    });
    auto read = [&](std::uint64_t& slots, std::uint64_t& events) {
        shm::reader reader(segment.name);
        shm::cursor c = reader.tail(0);
        shm::instrument_slot s{};
        md::event e{};
        while (!done.load(std::memory_order_acquire)) {
            for (std::uint32_t id = 0; id < instruments; ++id) {
                if (reader.read_instrument(0, id, s)) {
                    ++slots;
                    std::uint64_t const k = s.sequence;
                    ASSERT_EQ(s.receive_ns, k);
                    ASSERT_EQ(s.bid_levels, k % (shm::depth + 1));
                    ASSERT_EQ(s.ask_levels, shm::depth);
                    for (std::size_t i = 0; i < shm::depth; ++i) {
                        ASSERT_EQ(s.asks[i].size, k);
                        ASSERT_EQ(s.asks[i].price, static_cast<std::int64_t>(k));
                    }
                }
            }
            for (;;) {
                shm::poll const p = reader.next(c, e);
                if (p == shm::poll::none) {
                    break;
                }
                if (p == shm::poll::event) {
                    ++events;
                    ASSERT_EQ(e.receive_ns, e.sequence);
                    ASSERT_EQ(e.bbo.ask_size, e.sequence);
                    ASSERT_EQ(c.position, e.sequence); // ring position p holds round p + 1
                }
            }
        }
    };
    std::uint64_t slots[2] = {0, 0};
    std::uint64_t events[2] = {0, 0};
    std::thread r0([&] { read(slots[0], events[0]); });
    std::thread r1([&] { read(slots[1], events[1]); });
    write.join();
    r0.join();
    r1.join();
    EXPECT_GT(slots[0] + slots[1], 0U);
    EXPECT_GT(events[0] + events[1], 0U);
}

} // namespace
