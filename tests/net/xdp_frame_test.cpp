// The af_xdp backend's header checks (xdp_frame.hpp) on hand-built frames: what passes, what
// is cut, and every way a header can lie.
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include <arpa/inet.h>

#include <gtest/gtest.h>

#include <signet/net/detail/xdp_frame.hpp>

namespace {

using signet::net::packet;
using signet::net::detail::frame_destination;
using signet::net::detail::strip_headers;

struct frame_spec {
    std::size_t payload = 64;
    bool vlan = false;
    std::size_t ip_options = 0; // bytes, a multiple of 4
    int total_delta = 0;        // added to the true IPv4 total length
    int udp_delta = 0;          // added to the true UDP length
    bool bad_checksum = false;
    std::uint16_t fragment = 0; // flags + offset field
    std::uint8_t protocol = 17;
    std::uint16_t ether_type = 0x0800;
    std::uint8_t version = 4;
};

std::vector<std::byte> make_frame(frame_spec const& s) {
    std::size_t const ip_header = 20 + s.ip_options;
    std::size_t const l2 = s.vlan ? 18 : 14;
    std::vector<std::uint8_t> f(l2 + ip_header + 8 + s.payload, 0);
    if (s.vlan) {
        f[12] = 0x81;
        f[13] = 0x00;
        f[16] = static_cast<std::uint8_t>(s.ether_type >> 8);
        f[17] = static_cast<std::uint8_t>(s.ether_type);
    } else {
        f[12] = static_cast<std::uint8_t>(s.ether_type >> 8);
        f[13] = static_cast<std::uint8_t>(s.ether_type);
    }
    std::uint8_t* ip = f.data() + l2;
    int const total = static_cast<int>(ip_header + 8 + s.payload) + s.total_delta;
    ip[0] = static_cast<std::uint8_t>(s.version << 4 | ip_header / 4);
    ip[2] = static_cast<std::uint8_t>(total >> 8);
    ip[3] = static_cast<std::uint8_t>(total);
    ip[6] = static_cast<std::uint8_t>(s.fragment >> 8);
    ip[7] = static_cast<std::uint8_t>(s.fragment);
    ip[8] = 64;
    ip[9] = s.protocol;
    std::array<std::uint8_t, 4> const source{10, 0, 0, 2};
    std::array<std::uint8_t, 4> const destination{10, 0, 0, 1};
    std::memcpy(ip + 12, source.data(), 4);
    std::memcpy(ip + 16, destination.data(), 4);
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < ip_header; i += 2) {
        sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    auto const checksum = static_cast<std::uint16_t>(~sum ^ (s.bad_checksum ? 1U : 0U));
    ip[10] = static_cast<std::uint8_t>(checksum >> 8);
    ip[11] = static_cast<std::uint8_t>(checksum);
    std::uint8_t* udp = ip + ip_header;
    int const length = static_cast<int>(8 + s.payload) + s.udp_delta;
    udp[0] = 0x12; // source port 0x1234
    udp[1] = 0x34;
    udp[2] = 0x75; // destination port 30001
    udp[3] = 0x31;
    udp[4] = static_cast<std::uint8_t>(length >> 8);
    udp[5] = static_cast<std::uint8_t>(length);
    for (std::size_t i = 0; i < s.payload; ++i) {
        udp[8 + i] = static_cast<std::uint8_t>(i);
    }
    std::vector<std::byte> out(f.size());
    std::memcpy(out.data(), f.data(), f.size());
    return out;
}

bool strip(std::vector<std::byte> const& f, packet& p, frame_destination& to,
           std::size_t buffer = 1500) {
    return strip_headers(f.data(), static_cast<std::uint32_t>(f.size()), buffer, p, to);
}

TEST(XdpFrame, AnIntactFrameYieldsItsPayloadSourceAndDestination) {
    for (bool vlan : {false, true}) {
        for (std::size_t options : {std::size_t{0}, std::size_t{12}}) {
            auto const f = make_frame({.vlan = vlan, .ip_options = options});
            packet p;
            frame_destination to;
            ASSERT_TRUE(strip(f, p, to)) << vlan << " " << options;
            EXPECT_EQ(p.size, 64U);
            EXPECT_FALSE(p.truncated);
            EXPECT_EQ(p.data, f.data() + (vlan ? 18 : 14) + 20 + options + 8);
            EXPECT_EQ(std::to_integer<int>(p.data[5]), 5);
            EXPECT_EQ(p.source().to_string(), "10.0.0.2:4660");
            EXPECT_EQ(ntohs(to.port), 30001);
            EXPECT_EQ(to.address, htonl(0x0a000001U));
        }
    }
}

TEST(XdpFrame, EthernetPaddingBeyondTheIpPacketIsIgnored) {
    auto f = make_frame({.payload = 4});
    f.resize(60); // padded to the Ethernet minimum
    packet p;
    frame_destination to;
    ASSERT_TRUE(strip(f, p, to));
    EXPECT_EQ(p.size, 4U);
}

TEST(XdpFrame, APayloadLongerThanTheBufferIsCutAndFlagged) {
    auto const f = make_frame({.payload = 200});
    packet p;
    frame_destination to;
    ASSERT_TRUE(strip(f, p, to, 100));
    EXPECT_EQ(p.size, 100U);
    EXPECT_TRUE(p.truncated);
}

TEST(XdpFrame, EveryLyingOrForeignHeaderIsRejected) {
    std::vector<std::pair<char const*, frame_spec>> const bad = {
        {"IPv4 checksum", {.bad_checksum = true}},
        {"total length beyond the frame", {.total_delta = 1}},
        {"total length below the headers", {.total_delta = -60}},
        {"UDP length beyond the packet", {.udp_delta = 1}},
        {"UDP length below its header", {.udp_delta = -68}},
        {"a first fragment", {.fragment = 0x2000}},
        {"a later fragment", {.fragment = 0x0010}},
        {"TCP", {.protocol = 6}},
        {"IPv6 ether type", {.ether_type = 0x86dd}},
        {"ARP", {.ether_type = 0x0806}},
        {"IP version 6 in an IPv4 ether type", {.version = 6}},
    };
    for (auto const& [what, spec] : bad) {
        auto const f = make_frame(spec);
        packet p;
        frame_destination to;
        EXPECT_FALSE(strip(f, p, to)) << what;
        EXPECT_EQ(p.data, nullptr) << what;
    }
}

TEST(XdpFrame, EveryCutOfAFrameIsRejectedWithoutReadingPastIt) {
    auto const f = make_frame({.payload = 16, .vlan = true, .ip_options = 8});
    for (std::size_t length = 0; length < f.size(); ++length) {
        std::vector<std::byte> const cut(f.begin(), f.begin() + static_cast<long>(length));
        packet p;
        frame_destination to;
        EXPECT_FALSE(strip(cut, p, to)) << length; // ASan: nothing read beyond `cut`
    }
}

} // namespace
