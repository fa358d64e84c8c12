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
//   af_xdp     an XDP program redirects the lines' frames  the poller (thread mode) or the
//              into AF_XDP sockets whose UMEM holds the    reactor contract: it reaps the RX
//              packet buffers; reaps the RX rings          rings (af_xdp_backend.cpp)
//   memory     nothing: no sockets                        your writer thread (memory_line)
//
// Each backend also watches the runtime's readiness set (TCP connections: tcp_client) beside
// its lines and dispatches it; see readiness_set.hpp for how.
//
// The poller never parses. Calls here are per setup or per batch, never per packet, so a virtual
// interface costs nothing that matters; the per-packet loops are concrete code in each backend.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <signet/core/work_contract_group.hpp>

namespace signet::net {

enum class backend_kind {
    automatic,
    io_uring,
    epoll,
    asio,
    memory, ///< no sockets: lines are written in-process (memory_line): tests, benches, replay
    af_xdp, ///< kernel bypass through AF_XDP sockets (root, an XDP-capable interface); never auto
};

std::string_view to_string(backend_kind kind) noexcept;
/// "auto", "io_uring", "epoll", "asio", "memory", "af_xdp"; throws std::invalid_argument otherwise.
backend_kind parse_backend_kind(std::string_view text);

namespace detail {
struct line_state;
class readiness_set;
class timer_queue;
} // namespace detail

class receive_backend {
public:
    virtual ~receive_backend() = default;
    [[nodiscard]] virtual backend_kind kind() const noexcept = 0;
    /// Setup, before start(): take charge of a line (may create its receive contract).
    virtual void attach(detail::line_state& line) = 0;
    /// Setup, before start(): watch the runtime's other sockets too (readiness_set.hpp: TCP
    /// connections), calling set.dispatch() whenever its descriptor is readable.
    virtual void watch(detail::readiness_set& set) = 0;
    /// Starts the poller thread (pinned to `cpu` when >= 0): thread mode. The thread also
    /// drives `timers`: it calls fire_due() after each poll and sleeps at most until the
    /// earliest deadline (begin_sleep/sleep_bound/end_sleep around its wait). Throws
    /// std::system_error on setup errors (e.g. io_uring buffer ring registration).
    virtual void start(int cpu, detail::timer_queue& timers) = 0;
    /// Thread mode: stops watching the sockets; everything already received is in the lines'
    /// queues when it returns (io_uring: in-flight completions are reaped and queued).
    /// Reactor mode: asks poll() to wind down (see finished()). Idempotent.
    virtual void stop() = 0;

    // ---- reactor mode: the backend runs as a contract on the workers, without a thread ----
    /// Whether this backend can run as a reactor with `workers` worker threads.
    [[nodiscard]] virtual bool supports_reactor(std::size_t /*workers*/) const noexcept {
        return false;
    }
    /// Setup, controlling thread, instead of start(): `reactor` is the contract that calls
    /// poll(); the backend may schedule it (e.g. when a paused line can resume). Throws
    /// std::system_error on setup errors.
    virtual void start_reactor(work_contract& /*reactor*/) {}
    /// Reactor contract only (never concurrently with itself); never blocks: reaps what is
    /// ready, hands packets to the lines, schedules parsers or receive contracts. True if
    /// anything happened.
    virtual bool poll() { return false; }
    /// Reactor mode, after stop(): true once poll() has queued everything received.
    [[nodiscard]] virtual bool finished() const noexcept { return true; }
    /// Reactor mode, one worker at a time (the runtime elects it): sleeps until a socket has
    /// data, wake() is called, or `timeout` passes. True: the reactor should run next (what
    /// woke us is waiting to be reaped); false: wait() already scheduled the work it found.
    virtual bool wait(std::chrono::nanoseconds /*timeout*/) { return true; }
    /// Any thread: makes a wait() in progress (or the next one) return promptly.
    virtual void wake() noexcept {}
    /// Any thread: frames or datagrams dropped before the line saw them (cumulative): the
    /// socket's queue overflows (SO_MEMINFO), af_xdp adds its sockets' ring drops.
    [[nodiscard]] virtual std::uint64_t kernel_drops(detail::line_state const& line) const noexcept;
    /// Any thread, rarely (a reorder hold or a timeout about to give up on data): whether
    /// data for this line may be waiting before its queue — in its socket (read neither by
    /// the backend nor into its completions yet), or, io_uring, completions not reaped yet, or,
    /// af_xdp, frames in the RX ring of one of its queues. A parser that sees it waits for that
    /// input instead of calling it lost.
    [[nodiscard]] virtual bool input_waiting(detail::line_state const& line) const noexcept;
    /// Why the line's receive timestamps are not what was asked for (empty when they are):
    /// the socket's note (udp_socket::timestamp_note()); af_xdp stamps in user space.
    [[nodiscard]] virtual std::string const&
    timestamp_note(detail::line_state const& line) const noexcept;
};

/// Where the receive backend runs (runtime_options::poller).
enum class poller_mode {
    contract, ///< a reactor contract on the workers; idle workers sleep in the backend
    thread,   ///< a dedicated poller thread hands work to the workers (pipelined over two cores)
};

std::string_view to_string(poller_mode mode) noexcept;
/// "contract", "thread"; throws std::invalid_argument otherwise.
poller_mode parse_poller_mode(std::string_view text);

/// Whether this kernel and process can run the io_uring backend; `why_not` says what is missing.
bool io_uring_available(std::string& why_not);
/// Whether this build, kernel and process can run the af_xdp backend at all (built with libxdp,
/// AF_XDP sockets, the privileges); `why_not` says what is missing. An interface can still
/// refuse it at start (no such interface, a program already attached, zero-copy unsupported).
bool af_xdp_available(std::string& why_not);

/// Makes the backend; `automatic` picks io_uring where available, else epoll. `reason` says why
/// this one was chosen. Throws std::system_error when an explicitly requested backend is not
/// available here.
std::unique_ptr<receive_backend>
make_receive_backend(backend_kind kind, blocking_work_contract_group& group, std::string& reason);

} // namespace signet::net
