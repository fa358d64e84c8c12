#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include <netinet/in.h>
#include <sys/socket.h>

#include <signet/publisher/detail/tcp_listen.hpp>

namespace signet::publisher::detail {

net::unique_fd listen_tcp(int family, std::uint16_t port, std::string_view service) {
    std::string const name(service);
    if (family != AF_INET && family != AF_INET6) {
        throw std::invalid_argument(name + ": family must be AF_INET or AF_INET6");
    }
    net::unique_fd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.is_open()) {
        throw std::system_error(errno, std::generic_category(), name + ": socket");
    }
    int const one = 1;
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage address{};
    socklen_t length = 0;
    if (family == AF_INET) {
        auto& in = reinterpret_cast<sockaddr_in&>(address);
        in.sin_family = AF_INET;
        in.sin_port = htons(port);
        length = sizeof in;
    } else {
        auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
        in6.sin6_family = AF_INET6;
        in6.sin6_port = htons(port);
        length = sizeof in6;
    }
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(fd.get(), 64) != 0) {
        throw std::system_error(errno, std::generic_category(),
                                name + ": cannot listen on TCP port " + std::to_string(port) +
                                    " (in use? choose another)");
    }
    return fd;
}

std::uint16_t bound_port(int fd) noexcept {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        return 0;
    }
    return address.ss_family == AF_INET6
               ? ntohs(reinterpret_cast<sockaddr_in6 const&>(address).sin6_port)
               : ntohs(reinterpret_cast<sockaddr_in const&>(address).sin_port);
}

} // namespace signet::publisher::detail
