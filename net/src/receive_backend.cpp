#include <stdexcept>
#include <string>
#include <system_error>

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
    }
    return "?";
}

backend_kind parse_backend_kind(std::string_view text) {
    for (auto kind : {backend_kind::automatic, backend_kind::io_uring, backend_kind::epoll,
                      backend_kind::asio, backend_kind::memory}) {
        if (text == to_string(kind)) {
            return kind;
        }
    }
    throw std::invalid_argument("unknown backend '" + std::string(text) +
                                "' (expected auto, io_uring, epoll, asio or memory)");
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
    }
    throw std::invalid_argument("make_receive_backend: bad backend kind");
}

} // namespace signet::net
