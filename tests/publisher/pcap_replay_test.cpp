// pcap_source and publisher::replay: the link, IPv4 and UDP layers (Ethernet with VLAN tags,
// Linux cooked SLL/SLL2, raw IPv4; fragments, truncation, padding, other protocols); captures
// written with libpcap's dump API, replayed on a simulated clock: the payloads go out byte for
// byte and in order, filtered by port and address, at the captured timing divided by the speed
// or at a fixed packet rate (exact times), with fault injection on top; bad files are one clear
// error, a damaged one is sent up to the damage.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/nasdaq/moldudp64_publisher.hpp>
#include <signet/publisher/pcap_source.hpp>

#include "publisher/publisher_test_support.hpp"

namespace {

namespace pub = signet::publisher;
namespace md = signet::md;
using namespace pub::test;
using pub::decode_frame;
using pub::frame_kind;
using pub::udp_frame;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// ---- FrameDecoding ----------------------------------------------------------------------------

TEST(FrameDecoding, EthernetIpv4UdpWithPaddingAndVlanTags) {
    bytes const payload = md::test::text_bytes("hello");
    for (auto const& vlans : {std::vector<std::uint16_t>{}, std::vector<std::uint16_t>{10},
                              std::vector<std::uint16_t>{10, 20}}) {
        bytes const f = ethernet(ipv4_udp(payload, 30001), 0x0800, vlans);
        ASSERT_EQ(f.size(), 60U) << "padded to the Ethernet minimum";
        udp_frame out;
        ASSERT_EQ(decode_frame(DLT_EN10MB, view(f), out), frame_kind::udp) << vlans.size();
        EXPECT_EQ(bytes(out.payload.begin(), out.payload.end()), payload); // not the padding
        EXPECT_EQ(out.destination_port, 30001);
        EXPECT_EQ(out.destination_address, ip(239, 1, 1, 1));
    }
    // IP options (a 24-byte header).
    bytes const with_options = ethernet(ipv4_udp(payload, 5, {.header_words = 6}), 0x0800);
    udp_frame out;
    ASSERT_EQ(decode_frame(DLT_EN10MB, view(with_options), out), frame_kind::udp);
    EXPECT_EQ(bytes(out.payload.begin(), out.payload.end()), payload);
}

TEST(FrameDecoding, LinuxCookedAndRawIp) {
    bytes const payload = md::test::text_bytes("cooked");
    bytes const network = ipv4_udp(payload, 40000, {.destination = ip(127, 0, 0, 1)});
    for (auto const& [link, f] : {std::pair{DLT_LINUX_SLL, linux_sll(network)},
                                  std::pair{DLT_LINUX_SLL2, linux_sll2(network)},
                                  std::pair{DLT_RAW, network}, std::pair{DLT_IPV4, network}}) {
        udp_frame out;
        ASSERT_EQ(decode_frame(link, view(f), out), frame_kind::udp) << link;
        EXPECT_EQ(bytes(out.payload.begin(), out.payload.end()), payload) << link;
        EXPECT_EQ(out.destination_port, 40000);
        EXPECT_EQ(out.destination_address, ip(127, 0, 0, 1));
    }
}

TEST(FrameDecoding, SkipsWhatIsNotAWholeIpv4UdpDatagram) {
    bytes const payload(100, std::byte{7});
    udp_frame out;
    // Other protocols.
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(ethernet(bytes(28), 0x0806)), out), frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(ethernet(bytes(40), 0x86DD)), out), frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(ethernet(ipv4_udp(payload, 1, {.protocol = 6}))), out),
              frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_LINUX_SLL, view(linux_sll(bytes(40), 0x86DD)), out),
              frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_RAW, view(bytes(40, std::byte{0x60})), out), frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_PPP, view(ethernet(ipv4_udp(payload, 1))), out), frame_kind::other);
    // Fragments: more-fragments set, or an offset.
    EXPECT_EQ(
        decode_frame(DLT_EN10MB, view(ethernet(ipv4_udp(payload, 1, {.fragment = 0x2000}))), out),
        frame_kind::fragment);
    EXPECT_EQ(
        decode_frame(DLT_EN10MB, view(ethernet(ipv4_udp(payload, 1, {.fragment = 0x0010}))), out),
        frame_kind::fragment);
    // Don't-fragment is fine.
    EXPECT_EQ(
        decode_frame(DLT_EN10MB, view(ethernet(ipv4_udp(payload, 1, {.fragment = 0x4000}))), out),
        frame_kind::udp);
    // Cut by the snap length, or lengths that do not add up.
    bytes cut = ethernet(ipv4_udp(payload, 1));
    cut.resize(cut.size() - 10);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(cut), out), frame_kind::truncated);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(bytes(10)), out), frame_kind::truncated);
    bytes short_ip = ethernet(ipv4_udp(payload, 1));
    short_ip.resize(14 + 19);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(short_ip), out), frame_kind::truncated);
    bytes bad_udp_length = ipv4_udp(payload, 1);
    md::test::put_be(bad_udp_length, 24, 200, 2); // longer than the IP packet
    EXPECT_EQ(decode_frame(DLT_RAW, view(bad_udp_length), out), frame_kind::truncated);
    bytes bad_header = ipv4_udp(payload, 1);
    bad_header[0] = std::byte{0x44}; // a 16-byte header
    EXPECT_EQ(decode_frame(DLT_RAW, view(bad_header), out), frame_kind::truncated);
    EXPECT_EQ(decode_frame(DLT_LINUX_SLL2, view(bytes(12)), out), frame_kind::truncated);
}

TEST(FrameDecoding, ParsesIpv4ForTheFilter) {
    EXPECT_EQ(pub::parse_ipv4("239.1.1.2"), ip(239, 1, 1, 2));
    EXPECT_FALSE(pub::parse_ipv4("239.1.1").has_value());
    EXPECT_FALSE(pub::parse_ipv4("::1").has_value());
    EXPECT_FALSE(pub::parse_ipv4("not-an-ip").has_value());
}

// ---- PcapReplay -------------------------------------------------------------------------------

/// A capture of `packets` to port 1, one every `gap_us` microseconds.
void write_feed(std::filesystem::path const& path, std::vector<bytes> const& packets,
                std::int64_t gap_us = 1) {
    std::vector<frame> frames;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        frames.push_back(
            {ethernet(ipv4_udp(packets[i], 1)), static_cast<std::int64_t>(i) * gap_us});
    }
    write_capture(path, DLT_EN10MB, frames);
}

std::uint64_t next_sequence_of(std::vector<bytes> const& packets) {
    std::uint64_t next = 0;
    for (bytes const& p : packets) {
        next =
            std::max<std::uint64_t>(next, md::nasdaq::moldudp64_sequence(view(p)) + mold_count(p));
    }
    return next;
}

TEST(PcapReplay, ReplaysTheFilteredPayloadsByteForByteInOrder) {
    scratch_dir dir("pcap_replay_test");
    std::vector<bytes> const packets = mold_traffic(2000);
    ASSERT_GT(packets.size(), 200U);
    // The feed to 239.1.1.1:30001, mixed with another port, another group, ARP, TCP, a
    // fragment and a frame cut by the snap length.
    std::vector<frame> frames;
    std::int64_t time_us = 0;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        frames.push_back({ethernet(ipv4_udp(packets[i], 30001)), time_us += 10});
        if (i % 50 == 0) {
            frames.push_back({ethernet(ipv4_udp(packets[i], 30002)), time_us});
            frames.push_back(
                {ethernet(ipv4_udp(packets[i], 30001, {.destination = ip(239, 1, 1, 2)})),
                 time_us});
            frames.push_back({ethernet(bytes(28), 0x0806), time_us});
            frames.push_back({ethernet(ipv4_udp(packets[i], 30001, {.protocol = 6})), time_us});
            frames.push_back(
                {ethernet(ipv4_udp(packets[i], 30001, {.fragment = 0x2000})), time_us});
            bytes cut = ethernet(ipv4_udp(packets[i], 30001));
            std::size_t const original = cut.size();
            cut.resize(100);
            frames.push_back({cut, time_us, original});
        }
    }
    write_capture(dir / "feed.pcap", DLT_EN10MB, frames);
    pub::pcap_source capture((dir / "feed.pcap").string(),
                             {.destination_port = 30001, .destination_address = ip(239, 1, 1, 1)});
    EXPECT_EQ(capture.link_name(), "EN10MB");
    fake_clock clock;
    recording_lines out(clock, 1);
    std::size_t hooked = 0;
    pub::nasdaq::moldudp64_publisher p({.on_packet =
                                            [&](std::span<std::byte const>) {
                                                ++hooked;
                                            }},
                                       out, clock);
    ASSERT_TRUE(p.replay(capture, {.speed = 0}).ok());
    EXPECT_EQ(out.on(0), packets);
    EXPECT_EQ(hooked, packets.size());
    std::size_t const extras = (packets.size() + 49) / 50;
    pub::pcap_counts const& c = capture.counts();
    EXPECT_EQ(c.frames, packets.size() + 6 * extras);
    EXPECT_EQ(c.datagrams, packets.size());
    EXPECT_EQ(c.filtered, 2 * extras);
    EXPECT_EQ(c.other, 2 * extras);
    EXPECT_EQ(c.fragments, extras);
    EXPECT_EQ(c.truncated, extras);
    EXPECT_TRUE(capture.error().empty());
    // Nothing is added: no heartbeats, no end of session; the messages are counted.
    EXPECT_EQ(p.counts().sent.packets, packets.size());
    EXPECT_EQ(p.counts().sent.messages, 2000U + 3 + 4 + 3); // body, opening, directory, closing
    EXPECT_EQ(p.counts().heartbeats, 0U);
    EXPECT_EQ(p.counts().end_of_session_packets, 0U);
    EXPECT_EQ(p.counts().next_sequence, next_sequence_of(packets));
}

TEST(PcapReplay, LinuxCookedCaptureWithoutFiltersSendsEveryUdpPayload) {
    scratch_dir dir("pcap_replay_test");
    std::vector<bytes> const packets = mold_traffic(300);
    std::vector<frame> frames;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        // Two ports, three groups: without filters all go.
        frames.push_back(
            {linux_sll(ipv4_udp(packets[i], static_cast<std::uint16_t>(30001 + i % 2),
                                {.destination = ip(239, 1, 1, static_cast<unsigned>(1 + i % 3))})),
             static_cast<std::int64_t>(i)});
    }
    frames.push_back({linux_sll(bytes(40), 0x86DD), 1000}); // IPv6: skipped
    write_capture(dir / "cooked.pcap", DLT_LINUX_SLL, frames);
    {
        pub::pcap_source capture((dir / "cooked.pcap").string(), {});
        fake_clock clock;
        recording_lines out(clock, 1);
        pub::nasdaq::moldudp64_publisher p({}, out, clock);
        ASSERT_TRUE(p.replay(capture, {.speed = 0}).ok());
        EXPECT_EQ(out.on(0), packets);
        EXPECT_EQ(capture.link_name(), "LINUX_SLL");
        EXPECT_EQ(capture.counts().other, 1U);
    }
    // One port only.
    pub::pcap_source capture((dir / "cooked.pcap").string(), {.destination_port = 30002});
    fake_clock clock;
    recording_lines out(clock, 1);
    pub::nasdaq::moldudp64_publisher p({}, out, clock);
    ASSERT_TRUE(p.replay(capture, {.speed = 0}).ok());
    std::vector<bytes> want;
    for (std::size_t i = 1; i < packets.size(); i += 2) {
        want.push_back(packets[i]);
    }
    EXPECT_EQ(out.on(0), want);
    EXPECT_EQ(capture.counts().filtered, packets.size() - want.size());
}

TEST(PcapReplay, KeepsTheCapturedTimingDividedBySpeedOrAFixedRate) {
    scratch_dir dir("pcap_replay_test");
    std::vector<bytes> const packets = mold_traffic(40);
    ASSERT_GE(packets.size(), 5U);
    std::vector<frame> frames;
    std::vector<std::int64_t> const offsets_us{0, 150'000, 160'000, 450'000, 600'000};
    for (std::size_t i = 0; i < offsets_us.size(); ++i) {
        frames.push_back({ethernet(ipv4_udp(packets[i], 1)), offsets_us[i]});
    }
    write_capture(dir / "slow.pcap", DLT_EN10MB, frames);
    auto send_times = [&](pub::nasdaq::replay_timing timing) {
        pub::pcap_source capture((dir / "slow.pcap").string(), {});
        fake_clock clock;
        recording_lines out(clock, 1);
        pub::nasdaq::moldudp64_publisher p({}, out, clock);
        EXPECT_TRUE(p.replay(capture, timing).ok());
        std::vector<std::int64_t> times;
        for (sent_datagram const& d : out.sent()) {
            times.push_back(std::chrono::duration_cast<microseconds>(d.at - clock.start()).count());
        }
        return times;
    };
    EXPECT_EQ(send_times({.speed = 1}), offsets_us);
    EXPECT_EQ(send_times({.speed = 2}),
              (std::vector<std::int64_t>{0, 75'000, 80'000, 225'000, 300'000}));
    EXPECT_EQ(send_times({.speed = 0}), (std::vector<std::int64_t>(5, 0)));
    EXPECT_EQ(send_times({.packets_per_second = 20}),
              (std::vector<std::int64_t>{0, 50'000, 100'000, 150'000, 200'000}));
    EXPECT_EQ(send_times({.packets_per_second = 0}), (std::vector<std::int64_t>(5, 0)));
}

TEST(PcapReplay, FaultInjectionAppliesOnTop) {
    scratch_dir dir("pcap_replay_test");
    std::vector<bytes> const packets = mold_traffic(400);
    write_feed(dir / "feed.pcap", packets);
    pub::pcap_source capture((dir / "feed.pcap").string(), {});
    fake_clock clock;
    recording_lines out(clock, 1);
    std::size_t hooked = 0;
    pub::nasdaq::moldudp64_publisher p({.faults = {.drop_every = 3, .duplicate_every = 5},
                                        .on_packet =
                                            [&](std::span<std::byte const>) {
                                                ++hooked;
                                            }},
                                       out, clock);
    ASSERT_TRUE(p.replay(capture, {.speed = 0}).ok());
    std::vector<bytes> want;
    std::size_t dropped = 0;
    std::size_t duplicated = 0;
    for (std::size_t i = 1; i <= packets.size(); ++i) {
        if (i % 3 == 0) {
            ++dropped;
            continue;
        }
        want.push_back(packets[i - 1]);
        if (i % 5 == 0) {
            want.push_back(packets[i - 1]);
            ++duplicated;
        }
    }
    EXPECT_EQ(out.on(0), want);
    EXPECT_EQ(hooked, packets.size()) << "the store sees the dropped packets too";
    EXPECT_EQ(p.counts().dropped.packets, dropped);
    EXPECT_EQ(p.counts().duplicated_packets, duplicated);
    EXPECT_EQ(p.counts().sent.packets, packets.size() - dropped);
    EXPECT_EQ(p.counts().next_sequence, next_sequence_of(packets)) << "dropped ones count";
}

TEST(PcapReplay, StopsAtTheDurationOrOnStop) {
    scratch_dir dir("pcap_replay_test");
    std::vector<bytes> const packets = mold_traffic(200);
    write_feed(dir / "feed.pcap", packets, 10'000); // 10 ms apart
    {
        pub::pcap_source capture((dir / "feed.pcap").string(), {});
        fake_clock clock;
        recording_lines out(clock, 1);
        pub::nasdaq::moldudp64_publisher p({.duration = milliseconds(45)}, out, clock);
        ASSERT_TRUE(p.replay(capture, {}).ok());
        EXPECT_EQ(out.sent().size(), 5U); // 0, 10, 20, 30, 40 ms
    }
    pub::pcap_source capture((dir / "feed.pcap").string(), {});
    fake_clock clock;
    recording_lines out(clock, 1);
    std::atomic<bool> flag{true};
    pub::nasdaq::moldudp64_publisher p({.stop_flag = &flag}, out, clock);
    ASSERT_TRUE(p.replay(capture, {}).ok());
    EXPECT_TRUE(out.sent().empty());
}

TEST(PcapReplay, BadFilesAreOneClearError) {
    scratch_dir dir("pcap_replay_test");
    auto error_of = [](std::filesystem::path const& path) {
        try {
            pub::pcap_source const capture(path.string(), {});
        } catch (std::runtime_error const& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    std::string const missing = error_of(dir / "missing.pcap");
    EXPECT_NE(missing.find("missing.pcap: cannot read as a pcap or pcapng capture"),
              std::string::npos)
        << missing;
    EXPECT_NE(missing.find("No such file"), std::string::npos) << missing;
    EXPECT_NE(error_of(dir.path()).find("is a directory"), std::string::npos);
    {
        std::ofstream text(dir / "text.pcap");
        text << "not a capture\n";
    }
    EXPECT_NE(error_of(dir / "text.pcap").find("text.pcap: cannot read as a pcap or pcapng"),
              std::string::npos);
    write_capture(dir / "ppp.pcap", DLT_PPP, {{bytes(40), 0}});
    EXPECT_NE(error_of(dir / "ppp.pcap").find("link type PPP is not supported"), std::string::npos);
}

TEST(PcapReplay, ADamagedCaptureIsSentUpToTheDamage) {
    scratch_dir dir("pcap_replay_test");
    std::vector<bytes> const packets = mold_traffic(100);
    write_feed(dir / "cut.pcap", packets);
    std::filesystem::resize_file(dir / "cut.pcap",
                                 std::filesystem::file_size(dir / "cut.pcap") - 30);
    pub::pcap_source capture((dir / "cut.pcap").string(), {});
    fake_clock clock;
    recording_lines out(clock, 1);
    pub::nasdaq::moldudp64_publisher p({}, out, clock);
    pub::run_result const result = p.replay(capture, {.speed = 0});
    std::string const damage =
        "cut.pcap: damaged after " + std::to_string(packets.size() - 1) + " frames";
    EXPECT_NE(result.error.find(damage), std::string::npos) << result.error;
    EXPECT_EQ(capture.error(), result.error);
    EXPECT_EQ(out.on(0), std::vector<bytes>(packets.begin(), packets.end() - 1));
    EXPECT_FALSE(capture.next().has_value()) << "the damage ends the datagrams for good";
}

} // namespace
