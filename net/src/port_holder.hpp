#pragma once

// Whether a running process holds a UDP port: udp_socket's bind tells a port that is in use
// (fail at once) from one a process that just ended still holds a moment (its io_uring, and
// the sockets the ring refers to, are torn down after it exits: wait that out).

#include <cstdint>

namespace signet::net {

/// True if a process this one can see has a UDP socket bound to `port` (IPv4 or IPv6) open:
/// the sockets of the port from /proc/net/udp and udp6, looked for among the open files of
/// every process under /proc. False if none was found: the port's sockets are held by no
/// process (a ring being torn down), or by processes this one may not look into (another
/// user's, without privileges; another PID namespace's). Reads /proc: setup paths only.
[[nodiscard]] bool udp_port_held_by_a_process(std::uint16_t port) noexcept;

} // namespace signet::net
