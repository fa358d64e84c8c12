#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <netinet/in.h>

#include <signet/core/spsc_fixed_queue.hpp>
#include <signet/net/udp_endpoint.hpp>

namespace signet::net {

/// One received datagram, as a parser sees it. The bytes live in a pool buffer that returns to
/// the pool after the parser call: copy what must outlive the call.
struct packet {
    std::byte const* data = nullptr;
    std::uint32_t size = 0;   ///< payload bytes (at most the buffer size)
    std::uint32_t buffer = 0; ///< pool buffer index (internal)
    /// Receive timestamp (SO_TIMESTAMPING), ns: the kernel's (CLOCK_REALTIME), or the NIC's when
    /// hardware_timestamp is set (the NIC's clock, usually PTP-disciplined); 0 when off. The
    /// af_xdp backend has no kernel stamp: its receive side's user-space stamp (runtime::
    /// timestamp_note() says so).
    std::uint64_t kernel_rx_ns = 0;
    std::uint64_t user_rx_ns = 0;    ///< when the receiver took it from the kernel: realtime_clock
    std::uint16_t line = 0;          ///< which socket of the feed: 0 = line A, 1 = line B
    bool truncated = false;          ///< the datagram was larger than the buffer (bytes lost)
    bool hardware_timestamp = false; ///< kernel_rx_ns comes from the NIC (timestamping::hardware)
    /// Set by the parser contract: the parser was called for this feed's previous packet just
    /// before, in the same run, so that call's end is this one's start (stage_latency).
    bool follows_in_run = false;
    sockaddr_in6 source_address{}; ///< sender (an IPv4 sender is stored as sockaddr_in)

    [[nodiscard]] std::span<std::byte const> payload() const noexcept { return {data, size}; }
    [[nodiscard]] udp_endpoint source() const noexcept {
        return udp_endpoint::from_sockaddr(
            reinterpret_cast<sockaddr const*>(&source_address),
            source_address.sin6_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
    }
};

/// A fixed set of fixed-size buffers, allocated once. Buffers go out with packets and come back
/// through returns(): an spsc queue whose producer is the feed's parser contract and whose
/// consumer is the line's receive side (receive contract or poller thread).
class packet_pool {
public:
    /// `headroom` bytes precede each buffer's payload area (io_uring's recvmsg header).
    /// `allocate` false: no buffers of its own, only the returns queue (the af_xdp backend's
    /// UMEM holds the frames; buffer() must not be called).
    packet_pool(std::size_t count, std::size_t buffer_size, std::size_t headroom,
                bool allocate = true);

    [[nodiscard]] std::size_t count() const noexcept { return count_; }
    [[nodiscard]] std::size_t buffer_size() const noexcept { return buffer_size_; }
    [[nodiscard]] std::size_t stride() const noexcept { return stride_; }
    /// Start of buffer `index` (headroom included).
    [[nodiscard]] std::byte* buffer(std::uint32_t index) const noexcept {
        return memory_.get() + static_cast<std::size_t>(index) * stride_;
    }
    /// Producer: parser side (returns a buffer after parsing). Consumer: receive side.
    spsc_fixed_queue<std::uint32_t>& returns() noexcept { return returns_; }

private:
    std::size_t count_;
    std::size_t buffer_size_;
    std::size_t stride_;
    std::unique_ptr<std::byte[]> memory_;
    spsc_fixed_queue<std::uint32_t> returns_;
};

} // namespace signet::net
