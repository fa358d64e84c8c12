#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <system_error>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <signet/md/big_endian.hpp>
#include <signet/publisher/pcap_source.hpp>

#include <pcap/pcap.h>

namespace signet::publisher {

namespace {

static_assert(link_type::ethernet == DLT_EN10MB && link_type::raw_ip == DLT_RAW &&
              link_type::linux_sll == DLT_LINUX_SLL && link_type::ipv4 == DLT_IPV4 &&
              link_type::linux_sll2 == DLT_LINUX_SLL2);

constexpr std::uint16_t ethertype_ipv4 = 0x0800;
constexpr std::uint8_t protocol_udp = 17;

// The callers check the lengths first.
std::uint16_t be16(std::span<std::byte const> b, std::size_t at) noexcept {
    return md::load_be16(b.data() + at);
}

std::uint32_t be32(std::span<std::byte const> b, std::size_t at) noexcept {
    return md::load_be32(b.data() + at);
}

// The IPv4 packet after the link header; empty (with `kind` set) if there is none.
std::span<std::byte const> network_layer(int link, std::span<std::byte const> frame,
                                         frame_kind& kind) noexcept {
    std::size_t offset = 0;
    std::uint16_t protocol = 0;
    switch (link) {
    case link_type::ethernet: {
        offset = 14;
        if (frame.size() < offset) {
            kind = frame_kind::truncated;
            return {};
        }
        protocol = be16(frame, 12);
        // 802.1Q / 802.1ad / legacy QinQ tags: 4 bytes each, the ethertype follows.
        for (int tags = 0;
             tags < 2 && (protocol == 0x8100 || protocol == 0x88A8 || protocol == 0x9100); ++tags) {
            if (frame.size() < offset + 4) {
                kind = frame_kind::truncated;
                return {};
            }
            protocol = be16(frame, offset + 2);
            offset += 4;
        }
        break;
    }
    case link_type::linux_sll:
        offset = 16;
        if (frame.size() < offset) {
            kind = frame_kind::truncated;
            return {};
        }
        protocol = be16(frame, 14);
        break;
    case link_type::linux_sll2:
        offset = 20;
        if (frame.size() < offset) {
            kind = frame_kind::truncated;
            return {};
        }
        protocol = be16(frame, 0);
        break;
    case link_type::raw_ip:
    case link_type::ipv4:
        if (frame.empty()) {
            kind = frame_kind::truncated;
            return {};
        }
        protocol = (std::to_integer<unsigned>(frame[0]) >> 4) == 4 ? ethertype_ipv4 : 0;
        break;
    default:
        kind = frame_kind::other;
        return {};
    }
    if (protocol != ethertype_ipv4) {
        kind = frame_kind::other;
        return {};
    }
    return frame.subspan(offset);
}

} // namespace

std::optional<std::uint32_t> parse_ipv4(std::string const& text) noexcept {
    in_addr address{};
    if (::inet_pton(AF_INET, text.c_str(), &address) != 1) {
        return std::nullopt;
    }
    return ntohl(address.s_addr);
}

bool link_type_supported(int link) noexcept {
    return link == link_type::ethernet || link == link_type::raw_ip ||
           link == link_type::linux_sll || link == link_type::linux_sll2 || link == link_type::ipv4;
}

frame_kind decode_frame(int link, std::span<std::byte const> frame, udp_frame& out) noexcept {
    frame_kind kind = frame_kind::other;
    std::span<std::byte const> const ip = network_layer(link, frame, kind);
    if (ip.empty()) {
        return kind;
    }
    if (ip.size() < 20) {
        return frame_kind::truncated;
    }
    if ((std::to_integer<unsigned>(ip[0]) >> 4) != 4) {
        return frame_kind::other;
    }
    std::size_t const header = (std::to_integer<std::size_t>(ip[0]) & 0x0F) * 4;
    std::size_t const total = be16(ip, 2);
    if (header < 20 || total < header) {
        return frame_kind::truncated; // lengths that do not add up
    }
    if (std::to_integer<unsigned>(ip[9]) != protocol_udp) {
        return frame_kind::other;
    }
    // More fragments, or a fragment offset: part of a datagram.
    if ((be16(ip, 6) & 0x3FFF) != 0) {
        return frame_kind::fragment;
    }
    // Ethernet pads short frames: the IP total length bounds the packet, not the frame.
    if (ip.size() < total || total < header + 8) {
        return frame_kind::truncated;
    }
    std::span<std::byte const> const udp = ip.subspan(header, total - header);
    std::size_t const udp_length = be16(udp, 4);
    if (udp_length < 8 || udp_length > udp.size()) {
        return frame_kind::truncated;
    }
    out.payload = udp.subspan(8, udp_length - 8);
    out.destination_address = be32(ip, 16);
    out.destination_port = be16(udp, 2);
    return frame_kind::udp;
}

void pcap_source::handle_deleter::operator()(void* handle) const noexcept {
    pcap_close(static_cast<pcap_t*>(handle));
}

pcap_source::pcap_source(std::string const& path, pcap_filter filter)
    : path_(path)
    , filter_(filter) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        throw std::runtime_error(path + ": is a directory, not a capture file");
    }
    // libpcap reads the file through stdio: give it a block buffer so that each read() brings
    // block_size bytes instead of stdio's default few KiB.
    std::FILE* const file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) {
        throw std::runtime_error(
            path + ": cannot read as a pcap or pcapng capture: " + std::strerror(errno));
    }
    buffer_.resize(block_size);
    std::setvbuf(file, buffer_.data(), _IOFBF, buffer_.size());
    char error[PCAP_ERRBUF_SIZE] = {};
    pcap_t* const handle =
        pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, error);
    if (handle == nullptr) {
        std::fclose(file); // on failure libpcap leaves the stream to the caller
        throw std::runtime_error(path + ": cannot read as a pcap or pcapng capture: " + error);
    }
    handle_.reset(handle);
    link_ = pcap_datalink(handle);
    if (!link_type_supported(link_)) {
        throw std::runtime_error(path + ": link type " + link_name() +
                                 " is not supported (Ethernet, Linux cooked SLL/SLL2 or raw "
                                 "IPv4 captures are)");
    }
}

pcap_source::~pcap_source() = default;

std::string pcap_source::link_name() const {
    char const* const name = pcap_datalink_val_to_name(link_);
    return name != nullptr ? name : std::to_string(link_);
}

std::optional<pcap_source::datagram> pcap_source::next() noexcept {
    auto* const handle = static_cast<pcap_t*>(handle_.get());
    if (!error_.empty()) {
        return std::nullopt;
    }
    for (;;) {
        pcap_pkthdr* header = nullptr;
        u_char const* data = nullptr;
        int const result = pcap_next_ex(handle, &header, &data);
        if (result == PCAP_ERROR_BREAK) {
            return std::nullopt; // end of file
        }
        if (result != 1) {
            try { // once per file: the message is built at the end of the replay
                error_ = path_ + ": damaged after " + std::to_string(counts_.frames) +
                         " frames: " + pcap_geterr(handle);
            } catch (std::bad_alloc const&) {
                error_ = "damaged";
            }
            return std::nullopt;
        }
        ++counts_.frames;
        udp_frame frame;
        std::span<std::byte const> const bytes(reinterpret_cast<std::byte const*>(data),
                                               header->caplen);
        switch (decode_frame(link_, bytes, frame)) {
        case frame_kind::udp:
            break;
        case frame_kind::other:
            ++counts_.other;
            continue;
        case frame_kind::fragment:
            ++counts_.fragments;
            continue;
        case frame_kind::truncated:
            ++counts_.truncated;
            continue;
        }
        if ((filter_.destination_port && frame.destination_port != *filter_.destination_port) ||
            (filter_.destination_address &&
             frame.destination_address != *filter_.destination_address)) {
            ++counts_.filtered;
            continue;
        }
        ++counts_.datagrams;
        // With nanosecond precision requested, tv_usec holds nanoseconds.
        std::int64_t const time_ns = static_cast<std::int64_t>(header->ts.tv_sec) * 1'000'000'000 +
                                     static_cast<std::int64_t>(header->ts.tv_usec);
        return datagram{frame.payload, time_ns, frame.destination_address, frame.destination_port};
    }
}

} // namespace signet::publisher
