#pragma once

// pitch_recovery_service: Cboe's two PITCH recovery servers beside a publisher (md_feed
// --serve-grp, --serve-spin) — a Gap Request Proxy (TCP: login, gap requests answered with a
// Gap Response and, when accepted, the messages resent as blocks with their original unit and
// sequence on the gap line, UDP) and a Spin server per unit (TCP on spin_port + unit - 1: login,
// Spin Image Available once a second, a Spin Request answered with a Spin Response, the
// unit's book as Add Order messages and Spin Finished).
//
// Design (as the GLIMPSE service): the publisher's thread only copies each block into a
// lock-free record ring (record(), the publisher's on_block hook; never waits). A thread of the
// service's own owns everything else: it moves the ring's blocks into a message store per unit
// (what a gap request may ask for: the last store_messages of each unit) and into a
// md::cboe::pitch_book (the spin image), accepts connections, runs one md-style session per
// connection (an md::cboe::session_server: login, heartbeats, silence; poll, 5 ms at most). A spin
// is the unit's book as the thread has it when the request arrives: the Spin Response and Spin
// Finished name that sequence (at or past the one requested; docs/pitch.md). Blocks the ring lost
// leave the store and the book incomplete: counted, logged, and from then on gap requests are
// refused ('U') and spins too ('O').
//
// Status codes (docs/pitch.md): a gap request of a unit the publisher does not send is 'I', a
// range not (or no longer) stored 'O', above max_gap_count 'C'; a spin request while the
// connection's spin is still being sent 'S'; a login with other credentials is refused 'N', one
// with the credentials of a session logged in to the same server 'B' (with configured
// credentials), and the connection closed.
//
// Connections (docs/pitch.md): each server (the GRP, each unit's Spin server) has max_clients
// slots of its own. A connection must log in within login_timeout of its accept, whatever it
// sends, or it is dropped; a connection to a full server takes the slot of that server's oldest
// connection not logged in, and is refused only when all are logged in. Unauthenticated peers
// thus never keep a login out, nor touch another server. Drops are counted and logged (the 1st,
// 10th, 100th... of each kind).
//
// Threading: record() on the publisher's thread; stop(), counts(), ports on any thread.
// Costs: per block one copy into the ring (publisher side); the thread's stores and book.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include <signet/md/cboe/pitch_book.hpp>
#include <signet/md/cboe/pitch_session.hpp>
#include <signet/md/message_store.hpp>
#include <signet/net/unique_fd.hpp>
#include <signet/publisher/detail/record_ring.hpp>
#include <signet/publisher/line_output.hpp>

namespace signet::publisher::cboe {

struct pitch_recovery_options {
    int family = AF_INET;
    std::size_t units = 1;                             ///< units 1 to units are served
    bool grp = false;                                  ///< serve gap requests on grp_port
    std::uint16_t grp_port = 0;                        ///< 0: any free port (grp_port() tells)
    bool spin = false;                                 ///< serve spins on spin_port + unit - 1
    std::uint16_t spin_port = 0;                       ///< with spin, required (a base)
    md::cboe::session_credentials credentials{};       ///< logins must match (all spaces: any)
    std::size_t store_messages = std::size_t{1} << 20; ///< per unit
    std::uint32_t max_gap_count = 65'535;
    std::size_t max_orders = std::size_t{1} << 20; ///< the spin book's
    std::size_t max_clients = 64; ///< per server (the GRP, each unit's Spin server)
    std::chrono::nanoseconds heartbeat = std::chrono::seconds(1);
    std::chrono::nanoseconds client_timeout = std::chrono::seconds(15);
    std::chrono::nanoseconds login_timeout = std::chrono::seconds(5); ///< from the accept
    std::size_t handoff_bytes = std::size_t{64} << 20;
    /// Answer gap requests with nothing at all (tests: a proxy that never responds).
    bool mute_grp = false;
};

struct pitch_recovery_counts {
    std::uint64_t connections = 0;
    std::uint64_t logins = 0;
    std::uint64_t rejected_logins = 0;     ///< 'N' and 'B'
    std::uint64_t login_timeouts = 0;      ///< no login within login_timeout
    std::uint64_t evicted_clients = 0;     ///< not logged in, closed for a new connection
    std::uint64_t refused_connections = 0; ///< a server full of logged-in sessions
    std::uint64_t gap_requests = 0;
    std::uint64_t gap_accepted = 0;
    std::uint64_t gap_rejected = 0; ///< any status but 'A'
    std::uint64_t messages_resent = 0;
    std::uint64_t packets_resent = 0; ///< blocks on the gap line
    std::uint64_t spins = 0;          ///< Spin Finished sent
    std::uint64_t spin_orders = 0;
    std::uint64_t spin_refused = 0;    ///< 'O', and 'S' (a spin in progress)
    std::uint64_t dropped_clients = 0; ///< silent, invalid blocks, send errors
    std::uint64_t applied_blocks = 0;
    std::uint64_t sequence_breaks = 0; ///< the hand-off ring lost blocks
    std::uint64_t send_errors = 0;     ///< on the gap line
};

class pitch_recovery_service {
public:
    /// `gap_line` (one line) carries the resent blocks; it must outlive the service and is used
    /// by its thread only. Listens and starts the thread. Throws std::system_error when a port
    /// cannot be bound (naming it), std::invalid_argument on bad options.
    pitch_recovery_service(pitch_recovery_options const& options, line_output* gap_line);
    pitch_recovery_service(pitch_recovery_service const&) = delete;
    pitch_recovery_service& operator=(pitch_recovery_service const&) = delete;
    ~pitch_recovery_service();

    /// The publisher's thread: a block it built (pitch_publisher_options::on_block).
    void record(std::span<std::byte const> block) noexcept;
    void stop() noexcept;
    [[nodiscard]] std::uint16_t grp_port() const noexcept { return grp_port_; }
    [[nodiscard]] pitch_recovery_counts counts() const;

private:
    struct connection;
    void run() noexcept;
    void drain() noexcept;
    void apply(std::span<std::byte const> block) noexcept;
    void accept_connections(int listener, std::uint8_t spin_unit) noexcept;
    [[nodiscard]] bool make_room(std::uint8_t spin_unit) noexcept;
    [[nodiscard]] bool in_use(connection const& c, md::cboe::message const& login) const noexcept;
    bool serve(connection& c, short revents, std::int64_t now) noexcept;
    void on_request(connection& c, md::cboe::message const& m);
    void answer_gap(connection& c, md::cboe::message const& request);
    void answer_spin(connection& c, md::cboe::message const& request);
    void publish() noexcept;

    pitch_recovery_options options_;
    line_output* gap_line_;
    net::unique_fd grp_listener_;
    std::uint16_t grp_port_ = 0;
    std::vector<net::unique_fd> spin_listeners_; // unit u at index u - 1
    detail::record_ring ring_;
    std::uint64_t ring_position_ = 0;
    std::unique_ptr<std::byte[]> record_buffer_;
    std::vector<std::unique_ptr<md::message_store>> stores_; // unit u at index u - 1
    std::vector<std::uint32_t> next_;                        // per unit: the next sequence
    md::cboe::pitch_book book_;
    bool broken_ = false;
    std::vector<std::unique_ptr<connection>> connections_;
    std::vector<std::byte> resend_; // a block being resent
    pitch_recovery_counts counts_{};
    mutable std::mutex counts_mutex_;
    pitch_recovery_counts published_{};
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

} // namespace signet::publisher::cboe
