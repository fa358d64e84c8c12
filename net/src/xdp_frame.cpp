#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <signet/net/detail/xdp_frame.hpp>

namespace signet::net::detail {

namespace {

std::uint16_t load16(std::byte const* p) noexcept {
    return static_cast<std::uint16_t>((std::to_integer<unsigned>(p[0]) << 8) |
                                      std::to_integer<unsigned>(p[1]));
}

// RFC 1071: the one's complement sum of the header's 16-bit words is 0xffff when it is intact.
bool header_checksum_ok(std::byte const* header, std::size_t length) noexcept {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i + 1 < length; i += 2) {
        sum += load16(header + i);
    }
    while ((sum >> 16) != 0) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum == 0xffff;
}

constexpr std::uint16_t ether_ipv4 = 0x0800;
constexpr std::uint16_t ether_vlan = 0x8100;
constexpr std::uint16_t ether_qinq = 0x88a8;
constexpr std::size_t ethernet_header = 14;
constexpr std::size_t vlan_tag = 4;
constexpr std::size_t udp_header = 8;
constexpr unsigned protocol_udp = 17;

} // namespace

bool strip_headers(std::byte const* frame, std::uint32_t length, std::size_t buffer_size, packet& p,
                   frame_destination& to) noexcept {
    if (length < ethernet_header) {
        return false;
    }
    std::size_t offset = ethernet_header;
    std::uint16_t type = load16(frame + 12);
    if (type == ether_vlan || type == ether_qinq) {
        if (length < offset + vlan_tag) {
            return false;
        }
        type = load16(frame + offset + 2);
        offset += vlan_tag;
    }
    if (type != ether_ipv4 || length < offset + 20) {
        return false;
    }
    std::byte const* ip = frame + offset;
    unsigned const version = std::to_integer<unsigned>(ip[0]) >> 4;
    std::size_t const ip_header = (std::to_integer<unsigned>(ip[0]) & 0x0f) * 4U;
    std::size_t const total = load16(ip + 2);
    if (version != 4 || ip_header < 20 || total < ip_header + udp_header ||
        offset + total > length || !header_checksum_ok(ip, ip_header)) {
        return false;
    }
    if ((load16(ip + 6) & 0x3fff) != 0 || std::to_integer<unsigned>(ip[9]) != protocol_udp) {
        return false; // a fragment (the kernel reassembles them) or not UDP
    }
    std::byte const* udp = ip + ip_header;
    std::size_t const udp_length = load16(udp + 4);
    if (udp_length < udp_header || udp_length > total - ip_header) {
        return false;
    }
    sockaddr_in source{};
    source.sin_family = AF_INET;
    std::memcpy(&source.sin_addr.s_addr, ip + 12, 4);
    std::memcpy(&source.sin_port, udp, 2);
    std::memcpy(&to.address, ip + 16, 4);
    std::memcpy(&to.port, udp + 2, 2);
    p.source_address = {};
    std::memcpy(&p.source_address, &source, sizeof(source));
    std::size_t const payload = udp_length - udp_header;
    p.data = udp + udp_header; // packet::data is const: the frame is only read
    p.truncated = payload > buffer_size;
    p.size = static_cast<std::uint32_t>(p.truncated ? buffer_size : payload);
    return true;
}

} // namespace signet::net::detail
