// feed_parser over the moldudp64 protocol: what md_receiver runs per packet. Here: the order
// book's capacity comes from the config and adds beyond it, duplicate and unknown references are
// counted; an end of session is seen live; a gap is re-requested through the request line and
// filled, or lost after its tries.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/moldudp64_request.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/publisher/cme/mdp3_generator.hpp>
#include <signet/receiver/cme/mdp3_protocol.hpp>
#include <signet/receiver/feed_parser.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>

#include "md/md_test_support.hpp"

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

} // namespace
