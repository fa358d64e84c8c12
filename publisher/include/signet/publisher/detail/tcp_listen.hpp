#pragma once

// tcp_listen: the listening socket of a publisher's TCP service (GLIMPSE, Cboe's GRP and Spin):
// non-blocking, any address of the family, SO_REUSEADDR.
//
// Threading: none. Costs: setup only.

#include <cstdint>
#include <string_view>

#include <signet/net/unique_fd.hpp>

namespace signet::publisher::detail {

/// Listens on `port` (0: any free one) of AF_INET or AF_INET6. Throws std::invalid_argument for
/// another family, std::system_error naming `service` and the port when it cannot listen.
[[nodiscard]] net::unique_fd listen_tcp(int family, std::uint16_t port, std::string_view service);
/// The port a socket is bound to; 0 when it cannot tell.
[[nodiscard]] std::uint16_t bound_port(int fd) noexcept;

} // namespace signet::publisher::detail
