#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <signet/core/work_contract_group.hpp>
#include <signet/net/receive_backend.hpp>

namespace signet::net::detail {

/// A backend's longest sleep in thread mode with no timer due: it only bounds a wake lost to an
/// error path.
inline constexpr std::chrono::milliseconds idle_sleep{100};
/// A reactor's bound on reaping what is still in flight when it stops.
inline constexpr std::chrono::seconds stop_deadline{5};

std::unique_ptr<receive_backend> make_epoll_backend(blocking_work_contract_group& group);
std::unique_ptr<receive_backend> make_asio_backend(blocking_work_contract_group& group);
std::unique_ptr<receive_backend> make_io_uring_backend(blocking_work_contract_group& group);
std::unique_ptr<receive_backend> make_memory_backend();
/// Throws std::system_error with the reason when the build or the machine cannot run it.
std::unique_ptr<receive_backend> make_af_xdp_backend(blocking_work_contract_group& group);
bool probe_af_xdp(std::string& why_not);

} // namespace signet::net::detail

namespace signet::net::detail {

/// Bytes io_uring's recvmsg puts before the payload in a provided buffer.
std::size_t io_uring_headroom() noexcept;
bool probe_io_uring(std::string& why_not);

} // namespace signet::net::detail
