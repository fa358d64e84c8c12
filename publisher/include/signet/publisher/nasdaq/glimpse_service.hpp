#pragma once

// glimpse_service: a GLIMPSE 5.0 snapshot server beside a publisher (md_feed --serve-glimpse).
// Receivers that join late, or declared a gap lost, log in over SoupBinTCP and get the book the
// publisher has published so far as ITCH 5.0 messages — the last system event, per listed
// stock its directory, trading action and Reg SHO messages, every live order as an add in time
// priority, an attributed one as an 'F' with its MPID (md::nasdaq::write_itch_snapshot) — then
// an End of Snapshot carrying the
// MoldUDP64 sequence to resume the multicast from (md/glimpse.hpp). The snapshot is consistent
// with that sequence: the service builds it from a book to which it applied exactly the
// messages before it.
//
// Design (as rerequest_service): the publisher's thread only copies each data packet into a
// lock-free record ring (record(), the publisher's on_packet hook; never waits). A thread of the
// service's own owns everything else: it moves the ring's packets into an md::nasdaq::itch50_parser
// (its book), accepts connections on a listening TCP socket, runs one
// md::nasdaq::soupbintcp::server per connection and, when a login arrives, drains the ring, writes
// the snapshot of the book into the connection's buffer and sends it as the socket takes it (poll,
// 5 ms at most). No lock is held while building or sending. Packets the ring lost (it overflowed
// while the thread was kept off the CPU) leave the book incomplete: counted (sequence_breaks),
// logged, and every later login is rejected (session not available) rather than served a wrong
// book.
//
// Heartbeats: the server's, between the snapshot and the client's logout; while a snapshot
// is being sent the data is the heartbeat, and a client that takes nothing for
// client_timeout is dropped (counted).
//
// Threading: record() on the publisher's thread; stop(), counts(), port() on any thread.
// Costs: per packet one copy into the ring (publisher side) and one book update (service side);
// per snapshot a buffer of (stocks + orders) x 41 bytes, allocated when the login arrives.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_snapshot.hpp>
#include <signet/net/unique_fd.hpp>
#include <signet/publisher/detail/record_ring.hpp>

namespace signet::publisher::nasdaq {

struct glimpse_service_options {
    int family = AF_INET;   ///< AF_INET or AF_INET6 (any address of it)
    std::uint16_t port = 0; ///< 0: any free port (port() tells which)
    std::string username{}; ///< logins must carry these; empty: any login is accepted
    std::string password{};
    md::nasdaq::itch_order_book_options book{};
    std::size_t max_clients = 64;
    std::chrono::nanoseconds heartbeat = std::chrono::seconds(1);
    std::chrono::nanoseconds client_timeout = std::chrono::seconds(15);
    std::size_t handoff_bytes = std::size_t{64} << 20; ///< the record() ring
};

struct glimpse_counts {
    std::uint64_t connections = 0;
    std::uint64_t refused_connections = 0; ///< beyond max_clients
    std::uint64_t logins = 0;              ///< accepted
    std::uint64_t rejected_logins = 0;     ///< bad credentials, or the book is incomplete
    std::uint64_t snapshots_sent = 0;      ///< every byte through End of Snapshot written
    std::uint64_t snapshot_messages = 0;   ///< in snapshots built
    std::uint64_t orders_sent = 0;         ///< adds in snapshots built
    std::uint64_t dropped_clients = 0;     ///< timeouts, invalid frames, send errors
    std::uint64_t applied_messages = 0;    ///< published messages applied to the book
    std::uint64_t sequence_breaks = 0;     ///< a sequence jump: the book is incomplete
    std::uint64_t handoff_lost_bytes = 0;
    std::uint64_t next_sequence = 0; ///< the sequence after the last applied message
};

class glimpse_service {
public:
    /// Listens and starts the thread. Throws std::system_error when the port cannot be bound
    /// (naming it), std::invalid_argument on bad options.
    explicit glimpse_service(glimpse_service_options const& options);
    glimpse_service(glimpse_service const&) = delete;
    glimpse_service& operator=(glimpse_service const&) = delete;
    ~glimpse_service();

    /// The publisher's thread: a data packet it built (publisher_options::on_packet).
    void record(std::span<std::byte const> datagram) noexcept;
    /// Stops serving (connections are closed). Idempotent.
    void stop() noexcept;
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] glimpse_counts counts() const;

private:
    struct connection;
    void run() noexcept;
    void drain() noexcept;
    void apply(std::span<std::byte const> datagram) noexcept;
    void accept_connections() noexcept;
    /// False: the connection is done (close it).
    bool serve(connection& c, short revents) noexcept;
    void build_snapshot(connection& c);
    void publish() noexcept;

    glimpse_service_options options_;
    net::unique_fd listener_;
    std::uint16_t port_ = 0;
    detail::record_ring ring_;
    std::uint64_t ring_position_ = 0;
    std::unique_ptr<std::byte[]> record_buffer_;
    md::nasdaq::itch50_parser parser_;
    // System event, directory, trading action, Reg SHO; each live order's priority and MPID.
    md::nasdaq::itch_snapshot_state state_;
    std::uint64_t next_sequence_ = 0; // 0: nothing applied yet
    bool broken_ = false;
    std::vector<std::unique_ptr<connection>> connections_;
    glimpse_counts counts_{}; // the thread's
    mutable std::mutex counts_mutex_;
    glimpse_counts published_{};
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

} // namespace signet::publisher::nasdaq
