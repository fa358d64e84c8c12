#pragma once

// xdp_frame: the af_xdp backend's header checks. An AF_XDP socket hands over whole Ethernet
// frames that nothing in the kernel has checked (the XDP program only matched the destination),
// so the backend does what the kernel's stack would: Ethernet (one 802.1Q/802.1ad tag allowed),
// IPv4 (version, header length, total length within the frame, header checksum, no fragment,
// protocol UDP) and UDP (length within the IP packet). The UDP checksum is not verified: on
// veth and with checksum offload the frame carries a partial one, and the NIC verifies it on
// real hardware. Pure functions, no state: unit-tested and fuzzed without a network.

#include <cstddef>
#include <cstdint>

#include <signet/net/packet.hpp>

namespace signet::net::detail {

/// Bytes of headers before the payload at most: Ethernet 14, one VLAN tag 4, IPv4 with options
/// 60, UDP 8.
inline constexpr std::size_t frame_header_room = 14 + 4 + 60 + 8;

/// Where a frame is going: its IPv4 destination address and UDP port, in network byte order.
struct frame_destination {
    std::uint32_t address = 0;
    std::uint16_t port = 0;
};

/// Checks the frame's headers and points `p` at its UDP payload (data, size, truncated when it
/// is longer than `buffer_size`, source_address); `to` gets the destination. False for a
/// malformed frame (`p` and `to` unchanged then).
bool strip_headers(std::byte const* frame, std::uint32_t length, std::size_t buffer_size, packet& p,
                   frame_destination& to) noexcept;

} // namespace signet::net::detail
