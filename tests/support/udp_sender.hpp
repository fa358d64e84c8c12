#pragma once

// A plain blocking UDP sender for tests.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signet/net/udp_endpoint.hpp>

#include <net/if.h>

namespace signet::test {

class udp_sender {
public:
    /// Optionally binds to `from` (to choose the source address, e.g. for SSM tests) and sets the
    /// multicast interface.
    explicit udp_sender(std::optional<net::udp_endpoint> from = std::nullopt,
                        std::string const& multicast_interface = "") {
        int const family = from ? from->family() : AF_INET;
        fd_ = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) {
            throw std::system_error(errno, std::generic_category(), "udp_sender: socket");
        }
        int big = 8 << 20;
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
        if (from && ::bind(fd_, from->data(), from->size()) != 0) {
            throw std::system_error(errno, std::generic_category(), "udp_sender: bind");
        }
        if (!multicast_interface.empty()) {
            ip_mreqn request{};
            request.imr_ifindex = static_cast<int>(if_nametoindex(multicast_interface.c_str()));
            ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_IF, &request, sizeof(request));
            int loop = 1;
            ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop));
        }
    }
    udp_sender(udp_sender const&) = delete;
    udp_sender& operator=(udp_sender const&) = delete;
    ~udp_sender() { ::close(fd_); }

    void send(net::udp_endpoint const& to, std::span<std::byte const> bytes) const {
        if (::sendto(fd_, bytes.data(), bytes.size(), 0, to.data(), to.size()) !=
            static_cast<ssize_t>(bytes.size())) {
            throw std::system_error(errno, std::generic_category(), "udp_sender: sendto");
        }
    }

    /// Sends an 8-byte sequence number, padded to `size` bytes.
    void send_sequence(net::udp_endpoint const& to, std::uint64_t sequence,
                       std::size_t size = 64) const {
        std::vector<std::byte> bytes(std::max<std::size_t>(size, sizeof(sequence)));
        std::memcpy(bytes.data(), &sequence, sizeof(sequence));
        send(to, bytes);
    }

private:
    int fd_ = -1;
};

inline std::uint64_t sequence_of(std::span<std::byte const> payload) {
    std::uint64_t sequence = 0;
    std::memcpy(&sequence, payload.data(), std::min(payload.size(), sizeof(sequence)));
    return sequence;
}

} // namespace signet::test
