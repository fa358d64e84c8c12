#pragma once

/// itch_snapshot_sync: brings an ITCH 5.0 book in line with a live sequenced stream from a
/// point-in-time snapshot (GLIMPSE over SoupBinTCP), for a receiver that joins mid-session or
/// has declared a gap lost. No sockets and no clock: the caller feeds it the live messages,
/// the snapshot's messages and the snapshot's resume sequence.
///
///   live               on_live(sequence, message) applies the message to the book (one the
///                      last snapshot holds is skipped and counted: covered_messages).
///   start_buffering()  -> buffering: live messages are kept (bounded: a message_store of
///                      buffer_messages / buffer_bytes; the oldest are evicted when full).
///   start_snapshot()   -> loading: a fresh book receives on_snapshot(message) for each
///                      snapshot message; live messages are still buffered. The book in use
///                      is untouched. GLIMPSE's End of Snapshot (glimpse.hpp) calls end().
///   end(s)             the snapshot holds the state before sequence s: the buffered messages
///                      from s on are applied to the fresh book, which replaces the old one;
///                      -> live (live messages before s, buffered or arriving later, are
///                      skipped and counted as covered_messages: the snapshot holds them). If
///                      the buffer no longer holds s (evicted, or it starts later), nothing is
///                      replaced, the attempt is counted as too_old and the state is buffering
///                      again (start a newer snapshot). If s is beyond the live stream by more
///                      than max_ahead, nothing is replaced either (counted as future): a
///                      snapshot of another session or day, or a server that lies, would
///                      otherwise make every live message below s vanish into a book that
///                      looks healthy.
///   abort()            the snapshot connection failed mid-way: the fresh book is dropped
///                      (nothing half-applied), the attempt is counted, -> buffering.
///
/// Events (set_event_sink; md/events.hpp): live messages emit theirs as they are applied.
/// Leaving live (a gap the book cannot survive) emits instrument_stale for all_instruments; a
/// snapshot that synchronizes emits snapshot_begin, book_clear, the loaded book (flag
/// from_snapshot: itch50_parser::emit_book), snapshot_end, instrument_recovered (each for
/// all_instruments), then the replayed messages' events. A consumer never sees a silent jump.
///
/// Where the live stream is: on_live() and stream_position() (the sequence after the last
/// datagram, heartbeats included). Until a position is known, a snapshot may resume at most
/// max_ahead past sequence 1; a client should wait for the stream before it asks for one.
///
/// A live gap while buffering (a sequence that does not follow the last buffered one) restarts
/// the buffer at the new sequence (counted): a snapshot must then resume at or after it.
///
/// Threading: none (the feed's parser contract). Costs: live messages cost one copy while
/// buffering; start_snapshot() allocates the fresh book (a control-path event, not per
/// message); end() replays the buffer. No locks, no logging.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include <signet/md/message_store.hpp>
#include <signet/md/nasdaq/itch50.hpp>

namespace signet::md::nasdaq {

struct itch_snapshot_sync_options {
    itch_order_book_options book{};
    std::size_t buffer_messages = std::size_t{1} << 20;
    std::size_t buffer_bytes = std::size_t{64} << 20;
    /// The farthest a snapshot's resume sequence may be beyond the live stream's position (the
    /// live messages still in flight when the server took its snapshot).
    std::uint64_t max_ahead = 100'000;
};

enum class sync_phase : std::uint8_t { live, buffering, loading };

struct itch_snapshot_sync_stats {
    std::uint64_t snapshots_started = 0;
    std::uint64_t snapshots_completed = 0;
    std::uint64_t snapshot_messages = 0;  ///< applied to fresh books, all attempts
    std::uint64_t orders_loaded = 0;      ///< adds among them, completed snapshots only
    std::uint64_t buffered_messages = 0;  ///< live messages kept while not live
    std::uint64_t replayed_messages = 0;  ///< buffered messages applied after a snapshot
    std::uint64_t too_old = 0;            ///< snapshots that resumed before the buffer's start
    std::uint64_t future = 0;             ///< snapshots refused: resumed beyond stream + max_ahead
    std::uint64_t last_future_resume = 0; ///< the resume sequence of the last one refused
    std::uint64_t covered_messages = 0;   ///< live messages skipped: a loaded snapshot held them
    std::uint64_t aborted = 0;            ///< snapshots dropped mid-way (malformed_end included)
    std::uint64_t malformed_end = 0;      ///< End of Snapshot messages that did not parse
    std::uint64_t buffer_restarts = 0;    ///< live gaps while buffering
    std::uint64_t buffer_evictions = 0;   ///< buffered messages evicted by the bound
};

class itch_snapshot_sync {
public:
    explicit itch_snapshot_sync(itch_snapshot_sync_options const& options);

    void on_live(std::uint64_t sequence, std::span<std::byte const> message,
                 std::uint64_t receive_ns = 0);
    /// Events of `kinds` to `sink` from here on (nullptr: none).
    void set_event_sink(event_sink* sink, event_mask kinds = event_mask::all());
    /// The live stream's next sequence (after a datagram, heartbeats included): never moves
    /// back.
    void stream_position(std::uint64_t next) noexcept;
    /// Whether any live datagram has told where the stream is.
    [[nodiscard]] bool stream_known() const noexcept { return stream_next_ != 0; }
    [[nodiscard]] std::uint64_t stream_next() const noexcept { return stream_next_; }
    void start_buffering() noexcept;
    void start_snapshot();
    enum class end_result : std::uint8_t {
        synchronized,
        too_old,     ///< the buffer no longer holds the resume sequence: load a newer one
        future,      ///< the resume sequence is beyond the stream + max_ahead: refused
        not_loading, ///< no snapshot was being loaded
        malformed,   ///< an End of Snapshot whose sequence does not parse: aborted
    };
    /// One message of the snapshot. A GLIMPSE End of Snapshot ('G') ends it: end() with its
    /// sequence, whose result is returned; any other message goes into the fresh book.
    std::optional<end_result> on_snapshot(std::span<std::byte const> message);
    end_result end(std::uint64_t resume_sequence);
    void abort() noexcept;

    [[nodiscard]] sync_phase phase() const noexcept { return phase_; }
    /// The book in use (during loading: the one before the snapshot).
    [[nodiscard]] itch50_parser const& parser() const noexcept { return *parser_; }
    [[nodiscard]] itch_snapshot_sync_stats const& stats() const noexcept { return stats_; }
    [[nodiscard]] itch_snapshot_sync_options const& options() const noexcept { return options_; }
    /// The oldest and one-past-newest buffered sequences (equal when nothing is buffered).
    [[nodiscard]] std::uint64_t buffer_first() const noexcept { return buffer_.first_sequence(); }
    [[nodiscard]] std::uint64_t buffer_next() const noexcept { return buffer_.next_sequence(); }

private:
    void emit_loaded(std::uint64_t resume_sequence); // a synchronized snapshot's events

    itch_snapshot_sync_options options_;
    std::unique_ptr<itch50_parser> parser_;
    std::unique_ptr<itch50_parser> fresh_; // loading only
    message_store buffer_;
    std::uint64_t skip_below_ = 0;  // live: sequences below it are in the snapshot
    std::uint64_t stream_next_ = 0; // 0: no live datagram yet
    sync_phase phase_ = sync_phase::live;
    itch_snapshot_sync_stats stats_{};
    event_sink* sink_ = nullptr;
    event_mask kinds_ = event_mask::all();
};

} // namespace signet::md::nasdaq
