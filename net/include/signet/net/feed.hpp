#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <signet/net/packet.hpp>
#include <signet/net/udp_socket.hpp>

namespace signet::net {

/// What a line does when its feed's queue is full.
enum class full_policy {
    backpressure, ///< stop reading: data waits in the kernel until the parser catches up
    drop,         ///< keep reading: datagrams that do not fit are dropped and counted
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
        return *this;
    }
};

} // namespace signet::net
