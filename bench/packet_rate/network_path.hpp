#pragma once

// Which network the socket points cross (--path). loopback: 127.0.0.1 in this namespace.
// veth: two network namespaces made for the run and removed after it, joined by a veth pair
// with one RX queue (sgbench0 10.79.0.1 <-> peer 10.79.0.2). The process's main thread enters
// the receiving namespace before any thread starts, so every receiver socket and thread lives
// there; the sender opens its socket inside the sending namespace (in_sender_namespace()), so
// its datagrams cross the pair: the kernel's UDP stack, or signet's XDP program for af_xdp.

#include <string>

#include <fcntl.h>
#include <netinet/in.h>

#include <signet/net/unique_fd.hpp>

namespace signet::bench {

struct network_path {
    std::string name = "loopback"; ///< the JSON rows' "path"
    in_addr receiver{htonl(INADDR_LOOPBACK)};
    std::string interface {}; ///< veth: the receiving side's interface
    net::unique_fd sender_namespace{};
    std::string namespaces[2]{}; ///< veth: receiving, sending (removed on destruction)
};

/// The path of this run (loopback until use_veth_path()).
network_path& current_path();

/// Makes the veth path and enters its receiving namespace (main thread, before any other
/// thread exists). Throws std::runtime_error with the reason (not root, no veth, no iproute2).
void use_veth_path();
/// Removes the namespaces of use_veth_path() (no-op on loopback). Idempotent.
void remove_veth_path() noexcept;

/// Runs `make` on this thread inside the sending namespace (veth; here on loopback) and returns
/// its result: sockets it opens belong to that namespace.
template <typename Make>
auto in_sender_namespace(Make&& make);

/// setns() to `fd` (CLONE_NEWNET); throws std::system_error.
void enter_namespace(int fd);

template <typename Make>
auto in_sender_namespace(Make&& make) {
    network_path const& path = current_path();
    if (!path.sender_namespace.is_open()) {
        return make();
    }
    net::unique_fd home(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    enter_namespace(path.sender_namespace.get());
    struct back_home {
        int fd;
        ~back_home() noexcept(false) { enter_namespace(fd); }
    } const restore{home.get()};
    return make();
}

} // namespace signet::bench
