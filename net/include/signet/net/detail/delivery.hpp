#pragma once

// Delivery: how every receive path (recvmmsg, io_uring recvmsg, memory_line) turns a datagram
// in a pool buffer into a queued packet: control messages (kernel timestamps, the kernel drop
// counter), the sender's address, the line's counters and the full-queue policy, in one place.

#include <cstddef>
#include <cstdint>

// <linux/errqueue.h> needs <time.h>'s timespec declared before it: keep this order.
// clang-format off
#include <sys/socket.h>
#include <time.h>
#include <linux/errqueue.h>
// clang-format on

#include <signet/net/detail/feed_state.hpp>

namespace signet::net::detail {

/// Datagrams per recvmmsg call; also the pool's spare buffers beyond the queue capacity.
inline constexpr std::size_t receive_batch = 32;
/// Room for an SCM_TIMESTAMPING (three timespecs) and an SO_RXQ_OVFL control message.
inline constexpr std::size_t control_buffer_size =
    CMSG_SPACE(sizeof(scm_timestamping)) + CMSG_SPACE(sizeof(std::uint32_t));

/// Reads the kernel or NIC timestamp into `p` and the kernel drop counter into `line`.
void read_control_message(cmsghdr const& c, packet& p, line_state& line) noexcept;
void apply_control_messages(msghdr const& message, packet& p, line_state& line) noexcept;
void store_source(packet& p, void const* name, std::size_t length) noexcept;

enum class delivery {
    queued,  ///< in the line's queue: the parser owns the buffer now
    dropped, ///< full queue under full_policy::drop: counted; the caller recycles the buffer
    full,    ///< full queue under full_policy::backpressure: the caller keeps the packet
};
/// Counts the datagram as received (packets, bytes, truncated) and pushes it into the line's
/// queue, applying the feed's full-queue policy. `hold` (the caller already holds older packets
/// of this line) skips the push so that packets stay in order.
delivery deliver(line_state& line, packet const& p, bool hold = false) noexcept;

} // namespace signet::net::detail
