#pragma once

// The peer side of TCP tests: a blocking listener on 127.0.0.1 and an ephemeral port, and
// whole-buffer sends and reads with a bound, on the test's own thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/net/unique_fd.hpp>

namespace signet::test {

class tcp_listener {
public:
    tcp_listener()
        : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        EXPECT_EQ(::listen(fd_.get(), 4), 0);
        socklen_t length = sizeof address;
        EXPECT_EQ(::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
        port_ = ntohs(address.sin_port);
    }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// The next connection, or a closed fd after `limit`.
    [[nodiscard]] net::unique_fd
    accept(std::chrono::milliseconds limit = std::chrono::seconds(20)) const {
        pollfd p{.fd = fd_.get(), .events = POLLIN, .revents = 0};
        if (::poll(&p, 1, static_cast<int>(limit.count())) != 1) {
            return net::unique_fd();
        }
        return net::unique_fd(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    }

private:
    net::unique_fd fd_;
    std::uint16_t port_ = 0;
};

/// Sends every byte (blocking); false when the peer went away.
inline bool send_all(int fd, std::span<std::byte const> bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        ssize_t const n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

inline bool send_all(int fd, std::string const& text) {
    return send_all(fd, std::as_bytes(std::span(text)));
}

/// Reads exactly `out.size()` bytes within `limit`; false on a timeout or the peer closing.
inline bool read_exactly(int fd, std::span<std::byte> out,
                         std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    std::size_t got = 0;
    while (got < out.size()) {
        pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
        if (::poll(&p, 1, static_cast<int>(limit.count())) != 1) {
            return false;
        }
        ssize_t const n = ::recv(fd, out.data() + got, out.size() - got, 0);
        if (n <= 0) {
            return false;
        }
        got += static_cast<std::size_t>(n);
    }
    return true;
}

} // namespace signet::test
