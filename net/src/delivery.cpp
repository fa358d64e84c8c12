#include <algorithm>
#include <cstring>

#include <signet/net/detail/delivery.hpp>

namespace signet::net::detail {

namespace {

std::uint64_t to_ns(timespec const& ts) noexcept {
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

} // namespace

void apply_control_messages(msghdr const& message, packet& p, line_state& line) noexcept {
    for (cmsghdr const* c = CMSG_FIRSTHDR(const_cast<msghdr*>(&message)); c != nullptr;
         c = CMSG_NXTHDR(const_cast<msghdr*>(&message), const_cast<cmsghdr*>(c))) {
        read_control_message(*c, p, line);
    }
}

void read_control_message(cmsghdr const& c, packet& p, line_state& line) noexcept {
    if (c.cmsg_level != SOL_SOCKET) {
        return;
    }
    if (c.cmsg_type == SCM_TIMESTAMPING && c.cmsg_len >= CMSG_LEN(sizeof(scm_timestamping))) {
        // ts[0]: software (kernel receive); ts[2]: raw hardware (NIC clock); an unset one is 0.
        scm_timestamping stamps{};
        std::memcpy(&stamps, CMSG_DATA(&c), sizeof(stamps));
        if (std::uint64_t const hardware = to_ns(stamps.ts[2]); hardware != 0) {
            p.kernel_rx_ns = hardware;
            p.hardware_timestamp = true;
            line.hardware_timestamps.add(1);
        } else {
            p.kernel_rx_ns = to_ns(stamps.ts[0]);
        }
    } else if (c.cmsg_type == SO_RXQ_OVFL && c.cmsg_len >= CMSG_LEN(sizeof(std::uint32_t))) {
        std::uint32_t drops = 0;
        std::memcpy(&drops, CMSG_DATA(&c), sizeof(drops));
        line.kernel_drops.set(drops); // cumulative count for the socket
    }
}

void store_source(packet& p, void const* name, std::size_t length) noexcept {
    std::memcpy(&p.source_address, name, std::min(length, sizeof(p.source_address)));
}

delivery deliver(line_state& line, packet const& p, bool hold) noexcept {
    line.packets.add(1);
    line.bytes.add(p.size);
    if (p.truncated) {
        line.truncated.add(1);
    }
    if (!hold && line.ready.push(p)) {
        return delivery::queued;
    }
    if (line.feed.on_full == full_policy::drop) {
        line.dropped.add(1);
        return delivery::dropped;
    }
    return delivery::full;
}

} // namespace signet::net::detail
