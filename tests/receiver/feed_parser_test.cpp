// feed_parser over the moldudp64 protocol: what md_receiver runs per packet. Here: the order
// book's capacity comes from the config and adds beyond it, duplicate and unknown references are
// counted; an end of session is seen live; a gap is re-requested through the request line and
// filled, or lost after its tries.
#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/core/realtime_clock.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/nasdaq/moldudp64_request.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/publisher/cme/mdp3_generator.hpp>
#include <signet/receiver/cme/mdp3_protocol.hpp>
#include <signet/receiver/feed_parser.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>

#include "md/md_test_support.hpp"
#include "support/realdata.hpp"

namespace {

namespace t = signet::md::test;
using signet::receiver::book_state;
using signet::receiver::feed_config;
using signet::receiver::feed_parser;
using signet::receiver::nasdaq::moldudp64_protocol;
using signet::receiver::nasdaq::moldudp64_settings;

/// The runtime as the protocol sees it at setup, without a runtime: the request line is a
/// socket of the test's.
class test_setup final : public signet::receiver::feed_setup {
public:
    explicit test_setup(signet::net::udp_socket const* request = nullptr)
        : request_(request) {}
    signet::net::udp_socket const& line_socket(std::string_view line) const override {
        EXPECT_EQ(line, "request");
        return *request_;
    }
    std::unique_ptr<signet::net::tcp_client>
    tcp_client(signet::net::tcp_client_options const&) override {
        throw std::logic_error("no TCP in this test");
    }
    signet::net::timer parser_timer() override { return {}; }
    signet::blocking_work_contract_group& group() override { return group_; }
    std::string const& record_path() const override { return no_path_; }

private:
    signet::net::udp_socket const* request_;
    signet::blocking_work_contract_group group_{64};
    std::string no_path_;
};

/// A feed parser over the moldudp64 protocol with these settings, set up.
std::unique_ptr<feed_parser> make_parser(feed_config config, moldudp64_settings const& settings,
                                         test_setup& setup) {
    config.protocol = std::make_shared<moldudp64_settings>(settings);
    auto parser = std::make_unique<feed_parser>(config, config.protocol->make(config));
    parser->protocol().setup(setup);
    return parser;
}

moldudp64_protocol const& mold(feed_parser const& parser) {
    return dynamic_cast<moldudp64_protocol const&>(parser.protocol());
}

void push(feed_parser& processor, t::bytes const& datagram) {
    signet::net::packet p;
    p.data = datagram.data();
    p.size = static_cast<std::uint32_t>(datagram.size());
    p.user_rx_ns = 1;
    processor(p);
    processor.on_batch(); // as the parser contract does after its run
}

TEST(FeedParser, OrderTableOverflowIsCounted) {
    feed_config config;
    config.name = "overflow";
    config.max_orders = 2;
    test_setup setup;
    auto parser = make_parser(config, {}, setup);
    feed_parser& processor = *parser;
    push(processor, t::mold_packet("S", 1,
                                   {t::directory(1, "TEST"), t::add(1, 11, 'B', 100, 10'0000),
                                    t::add(1, 12, 'S', 100, 11'0000),
                                    t::add(1, 13, 'B', 100, 9'0000),  // the table is full
                                    t::add(1, 11, 'B', 100, 10'0000), // already live
                                    t::delete_order(99)}));           // never added
    processor.finish();

    auto const* itch = mold(processor).itch_stats();
    ASSERT_NE(itch, nullptr);
    EXPECT_EQ(itch->book_full_drops, 1U);
    EXPECT_EQ(itch->duplicate_order_refs, 1U);
    EXPECT_EQ(itch->unknown_order_refs, 1U);
    EXPECT_EQ(processor.live().book, book_state::stale); // the dropped add: not the exchange's
    ASSERT_NE(mold(processor).book(), nullptr);
    EXPECT_EQ(mold(processor).book()->capacity(), 2U);
    EXPECT_EQ(mold(processor).book()->size(), 2U);
    EXPECT_EQ(processor.live().messages, 6U);
}

TEST(FeedParser, DefaultCapacityIsTwoToTheTwenty) {
    feed_config config;
    config.name = "default";
    test_setup setup;
    auto const processor = make_parser(config, {}, setup);
    ASSERT_NE(mold(*processor).book(), nullptr);
    EXPECT_EQ(mold(*processor).book()->capacity(), std::size_t{1} << 20);
}

TEST(FeedParser, EndOfSessionIsVisibleLive) {
    feed_config config;
    config.name = "eos";
    test_setup setup;
    auto const processor = make_parser(config, {}, setup);
    EXPECT_FALSE(processor->live().end_of_stream);
    push(*processor, t::mold_header("S", 1, 0xFFFF));
    EXPECT_TRUE(processor->live().end_of_stream);
}

TEST(FeedParser, AReceiverStartedAfterTheStreamCountsALateStartNotAGap) {
    // The stream was at sequence 1000 when this receiver started: nothing was lost on the wire,
    // so there is no gap to count or recover; but the orders added before are not in the book.
    feed_config config;
    config.name = "late";
    test_setup setup;
    auto const processor = make_parser(config, {}, setup);
    push(*processor, t::mold_packet("S", 1000, {t::directory(1, "TEST"), t::delete_order(7)}));
    push(*processor, t::mold_packet("S", 1002, {t::add(1, 11, 'B', 100, 10'0000)}));
    EXPECT_EQ(processor->live().late_start, 999U);
    EXPECT_EQ(processor->live().gaps, 0U);
    EXPECT_EQ(processor->live().missing, 0U);
    EXPECT_EQ(processor->live().messages, 3U);
    EXPECT_EQ(processor->live().book, book_state::stale) << "the book misses the earlier adds";
}

TEST(FeedParser, AStreamFromItsFirstSequenceHasNoLateStart) {
    feed_config config;
    config.name = "from start";
    test_setup setup;
    auto const processor = make_parser(config, {}, setup);
    push(*processor, t::mold_packet("S", 1, {t::directory(1, "TEST")}));
    push(*processor, t::mold_packet("S", 3, {t::add(1, 11, 'B', 100, 10'0000)})); // 2 lost
    processor->finish();
    EXPECT_EQ(processor->live().late_start, 0U);
    EXPECT_EQ(processor->live().gaps, 1U);
    EXPECT_EQ(processor->live().missing, 1U);
}

// Gap recovery through a real request socket: the hold expires in front of a gap, the
// processor sends a request to the "server" socket, the answer (a normal packet on the request
// line) fills the gap, and everything is delivered in sequence.
signet::net::packet at(t::bytes const& datagram, std::uint64_t now_ns, std::uint16_t line = 0) {
    signet::net::packet p;
    p.data = datagram.data();
    p.size = static_cast<std::uint32_t>(datagram.size());
    p.user_rx_ns = now_ns;
    p.line = line;
    return p;
}

// One packet through the contract: the packet, then the end of the run (on_batch: timers due,
// live() published), as the runtime runs it.
void run(feed_parser& processor, signet::net::packet const& p) {
    processor(p);
    processor.on_batch();
}

// A processor with re-requests to a "server" socket of the test, its request line a socket of
// its own (line 1); packets carry one message each.
struct recovery_rig {
    signet::net::udp_socket server{{.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")}};
    signet::net::udp_socket request_line{{.bind = signet::net::udp_endpoint::parse("127.0.0.1:0")}};
    test_setup setup{&request_line};
    std::unique_ptr<feed_parser> processor;

    explicit recovery_rig(unsigned tries) {
        feed_config config;
        config.name = "recover";
        moldudp64_settings settings;
        settings.parser = signet::receiver::nasdaq::moldudp64_parser::count;
        settings.rerequest = server.local_endpoint();
        settings.rerequest_timeout_ms = 5;
        settings.rerequest_tries = tries;
        processor = make_parser(config, settings, setup);
        EXPECT_EQ(processor->lines().at(1).name, "request");
    }
    static t::bytes packet(std::uint64_t sequence) {
        return t::mold_packet("S", sequence, {t::bytes{std::byte{1}}});
    }
};

constexpr std::uint64_t ms = 1'000'000;

TEST(FeedParser, AGapIsReRequestedAndFilledInSequence) {
    recovery_rig rig(3);
    feed_parser& processor = *rig.processor;
    run(processor, at(recovery_rig::packet(1), 1 * ms));
    run(processor, at(recovery_rig::packet(3), 2 * ms)); // 2 is missing: held
    run(processor, at(recovery_rig::packet(4), 5 * ms)); // the hold (2 ms) expired: request sent
    EXPECT_TRUE(processor.live().recovering);
    EXPECT_EQ(processor.live().messages, 1U);
    std::array<std::byte, 64> got{};
    ssize_t const n = ::recv(rig.server.native_handle(), got.data(), got.size(), 0);
    ASSERT_EQ(n, 20);
    auto const request = signet::md::nasdaq::parse_moldudp64_request({got.data(), 20});
    ASSERT_TRUE(request.has_value());
    EXPECT_EQ(request->sequence, 2U);
    EXPECT_EQ(request->count, 1U);
    EXPECT_EQ(std::string(request->session.data(), 10), "S         ");
    run(processor, at(recovery_rig::packet(2), 6 * ms, 1)); // the answer, on the request line
    EXPECT_FALSE(processor.live().recovering);
    EXPECT_EQ(processor.live().messages, 4U);
    EXPECT_EQ(processor.live().gaps, 0U);
    processor.finish();
    auto const* r = mold(processor).rerequests();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->stats().recovered_messages, 1U);
    EXPECT_EQ(r->stats().rerequests_sent, 1U);
    EXPECT_EQ(r->stats().lost_messages, 0U);
    EXPECT_EQ(processor.live().recovered, 1U);
    EXPECT_EQ(mold(processor).recovery_latency().take().count, 1U);
}

TEST(FeedParser, AnUnansweredGapIsLostAfterItsTries) {
    recovery_rig rig(2);
    feed_parser& processor = *rig.processor;
    run(processor, at(recovery_rig::packet(1), 1 * ms));
    run(processor, at(recovery_rig::packet(5), 2 * ms));  // 2..4 missing
    run(processor, at(recovery_rig::packet(6), 5 * ms));  // request 1
    run(processor, at(recovery_rig::packet(7), 11 * ms)); // timeout: request 2
    run(processor,
        at(recovery_rig::packet(8), 17 * ms)); // timeout after the last try: lost, released
    EXPECT_FALSE(processor.live().recovering);
    EXPECT_EQ(processor.live().gaps, 1U);
    EXPECT_EQ(processor.live().missing, 3U);
    EXPECT_EQ(processor.live().messages, 5U);
    auto const* r = mold(processor).rerequests();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->stats().rerequests_sent, 2U);
    EXPECT_EQ(r->stats().rerequest_timeouts, 1U);
    EXPECT_EQ(r->stats().lost_messages, 3U);
    EXPECT_EQ(r->stats().gaps_lost, 1U);
    EXPECT_EQ(processor.live().lost, 3U);
}

// Issue 37: one line, no re-request server, a sender that put 3 out before 2 and was
// descheduled in between on a loaded machine. When the parser's timer fires past the hold
// (on_idle, the wall clock), nothing is waiting in the line's socket or queue: 2 has not been
// sent yet. The line has not moved on past the hold either, so 2 is not lost: it fills the gap
// when it comes (before: a gap of one message, then 2 counted as a duplicate). A real gap is
// still called once the line moves on past the hold.
TEST(FeedParser, AReorderedPacketIsNotLostWhileTheSenderPausesBetweenThePair) {
    feed_config config;
    config.name = "one line";
    moldudp64_settings settings;
    settings.parser = signet::receiver::nasdaq::moldudp64_parser::count;
    test_setup setup;
    auto const processor = make_parser(config, settings, setup);
    processor->set_input_probe([](std::size_t) { return false; }); // nothing in any socket
    // Stamps in the past: the wall clock of on_idle() is 50 ms past the first, far past the
    // hold (2 ms) but well within the probe's bound (1 s).
    std::uint64_t const base = signet::realtime_clock::now_ns() - 50 * ms;
    run(*processor, at(recovery_rig::packet(1), base));
    run(*processor, at(recovery_rig::packet(3), base + ms / 10)); // 2 comes after it
    processor->on_idle();                                         // the hold's timer
    EXPECT_EQ(processor->live().gaps, 0U);
    EXPECT_EQ(processor->live().messages, 1U);
    run(*processor, at(recovery_rig::packet(2), base + 3 * ms)); // the sender ran again
    EXPECT_EQ(processor->live().messages, 3U);
    EXPECT_EQ(processor->live().gaps, 0U);
    EXPECT_EQ(processor->live().missing, 0U);
    EXPECT_EQ(processor->live().duplicates, 0U);
    // 5 is lost: the line moves on past the hold (6 comes 3 ms after 4), and 6 calls the gap.
    run(*processor, at(recovery_rig::packet(4), base + 4 * ms));
    run(*processor, at(recovery_rig::packet(6), base + 4 * ms + ms / 10));
    run(*processor, at(recovery_rig::packet(7), base + 7 * ms));
    EXPECT_EQ(processor->live().gaps, 1U);
    EXPECT_EQ(processor->live().missing, 1U);
    EXPECT_EQ(processor->live().messages, 6U);
    processor->finish();
    EXPECT_EQ(processor->live().duplicates, 0U);
}

// ---- CME MDP 3.0 through the shared sequencing: the guards every protocol has ----

/// A feed parser over the mdp3 protocol, its definitions applied, and the generator that made
/// them; the lines are a (0), snapshot (1), definitions (2).
struct mdp3_rig {
    signet::publisher::cme::mdp3_generator generator{{.seed = 11, .instruments = 3, .depth = 5}};
    test_setup setup;
    std::unique_ptr<feed_parser> processor;
    std::vector<std::byte> buffer =
        std::vector<std::byte>(signet::publisher::cme::mdp3_generator::max_packet);
    std::uint64_t now = 1'000'000;

    mdp3_rig() {
        feed_config config;
        config.name = "cme";
        config.max_sequence_jump = 1000;
        auto settings = std::make_shared<signet::receiver::cme::mdp3_settings>();
        config.protocol = settings;
        processor = std::make_unique<feed_parser>(config, config.protocol->make(config));
        EXPECT_EQ(processor->lines().at(2).name, "definitions");
        for (std::size_t i = 0; i < generator.instruments(); ++i) {
            auto const n = generator.definition(buffer, i, static_cast<std::uint32_t>(i + 1));
            send({buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n)}, 2);
        }
    }
    void send(t::bytes const& datagram, std::uint16_t line = 0) {
        run(*processor, at(datagram, now += 1'000'000, line));
    }
    t::bytes next() {
        auto const n = generator.next_incremental(buffer);
        return {buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n)};
    }
    [[nodiscard]] signet::md::cme::mdp3_channel const& channel() const {
        return dynamic_cast<signet::receiver::cme::mdp3_protocol const&>(processor->protocol())
            .channel();
    }
    /// Every instrument's book equals the generator's.
    void expect_generator_books() const {
        for (std::size_t i = 0; i < generator.instruments(); ++i) {
            auto const* got = channel().find(generator.security_id(i));
            ASSERT_NE(got, nullptr);
            EXPECT_FALSE(got->stale);
            auto const want = generator.book(i);
            EXPECT_TRUE(std::equal(got->book.bids().begin(), got->book.bids().end(),
                                   want.bids().begin(), want.bids().end()));
            EXPECT_TRUE(std::equal(got->book.offers().begin(), got->book.offers().end(),
                                   want.offers().begin(), want.offers().end()));
        }
    }
};

/// An MDP 3.0 packet's MsgSeqNum rewritten (little-endian u32 at the start).
t::bytes with_sequence(t::bytes packet, std::uint32_t sequence) {
    for (std::size_t i = 0; i < 4; ++i) {
        packet[i] = static_cast<std::byte>((sequence >> (8 * i)) & 0xFF);
    }
    return packet;
}

TEST(FeedParser, AnMdp3PacketFarAheadChangesNoBookAndIsCounted) {
    // One forged datagram 1,000,000 MsgSeqNums ahead used to be taken as a gap: every real
    // packet after it was a duplicate and every snapshot too old, for good.
    mdp3_rig rig;
    t::bytes last;
    for (int k = 0; k < 50; ++k) {
        last = rig.next();
        rig.send(last);
    }
    rig.send(with_sequence(last, 1'000'051)); // a replayed packet, far ahead
    for (int k = 0; k < 50; ++k) {
        rig.send(rig.next());
    }
    auto const live = rig.processor->live();
    EXPECT_EQ(live.ignored, 1U);
    EXPECT_EQ(live.gaps, 0U);
    EXPECT_EQ(live.duplicates, 0U);
    EXPECT_FALSE(live.recovering);
    EXPECT_EQ(live.book, book_state::complete);
    EXPECT_EQ(rig.processor->sequencing().implausible, 1U);
    EXPECT_EQ(rig.channel().stats().recoveries, 0U);
    EXPECT_EQ(rig.channel().stats().incremental_packets, 100U);
    rig.expect_generator_books();
}

TEST(FeedParser, AMalformedMdp3PacketNeverTakesTheRealOnesSequence) {
    // A damaged datagram carrying the next MsgSeqNum used to claim it: the real packet was
    // then dropped as a duplicate.
    mdp3_rig rig;
    for (int k = 0; k < 20; ++k) {
        rig.send(rig.next());
    }
    t::bytes real = rig.next();
    t::bytes damaged = real;
    damaged.resize(damaged.size() - 3); // its last message's MsgSeqNum lies now
    rig.send(damaged);
    rig.send(real);
    for (int k = 0; k < 20; ++k) {
        rig.send(rig.next());
    }
    auto const live = rig.processor->live();
    EXPECT_EQ(live.malformed, 1U);
    EXPECT_EQ(live.duplicates, 0U);
    EXPECT_EQ(live.gaps, 0U);
    EXPECT_EQ(live.book, book_state::complete);
    EXPECT_EQ(rig.channel().stats().incremental_packets, 41U);
    rig.expect_generator_books();
}

// ---- Item 37.9: an arrival order never changes what is delivered ----------------------------

/// moldudp64 as the feed parser sees it, recording every datagram the shared sequencing lets
/// through (its first sequence and the fresh items) before handing it on.
class recording_protocol final : public signet::receiver::feed_protocol {
public:
    struct delivered {
        std::uint64_t first = 0;
        std::uint64_t fresh = 0;
        bool operator==(delivered const&) const = default;
    };
    std::vector<delivered> log;

    explicit recording_protocol(std::unique_ptr<signet::receiver::feed_protocol> inner)
        : inner_(std::move(inner)) {}
    std::vector<signet::receiver::line_spec> lines() const override { return inner_->lines(); }
    signet::md::sequence_tracker_options sequencing() const override {
        return inner_->sequencing();
    }
    void setup(signet::receiver::feed_setup& setup) override { inner_->setup(setup); }
    std::optional<signet::md::sequence_unit>
    frame(std::span<std::byte const> datagram) const noexcept override {
        return inner_->frame(datagram);
    }
    void deliver(signet::receiver::delivery const& d) override {
        log.push_back({d.unit.first, d.step.fresh});
        inner_->deliver(d);
    }
    signet::receiver::protocol_counters counters() const noexcept override {
        return inner_->counters();
    }
    void finish() override { inner_->finish(); }

private:
    std::unique_ptr<signet::receiver::feed_protocol> inner_;
};

/// What a feed delivered and counted for one arrival order.
struct outcome {
    std::vector<recording_protocol::delivered> delivered;
    std::uint64_t messages = 0;
    std::uint64_t gaps = 0;
    std::uint64_t missing = 0;
    std::uint64_t late_start = 0;
    std::uint64_t implausible = 0;
    std::uint64_t resyncs = 0;
    bool operator==(outcome const&) const = default;
};

std::ostream& operator<<(std::ostream& out, outcome const& o) {
    out << "messages " << o.messages << ", gaps " << o.gaps << ", missing " << o.missing
        << ", late_start " << o.late_start << ", implausible " << o.implausible << ", resyncs "
        << o.resyncs << ", delivered";
    for (auto const& d : o.delivered) {
        out << ' ' << d.first << '+' << d.fresh;
    }
    return out;
}

/// Feeds `datagrams` (in this order) to a default moldudp64 feed: `per_run` of them per parser
/// run, the runs `apart_ns` apart. After every run: fresh items are delivered strictly in
/// sequence, each once. Then finish() (what is still held goes).
outcome arrive(std::vector<t::bytes> const& datagrams, std::size_t per_run,
               std::uint64_t apart_ns) {
    feed_config config;
    config.name = "order";
    config.protocol = std::make_shared<moldudp64_settings>();
    auto recorder = std::make_unique<recording_protocol>(config.protocol->make(config));
    recording_protocol& record = *recorder;
    feed_parser processor(config, std::move(recorder));
    test_setup setup;
    processor.protocol().setup(setup);
    std::uint64_t now = 1'000 * ms;
    auto const in_sequence = [&](char const* when) {
        std::uint64_t next = 0;
        for (auto const& d : record.log) {
            if (d.fresh != 0) {
                EXPECT_GE(d.first, next) << when << ": " << d.first << " after " << next - 1;
                next = d.first + d.fresh;
            }
        }
    };
    for (std::size_t i = 0; i < datagrams.size(); ++i) {
        processor(at(datagrams[i], now));
        if ((i + 1) % per_run == 0 || i + 1 == datagrams.size()) {
            processor.on_batch();
            in_sequence("a run");
            now += apart_ns;
        }
    }
    processor.finish();
    in_sequence("finish");
    signet::md::sequence_stats const s = processor.sequencing();
    return {record.log, processor.live().messages, s.gaps, s.missing, s.late_start, s.implausible,
            s.resyncs};
}

/// The arrival orders, each sorted by sequence: spaced 20 ms and 0.5 ms (the 2 ms hold
/// expires in between, or not), as one burst in runs of 3, as one run.
void expect_every_arrival_order_alike(std::vector<t::bytes> const& datagrams, outcome const& want) {
    EXPECT_EQ(arrive(datagrams, 1, 20 * ms), want) << "spaced 20 ms";
    EXPECT_EQ(arrive(datagrams, 1, ms / 2), want) << "spaced 0.5 ms";
    EXPECT_EQ(arrive(datagrams, 3, 0), want) << "one burst, 3 runs of 3";
    EXPECT_EQ(arrive(datagrams, datagrams.size(), 0), want) << "one burst, one run";
}

/// What the nine packets of the Nasdaq sample captures (14757701 ... 14764496, then three far
/// ones) deliver in any arrival order: the six near ones in sequence, the far ones refused.
outcome nasdaq_sample_outcome() {
    return {.delivered = {{14757701, 1},
                          {14757721, 1},
                          {14757722, 1},
                          {14757745, 1},
                          {14757919, 1},
                          {14764496, 1}},
            .messages = 6,
            .gaps = 4,
            .missing = 14764496 - 14757702 - 4,
            .late_start = 14757700,
            .implausible = 3,
            .resyncs = 0};
}

// The sequence pattern of the nine packets of Nasdaq's TotalView-ITCH sample captures: a late
// join at 14757701, five more packets with gaps between, then three far ahead (more than
// max_sequence_jump, 100,000). A far packet used to pass the hold at once: in a burst it took
// the still-provisional anchor from the first packet, was delivered before the held packets,
// which then re-anchored the late join again (7 messages, 2 resyncs, 14757701 counted both
// delivered and late), where the same packets spaced out gave 6 messages and no resync.
TEST(FeedParser, AFarPacketNeverOvertakesTheHoldWhateverTheArrivalOrder) {
    std::vector<t::bytes> datagrams;
    std::uint64_t ref = 1;
    for (std::uint64_t const sequence :
         {14757701ULL, 14757721ULL, 14757722ULL, 14757745ULL, 14757919ULL, 14764496ULL, 17861990ULL,
          19009117ULL, 34147961ULL}) {
        datagrams.push_back(
            t::mold_packet("000010059B", sequence, {t::add(1, ref++, 'B', 100, 10'0000)}));
    }
    expect_every_arrival_order_alike(datagrams, nasdaq_sample_outcome());
}

// The same with the captures themselves (their UDP payloads, sorted by sequence), when the
// real-data folder is there.
TEST(FeedParser, TheNasdaqSampleCapturesAreDeliveredAlikeWhateverTheArrivalOrder) {
    std::string const folder = signet::test::realdata("nasdaq/Nasdaq.Equities.TotalView.Itch.v5.0");
    if (folder.empty()) {
        GTEST_SKIP() << "no real-data folder (../shared/realdata)";
    }
    std::vector<std::pair<std::uint64_t, t::bytes>> by_sequence;
    for (auto const& file : std::filesystem::directory_iterator(folder)) {
        if (file.path().extension() != ".pcap") {
            continue;
        }
        for (auto& d : signet::test::read_capture(file.path().string())) {
            auto const unit = signet::md::nasdaq::moldudp64_frame(d.payload);
            ASSERT_TRUE(unit.has_value()) << file.path();
            by_sequence.emplace_back(unit->first, std::move(d.payload));
        }
    }
    std::sort(by_sequence.begin(), by_sequence.end(),
              [](auto const& a, auto const& b) { return a.first < b.first; });
    ASSERT_EQ(by_sequence.size(), 9U);
    ASSERT_EQ(by_sequence.front().first, 14757701U);
    std::vector<t::bytes> datagrams;
    for (auto& [sequence, payload] : by_sequence) {
        datagrams.push_back(std::move(payload));
    }
    expect_every_arrival_order_alike(datagrams, nasdaq_sample_outcome());
}

} // namespace
