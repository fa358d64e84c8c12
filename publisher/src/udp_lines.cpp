#include <algorithm>
#include <stdexcept>
#include <utility>

#include <signet/publisher/udp_lines.hpp>

namespace signet::publisher {

namespace {

net::udp_sender_options for_targets(std::vector<net::udp_endpoint> const& targets,
                                    net::udp_sender_options options) {
    if (targets.empty() || targets.size() > 2) {
        throw std::invalid_argument("udp_lines: one or two destinations (lines A and B)");
    }
    if (std::any_of(targets.begin(), targets.end(),
                    [&](auto const& t) { return t.family() != targets.front().family(); })) {
        throw std::invalid_argument("udp_lines: lines A and B are different address families");
    }
    options.family = targets.front().family();
    options.multicast =
        std::any_of(targets.begin(), targets.end(), [](auto const& t) { return t.is_multicast(); });
    return options;
}

} // namespace

udp_lines::udp_lines(std::vector<net::udp_endpoint> targets, net::udp_sender_options options)
    : targets_(std::move(targets))
    , sender_(for_targets(targets_, std::move(options))) {}

std::error_code udp_lines::send(std::size_t line, std::span<std::byte const> datagram) noexcept {
    std::error_code error;
    sender_.send(datagram, targets_[line], error);
    return error;
}

std::string udp_lines::describe(std::size_t line) const {
    return targets_.at(line).to_string();
}

} // namespace signet::publisher
