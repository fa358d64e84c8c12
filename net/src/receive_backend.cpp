#include <stdexcept>
#include <string>
#include <system_error>

#include <sys/ioctl.h>

#include <signet/net/detail/feed_state.hpp>
#include <signet/net/log.hpp>
#include <signet/net/receive_backend.hpp>

#include "backends.hpp"

namespace signet::net {

std::string_view to_string(backend_kind kind) noexcept {
    switch (kind) {
    case backend_kind::automatic:
        return "auto";
    case backend_kind::io_uring:
        return "io_uring";
    case backend_kind::epoll:
        return "epoll";
    case backend_kind::asio:
        return "asio";
    case backend_kind::memory:
        return "memory";
    case backend_kind::af_xdp:
        return "af_xdp";
    }
    return "?";
}

backend_kind parse_backend_kind(std::string_view text) {
    for (auto kind : {backend_kind::automatic, backend_kind::io_uring, backend_kind::epoll,
                      backend_kind::asio, backend_kind::memory, backend_kind::af_xdp}) {
        if (text == to_string(kind)) {
            return kind;
        }
    }
    throw std::invalid_argument("unknown backend '" + std::string(text) +
                                "' (expected auto, io_uring, epoll, asio, memory or af_xdp)");
}

std::string_view to_string(poller_mode mode) noexcept {
    return mode == poller_mode::contract ? "contract" : "thread";
}

poller_mode parse_poller_mode(std::string_view text) {
    for (auto mode : {poller_mode::contract, poller_mode::thread}) {
        if (text == to_string(mode)) {
            return mode;
        }
    }
    throw std::invalid_argument("unknown poller mode '" + std::string(text) +
                                "' (expected contract or thread)");
}

bool io_uring_available(std::string& why_not) {
    return detail::probe_io_uring(why_not);
}

bool af_xdp_available(std::string& why_not) {
    return detail::probe_af_xdp(why_not);
}

std::uint64_t receive_backend::kernel_drops(detail::line_state const& line) const noexcept {
    return line.socket.kernel_drops();
}

bool receive_backend::input_waiting(detail::line_state const& line) const noexcept {
    int const fd = line.socket.native_handle();
    int bytes = 0;
    // FIONREAD: the bytes of the datagrams queued on the socket (0 when it is empty). One
    // syscall, only when a parser is about to give up on data and its line queue is empty
    // (runtime::input_waiting): while a gap waits and packets arrive one at a time.
    return fd >= 0 && ::ioctl(fd, FIONREAD, &bytes) == 0 && bytes > 0;
}

std::string const& receive_backend::timestamp_note(detail::line_state const& line) const noexcept {
    return line.socket.timestamp_note();
}

namespace {

template <typename Enum, std::size_t N>
Enum parse_name(std::string_view text, Enum const (&values)[N], char const* what) {
    std::string expected;
    for (Enum value : values) {
        if (text == to_string(value)) {
            return value;
        }
        expected += (expected.empty() ? "" : ", ") + std::string(to_string(value));
    }
    throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(text) +
                                "' (expected " + expected + ")");
}

} // namespace

std::string_view to_string(xdp_mode mode) noexcept {
    switch (mode) {
    case xdp_mode::automatic:
        return "auto";
    case xdp_mode::native:
        return "native";
    case xdp_mode::generic:
        return "generic";
    }
    return "?";
}

xdp_mode parse_xdp_mode(std::string_view text) {
    constexpr xdp_mode all[] = {xdp_mode::automatic, xdp_mode::native, xdp_mode::generic};
    return parse_name(text, all, "xdp_mode");
}

std::string_view to_string(xdp_bind bind) noexcept {
    switch (bind) {
    case xdp_bind::automatic:
        return "auto";
    case xdp_bind::copy:
        return "copy";
    case xdp_bind::zero_copy:
        return "zero_copy";
    }
    return "?";
}

xdp_bind parse_xdp_bind(std::string_view text) {
    constexpr xdp_bind all[] = {xdp_bind::automatic, xdp_bind::copy, xdp_bind::zero_copy};
    return parse_name(text, all, "AF_XDP bind mode");
}

std::unique_ptr<receive_backend>
make_receive_backend(backend_kind kind, blocking_work_contract_group& group, std::string& reason) {
    std::string why_not;
    switch (kind) {
    case backend_kind::automatic:
        if (detail::probe_io_uring(why_not)) {
            reason = "auto: io_uring is available (multishot recvmsg, provided buffer rings)";
            return detail::make_io_uring_backend(group);
        }
        reason = "auto: io_uring unavailable (" + why_not + "), using epoll";
        return detail::make_epoll_backend(group);
    case backend_kind::io_uring:
        if (!detail::probe_io_uring(why_not)) {
            throw std::system_error(std::make_error_code(std::errc::function_not_supported),
                                    "io_uring backend requested but unavailable: " + why_not);
        }
        reason = "requested";
        return detail::make_io_uring_backend(group);
    case backend_kind::epoll:
        reason = "requested";
        return detail::make_epoll_backend(group);
    case backend_kind::asio:
        reason = "requested";
        return detail::make_asio_backend(group);
    case backend_kind::memory:
        reason = "requested: lines written in-process";
        return detail::make_memory_backend();
    case backend_kind::af_xdp:
        if (!detail::probe_af_xdp(why_not)) {
            throw std::system_error(std::make_error_code(std::errc::function_not_supported),
                                    "af_xdp backend requested but unavailable: " + why_not);
        }
        reason = "requested: AF_XDP sockets fed by signet's XDP program";
        return detail::make_af_xdp_backend(group);
    }
    throw std::invalid_argument("make_receive_backend: bad backend kind");
}

} // namespace signet::net
