#pragma once

// tcp_client: one TCP client connection run by a contract of the runtime (a feed's parser
// contract): non-blocking connect with a timeout, reads into a buffer of its own that a
// protocol's framer consumes, sends of the protocol's output, and reconnection with
// exponential backoff. No thread of its own and none per connection: the runtime's backend
// watches the socket (detail/readiness_set.hpp) and schedules the owner's contract on each
// readiness edge; the owner calls service() from that contract, and arms a timer for
// next_deadline() (connect timeout, end of a backoff).
//
//   auto tcp = rt.make_tcp_client(feed, options);   // setup, before start()
//   // in the feed's parser contract (operator(), on_batch(), on_idle()):
//   switch (tcp->service(now, [&](std::span<std::byte const> bytes) { return used; })) { ... }
//   tcp->send(output);                               // what the kernel took (non-blocking)
//
// Reading: one service() reads at most one buffer's free space (options.receive_buffer) with
// one recv(), hands everything buffered to consume(bytes), which returns how many bytes it
// used (whole frames), and moves the rest — less than one frame — to the buffer's start. So a
// frame split across reads is copied at most once, and a run of the owner's contract handles
// at most one buffer of input: the bound on how long a busy connection holds the contract
// (the "chunk"); when the read filled the buffer the client marks itself ready and the
// contract runs again after the others had their turn. A frame that cannot fit the buffer
// (consume() used nothing of a full buffer) closes the connection (frame_too_large).
//
// States: idle -> connecting -> connected -> (failure) backoff -> connecting ...; close() ->
// idle. The backoff doubles from backoff_initial up to backoff_max after each failure and
// returns to backoff_initial on reset_backoff() (the owner's sign that the session works).
// Each failure is counted by cause and logged once (net::logger(), warn) with the delay.
//
// Threading: everything on the owner's contract (never concurrently), stats() too; set up
// before the runtime starts; destroy after it stopped. Costs: the buffer is allocated at
// construction; per service() at most one recv(), per send() one send(); no allocation, no
// exception after construction; logging only on connection events.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <signet/core/work_contract.hpp>
#include <signet/net/detail/readiness_set.hpp>
#include <signet/net/udp_endpoint.hpp>
#include <signet/net/unique_fd.hpp>

namespace signet::net {

struct tcp_client_options {
    udp_endpoint peer{}; ///< IPv4 or IPv6 address and port (an IP endpoint, TCP here)
    std::chrono::nanoseconds connect_timeout = std::chrono::seconds(2);
    std::chrono::nanoseconds backoff_initial = std::chrono::milliseconds(100);
    std::chrono::nanoseconds backoff_max = std::chrono::seconds(5);
    std::size_t receive_buffer = std::size_t{64} << 10; ///< > the largest frame; the chunk
    int socket_receive_buffer = 4 << 20; ///< SO_RCVBUF asked for; 0: the kernel's default
    std::string name = "tcp";            ///< for log lines
};

enum class tcp_state : std::uint8_t { idle, connecting, connected, backoff };

enum class tcp_failure : std::uint8_t {
    none,
    refused,         ///< connect() failed (refused, unreachable, ...)
    connect_timeout, ///< no answer within connect_timeout
    peer_closed,     ///< orderly shutdown by the peer
    reset,           ///< a receive or send error (reset, ...)
    frame_too_large, ///< a frame that cannot fit the receive buffer
    closed,          ///< the owner closed it (disconnect())
};

enum class tcp_event : std::uint8_t {
    none,
    connected,    ///< the connection is up: start the protocol
    data,         ///< bytes were consumed
    disconnected, ///< it failed (failure()): the protocol's state is gone; a retry is due
};

struct tcp_client_stats {
    std::uint64_t attempts = 0;    ///< connects started
    std::uint64_t connections = 0; ///< connects that succeeded
    std::uint64_t refused = 0;
    std::uint64_t connect_timeouts = 0;
    std::uint64_t peer_closed = 0;
    std::uint64_t resets = 0;
    std::uint64_t frames_too_large = 0;
    std::uint64_t closed = 0; ///< by the owner
    std::uint64_t bytes_in = 0;
    std::uint64_t bytes_out = 0;
    std::uint64_t reads = 0; ///< recv() calls that returned data
};

class tcp_client {
public:
    using clock = std::chrono::steady_clock;

    /// `readiness` and `owner` (the contract that calls service()) must outlive it. Throws
    /// std::invalid_argument on bad options.
    tcp_client(tcp_client_options options, detail::readiness_set& readiness, work_contract& owner);
    tcp_client(tcp_client const&) = delete;
    tcp_client& operator=(tcp_client const&) = delete;

    /// idle or backoff: starts a connect now (the result comes from service()).
    void connect(clock::time_point now) noexcept;
    /// Does what is due: finishes a connect (or times it out), starts the connect a backoff
    /// waited for, reads once and hands the bytes to consume(std::span<std::byte const>) ->
    /// std::size_t used.
    template <typename Consume>
    tcp_event service(clock::time_point now, Consume&& consume);
    /// Connected: sends what the kernel takes of `bytes` at once; returns that count (0 when
    /// its buffer is full: the next writable edge runs the owner again). A send error fails
    /// the connection (service() then reports disconnected).
    std::size_t send(std::span<std::byte const> bytes, clock::time_point now) noexcept;
    /// Closes the connection: `retry` backs off and reconnects, else idle (connect() again).
    void disconnect(clock::time_point now, bool retry) noexcept;
    /// The session on this connection works: the next failure waits backoff_initial again.
    void reset_backoff() noexcept { backoff_ = options_.backoff_initial; }

    /// When service() has something to do without a readiness edge (connect timeout, end of
    /// backoff); time_point::max() when nothing.
    [[nodiscard]] clock::time_point next_deadline() const noexcept;
    [[nodiscard]] tcp_state state() const noexcept { return state_; }
    [[nodiscard]] tcp_failure failure() const noexcept { return failure_; }
    [[nodiscard]] tcp_client_stats const& stats() const noexcept { return stats_; }
    [[nodiscard]] tcp_client_options const& options() const noexcept { return options_; }

private:
    tcp_event finish_connect(clock::time_point now) noexcept;
    /// One recv() into the buffer; bytes read, 0 when nothing (EAGAIN), -1 when it failed.
    long read_once(clock::time_point now) noexcept;
    void fail(tcp_failure why, int error, clock::time_point now) noexcept;

    tcp_client_options options_;
    detail::readiness_set& readiness_;
    detail::readiness_flag flag_;
    unique_fd socket_;
    std::vector<std::byte> buffer_;
    std::size_t filled_ = 0;
    tcp_state state_ = tcp_state::idle;
    tcp_failure failure_ = tcp_failure::none;
    bool failed_unreported_ = false; // a failure service() has not returned yet
    clock::time_point deadline_ = clock::time_point::max();
    std::chrono::nanoseconds backoff_;
    tcp_client_stats stats_{};
};

template <typename Consume>
tcp_event tcp_client::service(clock::time_point now, Consume&& consume) {
    bool const ready = flag_.take();
    if (failed_unreported_) {
        failed_unreported_ = false;
        return tcp_event::disconnected;
    }
    switch (state_) {
    case tcp_state::idle:
        return tcp_event::none;
    case tcp_state::backoff:
        if (now >= deadline_) {
            connect(now);
        }
        return tcp_event::none;
    case tcp_state::connecting:
        return ready || now >= deadline_ ? finish_connect(now) : tcp_event::none;
    case tcp_state::connected:
        break;
    }
    if (!ready) {
        return tcp_event::none;
    }
    long const n = read_once(now);
    if (n < 0) {
        failed_unreported_ = false;
        return tcp_event::disconnected;
    }
    if (n == 0) {
        return tcp_event::none;
    }
    std::size_t const used = consume(std::span<std::byte const>(buffer_.data(), filled_));
    if (state_ != tcp_state::connected) { // the owner disconnected from consume()
        return tcp_event::data;
    }
    if (used == 0 && filled_ == buffer_.size()) {
        fail(tcp_failure::frame_too_large, 0, now);
        failed_unreported_ = false;
        return tcp_event::disconnected;
    }
    if (used > 0) {
        std::size_t const rest = filled_ - used;
        if (rest > 0) {
            std::memmove(buffer_.data(), buffer_.data() + used, rest);
        }
        filled_ = rest;
    }
    return tcp_event::data;
}

} // namespace signet::net
