#pragma once

// request_service: a MoldUDP64 re-request server beside a publisher. One net::udp_sender bound
// to any address of one family on a port receives the requests and sends the answers (so they
// come from the port the requests went to); a thread of its own answers requests from any
// client through md::nasdaq::rerequest_server, from a md::message_store of the packets the publisher
// built or replayed (record(), the publisher's on_packet hook). The socket is a udp_sender, not
// a net::udp_socket: requests need none of the receive path's timestamps and drop counters, and
// answers must leave from the port the requests went to, so one socket does both.
//
// Threading: record() on one thread (the publisher's); stop(), linger(), stats(),
// store_counts(), session() and describe() on any thread. Everything else belongs to the
// service thread. Use it beside a publisher whose thread must never wait; it is not a general
// request server (one socket, one thread, one session's store).
//
// Design: the publisher's thread never waits for the service. record() copies the datagram
// into a detail::record_ring (lock-free, single producer, single consumer) and returns; it
// takes no lock, makes no system call and never waits, whatever the service thread is doing.
// The service thread alone owns the store and the server:
//   1. It waits for a request (poll, 5 ms at most) and then, and before each request, moves
//      what the ring holds into the store (the moldudp64 data packets of the served session;
//      sequences already stored are skipped, a jump ahead starts the store anew).
//   2. It builds the answer from the store (md::nasdaq::rerequest_server::handle) and sends it with
//      net::udp_sender::send (which waits while the socket's queue is full). No lock is held
//      while building or sending: the store and the server are the thread's own.
//   3. After each round it copies the counters into a snapshot under a mutex that only the
//      service thread and the readers of stats() take — never the publisher's thread.
// So answers always include every packet recorded before the request was taken in (step 1
// drains the ring first). The ring holds up to handoff_bytes of datagrams: if the service
// thread were kept off the CPU while the publisher wrote more than that, the oldest of them are
// overwritten unread (counted: handoff_lost_bytes) and the store starts anew after the jump
// (store_restarts) — the publisher still never waits. The default is the store's size plus 40
// bytes of framing per message, at most 64 MiB (over a second of the fastest feed).
//
// Costs: the store, the ring and the server's answer buffers are allocated at construction;
// record() copies the datagram once (8-byte stores); the service thread copies each message
// once more into the store, and allocates nothing per request.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include <sys/socket.h>

#include <signet/md/message_store.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/nasdaq/rerequest_server.hpp>
#include <signet/net/udp_sender.hpp>
#include <signet/publisher/detail/record_ring.hpp>

namespace signet::publisher::nasdaq {

/// A store's bounds: messages, and ring bytes (md::message_store).
struct store_size {
    std::size_t messages = 0;
    std::size_t bytes = 0;
};
/// Room for the last `messages` ITCH messages (50 bytes at most), plus one that wraps.
[[nodiscard]] store_size store_for_messages(std::size_t messages) noexcept;
/// Room for every message of a BinaryFILE (at least 1 and 1): reads the file once. Throws
/// std::system_error if it cannot be read.
[[nodiscard]] store_size store_for_file(std::string const& path);

struct rerequest_service_options {
    int family = AF_INET;   ///< AF_INET or AF_INET6
    std::uint16_t port = 0; ///< 0: any free port (port() tells which)
    store_size store = store_for_messages(1'000'000);
    /// The served session; empty: the first data packet recorded sets it.
    std::string session{};
    std::uint32_t max_messages_per_answer = 1000;
    double requests_per_second = 100;
    std::size_t max_requesters = 4096;
    /// The record() ring's size in bytes; 0: the default (see the design above).
    std::size_t handoff_bytes = 0;
};

struct rerequest_store_counts {
    std::uint64_t stored = 0;      ///< messages appended
    std::uint64_t evicted = 0;     ///< messages the store's bounds (or a restart) pushed out
    std::uint64_t restarts = 0;    ///< the recorded stream jumped ahead: the store started anew
    std::uint64_t send_errors = 0; ///< answer packets the socket refused
    std::uint64_t handoff_lost_bytes =
        0; ///< recorded bytes overwritten before the service read them
};

class rerequest_service {
public:
    /// Binds the socket and starts the service thread. Throws std::system_error (bind: the
    /// port and why), std::invalid_argument (bad options), std::bad_alloc (store too large).
    explicit rerequest_service(rerequest_service_options const& options);
    /// Stops the thread.
    ~rerequest_service();
    rerequest_service(rerequest_service const&) = delete;
    rerequest_service& operator=(rerequest_service const&) = delete;

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

    /// Producer-side (one thread, the publisher's): hands one datagram to the service. Only
    /// MoldUDP64 data packets are kept (of the served session, checked by the service thread).
    /// Never waits, locks, throws or allocates.
    void record(std::span<std::byte const> datagram) noexcept;

    /// Any thread: stops answering, stores what was recorded before the call, and joins the
    /// thread (idempotent). Not concurrently with record().
    void stop() noexcept;
    /// Any thread: keeps answering for `how_long` (so that receivers can recover the tail of a
    /// session: they learn of their last gap from its end), or until `*interrupt` is set
    /// (checked every 50 ms at most; may be null), then stop()s.
    void linger(std::chrono::nanoseconds how_long,
                std::atomic<bool> const* interrupt = nullptr) noexcept;

    /// Any thread: the counters as of the service thread's last round (final after stop()).
    [[nodiscard]] md::nasdaq::rerequest_stats stats() const;
    [[nodiscard]] rerequest_store_counts store_counts() const;
    /// The session served (space padded), empty while still unknown.
    [[nodiscard]] std::string session() const;
    /// Any thread: "port P (any IPv4 address), session S, store of M messages / B bytes"
    /// (S: "of the first data packet" while unknown).
    [[nodiscard]] std::string describe() const;

private:
    struct snapshot {
        md::nasdaq::rerequest_stats stats{};
        rerequest_store_counts store{};
        md::nasdaq::moldudp64_session_id session{};
        bool session_known = false;
    };

    void run() noexcept;
    void drain() noexcept;
    void store_datagram(std::span<std::byte const> datagram) noexcept;
    void answer() noexcept;
    void publish() noexcept;

    net::udp_sender socket_;
    std::uint16_t port_ = 0;
    detail::record_ring ring_;
    // Service thread only:
    std::uint64_t ring_position_ = 0;
    std::unique_ptr<std::byte[]> record_buffer_; // record_ring::max_record_size bytes
    md::message_store store_;
    md::nasdaq::rerequest_server server_;
    rerequest_store_counts counts_{};
    bool session_known_ = false;
    // The service thread writes it after each round; readers copy it out.
    mutable std::mutex snapshot_mutex_;
    snapshot snapshot_{};
    std::atomic<bool> stopping_{false};
    std::thread thread_; // last: starts once everything above is built
};

} // namespace signet::publisher::nasdaq
