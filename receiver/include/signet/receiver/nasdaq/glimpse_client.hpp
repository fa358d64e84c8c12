#pragma once

// glimpse_client: the late-join and gap-loss path of one ITCH feed — a GLIMPSE 5.0 snapshot
// over SoupBinTCP, loaded into an md::nasdaq::itch_snapshot_sync while the feed's live messages are
// buffered. It joins three pieces that know nothing of each other: a net::tcp_client (the
// connection, run by the feed's parser contract), an md::nasdaq::soupbintcp::client (the login,
// heartbeats and sequenced data; a fresh one per connection, since each snapshot starts at
// sequence 1) and the feed's md::nasdaq::itch_snapshot_sync (buffer, fresh book, replay, swap).
//
//   request(now)   the feed needs a snapshot (at start; a gap declared lost): live messages
//                  are buffered from here on and the connection is made once the live stream
//                  has shown where it is (a snapshot is checked against it) — now, or at the
//                  first datagram, or when the backoff of a failed attempt ends
//   service(now)   from the parser contract on every run (on_batch/on_idle): connects, reads
//                  at most one chunk (the tcp_client's receive buffer) and feeds its snapshot
//                  messages to the sync, sends, re-arms the timer
//
// Outcomes, each counted: End of Snapshot applied (synchronized: logout, close, time to
// synchronized recorded); a snapshot that resumes before the buffer's start (too_old:
// reconnect for a newer one after the backoff); one that resumes beyond the live stream by
// more than the sync's max_ahead (future: refused, logged once, retried: a server of another
// session or day must not freeze the book); the connection lost or the server silent or
// malformed mid-snapshot (the fresh book is dropped — nothing half-applied — and the attempt
// retried); a server that trickles past snapshot_timeout (dropped, retried); a rejected login
// (logged as an error, not retried: the credentials are wrong). Failures are logged (warn)
// once per attempt; the tcp_client backs off between attempts.
//
// Threading: the feed's parser contract, except live() (any thread: relaxed atomics written
// at the end of each service()). Costs: nothing per live packet beyond the sync's
// buffering copy; per service() at most one recv() and one send().

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <signet/md/nasdaq/itch_snapshot_sync.hpp>
#include <signet/md/nasdaq/soupbintcp_client.hpp>
#include <signet/net/tcp_client.hpp>
#include <signet/net/timer.hpp>

namespace signet::receiver::nasdaq {

enum class glimpse_phase : std::uint8_t {
    off,       ///< no snapshot server configured
    live,      ///< synchronized
    buffering, ///< waiting for a connection or a login
    loading,   ///< snapshot messages arriving
    rejected,  ///< the login was rejected: not retried
};

[[nodiscard]] char const* to_string(glimpse_phase phase) noexcept;

/// Counters of the snapshot path (also in the summary, the metrics and --top).
struct glimpse_counters {
    std::uint64_t requests = 0;      ///< times the feed needed a snapshot (start, lost gaps)
    std::uint64_t attempts = 0;      ///< connections started
    std::uint64_t completed = 0;     ///< snapshots applied (synchronized)
    std::uint64_t orders_loaded = 0; ///< adds in applied snapshots
    std::uint64_t snapshot_messages = 0;
    std::uint64_t buffered_messages = 0; ///< live messages kept while not synchronized
    std::uint64_t replayed_messages = 0; ///< of those, applied after a snapshot
    std::uint64_t buffer_evictions = 0;
    std::uint64_t buffer_restarts = 0;
    // failures by cause
    std::uint64_t connect_failures = 0; ///< refused, unreachable, timed out
    std::uint64_t disconnects = 0;      ///< closed or reset by the peer, oversized frames
    std::uint64_t login_rejected = 0;
    std::uint64_t protocol_failures = 0; ///< login timeout, silent server, bad frames
    std::uint64_t too_old = 0;
    std::uint64_t future = 0;           ///< refused: resumed beyond the live stream + max_ahead
    std::uint64_t covered_messages = 0; ///< live messages skipped: the loaded snapshot held them
    std::uint64_t aborted = 0;          ///< snapshots dropped mid-way (all causes)
    std::uint64_t last_sync_us = 0;     ///< request -> synchronized, the last time
    std::uint64_t total_sync_us = 0;    ///< summed over completed snapshots

    /// Failed attempts, all causes.
    [[nodiscard]] std::uint64_t failures() const noexcept {
        return connect_failures + disconnects + login_rejected + protocol_failures + too_old +
               future;
    }
};

/// What other threads may read while the feed runs (stats lines, --top, metrics).
struct glimpse_live {
    glimpse_phase phase = glimpse_phase::off;
    std::uint64_t completed = 0;
    std::uint64_t orders_loaded = 0;
    std::uint64_t buffered_messages = 0;
    std::uint64_t failures = 0; ///< glimpse_counters::failures()
    std::uint64_t last_sync_us = 0;
};

struct glimpse_client_options {
    std::string username{};
    std::string password{};
    std::chrono::nanoseconds login_timeout = std::chrono::seconds(5);
    std::chrono::nanoseconds server_timeout = std::chrono::seconds(5); ///< silence
    /// Connection up -> End of Snapshot at most: a server that trickles (a byte a second)
    /// is not silent, but it is dropped after this and the snapshot asked for again.
    std::chrono::nanoseconds snapshot_timeout = std::chrono::seconds(30);
    /// The bound on a SoupBinTCP packet's length field (ITCH messages are at most 50 bytes).
    std::size_t max_packet_length = 1024;
    std::string name = "glimpse"; ///< for log lines
};

class glimpse_client {
public:
    using clock = std::chrono::steady_clock;

    /// `tcp` from runtime::make_tcp_client(feed), `timer` a parser_timer of the same feed,
    /// `sync` the feed's; all used from the feed's parser contract only.
    glimpse_client(glimpse_client_options options, std::unique_ptr<net::tcp_client> tcp,
                   net::timer timer, md::nasdaq::itch_snapshot_sync& sync);

    void request(clock::time_point now);
    void service(clock::time_point now);

    [[nodiscard]] glimpse_phase phase() const noexcept;
    [[nodiscard]] glimpse_counters counters() const noexcept;
    /// Any thread: as of the last service().
    [[nodiscard]] glimpse_live live() const noexcept;
    [[nodiscard]] net::tcp_client const& connection() const noexcept { return *tcp_; }

private:
    enum class outcome : std::uint8_t { none, synchronized, retry, rejected };
    void on_message(std::span<std::byte const> message);
    void finish(outcome what, clock::time_point now);
    void fail(char const* why); // a protocol failure: counted, logged, retried
    void publish() noexcept;
    [[nodiscard]] static std::int64_t ns(clock::time_point t) noexcept {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    }

    glimpse_client_options options_;
    std::unique_ptr<net::tcp_client> tcp_;
    net::timer timer_;
    md::nasdaq::itch_snapshot_sync& sync_;
    std::optional<md::nasdaq::soupbintcp::client> soup_; // one per connection
    bool wanted_ = false;
    bool rejected_ = false;
    bool future_logged_ = false;      // a snapshot from the future is logged once
    outcome pending_ = outcome::none; // decided inside a read, acted on after it
    clock::time_point requested_at_{};
    clock::time_point connected_at_{};
    clock::time_point armed_for_ = clock::time_point::max();
    glimpse_counters counters_{}; // the parts the sync does not count
    // live(): relaxed — plain counters, nothing else is published with them
    std::atomic<glimpse_phase> live_phase_{glimpse_phase::buffering};
    std::atomic<std::uint64_t> live_completed_{0};
    std::atomic<std::uint64_t> live_orders_{0};
    std::atomic<std::uint64_t> live_buffered_{0};
    std::atomic<std::uint64_t> live_failures_{0};
    std::atomic<std::uint64_t> live_last_sync_us_{0};
};

} // namespace signet::receiver::nasdaq
