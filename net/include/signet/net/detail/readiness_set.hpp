#pragma once

// readiness_set: the runtime's sockets that are not receive lines (TCP connections: tcp_client)
// watched for readiness, whatever the backend. It is one edge-triggered epoll set; each backend
// watches the set's descriptor beside its lines and calls dispatch() when it is readable:
//
//   epoll      the set's descriptor is one more entry of the backend's own epoll set
//   io_uring   a multishot poll on it in the ring (a completion tagged as the set's)
//   asio       async_wait(wait_read) on it, re-armed after each dispatch
//   memory     polled beside the wake-up eventfd by wait(), and by poll() while a watch exists
//
// dispatch() marks each ready entry (readiness_flag::ready) and schedules its contract. Nothing
// is lost: the flag is set (release) before the schedule, and the owner clears it (acquire
// exchange) before it reads the socket, so an edge after the owner's read sets it again and
// schedules the contract again; an edge during a dispatch that already ran is a new epoll event.
// A contract scheduled for an event it no longer needs (a closed connection) finds the flag
// clear or a socket that answers EAGAIN: spurious runs are harmless.
//
// Threading: add() from any thread (epoll_ctl is safe against a concurrent epoll_wait);
// dispatch() from the backend's poller or reactor (several at once are fine). Entries are
// removed by closing their descriptor. A readiness_flag must outlive the runtime's last
// dispatch (the runtime stopped). Costs: one epoll_ctl per connection; per readiness edge one
// epoll_wait and one schedule; nothing per packet of the receive lines.

#include <atomic>
#include <cstdint>

#include <signet/core/work_contract.hpp>
#include <signet/net/unique_fd.hpp>

namespace signet::net::detail {

/// One watched socket's mark and the contract it schedules.
struct readiness_flag {
    work_contract* contract = nullptr;
    std::atomic<bool> ready{false};

    /// The owner, before it reads or writes the socket: whether an edge came since the last
    /// call. acquire: pairs with the release store in readiness_set::dispatch().
    [[nodiscard]] bool take() noexcept { return ready.exchange(false, std::memory_order_acquire); }
    /// The owner stopped before EAGAIN (a bounded chunk): no new edge will come for what is
    /// left, so it marks the entry itself and runs again (an owner without a contract, a thread
    /// that loops by itself, only marks it). relaxed: the same thread reads it.
    void again() noexcept {
        ready.store(true, std::memory_order_relaxed);
        if (contract != nullptr) {
            contract->schedule();
        }
    }
};

class readiness_set {
public:
    readiness_set();

    /// Watches `fd` for input, output and hang-up (edge-triggered); throws std::system_error.
    void add(int fd, readiness_flag& flag);
    /// Non-blocking: marks and schedules every ready entry. True if there was one.
    bool dispatch() noexcept;
    [[nodiscard]] int fd() const noexcept { return epoll_.get(); }
    /// Whether anything was ever added (memory backend: poll() skips the syscall until then).
    /// acquire: pairs with the release store in add().
    [[nodiscard]] bool in_use() const noexcept { return in_use_.load(std::memory_order_acquire); }

private:
    unique_fd epoll_;
    std::atomic<bool> in_use_{false};
};

} // namespace signet::net::detail
