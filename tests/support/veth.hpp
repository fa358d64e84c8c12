#pragma once

// The veth pair tests/net/run-in-veth makes for the af_xdp backend's tests: the receiving
// interface and addresses, and a way to open sockets in the sending namespace (a socket stays
// in the namespace it was created in, so the rest of the test sends through it as usual).

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <signet/net/receive_backend.hpp>
#include <signet/net/udp_socket.hpp>

namespace signet::test {

inline std::string environment(char const* name) {
    char const* value = std::getenv(name);
    return value != nullptr ? value : "";
}

/// Set by run-in-veth: the receiving interface in this namespace ("xdp0").
inline std::string veth_interface() {
    return environment("SIGNET_VETH_INTERFACE");
}
/// This side's address ("10.77.0.1"), and the sender's ("10.77.0.2").
inline std::string veth_address() {
    return environment("SIGNET_VETH_ADDRESS");
}
inline std::string veth_peer_address() {
    return environment("SIGNET_VETH_PEER_ADDRESS");
}

/// Runs `make` on this thread inside the sending namespace when run-in-veth set one (else
/// here), and returns its result: sockets it opens belong to that namespace.
template <typename Make>
auto in_sender_namespace(Make&& make) {
    std::string const path = environment("SIGNET_VETH_SENDER_NETNS");
    if (path.empty()) {
        return std::forward<Make>(make)();
    }
    int const home = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int const target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (home < 0 || target < 0 || ::setns(target, CLONE_NEWNET) != 0) {
        throw std::system_error(errno, std::generic_category(), "setns into " + path);
    }
    ::close(target);
    struct back_home {
        int fd;
        ~back_home() {
            (void)::setns(fd, CLONE_NEWNET);
            ::close(fd);
        }
    } restore{home};
    return std::forward<Make>(make)();
}

/// Where a test feed binds for `backend`: loopback, or the veth side for af_xdp.
inline net::udp_socket_options test_line(net::backend_kind backend, std::uint16_t port = 0) {
    net::udp_socket_options line;
    if (backend == net::backend_kind::af_xdp) {
        line.bind = net::udp_endpoint::parse(veth_address() + ":" + std::to_string(port));
        line.interface = veth_interface();
    } else {
        line.bind = net::udp_endpoint::parse("127.0.0.1:" + std::to_string(port));
    }
    return line;
}

/// The address test packets come from for `backend`.
inline std::string test_source_address(net::backend_kind backend) {
    return backend == net::backend_kind::af_xdp ? veth_peer_address() : "127.0.0.1";
}

} // namespace signet::test

/// Skips a test of the af_xdp backend outside run-in-veth, or where it cannot run.
#define SIGNET_SKIP_WITHOUT_AF_XDP(mode)                                                           \
    do {                                                                                           \
        if ((mode).backend == ::signet::net::backend_kind::af_xdp) {                               \
            std::string why_not_;                                                                  \
            if (::signet::test::veth_interface().empty()) {                                        \
                GTEST_SKIP() << "af_xdp tests run in tests/net/run-in-veth (a veth pair)";         \
            }                                                                                      \
            if (!::signet::net::af_xdp_available(why_not_)) {                                      \
                GTEST_SKIP() << "af_xdp backend unavailable here: " << why_not_;                   \
            }                                                                                      \
        }                                                                                          \
    } while (false)
