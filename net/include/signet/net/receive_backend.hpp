#pragma once

// receive_backend: who watches the sockets and feeds the lines' queues.
//
//   backend    poller thread does                       producer of line_state::ready
//   io_uring   multishot recvmsg into a provided-buffer  the poller thread (it reaps the
//              ring per line; reaps completions           completions; it is also the only
//                                                         producer of each buffer ring)
//   epoll      edge-triggered epoll_wait; schedules the   the line's receive contract
//              line's receive contract                    (recvmmsg batches)
//   asio       asio::io_context, async_wait(wait_read);   the line's receive contract
//              schedules the line's receive contract      (recvmmsg batches)
//
// The poller never parses. Calls here are per setup or per batch, never per packet, so a virtual
// interface costs nothing that matters; the per-packet loops are concrete code in each backend.

#include <memory>
#include <string>
#include <string_view>

#include <signet/core/work_contract_group.hpp>

namespace signet::net {

enum class backend_kind { automatic, io_uring, epoll, asio };

std::string_view to_string(backend_kind kind) noexcept;
/// "auto", "io_uring", "epoll", "asio"; throws std::invalid_argument otherwise.
backend_kind parse_backend_kind(std::string_view text);

namespace detail {
struct line_state;
}

class receive_backend {
public:
    virtual ~receive_backend() = default;
    [[nodiscard]] virtual backend_kind kind() const noexcept = 0;
    /// Setup, before start(): take charge of a line (may create its receive contract).
    virtual void attach(detail::line_state& line) = 0;
    /// Starts the poller thread (pinned to `cpu` when >= 0). Throws std::system_error on setup
    /// errors (e.g. io_uring buffer ring registration).
    virtual void start(int cpu) = 0;
    /// Stops watching the sockets; everything already received is in the lines' queues when it
    /// returns (io_uring: in-flight completions are reaped and queued). Idempotent.
    virtual void stop() = 0;
};

/// Whether this kernel and process can run the io_uring backend; `why_not` says what is missing.
bool io_uring_available(std::string& why_not);

/// Makes the backend; `automatic` picks io_uring where available, else epoll. `reason` says why
/// this one was chosen. Throws std::system_error when an explicitly requested backend is not
/// available here.
std::unique_ptr<receive_backend>
make_receive_backend(backend_kind kind, blocking_work_contract_group& group, std::string& reason);

} // namespace signet::net
