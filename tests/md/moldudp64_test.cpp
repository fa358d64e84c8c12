// MoldUDP64 session layer and packer: sequencing, gaps, duplicates, every malformed case, late
// join, A/B arbitration, and packer -> session round trips.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/saturating.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>

#include "md_test_support.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using signet::md::test::bytes;
using signet::md::test::mold_header;
using signet::md::test::mold_packet;
using signet::md::test::put_be;
using signet::md::test::text_bytes;
using signet::md::test::view;

// Records every delivery.
struct recorder {
    std::vector<std::pair<std::uint64_t, std::string>> got;
    void operator()(std::uint64_t sequence, std::span<std::byte const> message) {
        got.emplace_back(
            sequence, std::string(reinterpret_cast<char const*>(message.data()), message.size()));
    }
};

using delivery = std::vector<std::pair<std::uint64_t, std::string>>;

bytes packet(std::uint64_t sequence, std::vector<std::string> const& messages,
             std::string_view session = "SESSION01") {
    std::vector<bytes> m;
    for (std::string const& s : messages) {
        m.push_back(text_bytes(s));
    }
    return mold_packet(session, sequence, m);
}

TEST(MoldUdp64Session, DeliversInOrderAndTracksNextSequence) {
    moldudp64_session session;
    recorder r;
    packet_result const first = session.on_packet(view(packet(1, {"a", "bb", "ccc"})), r);
    EXPECT_EQ(first.kind, packet_kind::data);
    EXPECT_EQ(first.delivered, 3);
    EXPECT_FALSE(first.gap());
    (void)session.on_packet(view(packet(4, {"d"})), r);
    EXPECT_EQ(r.got, (delivery{{1, "a"}, {2, "bb"}, {3, "ccc"}, {4, "d"}}));
    EXPECT_EQ(session.next_sequence(), 5U);
    moldudp64_stats const s = session.stats();
    EXPECT_EQ(s.packets, 2U);
    EXPECT_EQ(s.messages, 4U);
    EXPECT_EQ(s.next_sequence, 5U);
    EXPECT_EQ(s.gaps + s.duplicate_packets + s.malformed_packets + s.heartbeats, 0U);
    EXPECT_EQ(session.session(), "SESSION01 ");
}

TEST(MoldUdp64Session, ZeroLengthMessageIsDelivered) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"", "x"})), r);
    EXPECT_EQ(r.got, (delivery{{1, ""}, {2, "x"}}));
}

TEST(MoldUdp64Session, HeartbeatDeliversNothing) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"a"})), r);
    packet_result const hb = session.on_packet(view(mold_header("SESSION01", 2, 0)), r);
    EXPECT_EQ(hb.kind, packet_kind::heartbeat);
    EXPECT_FALSE(hb.gap());
    EXPECT_EQ(r.got.size(), 1U);
    EXPECT_EQ(session.stats().heartbeats, 1U);
    EXPECT_EQ(session.next_sequence(), 2U);
    EXPECT_EQ(session.stats().gaps, 0U);
}

TEST(MoldUdp64Session, HeartbeatAheadIsAGap) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"a"})), r);
    packet_result const hb = session.on_packet(view(mold_header("SESSION01", 5, 0)), r);
    EXPECT_EQ(hb.kind, packet_kind::heartbeat);
    EXPECT_EQ(hb.missing, 3U);
    EXPECT_EQ(session.stats().gaps, 1U);
    EXPECT_EQ(session.stats().missing_messages, 3U);
    EXPECT_EQ(session.next_sequence(), 5U);
    // A stale heartbeat (behind) changes nothing.
    (void)session.on_packet(view(mold_header("SESSION01", 2, 0)), r);
    EXPECT_EQ(session.next_sequence(), 5U);
    EXPECT_EQ(session.stats().heartbeats, 2U);
}

TEST(MoldUdp64Session, EndOfSessionIsFlagged) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"a", "b"})), r);
    EXPECT_FALSE(session.stats().end_of_session);
    packet_result const end = session.on_packet(view(mold_header("SESSION01", 3, 0xFFFF)), r);
    EXPECT_EQ(end.kind, packet_kind::end_of_session);
    EXPECT_TRUE(session.stats().end_of_session);
    EXPECT_EQ(session.stats().gaps, 0U);
    EXPECT_EQ(session.stats().heartbeats, 0U);
    EXPECT_EQ(r.got.size(), 2U);
}

TEST(MoldUdp64Session, EndOfSessionAheadIsAGap) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"a"})), r);
    (void)session.on_packet(view(mold_header("SESSION01", 10, 0xFFFF)), r);
    EXPECT_TRUE(session.stats().end_of_session);
    EXPECT_EQ(session.stats().gaps, 1U);
    EXPECT_EQ(session.stats().missing_messages, 8U);
    EXPECT_EQ(session.next_sequence(), 10U);
}

TEST(MoldUdp64Session, GapIsCountedAndLaterMessagesDelivered) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"a", "b"})), r);
    packet_result const res = session.on_packet(view(packet(6, {"f", "g"})), r);
    EXPECT_EQ(res.kind, packet_kind::data);
    EXPECT_EQ(res.missing, 3U);
    EXPECT_EQ(res.delivered, 2);
    EXPECT_EQ(r.got, (delivery{{1, "a"}, {2, "b"}, {6, "f"}, {7, "g"}}));
    (void)session.on_packet(view(packet(10, {"j"})), r);
    moldudp64_stats const s = session.stats();
    EXPECT_EQ(s.gaps, 2U);
    EXPECT_EQ(s.missing_messages, 5U);
    EXPECT_EQ(s.next_sequence, 11U);
    // The late retransmission of the gap is behind next_sequence now: a duplicate.
    (void)session.on_packet(view(packet(3, {"c", "d", "e"})), r);
    EXPECT_EQ(session.stats().duplicate_packets, 1U);
    EXPECT_EQ(r.got.size(), 5U);
}

TEST(MoldUdp64Session, DuplicatePacketDeliversNothing) {
    moldudp64_session session;
    recorder r;
    bytes const p = packet(1, {"a", "b"});
    (void)session.on_packet(view(p), r);
    packet_result const again = session.on_packet(view(p), r);
    EXPECT_TRUE(again.duplicate());
    EXPECT_EQ(again.skipped, 2);
    EXPECT_EQ(again.delivered, 0);
    EXPECT_EQ(r.got.size(), 2U);
    EXPECT_EQ(session.stats().duplicate_packets, 1U);
    EXPECT_EQ(session.stats().partial_overlaps, 0U);
    EXPECT_EQ(session.stats().messages, 2U);
    EXPECT_EQ(session.next_sequence(), 3U);
}

TEST(MoldUdp64Session, PartialOverlapDeliversOnlyNewMessages) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"a", "b"})), r);
    packet_result const res = session.on_packet(view(packet(2, {"b", "c", "d"})), r);
    EXPECT_TRUE(res.partial_overlap());
    EXPECT_EQ(res.skipped, 1);
    EXPECT_EQ(res.delivered, 2);
    EXPECT_EQ(r.got, (delivery{{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}}));
    EXPECT_EQ(session.stats().partial_overlaps, 1U);
    EXPECT_EQ(session.stats().duplicate_packets, 0U);
    EXPECT_EQ(session.next_sequence(), 5U);
}

// Every malformed case: counted, nothing delivered, no state change (next_sequence, session).
class MoldUdp64Malformed : public ::testing::TestWithParam<std::pair<char const*, bytes>> {};

TEST_P(MoldUdp64Malformed, DeliversNothingAndChangesNothing) {
    moldudp64_session session;
    recorder r;
    packet_result const res = session.on_packet(view(GetParam().second), r);
    EXPECT_EQ(res.kind, packet_kind::malformed);
    EXPECT_TRUE(r.got.empty());
    EXPECT_EQ(session.stats().malformed_packets, 1U);
    EXPECT_EQ(session.stats().packets, 1U);
    EXPECT_EQ(session.stats().messages + session.stats().heartbeats, 0U);
    EXPECT_FALSE(session.stats().end_of_session);
    EXPECT_EQ(session.next_sequence(), 1U);
    EXPECT_TRUE(session.session().empty()) << "a malformed packet must not fix the session id";
    // A valid packet afterwards still works from sequence 1.
    (void)session.on_packet(view(packet(1, {"ok"})), r);
    EXPECT_EQ(r.got, (delivery{{1, "ok"}}));
}

bytes malformed_case(bytes b, std::size_t resize_to) {
    b.resize(resize_to);
    return b;
}

bytes with_count(bytes b, std::uint16_t count) {
    put_be(b, 18, count, 2);
    return b;
}

bytes appended(bytes b, std::size_t extra) {
    b.resize(b.size() + extra, std::byte{0});
    return b;
}

INSTANTIATE_TEST_SUITE_P(
    AllCases, MoldUdp64Malformed,
    ::testing::Values(
        std::pair{"Empty", bytes{}},
        std::pair{"ShortHeader", malformed_case(mold_header("SESSION01", 1, 0), 19)},
        std::pair{"BlockRunsPastDatagram",
                  malformed_case(packet(1, {"abc", "defgh"}), 20 + 5 + 2 + 4)},
        std::pair{"LengthPrefixCut", malformed_case(packet(1, {"abc", "defgh"}), 20 + 5 + 1)},
        std::pair{"FewerBlocksThanCount", with_count(packet(1, {"abc", "de"}), 3)},
        std::pair{"MoreBlocksThanCount", with_count(packet(1, {"abc", "de"}), 1)},
        std::pair{"TrailingBytes", appended(packet(1, {"abc"}), 1)},
        std::pair{"HeartbeatWithTrailingBytes", appended(mold_header("SESSION01", 1, 0), 2)},
        std::pair{"EndOfSessionWithBlocks",
                  with_count(packet(1, {"abc"}), moldudp64_end_of_session_count)},
        std::pair{"SequenceOverflows", packet(0xFFFFFFFFFFFFFFFFULL, {"a", "b"})},
        std::pair{"SequenceZero", packet(0, {"a"})},
        std::pair{"HeartbeatWithSequenceZero", mold_header("SESSION01", 0, 0)}),
    [](auto const& test_case) { return std::string(test_case.param.first); });

TEST(MoldUdp64Session, OtherSessionIsIgnoredOnceTheSessionIsConfirmed) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"a"}, "SESSION01")), r);
    (void)session.on_packet(view(packet(2, {"b"}, "SESSION01")), r); // confirms SESSION01
    packet_result const res = session.on_packet(view(packet(3, {"c"}, "SESSION02")), r);
    EXPECT_EQ(res.kind, packet_kind::ignored);
    EXPECT_EQ(session.stats().foreign_session_packets, 1U);
    EXPECT_EQ(session.stats().malformed_packets, 0U);
    EXPECT_EQ(session.next_sequence(), 3U);
    EXPECT_EQ(session.on_packet(view(mold_header("SESSION02", 9, 0)), r).kind,
              packet_kind::ignored);
    EXPECT_EQ(session.stats().heartbeats, 0U);
    EXPECT_EQ(session.stats().gaps, 0U);
    (void)session.on_packet(view(packet(3, {"c"}, "SESSION01")), r);
    EXPECT_EQ(r.got, (delivery{{1, "a"}, {2, "b"}, {3, "c"}}));
    EXPECT_EQ(session.stats().resyncs, 0U);
}

// The real stream: packets 1..n of SESSION01, one message each.
void feed_real_stream(moldudp64_session& session, recorder& r, std::uint64_t n) {
    for (std::uint64_t q = 1; q <= n; ++q) {
        (void)session.on_packet(view(packet(q, {"m" + std::to_string(q)})), r);
    }
}

void expect_real_stream(recorder const& r, std::uint64_t n, std::size_t from = 0) {
    ASSERT_EQ(r.got.size(), from + n);
    for (std::uint64_t q = 1; q <= n; ++q) {
        EXPECT_EQ(r.got[from + q - 1], (std::pair{q, "m" + std::to_string(q)}));
    }
}

TEST(MoldUdp64Session, ForgedFirstPacketOfAnotherSessionDoesNotBlindTheFeed) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"forged"}, "EVIL000001")), r);
    r.got.clear(); // the first packet cannot be told apart: it was delivered
    feed_real_stream(session, r, 100);
    expect_real_stream(r, 100);
    EXPECT_EQ(session.session(), "SESSION01 ");
    EXPECT_EQ(session.stats().resyncs, 1U);
    EXPECT_EQ(session.stats().duplicate_packets, 0U);
    EXPECT_EQ(session.stats().malformed_packets, 0U);
}

TEST(MoldUdp64Session, FarForwardHeartbeatDoesNotMoveTheExpectedSequence) {
    moldudp64_session session;
    recorder r;
    packet_result const res = session.on_packet(view(mold_header("SESSION01", 1'000'000, 0)), r);
    EXPECT_EQ(res.kind, packet_kind::ignored);
    EXPECT_EQ(session.next_sequence(), 1U);
    feed_real_stream(session, r, 100);
    expect_real_stream(r, 100);
    EXPECT_EQ(session.stats().implausible_packets, 1U);
    EXPECT_EQ(session.stats().gaps, 0U);
    EXPECT_EQ(session.stats().duplicate_packets, 0U);
}

TEST(MoldUdp64Session, LateJoinOnAForgedFarSequenceReanchorsOnTheRealStream) {
    moldudp64_session session(moldudp64_session::late_join);
    recorder r;
    (void)session.on_packet(view(mold_header("SESSION01", 0xFFFF'FFFF'FFFF'FFFEULL, 0)), r);
    feed_real_stream(session, r, 100);
    expect_real_stream(r, 100);
    EXPECT_EQ(session.stats().resyncs, 1U);
    EXPECT_EQ(session.stats().duplicate_packets, 0U);
    EXPECT_EQ(session.next_sequence(), 101U);
}

TEST(MoldUdp64Session, AJumpConfirmedByContiguousPacketsIsFollowed) {
    moldudp64_session session(moldudp64_session_options{.max_sequence_jump = 1000});
    recorder r;
    feed_real_stream(session, r, 10);
    // The stream moves 500k ahead (an outage): two packets are ignored, the third resyncs.
    for (std::uint64_t q = 500'000; q < 500'005; ++q) {
        (void)session.on_packet(view(packet(q, {"j" + std::to_string(q)})), r);
    }
    ASSERT_EQ(r.got.size(), 13U);
    EXPECT_EQ(r.got[10].first, 500'002U);
    EXPECT_EQ(session.stats().implausible_packets, 2U);
    EXPECT_EQ(session.stats().resyncs, 1U);
    EXPECT_EQ(session.stats().gaps, 2U);
    EXPECT_EQ(session.stats().missing_messages, (500'000U - 11U) + 2U);
    EXPECT_EQ(session.next_sequence(), 500'005U);
}

TEST(MoldUdp64Session, InterleavedStaleHeartbeatsNeverMoveTheAnchor) {
    moldudp64_session session;
    recorder r;
    for (std::uint64_t q = 1; q <= 50; ++q) {
        (void)session.on_packet(view(packet(q, {"m" + std::to_string(q)})), r);
        (void)session.on_packet(view(mold_header("STALE00001", 7'000'000, 0)), r);
    }
    expect_real_stream(r, 50);
    EXPECT_EQ(session.stats().resyncs, 0U);
    EXPECT_EQ(session.stats().foreign_session_packets + session.stats().implausible_packets, 50U);
}

// Found by the fuzzer: three heartbeats of another session with sequence 0 were a contiguous
// run (step 2b) and re-anchored the session at 0, the "no sequence yet" state, so that the next
// data packet of any sequence was taken as the stream. Sequence 0 is malformed instead.
TEST(MoldUdp64Session, ZeroSequenceHeartbeatsNeverReanchorTheSession) {
    moldudp64_session session;
    recorder r;
    (void)session.on_packet(view(packet(1, {"a", "b"})), r);
    (void)session.on_packet(view(packet(3, {"c"})), r); // confirmed: SESSION01 at 4
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(session.on_packet(view(mold_header("FORGED", 0, 0)), r).kind,
                  packet_kind::malformed);
    }
    EXPECT_EQ(session.stats().resyncs, 0U);
    EXPECT_EQ(session.next_sequence(), 4U);
    EXPECT_EQ(session.session(), "SESSION01 ");
    (void)session.on_packet(view(packet(4, {"d"})), r);
    EXPECT_EQ(r.got.back(), (std::pair<std::uint64_t, std::string>{4, "d"}));
}

TEST(MoldUdp64Session, PinnedSessionNeverAdoptsAnother) {
    moldudp64_session session(moldudp64_session_options{.session = "SESSION01"});
    recorder r;
    for (std::uint64_t q = 1; q <= 5; ++q) { // contiguous, but of another session
        EXPECT_EQ(session.on_packet(view(packet(q, {"x"}, "EVIL000001")), r).kind,
                  packet_kind::ignored);
    }
    feed_real_stream(session, r, 20);
    expect_real_stream(r, 20);
    EXPECT_EQ(session.stats().foreign_session_packets, 5U);
    EXPECT_EQ(session.stats().resyncs, 0U);
}

TEST(MoldUdp64Session, TheNextSessionIsAdoptedAfterEndOfSession) {
    moldudp64_session session;
    recorder r;
    feed_real_stream(session, r, 5);
    (void)session.on_packet(view(with_count(mold_header("SESSION01", 6, 0), 0xFFFF)), r);
    (void)session.on_packet(view(packet(1, {"new"}, "SESSION02")), r);
    EXPECT_EQ(session.session(), "SESSION02 ");
    EXPECT_EQ(r.got.back(), (std::pair{std::uint64_t{1}, std::string("new")}));
    EXPECT_EQ(session.stats().resyncs, 1U);
}

TEST(MoldUdp64Session, BadOptionsAreRejected) {
    EXPECT_THROW(moldudp64_session(moldudp64_session_options{.session = "ELEVENCHARS"}),
                 std::invalid_argument);
    EXPECT_THROW(moldudp64_session(moldudp64_session_options{.resync_packets = 1}),
                 std::invalid_argument);
}

TEST(MoldUdp64Session, LateJoinAdoptsFirstSequence) {
    moldudp64_session session(moldudp64_session::late_join);
    EXPECT_EQ(session.next_sequence(), 0U);
    recorder r;
    packet_result const res = session.on_packet(view(packet(1000, {"x", "y"})), r);
    EXPECT_FALSE(res.gap());
    EXPECT_EQ(r.got, (delivery{{1000, "x"}, {1001, "y"}}));
    EXPECT_EQ(session.stats().gaps, 0U);
    EXPECT_EQ(session.next_sequence(), 1002U);
    (void)session.on_packet(view(packet(1004, {"z"})), r);
    EXPECT_EQ(session.stats().gaps, 1U);
    EXPECT_EQ(session.stats().missing_messages, 2U);
}

TEST(MoldUdp64Session, LateJoinOnHeartbeat) {
    moldudp64_session session(0);
    recorder r;
    (void)session.on_packet(view(mold_header("SESSION01", 500, 0)), r);
    EXPECT_EQ(session.next_sequence(), 500U);
    EXPECT_EQ(session.stats().gaps, 0U);
    (void)session.on_packet(view(packet(500, {"m"})), r);
    EXPECT_EQ(r.got, (delivery{{500, "m"}}));
}

TEST(MoldUdp64Session, ExplicitFirstSequenceCountsEarlierGap) {
    moldudp64_session session(10);
    recorder r;
    (void)session.on_packet(view(packet(12, {"m"})), r);
    EXPECT_EQ(session.stats().gaps, 1U);
    EXPECT_EQ(session.stats().missing_messages, 2U);
    (void)session.on_packet(view(packet(5, {"old"})), r);
    EXPECT_EQ(session.stats().duplicate_packets, 1U);
    EXPECT_EQ(r.got, (delivery{{12, "m"}}));
}

// A/B lines: the same 50 packets (1 to 3 messages each) on both.
std::vector<bytes> ab_line(std::uint64_t& next_sequence) {
    std::vector<bytes> line;
    next_sequence = 1;
    for (int p = 0; p < 50; ++p) {
        std::vector<std::string> messages;
        for (int m = 0; m <= p % 3; ++m) {
            messages.push_back("m" + std::to_string(next_sequence + static_cast<std::uint64_t>(m)));
        }
        line.push_back(packet(next_sequence, messages));
        next_sequence += messages.size();
    }
    return line;
}

void expect_each_message_once(recorder const& r, std::uint64_t next_sequence) {
    ASSERT_EQ(r.got.size(), next_sequence - 1);
    for (std::size_t i = 0; i < r.got.size(); ++i) {
        EXPECT_EQ(r.got[i].first, i + 1);
        EXPECT_EQ(r.got[i].second, "m" + std::to_string(i + 1));
    }
}

// A/B arbitration is one session fed both lines in arrival order: the lines are merged at
// random (each stays in order, either may lead by several packets); every message is delivered
// once, the second copy of every packet is a duplicate, and there is no gap.
TEST(MoldUdp64Session, ABArbitrationCountsSecondCopyAsDuplicate) {
    std::uint64_t next_sequence = 0;
    std::vector<bytes> const line = ab_line(next_sequence);
    std::uint64_t const seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    moldudp64_session session;
    recorder r;
    std::size_t a = 0;
    std::size_t b = 0;
    while (a < line.size() || b < line.size()) {
        bool const take_a = b == line.size() || (a < line.size() && rng() % 2 == 0);
        bytes const& p = take_a ? line[a++] : line[b++];
        // The peek a caller merging by sequence would do; it consumes nothing.
        ASSERT_EQ(moldudp64_sequence(view(p)), moldudp64_peek_header(view(p))->sequence);
        (void)session.on_packet(view(p), r);
    }
    expect_each_message_once(r, next_sequence);
    moldudp64_stats const s = session.stats();
    EXPECT_EQ(s.duplicate_packets, line.size());
    EXPECT_EQ(s.gaps, 0U);
    EXPECT_EQ(s.packets, 2 * line.size());
}

// Line A loses a packet; line B's copy, arriving before A's next one, fills it: no gap.
TEST(MoldUdp64Session, ABArbitrationFillsLossOnOneLine) {
    std::uint64_t next_sequence = 0;
    std::vector<bytes> const line = ab_line(next_sequence);
    moldudp64_session session;
    recorder r;
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (i != 20) {
            (void)session.on_packet(view(line[i]), r); // A
        }
        (void)session.on_packet(view(line[i]), r); // B
    }
    expect_each_message_once(r, next_sequence);
    EXPECT_EQ(session.stats().duplicate_packets, line.size() - 1);
    EXPECT_EQ(session.stats().gaps, 0U);
}

TEST(MoldUdp64Header, PeekReadsFieldsAndRejectsShort) {
    bytes const p = packet(0x0102030405060708ULL, {"a", "b"}, "ABCDEFGHIJ");
    std::optional<moldudp64_header> const h = moldudp64_peek_header(view(p));
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(std::string(h->session.data(), h->session.size()), "ABCDEFGHIJ");
    EXPECT_EQ(h->sequence, 0x0102030405060708ULL);
    EXPECT_EQ(h->count, 2);
    EXPECT_EQ(moldudp64_sequence(view(p)), 0x0102030405060708ULL);
    bytes const short_packet(p.begin(), p.begin() + 19);
    EXPECT_FALSE(moldudp64_peek_header(view(short_packet)).has_value());
    EXPECT_EQ(moldudp64_sequence(view(short_packet)), 0U);
}

// ---- packer ----------------------------------------------------------------------------------

TEST(MoldUdp64Packer, RoundTripThroughSession) {
    std::array<std::byte, 1400> buffer{};
    moldudp64_packer packer(buffer, "ROUNDTRIP", 1);
    moldudp64_session session;
    recorder r;
    std::vector<std::string> sent;
    std::mt19937_64 rng(42);
    std::size_t packets = 0;
    auto flush = [&] {
        std::span<std::byte const> const p = packer.finish();
        ASSERT_LE(p.size(), 1400U);
        ++packets;
        EXPECT_EQ(session.on_packet(p, r).kind, packet_kind::data);
    };
    for (int i = 0; i < 2000; ++i) {
        std::string message(rng() % 120, static_cast<char>('a' + i % 26));
        message += std::to_string(i);
        bytes const b = text_bytes(message);
        if (!packer.append(view(b))) {
            flush();
            ASSERT_TRUE(packer.append(view(b)));
        }
        sent.push_back(message);
    }
    flush();
    EXPECT_EQ(session.on_packet(packer.heartbeat(), r).kind, packet_kind::heartbeat);
    EXPECT_EQ(session.on_packet(packer.end_of_session(), r).kind, packet_kind::end_of_session);
    ASSERT_EQ(r.got.size(), sent.size());
    for (std::size_t i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(r.got[i].first, i + 1);
        EXPECT_EQ(r.got[i].second, sent[i]);
    }
    moldudp64_stats const s = session.stats();
    EXPECT_EQ(s.gaps + s.duplicate_packets + s.malformed_packets, 0U);
    EXPECT_TRUE(s.end_of_session);
    EXPECT_EQ(session.session(), "ROUNDTRIP ");
    EXPECT_GT(packets, 10U);
    EXPECT_EQ(packer.next_sequence(), sent.size() + 1);
}

TEST(MoldUdp64Packer, RespectsMaxPayloadAndMaxMessages) {
    std::array<std::byte, 2000> buffer{};
    moldudp64_packer by_size(buffer, "S", 1, {.max_payload = 100, .max_messages = 100});
    EXPECT_EQ(by_size.max_message_size(), 78U);
    bytes const ten(10, std::byte{1});
    int appended = 0;
    while (by_size.append(view(ten))) {
        ++appended;
    }
    EXPECT_EQ(appended, 6); // 20 + 6 * 12 = 92; a seventh would need 104
    EXPECT_EQ(by_size.size(), 92U);
    EXPECT_EQ(by_size.finish().size(), 92U);
    EXPECT_EQ(by_size.next_sequence(), 7U);

    moldudp64_packer by_count(buffer, "S", 1, {.max_payload = 2000, .max_messages = 3});
    EXPECT_TRUE(by_count.append(view(ten)));
    EXPECT_TRUE(by_count.append(view(ten)));
    EXPECT_TRUE(by_count.append(view(ten)));
    EXPECT_FALSE(by_count.append(view(ten)));
    EXPECT_TRUE(by_count.message_space().empty());
    std::span<std::byte const> const p = by_count.finish();
    EXPECT_EQ(moldudp64_peek_header(p)->count, 3);
}

TEST(MoldUdp64Packer, RejectsMessageThatCannotFit) {
    std::array<std::byte, 64> buffer{};
    moldudp64_packer packer(buffer, "S");
    bytes const big(43, std::byte{1});
    EXPECT_FALSE(packer.append(view(big)));
    EXPECT_TRUE(packer.empty());
    bytes const fits(42, std::byte{1});
    EXPECT_TRUE(packer.append(view(fits)));
    bytes const empty_message;
    EXPECT_FALSE(packer.append(view(empty_message))); // no room for even a length prefix
}

TEST(MoldUdp64Packer, ZeroCopyCommitAndHeader) {
    std::array<std::byte, 256> buffer{};
    moldudp64_packer packer(buffer, "ZC", 77);
    std::span<std::byte> const space = packer.message_space();
    ASSERT_GE(space.size(), 3U);
    space[0] = std::byte{'x'};
    space[1] = std::byte{'y'};
    space[2] = std::byte{'z'};
    packer.commit(3);
    EXPECT_EQ(packer.message_count(), 1);
    std::span<std::byte const> const p = packer.finish();
    bytes const expected = packet(77, {"xyz"}, "ZC");
    EXPECT_TRUE(std::equal(p.begin(), p.end(), expected.begin(), expected.end()));
    EXPECT_TRUE(packer.finish().empty()) << "finish() on an empty packet sends nothing";
    EXPECT_EQ(packer.next_sequence(), 78U);
    std::span<std::byte const> const hb = packer.heartbeat();
    bytes const expected_hb = mold_header("ZC", 78, 0);
    EXPECT_TRUE(std::equal(hb.begin(), hb.end(), expected_hb.begin(), expected_hb.end()));
    packer.set_session("LONGER-THAN-TEN");
    packer.set_next_sequence(5);
    std::span<std::byte const> const end = packer.end_of_session();
    bytes const expected_end = mold_header("LONGER-THA", 5, 0xFFFF);
    EXPECT_TRUE(std::equal(end.begin(), end.end(), expected_end.begin(), expected_end.end()));
}

TEST(MoldUdp64Packer, ConstructorRejectsBadOptions) {
    std::array<std::byte, 21> tiny{};
    EXPECT_THROW(moldudp64_packer(tiny, "S"), std::invalid_argument);
    std::array<std::byte, 100> buffer{};
    EXPECT_THROW(moldudp64_packer(buffer, "S", 1, {.max_payload = 21}), std::invalid_argument);
    EXPECT_THROW(moldudp64_packer(buffer, "S", 1, {.max_payload = 100, .max_messages = 0}),
                 std::invalid_argument);
    EXPECT_THROW(moldudp64_packer(buffer, "S", 1, {.max_payload = 100, .max_messages = 0xFFFF}),
                 std::invalid_argument);
}

} // namespace

// Forged jumps near 2^64 (a fuzz finding): the sum of gap sizes saturates instead of wrapping,
// so the counter never goes down.
TEST(MoldUdp64Stats, MissingMessagesSaturate) {
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    EXPECT_EQ(signet::saturating_add(1, 2), 3U);
    EXPECT_EQ(signet::saturating_add(max - 1, 1), max);
    EXPECT_EQ(signet::saturating_add(max - 1, 5), max);
    EXPECT_EQ(signet::saturating_add(max, max), max);
}
