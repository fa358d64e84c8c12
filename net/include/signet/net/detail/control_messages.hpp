#pragma once

// Helpers shared by the receive paths (recvmmsg and io_uring recvmsg).

#include <cstddef>
#include <cstdint>

#include <sys/socket.h>
#include <time.h>

#include <signet/net/detail/feed_state.hpp>

namespace signet::net::detail {

/// Datagrams per recvmmsg call; also the pool's spare buffers beyond the queue capacity.
inline constexpr std::size_t receive_batch = 32;
/// Room for SCM_TIMESTAMPNS and SO_RXQ_OVFL control messages.
inline constexpr std::size_t control_buffer_size =
    CMSG_SPACE(sizeof(timespec)) + CMSG_SPACE(sizeof(std::uint32_t));

/// Reads the kernel timestamp into `p` and the kernel drop counter into `line`.
void read_control_message(cmsghdr const& c, packet& p, line_state& line) noexcept;
void apply_control_messages(msghdr const& message, packet& p, line_state& line) noexcept;
void store_source(packet& p, void const* name, std::size_t length) noexcept;
/// Counts the packet and pushes it; false (counted as dropped) when the queue is full.
bool deliver(line_state& line, packet const& p) noexcept;

} // namespace signet::net::detail
