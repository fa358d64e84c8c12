#include <algorithm>
#include <cerrno>
#include <climits>
#include <thread>
#include <utility>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signet/net/udp_sender.hpp>

#include "socket_calls.hpp"
#include <net/if.h>

namespace signet::net {

using detail::last_error;
using detail::set_int;

namespace {

// "127.0.0.1" as the user wrote it when no port was given, else "127.0.0.1:31002".
std::string source_text(udp_endpoint const& source) {
    std::string text = source.to_string();
    if (source.port() == 0) {
        text.erase(text.rfind(':'));
    }
    return text;
}

// Configures `fd`; on failure sets `error` and `what`.
void configure(int fd, udp_sender_options const& o, std::error_code& error, std::string& what) {
    auto const fail = [&](std::string text) {
        error = last_error();
        what = std::move(text);
    };
    int const buffer = static_cast<int>(std::min<std::size_t>(o.send_buffer, INT_MAX));
    // A smaller buffer than asked for is not an error: send() waits when it is full.
    (void)set_int(fd, SOL_SOCKET, SO_SNDBUF, buffer);
    if (o.source) {
        if (o.source->family() != o.family) {
            error = std::make_error_code(std::errc::address_family_not_supported);
            what = std::string(o.source_name) + " " + source_text(*o.source) +
                   ": another address family than the destinations'";
            return;
        }
        if (::bind(fd, o.source->data(), o.source->size()) != 0) {
            int const code = errno;
            std::string hint;
            if (code == EADDRNOTAVAIL) {
                hint = " (it takes an address of this host, e.g. 127.0.0.1)";
            } else if (code == EADDRINUSE) {
                hint = " (the port is taken by another socket)";
            }
            fail(std::string(o.source_name) + " " + source_text(*o.source) +
                 ": cannot bind the sending socket" + hint);
            return;
        }
    }
    if (!o.multicast) {
        return;
    }
    int index = 0;
    std::string const interface_text = std::string(o.interface_name) + " '" + o.interface + "'";
    if (!o.interface.empty()) {
        index = static_cast<int>(::if_nametoindex(o.interface.c_str()));
        if (index == 0) {
            return fail(interface_text);
        }
    }
    if (o.family == AF_INET6) {
        if (!set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, o.ttl)) {
            return fail("multicast hop limit " + std::to_string(o.ttl));
        }
        if (!set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, o.loop ? 1 : 0)) {
            return fail("multicast loopback");
        }
        if (index != 0 && !set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, index)) {
            return fail(interface_text);
        }
        return;
    }
    if (!set_int(fd, IPPROTO_IP, IP_MULTICAST_TTL, o.ttl)) {
        return fail("multicast TTL " + std::to_string(o.ttl));
    }
    if (!set_int(fd, IPPROTO_IP, IP_MULTICAST_LOOP, o.loop ? 1 : 0)) {
        return fail("multicast loopback");
    }
    if (index != 0) {
        ip_mreqn request{};
        request.imr_ifindex = index;
        if (::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &request, sizeof(request)) != 0) {
            return fail(interface_text);
        }
    }
}

} // namespace

udp_sender udp_sender::open(udp_sender_options const& options, std::error_code& error,
                            std::string& what) noexcept {
    error.clear();
    what.clear();
    udp_sender sender;
    try {
        if (options.family != AF_INET && options.family != AF_INET6) {
            error = std::make_error_code(std::errc::address_family_not_supported);
            what = "udp_sender: the family must be AF_INET or AF_INET6";
            return sender;
        }
        sender.fd_.reset(::socket(options.family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        if (!sender.fd_.is_open()) {
            error = last_error();
            what = "udp_sender: socket";
            return sender;
        }
        sender.family_ = options.family;
        configure(sender.fd_.get(), options, error, what);
    } catch (std::bad_alloc const&) { // building a message
        error = std::make_error_code(std::errc::not_enough_memory);
    }
    if (error) {
        sender.fd_.reset();
    }
    return sender;
}

udp_sender::udp_sender(udp_sender_options const& options) {
    std::error_code error;
    std::string what;
    *this = open(options, error, what);
    if (error) {
        throw std::system_error(error, what);
    }
}

void udp_sender::send(std::span<std::byte const> datagram, udp_endpoint const& to,
                      std::error_code& error) const noexcept {
    error.clear();
    for (;;) {
        if (::sendto(fd_.get(), datagram.data(), datagram.size(), 0, to.data(), to.size()) >= 0) {
            return;
        }
        if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
            std::this_thread::yield(); // the local queue is full: wait, never drop silently
            continue;
        }
        error = last_error();
        return;
    }
}

void udp_sender::send(std::span<std::byte const> datagram, udp_endpoint const& to) const {
    std::error_code error;
    send(datagram, to, error);
    if (error) {
        throw std::system_error(error, "sendto " + to.to_string());
    }
}

std::error_code udp_sender::try_send(std::span<std::byte const> datagram,
                                     udp_endpoint const& to) const noexcept {
    if (::sendto(fd_.get(), datagram.data(), datagram.size(), MSG_DONTWAIT, to.data(), to.size()) <
        0) {
        return last_error();
    }
    return {};
}

udp_endpoint udp_sender::local_endpoint() const {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::system_error(last_error(), "udp_sender: getsockname");
    }
    return udp_endpoint::from_sockaddr(reinterpret_cast<sockaddr*>(&address), length);
}

} // namespace signet::net
