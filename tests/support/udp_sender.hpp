#pragma once

// A UDP sender for tests: net::udp_sender (waits while the local queue is full, throws on any
// other error) with the tests' defaults and a sequence-number helper. Under run-in-veth its
// socket lives in the sending namespace (veth.hpp), so its datagrams cross the veth pair.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <signet/net/udp_endpoint.hpp>
#include <signet/net/udp_sender.hpp>

#include "support/veth.hpp"

namespace signet::test {

class udp_sender {
public:
    /// Optionally binds to `from` (to choose the source address, e.g. for SSM tests) and sends
    /// multicast through `multicast_interface` (loopback on).
    explicit udp_sender(std::optional<net::udp_endpoint> from = std::nullopt,
                        std::string const& multicast_interface = "")
        : sender_(in_sender_namespace([&] {
            return net::udp_sender({.family = from ? from->family() : AF_INET,
                                    .source = from,
                                    .multicast = !multicast_interface.empty(),
                                    .interface = multicast_interface,
                                    .send_buffer = 8u << 20});
        })) {}

    void send(net::udp_endpoint const& to, std::span<std::byte const> bytes) const {
        sender_.send(bytes, to);
    }

    /// Sends an 8-byte sequence number, padded to `size` bytes.
    void send_sequence(net::udp_endpoint const& to, std::uint64_t sequence,
                       std::size_t size = 64) const {
        std::vector<std::byte> bytes(std::max<std::size_t>(size, sizeof(sequence)));
        std::memcpy(bytes.data(), &sequence, sizeof(sequence));
        send(to, bytes);
    }

private:
    net::udp_sender sender_;
};

inline std::uint64_t sequence_of(std::span<std::byte const> payload) {
    std::uint64_t sequence = 0;
    std::memcpy(&sequence, payload.data(), std::min(payload.size(), sizeof(sequence)));
    return sequence;
}

} // namespace signet::test
