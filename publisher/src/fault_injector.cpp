#include <signet/publisher/fault_injector.hpp>

namespace signet::publisher {

std::optional<fault_line> parse_fault_line(std::string_view text) noexcept {
    if (text == "a") {
        return fault_line::a;
    }
    if (text == "b") {
        return fault_line::b;
    }
    return text == "both" ? std::optional(fault_line::both) : std::nullopt;
}

fault_injector::fault_injector(fault_options const& options)
    : options_(options) {
    held_.reserve(65536); // any datagram: holding one never allocates in the send loop
}

} // namespace signet::publisher
