#pragma once

// feed_parser: the parser contract of one md_receiver feed. Per packet: MoldUDP64 sequencing
// (through an md::sequence_arbiter: A/B lines, reordering, re-request recovery), ITCH 5.0
// decoding into the order book, counting, and the latency from the kernel's receive timestamp
// to the end of parsing, with its stages (net::stage_latency: one clock read per packet, one
// more per parser run). protocol "raw" only counts packets. protocol "mdp3": CME MDP 3.0 — the
// incremental lines (A, B) through the arbiter into an md::cme::mdp3_channel, the snapshot loop's
// and the definitions' lines straight to it; the channel's counters stand in for the session's.
//
// Late join (config snapshot): the session adopts the first packet's sequence and the
// delivered messages go through an md::nasdaq::itch_snapshot_sync — buffered until a GLIMPSE
// snapshot (snapshot_client) has loaded a fresh book, then applied to it. A gap the session
// declares lost (no re-request server, or its tries ran out) asks for a new snapshot. The snapshot
// connection is read in service(), one chunk per run, so another feed's packets wait for at
// most one chunk.
//
// Timers: the parser arms its runtime timer (set_timer) for the earliest of what it waits for —
// a reorder hold's expiry, a re-request timeout, the recorder's flush, the next book snapshot —
// and does what is due in on_batch() or on_idle(), never per packet.
//
// Threading: operator(), on_batch(), on_idle() run as the feed's parser contract (never
// concurrently with themselves). live(), books() and the histograms may be read from any
// thread. The rest after the runtime stopped. Logs once (a warning) when the order book first
// drops an add because it holds max_orders live orders, and at most once a second when the
// MoldUDP64 session ignored or resynchronized on packets (forged, stale or foreign:
// moldudp64.hpp, step 2).

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <signet/core/metrics/histogram.hpp>
#include <signet/md/cme/mdp3_channel.hpp>
#include <signet/md/nasdaq/binary_file_writer.hpp>
#include <signet/md/nasdaq/itch_feed_handler.hpp>
#include <signet/md/nasdaq/itch_snapshot_sync.hpp>
#include <signet/md/nasdaq/moldudp64_recovery.hpp>
#include <signet/md/sequence_arbiter.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/stage_latency.hpp>
#include <signet/net/tcp_client.hpp>
#include <signet/net/timer.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/config.hpp>
#include <signet/receiver/snapshot_client.hpp>

namespace signet::receiver {

/// One stock's top of book in a published snapshot (books()).
struct book_row {
    std::array<char, 8> symbol{};
    md::nasdaq::top_of_book top{};
    std::uint32_t orders = 0;
};

/// Counters readable from any thread while running: as of the parser's last on_batch(),
/// on_idle() or finish().
struct live_counters {
    std::uint64_t packets = 0;
    std::uint64_t messages = 0;
    std::uint64_t gaps = 0;
    std::uint64_t missing_messages = 0;
    std::uint64_t duplicate_packets = 0;
    std::uint64_t malformed_packets = 0;
    std::uint64_t ignored_packets = 0; ///< another session or an implausible sequence
    std::uint64_t book_full_drops = 0;
    std::uint64_t recovered_messages = 0; ///< re-requests (config rerequest)
    std::uint64_t lost_messages = 0;
    bool end_of_session = false;
    bool recovering = false;
};

class feed_parser {
public:
    explicit feed_parser(feed_config const& config);

    // ---- setup, before the runtime starts ----
    /// The feed's request line (config rerequest), whose socket sends the re-requests and
    /// whose packets are the answers.
    void attach_request_line(net::udp_socket const& socket, std::uint16_t line);
    /// Record what the session delivers (md_receiver --record); `writer` outlives this.
    void attach_recorder(md::nasdaq::binary_file_writer& writer);
    /// Config snapshot: the connection to the GLIMPSE server (net::runtime::make_tcp_client
    /// for this feed) and a second parser timer for it (snapshot_client.hpp). Requests the
    /// first snapshot: the feed is unsynchronized until it is applied.
    void attach_snapshot(std::unique_ptr<net::tcp_client> connection, net::timer timer);
    /// The runtime timer that runs this parser's contract (net::runtime::parser_timer).
    void set_timer(net::timer timer) noexcept { timer_ = timer; }
    /// Publish a snapshot of every stock's top of book (books()) this often; 0: never.
    void set_book_interval(std::uint64_t interval_ns) noexcept { book_interval_ns_ = interval_ns; }

    // ---- parser contract ----
    void operator()(net::packet const& p);
    /// After a run that parsed packets: publishes live() (once per run of up to 64 packets,
    /// not per packet), does what its timers made due, re-arms the timer.
    void on_batch();
    /// A run without packets (the timer, or runtime::wake_parser): as on_batch(), at the wall
    /// clock's time (on_batch() uses the last packet's, so that nothing expires against
    /// packets still queued).
    void on_idle();

    // ---- any thread ----
    [[nodiscard]] live_counters live() const noexcept;
    /// The last published snapshot of the book (set_book_interval): stocks with live orders,
    /// the busiest first. Copies under a mutex; the parser only try-locks it to swap a new
    /// snapshot in (and tries again soon when a copy is under way), so it never waits.
    [[nodiscard]] std::vector<book_row> books() const;
    /// Where the latency goes, per packet (net/stage_latency.hpp): receive, queue, parse, and
    /// total (the kernel's stamp -> parse done).
    [[nodiscard]] net::stage_latency const& stages() const noexcept { return stages_; }
    /// The "sequence" stage: how long packets that arrived ahead of a gap (reordered, line B's
    /// copy, a re-request answer) waited until delivered in sequence; empty without MoldUDP64.
    [[nodiscard]] metrics::histogram const& sequence_latency() const noexcept;
    /// Gap requested -> filled (config rerequest).
    [[nodiscard]] metrics::histogram const& recovery_latency() const noexcept {
        return recovery_latency_;
    }

    // ---- after the runtime stopped ----
    /// Releases packets still held by the arbiter and publishes the final counters.
    void finish();
    [[nodiscard]] feed_config const& config() const noexcept { return config_; }
    [[nodiscard]] md::nasdaq::moldudp64_stats session_stats() const noexcept;
    [[nodiscard]] md::nasdaq::itch50_stats const* itch_stats() const noexcept;
    [[nodiscard]] md::nasdaq::itch_order_book const* book() const noexcept;
    /// The re-request client's counters (nullptr without config rerequest).
    [[nodiscard]] md::nasdaq::moldudp64_recovery_stats const* recovery_stats() const noexcept {
        return recovery_ ? &recovery_->stats() : nullptr;
    }
    [[nodiscard]] md::nasdaq::recovery_state recovery_state() const noexcept {
        return recovery_ ? recovery_->state() : md::nasdaq::recovery_state::synchronized;
    }
    /// protocol mdp3: the channel (instruments, books, counters); nullptr otherwise.
    [[nodiscard]] md::cme::mdp3_channel const* mdp3() const noexcept {
        return mdp3_ ? &*mdp3_ : nullptr;
    }
    /// The snapshot path (nullptr without config snapshot). live() from any thread.
    [[nodiscard]] snapshot_client const* snapshot() const noexcept { return snapshot_.get(); }
    [[nodiscard]] std::uint64_t rerequest_answers() const noexcept { return rerequest_answers_; }
    [[nodiscard]] std::uint64_t request_send_errors() const noexcept {
        return request_send_errors_;
    }

private:
    void deliver(std::span<std::byte const> datagram);
    /// --record: one delivered message to the recording (nothing without one).
    void record(std::span<std::byte const> message);
    /// The sequence the arbiter orders by: MoldUDP64's, or MDP 3.0's MsgSeqNum; 0 if none.
    [[nodiscard]] std::uint64_t sequence_of(std::span<std::byte const> datagram) const noexcept;
    [[nodiscard]] std::uint64_t next_sequence() const noexcept;
    void service(); // what is due at now_: holds, recovery, recorder flush, book snapshot
    void service_recovery();
    void publish() noexcept;
    bool publish_books(); // false: a reader holds the snapshot's lock (nothing waited)
    void arm_timer() noexcept;
    [[nodiscard]] md::nasdaq::moldudp64_session_options session_options() const noexcept;
    bool send_request(std::uint64_t first, std::uint16_t count) noexcept;
    void log_untrusted(md::nasdaq::moldudp64_stats const& s) noexcept;

    static constexpr std::uint64_t untrusted_log_interval_ns = 1'000'000'000;
    /// A partly filled recording chunk goes to the disk at most this long after its first
    /// message: a quiet feed's last messages reach the file too.
    static constexpr std::uint64_t record_flush_ns = 50'000'000;
    /// Work that is due but could not be done (a request the socket refused) is tried again
    /// this much later, not at every poll.
    static constexpr std::uint64_t retry_ns = 1'000'000;

    feed_config config_;
    std::optional<md::nasdaq::itch_feed_handler> itch_;      // moldudp64 + itch50
    std::optional<md::nasdaq::moldudp64_session> session_;   // moldudp64 + count
    std::optional<md::sequence_arbiter> arbiter_;            // moldudp64
    std::optional<md::nasdaq::moldudp64_recovery> recovery_; // moldudp64 + rerequest
    std::optional<md::nasdaq::itch_snapshot_sync> sync_;     // moldudp64 + itch50 + snapshot
    std::optional<md::cme::mdp3_channel> mdp3_;              // mdp3
    std::uint16_t snapshot_line_ = 0xFFFF;                   // mdp3: the snapshot loop's line
    std::uint16_t definitions_line_ = 0xFFFF;                // mdp3: the definitions' line
    std::unique_ptr<snapshot_client> snapshot_;              // attach_snapshot()
    std::uint64_t snapshot_gaps_ = 0;                        // session gaps seen: a new one is lost
    md::nasdaq::binary_file_writer* recorder_ = nullptr;
    net::udp_socket const* request_socket_ = nullptr;
    std::uint16_t request_line_ = 0;
    net::timer timer_;
    std::uint64_t armed_for_ = 0;    // realtime ns the timer is armed for; 0: not armed
    std::uint64_t now_ = 0;          // CLOCK_REALTIME ns of the packet (or wake-up) being handled
    std::uint64_t record_since_ = 0; // first message recorded since the last flush; 0: none
    std::uint64_t book_interval_ns_ = 0;
    std::uint64_t next_books_ns_ = 0;
    std::uint64_t rerequest_answers_ = 0;
    std::uint64_t request_send_errors_ = 0;
    metrics::histogram recovery_latency_; // gap requested -> filled
    std::uint64_t raw_packets_ = 0;       // raw + count
    net::stage_latency stages_;
    struct atomic_counters {
        std::atomic<std::uint64_t> packets{0};
        std::atomic<std::uint64_t> messages{0};
        std::atomic<std::uint64_t> gaps{0};
        std::atomic<std::uint64_t> missing_messages{0};
        std::atomic<std::uint64_t> duplicate_packets{0};
        std::atomic<std::uint64_t> malformed_packets{0};
        std::atomic<std::uint64_t> ignored_packets{0};
        std::atomic<std::uint64_t> book_full_drops{0};
        std::atomic<std::uint64_t> recovered_messages{0};
        std::atomic<std::uint64_t> lost_messages{0};
        std::atomic<bool> end_of_session{false};
        std::atomic<bool> recovering{false};
    } live_;
    bool book_full_logged_ = false;
    std::vector<book_row> books_scratch_; // parser contract only
    mutable std::mutex books_mutex_;      // guards books_published_
    std::vector<book_row> books_published_;
    std::uint64_t untrusted_logged_ = 0; // ignored + resyncs when last logged
    std::uint64_t untrusted_log_ns_ = 0; // now_ when last logged
};

} // namespace signet::receiver
