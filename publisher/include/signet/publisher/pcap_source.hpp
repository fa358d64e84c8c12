#pragma once

// pcap_source: the UDP payloads of a capture file (pcap or pcapng, read with libpcap), for
// publisher::replay() (md_feed --replay-pcap). Frames: Ethernet (up to two VLAN tags), Linux cooked
// capture (SLL and SLL2) or raw IPv4; then IPv4 and UDP. Other frames (ARP, IPv6, TCP, ...), IP
// fragments and frames cut short by the capture's snap length are skipped and counted. Optional
// filters on the destination port and address.
//
// Threading: none. Costs: the file is read in blocks of block_size (1 MiB) through libpcap's
// stdio stream; next() returns views into libpcap's buffer, valid until the next call; nothing
// is allocated per frame, and nothing throws after construction (a damaged file ends the
// datagrams and error() says why).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace signet::publisher {

/// Link-layer types decode_frame() understands (the DLT_* values of <pcap/dlt.h>).
namespace link_type {
inline constexpr int ethernet = 1;     // DLT_EN10MB
inline constexpr int raw_ip = 12;      // DLT_RAW on Linux (LINKTYPE_RAW)
inline constexpr int linux_sll = 113;  // DLT_LINUX_SLL
inline constexpr int ipv4 = 228;       // DLT_IPV4
inline constexpr int linux_sll2 = 276; // DLT_LINUX_SLL2
} // namespace link_type

[[nodiscard]] bool link_type_supported(int link) noexcept;

enum class frame_kind : std::uint8_t {
    udp,       ///< an IPv4 UDP datagram, complete
    other,     ///< not IPv4 UDP (another ethertype or protocol)
    fragment,  ///< an IPv4 fragment (reassembly is not attempted)
    truncated, ///< cut short by the capture, or its lengths do not add up
};

struct udp_frame {
    std::span<std::byte const> payload;
    std::uint32_t destination_address = 0; ///< IPv4, host byte order
    std::uint16_t destination_port = 0;
};

/// Decodes one captured frame; `out` is set for frame_kind::udp only.
[[nodiscard]] frame_kind decode_frame(int link, std::span<std::byte const> frame,
                                      udp_frame& out) noexcept;

struct pcap_filter {
    std::optional<std::uint16_t> destination_port{};
    std::optional<std::uint32_t> destination_address{}; ///< IPv4, host byte order
};

/// "239.1.1.1" as a pcap_filter::destination_address; nullopt if it is not an IPv4 address.
[[nodiscard]] std::optional<std::uint32_t> parse_ipv4(std::string const& text) noexcept;

struct pcap_counts {
    std::uint64_t frames = 0;    ///< every record read
    std::uint64_t datagrams = 0; ///< UDP datagrams that passed the filter (returned)
    std::uint64_t filtered = 0;  ///< UDP datagrams the filter rejected
    std::uint64_t other = 0;     ///< not IPv4 UDP
    std::uint64_t fragments = 0;
    std::uint64_t truncated = 0;
};

class pcap_source {
public:
    struct datagram {
        std::span<std::byte const> payload;
        std::int64_t time_ns = 0;              ///< the capture's timestamp
        std::uint32_t destination_address = 0; ///< IPv4, host byte order
        std::uint16_t destination_port = 0;
    };

    /// Opens the file. Throws std::runtime_error naming the file and the problem: missing,
    /// a directory, not a capture, or a link type decode_frame() does not handle.
    pcap_source(std::string const& path, pcap_filter filter);
    ~pcap_source();
    pcap_source(pcap_source const&) = delete;
    pcap_source& operator=(pcap_source const&) = delete;

    /// The next datagram that passes the filter; nullopt at the end of the file, or where the
    /// file is damaged (e.g. ends inside a record): then error() says so, and what came before
    /// was returned.
    [[nodiscard]] std::optional<datagram> next() noexcept;
    /// Why next() stopped early ("<path>: damaged after N frames: <libpcap's reason>"); empty
    /// while the file reads well.
    [[nodiscard]] std::string const& error() const noexcept { return error_; }

    [[nodiscard]] pcap_counts const& counts() const noexcept { return counts_; }
    /// The link type's libpcap name ("EN10MB", "LINUX_SLL", ...).
    [[nodiscard]] std::string link_name() const;

private:
    struct handle_deleter {
        void operator()(void* handle) const noexcept;
    };
    static constexpr std::size_t block_size = std::size_t{1} << 20;

    std::string path_;
    std::vector<char> buffer_; // the stream's buffer: declared first, so it outlives handle_
    std::unique_ptr<void, handle_deleter> handle_; // pcap_t, kept out of this header
    pcap_filter filter_;
    int link_ = 0;
    pcap_counts counts_{};
    std::string error_;
};

} // namespace signet::publisher
