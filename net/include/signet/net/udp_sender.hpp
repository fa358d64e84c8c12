#pragma once

// udp_sender: the one UDP socket for sending in signet (md_feed's lines, the request server's
// answers, test and benchmark senders). Held in a unique_fd; optionally bound to a local address
// first (the source that datagrams carry: a source-specific multicast receiver accepts nothing
// else); multicast TTL, loopback and outgoing interface set for the destinations' family; a
// large SO_SNDBUF.
//
// send() waits while the local queue is full (ENOBUFS, EAGAIN) or a signal interrupts it
// (EINTR): it never drops a datagram silently; any other error is reported. try_send() never
// waits. native_handle() is there for callers that batch with sendmmsg or poll the socket
// (a bound sender receives on its port too).
//
// Threading: none inside; send() and try_send() may run on any one thread at a time per
// datagram (the kernel serialises sends on one socket). Costs: setup syscalls at construction;
// a send is one sendto, nothing allocates or throws in the error_code overloads.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include <sys/socket.h>

#include <signet/net/udp_endpoint.hpp>
#include <signet/net/unique_fd.hpp>

namespace signet::net {

struct udp_sender_options {
    /// AF_INET or AF_INET6: the family of every destination.
    int family = AF_INET;
    /// Bind to this local address (and port, unless 0) before anything is sent. Its family must
    /// be `family`.
    std::optional<udp_endpoint> source{};
    /// Set the multicast options below (for `family`); off: the kernel's defaults stay.
    bool multicast = false;
    int ttl = 1; ///< IP_MULTICAST_TTL / IPV6_MULTICAST_HOPS, 0 to 255
    bool loop = true;
    /// Outgoing interface for multicast ("eth0", "lo"); empty: the route's.
    std::string interface {};
    /// Requested SO_SNDBUF (the kernel caps it at net.core.wmem_max).
    std::size_t send_buffer = 4u << 20;
    /// How error messages name `source` and `interface`: an application passes the names its
    /// users know (md_feed: "--source", "--interface").
    std::string_view source_name = "source address";
    std::string_view interface_name = "multicast interface";
};

class udp_sender {
public:
    /// Opens and configures the socket. Throws std::system_error whose message names what to
    /// fix: the source address that is not of this host (or whose port is taken), the unknown
    /// interface, the option the kernel refused.
    explicit udp_sender(udp_sender_options const& options);
    udp_sender(udp_sender&&) noexcept = default;
    udp_sender& operator=(udp_sender&&) noexcept = default;
    udp_sender(udp_sender const&) = delete;
    udp_sender& operator=(udp_sender const&) = delete;
    ~udp_sender() = default;

    /// The same, without exceptions: on failure returns a closed sender, sets `error` and fills
    /// `what` with the message the throwing constructor would carry.
    static udp_sender open(udp_sender_options const& options, std::error_code& error,
                           std::string& what) noexcept;

    /// Sends one datagram to `to`, waiting (yield, retry) while the local queue is full or a
    /// signal interrupts the call. Throws std::system_error ("sendto <to>: <reason>") on any
    /// other error.
    void send(std::span<std::byte const> datagram, udp_endpoint const& to) const;
    /// The same; the error (if any) goes to `error` instead of an exception.
    void send(std::span<std::byte const> datagram, udp_endpoint const& to,
              std::error_code& error) const noexcept;
    /// One attempt, never waits: an error when the datagram was not sent (EAGAIN and ENOBUFS
    /// included: the caller retries later or counts it).
    [[nodiscard]] std::error_code try_send(std::span<std::byte const> datagram,
                                           udp_endpoint const& to) const noexcept;

    [[nodiscard]] int native_handle() const noexcept { return fd_.get(); }
    [[nodiscard]] bool is_open() const noexcept { return fd_.is_open(); }
    [[nodiscard]] int family() const noexcept { return family_; }
    /// The bound address (the kernel's choice of port for an unbound or port-0 socket, once it
    /// sent). Throws std::system_error if getsockname fails.
    [[nodiscard]] udp_endpoint local_endpoint() const;

private:
    udp_sender() noexcept = default;

    unique_fd fd_;
    int family_ = AF_INET;
};

} // namespace signet::net
