#pragma once

// What udp_socket.cpp and udp_sender.cpp share around the socket calls: the last call's error
// and an int socket option.

#include <cerrno>
#include <system_error>

#include <sys/socket.h>

namespace signet::net::detail {

/// errno as an error code (right after the failed call).
[[nodiscard]] inline std::error_code last_error() noexcept {
    return {errno, std::generic_category()};
}

/// setsockopt() of an int; false on failure (errno says why).
inline bool set_int(int fd, int level, int name, int value) noexcept {
    return ::setsockopt(fd, level, name, &value, sizeof(value)) == 0;
}

} // namespace signet::net::detail
