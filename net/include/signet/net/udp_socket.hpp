#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include <signet/net/udp_endpoint.hpp>

namespace signet::net {

/// Receive timestamps per datagram (SO_TIMESTAMPING), in packet::kernel_rx_ns.
enum class timestamping {
    off,
    software, ///< the kernel's receive time (CLOCK_REALTIME)
    hardware, ///< the NIC's, where the interface stamps received packets; software otherwise
};

std::string_view to_string(timestamping mode) noexcept;
/// "off", "software", "hardware"; throws std::invalid_argument otherwise.
timestamping parse_timestamping(std::string_view text);

struct udp_socket_options {
    /// Local address and port. For multicast: the port to receive on; the address is usually
    /// "any" ("*:port") or the group itself.
    udp_endpoint bind{};
    /// Join this multicast group (IPv4 or IPv6) on the socket.
    std::optional<udp_endpoint> group{};
    /// Source-specific multicast: only accept `group` traffic from this source (IPv4 only).
    std::optional<udp_endpoint> source{};
    /// Interface for the multicast join: a name ("eth0", "lo") or empty for the default route.
    std::string interface {};
    bool reuse_address = false;
    bool reuse_port = false;
    /// Requested kernel receive buffer; the granted size is read back (see receive_buffer()).
    std::size_t receive_buffer = 8u << 20;
    timestamping timestamps = timestamping::software;
    bool kernel_drop_counter = true; ///< SO_RXQ_OVFL: datagrams the kernel dropped (queue full)
    /// SO_BUSY_POLL + SO_PREFER_BUSY_POLL: a blocking receive or epoll_wait that finds the queue
    /// empty busy-polls the device's NAPI queue this long (µs) before sleeping. 0: off. Needs a
    /// NAPI driver (a real NIC, not loopback); above net.core.busy_read it needs CAP_NET_ADMIN.
    unsigned busy_poll_us = 0;
};

/// A non-blocking UDP socket, bound (and joined to a multicast group) on construction.
/// Owns its file descriptor (RAII, move-only). Setup errors come back as std::error_code from
/// open(), or as std::system_error from the throwing constructor, with a message that says what
/// to fix (the address in use, the missing multicast route, ...).
class udp_socket {
public:
    udp_socket() noexcept = default;
    /// Throws std::system_error.
    explicit udp_socket(udp_socket_options const& options);
    udp_socket(udp_socket&& other) noexcept;
    udp_socket& operator=(udp_socket&& other) noexcept;
    udp_socket(udp_socket const&) = delete;
    udp_socket& operator=(udp_socket const&) = delete;
    ~udp_socket();

    /// Opens, configures, binds and joins. On failure returns an error, leaves the socket closed
    /// and fills `what` with a readable explanation.
    static udp_socket open(udp_socket_options const& options, std::error_code& error,
                           std::string& what) noexcept;

    [[nodiscard]] int native_handle() const noexcept { return fd_; }
    [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
    /// The bound address (the kernel's choice for port 0).
    [[nodiscard]] udp_endpoint local_endpoint() const;
    /// The receive buffer the kernel granted (Linux reports twice the usable size; this is the
    /// value getsockopt returns).
    [[nodiscard]] std::size_t receive_buffer() const noexcept { return granted_rcvbuf_; }
    /// The receive timestamps in effect: hardware only where the interface stamps received
    /// packets (checked with SIOCGHWTSTAMP; see timestamp_note()).
    [[nodiscard]] timestamping timestamps() const noexcept { return timestamps_; }
    /// Why the timestamps in effect differ from those requested (empty when they do not).
    [[nodiscard]] std::string const& timestamp_note() const noexcept { return timestamp_note_; }
    /// True when the kernel granted less than requested (raise net.core.rmem_max).
    [[nodiscard]] bool receive_buffer_capped() const noexcept { return rcvbuf_capped_; }
    /// Datagrams the kernel dropped for this socket so far (its receive queue was full): the
    /// counter SO_RXQ_OVFL reports with each datagram, read directly (SO_MEMINFO), so drops
    /// after the last datagram received are counted too. Any thread; one syscall; 0 if closed.
    [[nodiscard]] std::uint64_t kernel_drops() const noexcept;
    /// Sends one datagram to `to` (non-blocking; any thread). An error when it was not sent
    /// (EAGAIN included: the caller retries later).
    std::error_code send_to(std::span<std::byte const> datagram,
                            udp_endpoint const& to) const noexcept;
    /// The group it joined on open (udp_socket_options::group), if any.
    [[nodiscard]] std::optional<udp_endpoint> const& group() const noexcept { return group_; }
    /// Leaves its group (`joined` false: the kernel stops delivering the group's datagrams to
    /// it, and the network stops sending them to this host once no socket here wants them) or
    /// joins it again, as open() did (source-specific where it was). For a line whose traffic
    /// is wanted only at times (a snapshot loop, while recovering). Any thread, one syscall;
    /// the caller keeps track of the state it asked for. An error when the socket has no group
    /// (EINVAL) or the kernel refused (leaving a group it is not in: EADDRNOTAVAIL).
    std::error_code set_group_membership(bool joined) const noexcept;
    void close() noexcept;

private:
    int fd_ = -1;
    std::size_t granted_rcvbuf_ = 0;
    bool rcvbuf_capped_ = false;
    timestamping timestamps_ = timestamping::off;
    std::string timestamp_note_{};
    std::optional<udp_endpoint> group_{};
    std::optional<udp_endpoint> source_{};
    unsigned interface_index_ = 0; ///< of the joins; 0: the routing table's choice
};

} // namespace signet::net
