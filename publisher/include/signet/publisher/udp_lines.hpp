#pragma once

// udp_lines: a publisher's lines over UDP — one net::udp_sender for both lines (so both carry
// the same source address), a destination per line (unicast or multicast; one family).
//
// Threading: one thread sends (the publisher's). Costs: one sendto per datagram and line.

#include <cstddef>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <signet/net/udp_endpoint.hpp>
#include <signet/net/udp_sender.hpp>
#include <signet/publisher/line_output.hpp>

namespace signet::publisher {

class udp_lines final : public line_output {
public:
    /// One or two destinations of one family. `options.family` and `options.multicast` are
    /// taken from them (multicast if any is a group). Throws std::invalid_argument for no
    /// destination, more than two, or mixed families; std::system_error from the socket's setup.
    udp_lines(std::vector<net::udp_endpoint> targets, net::udp_sender_options options);

    [[nodiscard]] std::size_t lines() const noexcept override { return targets_.size(); }
    [[nodiscard]] std::error_code send(std::size_t line,
                                       std::span<std::byte const> datagram) noexcept override;
    [[nodiscard]] std::string describe(std::size_t line) const override;
    [[nodiscard]] net::udp_sender const& sender() const noexcept { return sender_; }

private:
    std::vector<net::udp_endpoint> targets_;
    net::udp_sender sender_;
};

} // namespace signet::publisher
