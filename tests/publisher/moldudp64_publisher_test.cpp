// publisher: pacing and heartbeat scheduling on a simulated clock (exact times, no sleeps),
// end of session, fault injection per line, the on_packet hook, BinaryFILE records, errors,
// stop from another thread, and a run over UDP on loopback.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/binary_file_reader.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>
#include <signet/publisher/nasdaq/moldudp64_publisher.hpp>
#include <signet/publisher/udp_lines.hpp>

#include "publisher/publisher_test_support.hpp"

namespace {

namespace pub = signet::publisher;
namespace md = signet::md;
using namespace pub::test;
using time_point = pub::pacing_clock::time_point;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

/// A BinaryFILE in memory: each message prefixed with its 2-byte big-endian length.
std::string binary_file(std::vector<bytes> const& messages) {
    std::string out;
    for (bytes const& m : messages) {
        out += static_cast<char>(m.size() >> 8);
        out += static_cast<char>(m.size() & 0xFF);
        out.append(reinterpret_cast<char const*>(m.data()), m.size());
    }
    return out;
}

/// `n` distinct 'A' messages of 36 bytes (order reference = index + 1).
std::vector<bytes> adds(std::size_t n) {
    std::vector<bytes> out;
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(md::test::add(1, i + 1, 'B', 100, 1000));
    }
    return out;
}

std::uint64_t sequence_of(bytes const& datagram) {
    return md::nasdaq::moldudp64_sequence(view(datagram));
}

std::vector<std::uint64_t> sequences(std::vector<bytes> const& datagrams) {
    std::vector<std::uint64_t> out;
    for (bytes const& d : datagrams) {
        out.push_back(sequence_of(d));
    }
    return out;
}

/// The longest time a line went without a datagram, from the start of the run to its last one.
nanoseconds longest_silence(std::vector<sent_datagram> const& sent, std::size_t line,
                            time_point start) {
    nanoseconds longest{0};
    time_point last = start;
    for (sent_datagram const& d : sent) {
        if (d.line == line) {
            longest = std::max(longest, std::chrono::duration_cast<nanoseconds>(d.at - last));
            last = d.at;
        }
    }
    return longest;
}

// ---- heartbeats and pacing -------------------------------------------------------------------

// The defect: with the old rule (a heartbeat only when the packer is empty; a packet leaves
// `heartbeat` after its first message went in) a message built just before a heartbeat fell due
// held the heartbeat off and then waited a full interval itself. Here, at 10 messages/s and a
// 30 ms heartbeat, the line sends at 30, 60, 90 ms; message 2 is built at 100 ms; the old rule
// sent its packet at 130 ms (40 ms of silence), the new one at 120 ms: no silence exceeds 30 ms.
TEST(Publisher, NoLineIsSilentLongerThanTheHeartbeat) {
    for (std::size_t lines : {1U, 2U}) {
        fake_clock clock;
        recording_lines out(clock, lines);
        pub::nasdaq::moldudp64_publisher p(
            {.rate = 10, .heartbeat = milliseconds(30), .duration = milliseconds(2000)}, out,
            clock);
        signet::publisher::nasdaq::itch_generator generator({.symbols = 2});
        ASSERT_TRUE(p.run(generator).ok());
        EXPECT_GT(p.counts().heartbeats, 0U) << "an idle line carries heartbeats";
        for (std::size_t line = 0; line < lines; ++line) {
            EXPECT_LE(longest_silence(out.sent(), line, clock.start()), milliseconds(30))
                << "line " << line;
        }
        // No message waited longer than the heartbeat: message k (sequence k + 1) was built at
        // k / rate (the simulated clock is exact).
        for (sent_datagram const& d : out.sent()) {
            if (is_data(d.data)) {
                time_point const built =
                    clock.start() + milliseconds(100) * (sequence_of(d.data) - 1);
                EXPECT_LE(d.at - built, milliseconds(30)) << "sequence " << sequence_of(d.data);
            }
        }
    }
}

TEST(Publisher, DroppedAndHeldPacketsDoNotSilenceALine) {
    // A packet kept off a line (dropped, or held to be sent after the next one) is not a send:
    // the line stays due and gets a heartbeat in time.
    for (pub::fault_line const drop : {pub::fault_line::a, pub::fault_line::both}) {
        fake_clock clock;
        recording_lines out(clock, 2);
        pub::nasdaq::moldudp64_publisher p(
            {.rate = 10,
             .heartbeat = milliseconds(30),
             .duration = milliseconds(3000),
             .faults = {.drop_every = 2, .drop_line = drop, .reorder_every = 3}},
            out, clock);
        signet::publisher::nasdaq::itch_generator generator({.symbols = 2});
        ASSERT_TRUE(p.run(generator).ok());
        EXPECT_GT(p.counts().reordered_packets, 0U);
        for (std::size_t line = 0; line < 2; ++line) {
            EXPECT_LE(longest_silence(out.sent(), line, clock.start()), milliseconds(30))
                << "line " << line << ", drop " << static_cast<int>(drop);
        }
    }
}

TEST(Publisher, AMessageBuiltAsTheHeartbeatFallsDueLeavesWithinTheInterval) {
    fake_clock clock;
    recording_lines out(clock, 1);
    pub::nasdaq::moldudp64_publisher p(
        {.rate = 10, .heartbeat = milliseconds(30), .duration = milliseconds(250)}, out, clock);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 1});
    ASSERT_TRUE(p.run(generator).ok());
    // 0 ms: message 1 built; 30: its packet; 60, 90: heartbeats; 100: message 2 built;
    // 120: its packet (due 30 ms after the heartbeat at 90); 150, 180: heartbeats; 200: message
    // 3; 210: its packet; 240: heartbeat; 250: closing events, end of session.
    std::vector<std::pair<long, char>> timeline;
    for (sent_datagram const& d : out.sent()) {
        char const kind = is_heartbeat(d.data) ? 'h' : is_end_of_session(d.data) ? 'e' : 'd';
        timeline.emplace_back(
            std::chrono::duration_cast<milliseconds>(d.at - clock.start()).count(), kind);
    }
    std::vector<std::pair<long, char>> const head(timeline.begin(), timeline.begin() + 9);
    EXPECT_EQ(head, (std::vector<std::pair<long, char>>{{30, 'd'},
                                                        {60, 'h'},
                                                        {90, 'h'},
                                                        {120, 'd'},
                                                        {150, 'h'},
                                                        {180, 'h'},
                                                        {210, 'd'},
                                                        {240, 'h'},
                                                        {250, 'd'}}));
}

TEST(Publisher, PacesMessagesToTheRateInFullBatches) {
    fake_clock clock;
    recording_lines out(clock, 1);
    pub::nasdaq::moldudp64_publisher p({.rate = 1000, .heartbeat = milliseconds(1000), .batch = 8},
                                       out, clock);
    std::string const file = binary_file(adds(400));
    md::nasdaq::binary_file_reader reader(std::as_bytes(std::span(file)));
    ASSERT_TRUE(p.run(reader).ok());
    std::size_t data = 0;
    for (sent_datagram const& d : out.sent()) {
        if (!is_data(d.data)) {
            continue;
        }
        ++data;
        EXPECT_EQ(mold_count(d.data), 8);
        // Its last message (index k) was due at k ms: the packet leaves then, not before.
        std::uint64_t const last = sequence_of(d.data) + mold_count(d.data) - 2;
        auto const at = std::chrono::duration_cast<nanoseconds>(d.at - clock.start());
        EXPECT_GE(at, milliseconds(last)) << "sequence " << sequence_of(d.data);
        EXPECT_LT(at, milliseconds(last) + std::chrono::microseconds(1));
    }
    EXPECT_EQ(data, 50U);
    EXPECT_EQ(p.counts().sent.messages, 400U);
    EXPECT_EQ(p.counts().heartbeats, 0U);
}

TEST(Publisher, AsFastAsPossibleNeverWaits) {
    fake_clock clock;
    recording_lines out(clock, 1);
    pub::nasdaq::moldudp64_publisher p({.rate = 0, .batch = 16, .end_of_session_packets = 1}, out,
                                       clock);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 4, .messages = 1000});
    ASSERT_TRUE(p.run(generator).ok());
    EXPECT_EQ(clock.sleeps(), 0U);
    EXPECT_EQ(p.counts().sent.messages, 1000U + 3 + 4 + 3);
    EXPECT_EQ(p.counts().sent.packets, (1010U + 15) / 16);
}

TEST(Publisher, EndsTheSessionWithSpacedEndOfSessionPackets) {
    fake_clock clock;
    recording_lines out(clock, 2);
    pub::nasdaq::moldudp64_publisher p({.rate = 0, .end_of_session_spacing = milliseconds(5)}, out,
                                       clock);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 2, .messages = 20});
    ASSERT_TRUE(p.run(generator).ok());
    std::vector<sent_datagram> ends;
    for (sent_datagram const& d : out.sent()) {
        if (is_end_of_session(d.data)) {
            ends.push_back(d);
        }
    }
    ASSERT_EQ(ends.size(), 6U); // three, on both lines
    EXPECT_EQ(p.counts().end_of_session_packets, 3U);
    EXPECT_EQ(p.counts().next_sequence, 20U + 3 + 2 + 3 + 1);
    for (std::size_t i = 0; i < ends.size(); ++i) {
        EXPECT_EQ(sequence_of(ends[i].data), p.counts().next_sequence);
        EXPECT_EQ(ends[i].at - clock.start(), milliseconds(5) * (i / 2));
    }
    EXPECT_TRUE(is_end_of_session(out.sent().back().data));
}

TEST(Publisher, TheDurationClosesTheGeneratorWithItsClosingEvents) {
    fake_clock clock;
    recording_lines out(clock, 1);
    pub::nasdaq::moldudp64_publisher p(
        {.rate = 100, .heartbeat = milliseconds(50), .duration = milliseconds(1000)}, out, clock);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 2});
    ASSERT_TRUE(p.run(generator).ok());
    // 100 messages in the second (0 to 990 ms), then the three closing system events.
    EXPECT_EQ(p.counts().sent.messages, 100U + 3);
    EXPECT_EQ(p.counts().sent.by_type['S'], 3U + 3);
    std::vector<bytes> const data = [&] {
        std::vector<bytes> d;
        for (bytes const& b : out.on(0)) {
            if (is_data(b)) {
                d.push_back(b);
            }
        }
        return d;
    }();
    ASSERT_FALSE(data.empty());
    EXPECT_LE(longest_silence(out.sent(), 0, clock.start()), milliseconds(50));
}

// ---- fault injection --------------------------------------------------------------------------

struct fault_case {
    pub::fault_line drop_line;
    std::vector<std::uint64_t> line_a;
    std::vector<std::uint64_t> line_b;
};

// 12 one-message packets (sequence = packet number), every 4th dropped, every 3rd duplicated,
// every 5th sent after the next one: p5 and p10 are held; p12 is both dropped and duplicated.
TEST(Publisher, FaultInjectionPerLineIsExactAndCounted) {
    std::vector<fault_case> const cases{
        {pub::fault_line::a,
         {1, 2, 3, 3, 6, 6, 5, 7, 9, 9, 11, 10},
         {1, 2, 3, 3, 4, 6, 6, 5, 7, 8, 9, 9, 11, 10, 12, 12}},
        {pub::fault_line::b,
         {1, 2, 3, 3, 4, 6, 6, 5, 7, 8, 9, 9, 11, 10, 12, 12},
         {1, 2, 3, 3, 6, 6, 5, 7, 9, 9, 11, 10}},
        {pub::fault_line::both,
         {1, 2, 3, 3, 6, 6, 5, 7, 9, 9, 11, 10},
         {1, 2, 3, 3, 6, 6, 5, 7, 9, 9, 11, 10}},
    };
    for (fault_case const& c : cases) {
        fake_clock clock;
        recording_lines out(clock, 2);
        std::size_t hooked = 0;
        pub::nasdaq::moldudp64_publisher p({.rate = 0,
                                            .batch = 1,
                                            .faults = {.drop_every = 4,
                                                       .drop_line = c.drop_line,
                                                       .duplicate_every = 3,
                                                       .reorder_every = 5},
                                            .end_of_session_packets = 0,
                                            .on_packet =
                                                [&](std::span<std::byte const>) {
                                                    ++hooked;
                                                }},
                                           out, clock);
        std::string const file = binary_file(adds(12));
        md::nasdaq::binary_file_reader reader(std::as_bytes(std::span(file)));
        ASSERT_TRUE(p.run(reader).ok());
        auto const label = static_cast<int>(c.drop_line);
        EXPECT_EQ(sequences(out.on(0)), c.line_a) << label;
        EXPECT_EQ(sequences(out.on(1)), c.line_b) << label;
        // A reordered pair goes out line by line: the held p5 and p10 reach line A before
        // their successors reach line B (both lines never show the held packet skipped).
        std::vector<std::pair<std::size_t, std::uint64_t>> order;
        for (sent_datagram const& d : out.sent()) {
            order.emplace_back(d.line, sequences({d.data}).front());
        }
        for (std::uint64_t const held : {5U, 10U}) {
            auto const at = [&](std::size_t line, std::uint64_t sequence) {
                return std::find(order.begin(), order.end(), std::pair(line, sequence)) -
                       order.begin();
            };
            EXPECT_LT(at(0, held), at(1, held + 1)) << label << " p" << held;
            EXPECT_LT(at(0, held + 1), at(0, held)) << label << " p" << held;
        }
        EXPECT_EQ(hooked, 12U) << "every built packet, dropped ones too";
        pub::nasdaq::moldudp64_counts const& n = p.counts();
        bool const both = c.drop_line == pub::fault_line::both;
        EXPECT_EQ(n.sent.packets, both ? 9U : 12U) << label;
        EXPECT_EQ(n.sent.messages, both ? 9U : 12U) << label;
        EXPECT_EQ(n.dropped.packets, both ? 3U : 0U) << label;
        EXPECT_EQ(n.dropped.messages, both ? 3U : 0U) << label;
        EXPECT_EQ(n.dropped.by_type['A'], both ? 3U : 0U) << label;
        EXPECT_EQ(n.dropped_one_line_packets, both ? 0U : 3U) << label;
        // p12 dropped on both lines is not duplicated; on one line it is.
        EXPECT_EQ(n.duplicated_packets, both ? 3U : 4U) << label;
        EXPECT_EQ(n.reordered_packets, 2U) << label;
        EXPECT_EQ(n.next_sequence, 13U) << label;
    }
}

TEST(Publisher, DroppedPacketsOnTheOnlyLineAreCountedAsDropped) {
    fake_clock clock;
    recording_lines out(clock, 1);
    std::vector<bytes> hooked;
    pub::nasdaq::moldudp64_publisher p({.rate = 0,
                                        .batch = 2,
                                        .faults = {.drop_every = 3},
                                        .end_of_session_packets = 0,
                                        .on_packet =
                                            [&](std::span<std::byte const> d) {
                                                hooked.emplace_back(d.begin(), d.end());
                                            }},
                                       out, clock);
    std::string const file = binary_file(adds(20));
    md::nasdaq::binary_file_reader reader(std::as_bytes(std::span(file)));
    ASSERT_TRUE(p.run(reader).ok());
    ASSERT_EQ(hooked.size(), 10U);
    std::vector<bytes> want;
    for (std::size_t i = 0; i < hooked.size(); ++i) {
        if ((i + 1) % 3 != 0) {
            want.push_back(hooked[i]);
        }
    }
    EXPECT_EQ(out.on(0), want);
    EXPECT_EQ(p.counts().dropped.packets, 3U);
    EXPECT_EQ(p.counts().dropped.messages, 6U);
    EXPECT_EQ(p.counts().sent.messages, 14U);
    EXPECT_EQ(p.counts().dropped_one_line_packets, 0U);
}

// ---- sources and errors -----------------------------------------------------------------------

TEST(Publisher, ZeroLengthRecordsAreSkippedAndCounted) {
    fake_clock clock;
    recording_lines out(clock, 1);
    pub::nasdaq::moldudp64_publisher p({.rate = 0}, out, clock);
    std::vector<bytes> messages = adds(3);
    messages.insert(messages.begin() + 1, bytes{});
    messages.push_back(bytes{});
    std::string const file = binary_file(messages);
    md::nasdaq::binary_file_reader reader(std::as_bytes(std::span(file)));
    ASSERT_TRUE(p.run(reader).ok());
    EXPECT_EQ(p.counts().sent.messages, 3U);
    EXPECT_EQ(p.counts().malformed_records, 2U);
    EXPECT_EQ(p.counts().first_malformed_record, 2U);
    EXPECT_EQ(p.counts().next_sequence, 4U);
}

TEST(Publisher, AMessageTooLongForAPacketEndsTheRunWithAnError) {
    fake_clock clock;
    recording_lines out(clock, 1);
    pub::nasdaq::moldudp64_publisher p({.rate = 0}, out, clock);
    std::string const file = binary_file({adds(1)[0], bytes(2000, std::byte{'A'})});
    md::nasdaq::binary_file_reader reader(std::as_bytes(std::span(file)));
    pub::run_result const result = p.run(reader);
    EXPECT_FALSE(result.ok());
    EXPECT_NE(result.error.find("a 2000-byte message does not fit a packet"), std::string::npos)
        << result.error;
    EXPECT_EQ(p.counts().sent.messages, 1U) << "what came before was sent";
    EXPECT_EQ(p.counts().end_of_session_packets, 0U);
}

TEST(Publisher, ASendErrorEndsTheRunNamingTheLine) {
    fake_clock clock;
    recording_lines out(clock, 2);
    out.fail_at(4); // the second packet's line B
    pub::nasdaq::moldudp64_publisher p({.rate = 0, .batch = 1}, out, clock);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 2, .messages = 10});
    pub::run_result const result = p.run(generator);
    EXPECT_FALSE(result.ok());
    EXPECT_NE(result.error.find("sendto line B: "), std::string::npos) << result.error;
    EXPECT_EQ(out.sent().size(), 3U);
}

TEST(Publisher, RejectsBadOptions) {
    fake_clock clock;
    recording_lines out(clock, 1);
    EXPECT_THROW(pub::nasdaq::moldudp64_publisher({.batch = 0}, out, clock), std::invalid_argument);
    EXPECT_THROW(pub::nasdaq::moldudp64_publisher({.heartbeat = nanoseconds(0)}, out, clock),
                 std::invalid_argument);
    EXPECT_THROW(pub::nasdaq::moldudp64_publisher({.rate = -1}, out, clock), std::invalid_argument);
    EXPECT_THROW(pub::nasdaq::moldudp64_publisher({.max_payload = 10}, out, clock),
                 std::invalid_argument);
    recording_lines three(clock, 3);
    EXPECT_THROW(pub::nasdaq::moldudp64_publisher({}, three, clock), std::invalid_argument);
    EXPECT_EQ(pub::parse_fault_line("a"), pub::fault_line::a);
    EXPECT_EQ(pub::parse_fault_line("both"), pub::fault_line::both);
    EXPECT_FALSE(pub::parse_fault_line("c").has_value());
}

// ---- stopping ---------------------------------------------------------------------------------

/// The closing system events ('S' with code M, E, C) as the last data messages, then the ends.
void expect_closed_session(std::vector<bytes> const& line) {
    std::vector<char> codes;
    for (bytes const& d : line) {
        if (!is_data(d)) {
            continue;
        }
        md::nasdaq::moldudp64_session session(md::nasdaq::moldudp64_sequence(view(d)));
        (void)session.on_packet(view(d), [&](std::uint64_t, std::span<std::byte const> m) {
            if (std::to_integer<char>(m[0]) == 'S') {
                codes.push_back(std::to_integer<char>(m[11]));
            }
        });
    }
    ASSERT_GE(codes.size(), 3U);
    EXPECT_EQ(std::string(codes.end() - 3, codes.end()), "MEC");
    ASSERT_GE(line.size(), 3U);
    EXPECT_TRUE(is_end_of_session(line.back()));
}

TEST(Publisher, StopFromAnotherThreadClosesTheSession) {
    fake_clock clock; // only the publisher's thread uses it
    recording_lines out(clock, 1);
    std::atomic<std::uint64_t> packets{0};
    pub::nasdaq::moldudp64_publisher p({.rate = 0,
                                        .on_packet =
                                            [&](std::span<std::byte const>) {
                                                // relaxed: a progress count; the stopper only waits
                                                // for it.
                                                packets.fetch_add(1, std::memory_order_relaxed);
                                            }},
                                       out, clock);
    signet::publisher::nasdaq::itch_generator generator(
        {.symbols = 2}); // no message limit: only stop() ends it
    std::thread stopper([&] {
        // relaxed: see above.
        while (packets.load(std::memory_order_relaxed) < 100) {
            std::this_thread::yield();
        }
        p.stop();
    });
    pub::run_result const result = p.run(generator);
    stopper.join();
    EXPECT_TRUE(result.ok());
    EXPECT_TRUE(p.stop_requested());
    EXPECT_GE(p.counts().sent.packets, 100U);
    expect_closed_session(out.on(0));
}

TEST(Publisher, AStopFlagSetBeforeTheRunSendsOnlyTheOpeningAndClosing) {
    fake_clock clock;
    recording_lines out(clock, 1);
    std::atomic<bool> flag{true};
    pub::nasdaq::moldudp64_publisher p({.rate = 0, .stop_flag = &flag}, out, clock);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 2});
    ASSERT_TRUE(p.run(generator).ok());
    // The opening events and the directory are still due before the closing ones.
    EXPECT_EQ(p.counts().sent.messages, 3U + 2 + 3);
    expect_closed_session(out.on(0));
}

// ---- over UDP ---------------------------------------------------------------------------------

std::vector<bytes> receive_all(signet::net::udp_socket const& socket, std::size_t count) {
    std::vector<bytes> out;
    std::vector<std::byte> buffer(65536);
    while (out.size() < count) {
        pollfd ready{.fd = socket.native_handle(), .events = POLLIN, .revents = 0};
        if (::poll(&ready, 1, 5000) != 1) {
            break; // nothing for 5 s: they were all sent before this was called
        }
        ssize_t const n = ::recv(socket.native_handle(), buffer.data(), buffer.size(), 0);
        if (n >= 0) {
            out.emplace_back(buffer.begin(), buffer.begin() + n);
        }
    }
    return out;
}

TEST(Publisher, SendsBothLinesOverUdp) {
    using signet::net::udp_endpoint;
    signet::net::udp_socket a(
        {.bind = udp_endpoint::parse("127.0.0.1:0"), .timestamps = signet::net::timestamping::off});
    signet::net::udp_socket b(
        {.bind = udp_endpoint::parse("127.0.0.1:0"), .timestamps = signet::net::timestamping::off});
    pub::udp_lines lines({a.local_endpoint(), b.local_endpoint()}, {});
    std::vector<bytes> built;
    pub::nasdaq::moldudp64_publisher p({.rate = 0,
                                        .end_of_session_packets = 1,
                                        .on_packet =
                                            [&](std::span<std::byte const> d) {
                                                built.emplace_back(d.begin(), d.end());
                                            }},
                                       lines);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 2, .messages = 50});
    ASSERT_TRUE(p.run(generator).ok());
    std::vector<bytes> want = built;
    want.push_back(md::test::mold_header("SIGNET0001", p.counts().next_sequence, 0xFFFF));
    EXPECT_EQ(receive_all(a, want.size()), want);
    EXPECT_EQ(receive_all(b, want.size()), want);

    EXPECT_THROW(pub::udp_lines({a.local_endpoint(), udp_endpoint::parse("[::1]:9")}, {}),
                 std::invalid_argument);
}

} // namespace
