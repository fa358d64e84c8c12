#pragma once

// Internal state of a feed and its lines, shared by the runtime, the backends and the parser
// contract. Threading:
//   line_state::ready          producer: the line's receive side (receive contract for epoll and
//                              Asio, the io_uring driver, a memory_line's writer); consumer:
//                              the parser contract (parser_contract.hpp)
//   packet_pool::returns()     producer: parser contract; consumer: the line's receive side
//   line_state::stash          receive side only
//   line_state::paused         both sides, with acq_rel exchanges (see pause protocol below)
//   counters                   each counter has one writer; any thread may read a snapshot
//
// Pause protocol (backpressure): the receive side, finding `ready` full, does
// paused.exchange(true) and then re-checks for space; the parser contract, after a batch,
// does paused.exchange(false) and on `true` calls resume(). Both are RMWs on one atomic, so
// whichever comes second in its modification order synchronizes with the first: either the
// receive side sees the space the parser made, or the parser sees the pause. No wake-up is lost.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <signet/core/cache_line.hpp>
#include <signet/core/metrics.hpp>
#include <signet/core/spsc_fixed_queue.hpp>
#include <signet/core/work_contract.hpp>
#include <signet/net/feed.hpp>

namespace signet::net::detail {

// Counters: signet::metrics::counter (one writer, a relaxed load and store per add, no RMW).
using metrics::counter;

struct feed_state;

struct line_state {
    /// `pool_memory`: whether the pool allocates its buffers (the af_xdp backend's UMEM holds
    /// them instead).
    line_state(feed_state& owner, std::uint16_t line_index, udp_socket s,
               udp_socket_options const& socket_options, std::size_t capacity,
               std::size_t buffer_size, std::size_t headroom, bool pool_memory = true);

    feed_state& feed;
    std::uint16_t index;
    udp_socket socket;
    udp_socket_options options; // as opened (af_xdp: the interface and the address to match)
    packet_pool pool;
    spsc_fixed_queue<packet> ready;
    std::vector<std::uint32_t> stash;      // receive side's free buffers
    work_contract receive;                 // epoll and Asio backends (socket_receive.hpp)
    void (*resume)(line_state&) = nullptr; // backend hook, called by the parser side
    void* backend = nullptr;               // backend's per-line data

    /// A socket receive is under way: its datagrams have left the socket and are not in
    /// `ready` yet (socket_receive.cpp). runtime::input_waiting() reads it between the socket
    /// and the queue, so that a receive contract preempted in between never looks like no
    /// input. Stored seq_cst before recvmmsg (visible before the socket empties), false with
    /// release after the pushes (pairs with input_waiting's acquire load: the pushes are then
    /// visible in `ready`).
    std::atomic<bool> receiving{false};

    // alignas: written by the receive side only; keep off the parser's lines.
    alignas(destructive_interference_size) counter packets;
    counter bytes;
    counter dropped;
    counter truncated;
    metrics::gauge kernel_drops; // the socket's cumulative SO_RXQ_OVFL count
    counter rearms;
    counter hardware_timestamps; // packets stamped by the NIC (timestamping::hardware)
    counter malformed;           // af_xdp: frames that failed the header checks
    // ---- the pause protocol (above): the one place its RMWs are written ----
    /// Receive side: ask the parser side to resume this line once it frees room; then re-check
    /// for room, and withdraw the request if there is some.
    void request_resume() noexcept {
        // acq_rel: the protocol's RMW pair with take_resume_request().
        (void)paused.exchange(true, std::memory_order_acq_rel);
    }
    /// Receive side: withdraws the request; true if it was still pending (nobody resumed the
    /// line meanwhile, so the receive side goes on by itself).
    bool withdraw_resume() noexcept {
        // acq_rel: as request_resume().
        return paused.exchange(false, std::memory_order_acq_rel);
    }
    /// Parser side, after a batch: true if the receive side asked to be resumed (call resume).
    bool take_resume_request() noexcept {
        // acq_rel: as request_resume(); the parser's pops happen before the receive side's
        // re-check or the resume it causes.
        return paused.exchange(false, std::memory_order_acq_rel);
    }

    // alignas: the pause flag is touched by both sides.
    alignas(destructive_interference_size) std::atomic<bool> paused{false};
};

struct feed_state {
    std::string name;
    full_policy on_full = full_policy::backpressure;
    std::size_t ring_buffers = 0; // feed_options::ring_buffers (io_uring)
    af_xdp_options af_xdp{};      // feed_options::af_xdp
    std::vector<std::unique_ptr<line_state>> lines;
    work_contract parser;
    std::atomic<bool> const* stopping = nullptr; // the runtime's stop flag
    // alignas: written by the parser contract only.
    alignas(destructive_interference_size) counter parsed;
    counter parser_errors;
    bool parser_error_logged = false; // parser contract only
};

} // namespace signet::net::detail
