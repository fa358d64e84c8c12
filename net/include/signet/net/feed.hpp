#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <signet/net/packet.hpp>
#include <signet/net/udp_socket.hpp>

namespace signet::net {

/// What a line does when its feed's queue is full.
enum class full_policy {
    backpressure, ///< stop reading: data waits in the kernel until the parser catches up
    drop,         ///< keep reading: datagrams that do not fit are dropped and counted
};

/// af_xdp backend: how the feed's lines attach to their interface (udp_socket_options::interface,
/// the same for every line of the feed). The XDP program is per interface: feeds that share an
/// interface must ask for the same mode.
enum class xdp_mode {
    automatic, ///< native (driver) mode where the driver has it, else generic
    native,    ///< the driver's XDP hook (XDP_FLAGS_DRV_MODE)
    generic,   ///< the kernel's generic hook after the driver (XDP_FLAGS_SKB_MODE): any interface
};
/// How the AF_XDP sockets take frames from the interface.
enum class xdp_bind {
    automatic, ///< zero-copy where the driver offers it, else copy
    copy,      ///< the kernel copies each frame into the UMEM (XDP_COPY): any interface
    zero_copy, ///< the NIC writes into the UMEM (XDP_ZEROCOPY): a driver with AF_XDP zero-copy
};

std::string_view to_string(xdp_mode mode) noexcept;
/// "auto", "native", "generic"; throws std::invalid_argument otherwise.
xdp_mode parse_xdp_mode(std::string_view text);
std::string_view to_string(xdp_bind bind) noexcept;
/// "auto", "copy", "zero_copy"; throws std::invalid_argument otherwise.
xdp_bind parse_xdp_bind(std::string_view text);

struct af_xdp_options {
    /// RX queues of the interface to serve, one AF_XDP socket per line and queue. Empty: every
    /// RX queue the interface has (a frame for the line on a queue without a socket would reach
    /// the kernel's stack instead).
    std::vector<unsigned> queues{};
    xdp_mode mode = xdp_mode::automatic;
    xdp_bind bind = xdp_bind::automatic;
    /// SO_PREFER_BUSY_POLL + SO_BUSY_POLL (µs) on the AF_XDP sockets: a receive that finds the
    /// ring empty polls the driver's NAPI queue itself. 0: off. Needs a NAPI driver.
    unsigned busy_poll_us = 0;
    /// SO_BUSY_POLL_BUDGET: frames per busy poll; 0: the kernel's default (8).
    unsigned busy_poll_budget = 0;
};

/// A parser: any callable taking the packet (runs as a contract: never concurrently with itself).
template <typename P>
concept packet_parser = std::invocable<P&, packet const&>;

struct feed_options {
    std::string name{};
    /// One socket per line: one for a plain feed, two for A/B lines into one parser.
    std::vector<udp_socket_options> lines{};
    std::size_t queue_capacity = 4096; ///< packets in flight per line (also the pool size)
    std::size_t buffer_size = 1500;    ///< payload bytes per packet buffer (1500-byte MTU)
    full_policy on_full = full_policy::backpressure;
    /// io_uring: buffers each line keeps in the kernel's provided-buffer ring. The rest of the
    /// pool waits, the most recently freed on top, so the kernel copies into buffers still in
    /// cache instead of cycling through the whole pool. A ring that runs dry ends the multishot
    /// receive until the parser frees buffers (counted in feed_stats::rearms; the data waits
    /// in the socket). 0: the whole pool.
    std::size_t ring_buffers = 64;
    /// af_xdp backend only (receive_backend.hpp).
    af_xdp_options af_xdp{};
};

/// Counters of one feed (all lines), readable from any thread while running. Once idle:
/// packets == parsed + dropped.
struct feed_stats {
    std::uint64_t packets = 0;      ///< datagrams received from the kernel (truncated included)
    std::uint64_t bytes = 0;        ///< payload bytes of those
    std::uint64_t parsed = 0;       ///< packets handed to the parser
    std::uint64_t dropped = 0;      ///< queue full under full_policy::drop
    std::uint64_t truncated = 0;    ///< larger than buffer_size (delivered with truncated set)
    std::uint64_t kernel_drops = 0; ///< the kernel's own drops (socket buffer full), also those
                                    ///< after the last datagram received (SO_MEMINFO)
    std::uint64_t rearms = 0;       ///< io_uring multishot receives re-armed after ending
    std::uint64_t hardware_timestamps = 0; ///< packets stamped by the NIC (the rest: software)
    std::uint64_t parser_errors = 0;       ///< exceptions thrown by the parser (caught and counted)
    std::uint64_t malformed = 0; ///< af_xdp: frames whose Ethernet/IPv4/UDP headers failed the
                                 ///< checks (dropped; the kernel's stack checks them otherwise)

    /// Field by field (lines of one feed, feeds of a run).
    feed_stats& operator+=(feed_stats const& o) noexcept {
        packets += o.packets;
        bytes += o.bytes;
        parsed += o.parsed;
        dropped += o.dropped;
        truncated += o.truncated;
        kernel_drops += o.kernel_drops;
        rearms += o.rearms;
        hardware_timestamps += o.hardware_timestamps;
        parser_errors += o.parser_errors;
        malformed += o.malformed;
        return *this;
    }
};

} // namespace signet::net
