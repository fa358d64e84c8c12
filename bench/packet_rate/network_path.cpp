#include "network_path.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include <arpa/inet.h>
#include <sched.h>
#include <unistd.h>

namespace signet::bench {

namespace {

constexpr char const* receiver_address = "10.79.0.1";
constexpr char const* sender_address = "10.79.0.2";
constexpr char const* veth_interface = "sgbench0";

void run(std::string const& command) {
    if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
        throw std::runtime_error("--path veth: '" + command +
                                 "' failed (needs root, iproute2 and veth)");
    }
}

} // namespace

network_path& current_path() {
    static network_path path;
    return path;
}

void enter_namespace(int fd) {
    if (::setns(fd, CLONE_NEWNET) != 0) {
        throw std::system_error(errno, std::generic_category(), "setns");
    }
}

void use_veth_path() {
    network_path& path = current_path();
    std::string const id = std::to_string(::getpid());
    std::string const rx = "signet-bench-rx-" + id;
    std::string const tx = "signet-bench-tx-" + id;
    run("ip netns add " + rx);
    path.namespaces[0] = rx;
    run("ip netns add " + tx);
    path.namespaces[1] = tx;
    run("ip -n " + rx + " link add " + veth_interface +
        " numtxqueues 1 numrxqueues 1 type veth peer name peer0 numtxqueues 1 numrxqueues 1 "
        "netns " +
        tx);
    run("ip -n " + rx + " addr add " + receiver_address + "/24 dev " + veth_interface);
    run("ip -n " + tx + " addr add " + sender_address + "/24 dev peer0");
    run("ip -n " + rx + " link set lo up");
    run("ip -n " + tx + " link set lo up");
    run("ip -n " + rx + " link set " + veth_interface + " up");
    run("ip -n " + tx + " link set peer0 up");
    net::unique_fd receiving(::open(("/run/netns/" + rx).c_str(), O_RDONLY | O_CLOEXEC));
    path.sender_namespace =
        net::unique_fd(::open(("/run/netns/" + tx).c_str(), O_RDONLY | O_CLOEXEC));
    if (!receiving.is_open() || !path.sender_namespace.is_open()) {
        throw std::system_error(errno, std::generic_category(), "--path veth: open /run/netns");
    }
    enter_namespace(receiving.get());
    path.name = "veth";
    ::inet_pton(AF_INET, receiver_address, &path.receiver);
    path.interface = veth_interface;
}

void remove_veth_path() noexcept {
    network_path& path = current_path();
    for (auto& ns : path.namespaces) {
        if (!ns.empty()) {
            (void)std::system(("ip netns delete " + ns + " >/dev/null 2>&1").c_str());
            ns.clear();
        }
    }
}

} // namespace signet::bench
