#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/net_tstamp.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/net/udp_socket.hpp>

#include "port_holder.hpp"
#include "socket_calls.hpp"
#include <net/if.h>

namespace signet::net {

using detail::last_error;
using detail::set_int;

namespace {

std::string describe(char const* step, udp_socket_options const& o, std::error_code ec) {
    std::string what = std::string("udp_socket: ") + step + " failed: " + ec.message();
    switch (ec.value()) {
    case EADDRINUSE:
        what += " (" + o.bind.to_string() +
                " is taken by another socket (a running process's, or still after 5 s): pick "
                "another port, or set reuse_port on every socket that shares it)";
        break;
    case EADDRNOTAVAIL:
        what += " (" + o.bind.to_string() + " is not an address of this host)";
        break;
    case ENODEV:
        what += " (no interface for the multicast join: name one with `interface`, or add a "
                "multicast route, e.g. `ip route add 239.0.0.0/8 dev lo`)";
        break;
    case EACCES:
    case EPERM:
        what += " (not permitted: ports below 1024 and some options need privileges)";
        break;
    default:
        break;
    }
    return what;
}

// Whether `interface` stamps received packets in hardware: its driver supports it and its
// receive filter is on (SIOCGHWTSTAMP). Enabling the filter changes the device for every user,
// so that stays with the operator (hwstamp_ctl, ptp4l); `note` says what is missing.
bool hardware_receive_stamping(int fd, std::string const& interface, std::string& note) {
    if (interface.empty()) {
        note = "hardware timestamps need the interface named (`interface`); using software";
        return false;
    }
    hwtstamp_config config{};
    ifreq request{};
    std::strncpy(request.ifr_name, interface.c_str(), IFNAMSIZ - 1);
    request.ifr_data = reinterpret_cast<char*>(&config);
    if (::ioctl(fd, SIOCGHWTSTAMP, &request) != 0) {
        note = interface + " has no hardware timestamping (SIOCGHWTSTAMP: " + std::strerror(errno) +
               "); using software";
        return false;
    }
    if (config.rx_filter == HWTSTAMP_FILTER_NONE) {
        note = interface +
               "'s hardware receive timestamping is off (enable it with `hwstamp_ctl -i " +
               interface + " -r 1` or ptp4l); using software";
        return false;
    }
    return true;
}

} // namespace

std::string_view to_string(timestamping mode) noexcept {
    switch (mode) {
    case timestamping::off:
        return "off";
    case timestamping::software:
        return "software";
    case timestamping::hardware:
        return "hardware";
    }
    return "?";
}

timestamping parse_timestamping(std::string_view text) {
    for (auto mode : {timestamping::off, timestamping::software, timestamping::hardware}) {
        if (text == to_string(mode)) {
            return mode;
        }
    }
    throw std::invalid_argument("unknown timestamping '" + std::string(text) +
                                "' (expected off, software or hardware)");
}

udp_socket::udp_socket(udp_socket_options const& options) {
    std::error_code error;
    std::string what;
    *this = open(options, error, what);
    if (error) {
        throw std::system_error(error, what);
    }
}

udp_socket::udp_socket(udp_socket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1))
    , granted_rcvbuf_(other.granted_rcvbuf_)
    , rcvbuf_capped_(other.rcvbuf_capped_)
    , timestamps_(other.timestamps_)
    , timestamp_note_(std::move(other.timestamp_note_))
    , group_(std::move(other.group_))
    , source_(std::move(other.source_))
    , interface_index_(other.interface_index_) {}

udp_socket& udp_socket::operator=(udp_socket&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = std::exchange(other.fd_, -1);
        granted_rcvbuf_ = other.granted_rcvbuf_;
        rcvbuf_capped_ = other.rcvbuf_capped_;
        timestamps_ = other.timestamps_;
        timestamp_note_ = std::move(other.timestamp_note_);
        group_ = std::move(other.group_);
        source_ = std::move(other.source_);
        interface_index_ = other.interface_index_;
    }
    return *this;
}

udp_socket::~udp_socket() {
    close();
}

void udp_socket::close() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

std::uint64_t udp_socket::kernel_drops() const noexcept {
    if (fd_ < 0) {
        return 0;
    }
    std::uint32_t info[SK_MEMINFO_VARS] = {};
    socklen_t length = sizeof(info);
    if (::getsockopt(fd_, SOL_SOCKET, SO_MEMINFO, info, &length) != 0 ||
        length <= SK_MEMINFO_DROPS * sizeof(std::uint32_t)) {
        return 0;
    }
    return info[SK_MEMINFO_DROPS];
}

std::error_code udp_socket::send_to(std::span<std::byte const> datagram,
                                    udp_endpoint const& to) const noexcept {
    if (::sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT, to.data(), to.size()) < 0) {
        return last_error();
    }
    return {};
}

std::error_code udp_socket::set_group_membership(bool joined) const noexcept {
    if (fd_ < 0 || !group_) {
        return std::make_error_code(std::errc::invalid_argument);
    }
    int const level = group_->family() == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
    int rc = 0;
    if (source_) {
        group_source_req request{};
        request.gsr_interface = interface_index_;
        std::memcpy(&request.gsr_group, group_->data(), group_->size());
        std::memcpy(&request.gsr_source, source_->data(), source_->size());
        rc = ::setsockopt(fd_, level, joined ? MCAST_JOIN_SOURCE_GROUP : MCAST_LEAVE_SOURCE_GROUP,
                          &request, sizeof(request));
    } else {
        group_req request{};
        request.gr_interface = interface_index_;
        std::memcpy(&request.gr_group, group_->data(), group_->size());
        rc = ::setsockopt(fd_, level, joined ? MCAST_JOIN_GROUP : MCAST_LEAVE_GROUP, &request,
                          sizeof(request));
    }
    return rc == 0 ? std::error_code{} : last_error();
}

udp_endpoint udp_socket::local_endpoint() const {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::system_error(last_error(), "udp_socket: getsockname failed");
    }
    return udp_endpoint::from_sockaddr(reinterpret_cast<sockaddr*>(&address), length);
}

udp_socket udp_socket::open(udp_socket_options const& o, std::error_code& error,
                            std::string& what) noexcept {
    error.clear();
    what.clear();
    udp_socket s;
    auto fail = [&](char const* step, std::error_code ec) {
        error = ec;
        try {
            what = describe(step, o, ec);
        } catch (...) {
        }
        s.close();
        return std::move(s);
    };
    int const family = o.group ? o.group->family() : o.bind.family();
    if (o.group && !o.group->is_multicast()) {
        fail("multicast join", std::make_error_code(std::errc::invalid_argument));
        what += " (" + o.group->to_string() +
                " is not a multicast address: IPv4 groups are "
                "224.0.0.0/4, IPv6 ff00::/8)";
        return s;
    }
    if (o.group && o.group->family() != o.bind.family() && !o.bind.is_any()) {
        return fail("bind", std::make_error_code(std::errc::address_family_not_supported));
    }
    s.fd_ = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
    if (s.fd_ < 0) {
        return fail("socket", last_error());
    }
    if (o.reuse_address && !set_int(s.fd_, SOL_SOCKET, SO_REUSEADDR, 1)) {
        return fail("SO_REUSEADDR", last_error());
    }
    if (o.reuse_port && !set_int(s.fd_, SOL_SOCKET, SO_REUSEPORT, 1)) {
        return fail("SO_REUSEPORT", last_error());
    }
    // Receive buffer: SO_RCVBUFFORCE passes net.core.rmem_max when privileged; else SO_RCVBUF,
    // which the kernel caps at net.core.rmem_max. Linux reports twice the requested size.
    if (o.receive_buffer > 0) {
        int const requested = static_cast<int>(std::min<std::size_t>(o.receive_buffer, 1u << 30));
        if (!set_int(s.fd_, SOL_SOCKET, SO_RCVBUFFORCE, requested) &&
            !set_int(s.fd_, SOL_SOCKET, SO_RCVBUF, requested)) {
            return fail("SO_RCVBUF", last_error());
        }
        int granted = 0;
        socklen_t length = sizeof(granted);
        ::getsockopt(s.fd_, SOL_SOCKET, SO_RCVBUF, &granted, &length);
        s.granted_rcvbuf_ = static_cast<std::size_t>(granted);
        s.rcvbuf_capped_ =
            static_cast<std::size_t>(granted) / 2 < static_cast<std::size_t>(requested);
        if (s.rcvbuf_capped_) {
            SPDLOG_LOGGER_WARN(logger(),
                               "udp_socket {}: receive buffer capped at {} bytes (asked for {}); "
                               "raise net.core.rmem_max (sysctl -w net.core.rmem_max={}) to avoid "
                               "kernel drops in bursts",
                               o.bind.to_string(), granted / 2, requested, requested);
        }
    }
    if (o.timestamps != timestamping::off) {
        // Software stamps always; hardware ones too where asked (the NIC's, when it makes them,
        // take precedence per packet: packet::hardware_timestamp).
        unsigned flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
        s.timestamps_ = timestamping::software;
        if (o.timestamps == timestamping::hardware) {
            flags |= SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE;
            try {
                if (hardware_receive_stamping(s.fd_, o.interface, s.timestamp_note_)) {
                    s.timestamps_ = timestamping::hardware;
                }
            } catch (...) { // a note that could not be written: software, without a note
            }
        }
        if (!set_int(s.fd_, SOL_SOCKET, SO_TIMESTAMPING, static_cast<int>(flags))) {
            return fail("SO_TIMESTAMPING", last_error());
        }
    }
    if (o.busy_poll_us > 0) {
        int const us = static_cast<int>(std::min<unsigned>(o.busy_poll_us, 1'000'000));
        if (!set_int(s.fd_, SOL_SOCKET, SO_BUSY_POLL, us)) {
            return fail("SO_BUSY_POLL", last_error());
        }
        if (!set_int(s.fd_, SOL_SOCKET, SO_PREFER_BUSY_POLL, 1)) {
            return fail("SO_PREFER_BUSY_POLL", last_error());
        }
    }
    if (o.kernel_drop_counter && !set_int(s.fd_, SOL_SOCKET, SO_RXQ_OVFL, 1)) {
        return fail("SO_RXQ_OVFL", last_error());
    }
    udp_endpoint local = o.bind;
    if (o.group && local.family() != family) {
        local = *udp_endpoint::try_parse_address("::", o.bind.port()); // any, in the group's family
    }
    if (family == AF_INET6) {
        set_int(s.fd_, IPPROTO_IPV6, IPV6_V6ONLY, 0); // accept v4-mapped too where possible
    }
    // A process that held the port and just ended may hold it a moment longer: its io_uring,
    // and the sockets the ring refers to, are torn down after it exits (4 to 8 ms after a
    // SIGKILL on an idle machine here; over a second on one busy with a test run, where a
    // receiver restarted after a kill -9 found its port still taken after 1 s). A port that a
    // running process holds is taken: that fails at once. One that no process holds is waited
    // for, up to 5 s.
    int rc = ::bind(s.fd_, local.data(), local.size());
    int bind_error = rc != 0 ? errno : 0; // before the lookup, which may set errno
    if (bind_error == EADDRINUSE && local.port() != 0 &&
        !udp_port_held_by_a_process(local.port())) {
        auto const give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (bind_error == EADDRINUSE && std::chrono::steady_clock::now() < give_up) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5)); // a polling period
            rc = ::bind(s.fd_, local.data(), local.size());
            bind_error = rc != 0 ? errno : 0;
        }
    }
    if (rc != 0) {
        return fail("bind", {bind_error, std::generic_category()});
    }
    if (o.group) {
        if (!o.interface.empty()) {
            s.interface_index_ = if_nametoindex(o.interface.c_str());
            if (s.interface_index_ == 0) {
                fail("multicast interface lookup", last_error());
                what += " (no interface named '" + o.interface + "')";
                return s;
            }
        }
        // Only receive the groups this socket joined, not every group the host joined.
        if (family == AF_INET) {
            set_int(s.fd_, IPPROTO_IP, IP_MULTICAST_ALL, 0);
        } else {
#ifdef IPV6_MULTICAST_ALL
            set_int(s.fd_, IPPROTO_IPV6, IPV6_MULTICAST_ALL, 0);
#endif
        }
        s.group_ = o.group;
        s.source_ = o.source;
        if (auto const ec = s.set_group_membership(true)) {
            return fail(o.source ? "source-specific multicast join (MCAST_JOIN_SOURCE_GROUP)"
                                 : "multicast join (MCAST_JOIN_GROUP)",
                        ec);
        }
    }
    return s;
}

} // namespace signet::net
