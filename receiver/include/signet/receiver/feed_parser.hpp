#pragma once

// feed_parser: the parser contract of one receiver feed. It holds exactly one protocol object
// (feed_protocol.hpp) and applies to its sequenced stream what every protocol needs, per packet:
//   1. the protocol frames the datagram, validating it in full: a malformed one is counted and
//      claims nothing (neither a sequence nor a place in the hold);
//   2. the A/B arbiter (md::sequence_arbiter) holds a datagram that arrives ahead of the next
//      expected sequence until the gap fills, both lines are past it, it waited its hold, or the
//      protocol's recovery gives up — unless its sequence is implausible: a forged jump never
//      waits in the hold nor asks the recovery for a range;
//   3. md::sequence_tracker decides what the datagram is: ignored (another stream, an
//      implausible sequence: counted, rate-limited warning), a gap, a duplicate, fresh items;
//   4. the protocol gets what is not ignored (feed_protocol::deliver).
// A protocol whose lines carry several independently sequenced streams (feed_protocol::
// streams(): Cboe's units) gets steps 2 and 3 per stream: a gap in one holds only that stream's
// packets. Side lines (a snapshot loop, definitions) go straight to the protocol. Per packet it
// also fills the stage latencies from the kernel's receive stamp (net::stage_latency: one clock
// read per packet, one more per run).
//
// Timers: the parser arms its runtime timer (set_timer) for the earliest of what it waits for —
// a hold's expiry (while no recovery is open), the protocol's deadlines, the next book rows —
// and does what is due in on_batch() or on_idle(), never per packet.
//
// Threading: operator(), on_batch(), on_idle() run as the feed's parser contract (never
// concurrently with themselves). live(), books() and the histograms may be read from any
// thread. The rest after the runtime stopped.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <signet/core/metrics/histogram.hpp>
#include <signet/md/sequence_arbiter.hpp>
#include <signet/md/sequence_tracker.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/stage_latency.hpp>
#include <signet/net/timer.hpp>
#include <signet/receiver/config.hpp>
#include <signet/receiver/feed_protocol.hpp>

namespace signet::receiver {

class feed_parser {
public:
    /// Throws std::invalid_argument when the protocol declares more than two arbitrated lines.
    feed_parser(feed_config const& config, std::unique_ptr<feed_protocol> protocol);

    // ---- setup, before the runtime starts ----
    /// The lines the protocol declared (the runtime opens them in this order).
    [[nodiscard]] std::vector<line_spec> const& lines() const noexcept { return lines_; }
    /// The runtime timer that runs this parser's contract (net::runtime::parser_timer).
    void set_timer(net::timer timer) noexcept { timer_ = timer; }
    /// Publish the instruments' top of book (books()) this often; 0: never.
    void set_book_interval(std::uint64_t interval_ns) noexcept { book_interval_ns_ = interval_ns; }
    /// How to ask whether input is waiting before a line's queue (net::runtime::input_waiting
    /// for this feed, by the line's index in lines()): a hold or a re-request timeout then waits
    /// for it (at most max_input_defer_ns) instead of calling the gap lost.
    void set_input_probe(std::function<bool(std::size_t line)> probe);
    /// Called at the end of every run of the contract (on_batch(), on_idle()), and of finish():
    /// subscriptions flush what their producers hold.
    void set_after_run(std::function<void()> after_run) { after_run_ = std::move(after_run); }

    // ---- parser contract ----
    void operator()(net::packet const& p);
    /// After a run that parsed packets: does what its timers made due, publishes live() (once
    /// per run of up to 64 packets, not per packet), re-arms the timer.
    void on_batch();
    /// A run without packets (the timer, or runtime::wake_parser): as on_batch(), at the wall
    /// clock's time (on_batch() uses the last packet's, so that nothing expires against
    /// packets still queued).
    void on_idle();

    // ---- any thread ----
    /// The feed's counters as of the last run.
    [[nodiscard]] feed_counters live() const noexcept;
    /// The last published top of book of the instruments (set_book_interval), the busiest first.
    /// Copies under a mutex; the parser only try-locks it to swap new rows in (and tries again
    /// soon when a copy is under way), so it never waits.
    [[nodiscard]] std::vector<book_row> books() const;
    /// Where the latency goes, per packet (net/stage_latency.hpp): receive, queue, parse, and
    /// total (the kernel's stamp -> parse done).
    [[nodiscard]] net::stage_latency const& stages() const noexcept { return stages_; }
    /// The "sequence" stage: how long datagrams that arrived ahead of a gap (reordered, line
    /// B's copy, a re-request answer) waited until delivered in sequence; empty without lines.
    [[nodiscard]] metrics::histogram const& sequence_latency() const noexcept;
    [[nodiscard]] feed_config const& config() const noexcept { return config_; }
    [[nodiscard]] feed_protocol const& protocol() const noexcept { return *protocol_; }
    [[nodiscard]] feed_protocol& protocol() noexcept { return *protocol_; }

    // ---- after the runtime stopped ----
    /// Releases what the arbiter still holds, lets the protocol flush, publishes the final
    /// counters.
    void finish();
    /// The shared sequencing's counters (units, heartbeats, foreign, implausible, resyncs, ...),
    /// summed over the streams; datagrams of a stream the feed does not follow count as foreign.
    [[nodiscard]] md::sequence_stats sequencing() const noexcept;
    /// The next expected sequence of stream `stream` (< streams()).
    [[nodiscard]] std::uint64_t next_sequence(std::size_t stream = 0) const noexcept {
        return streams_[stream]->tracker.next();
    }
    [[nodiscard]] std::size_t streams() const noexcept { return streams_.size(); }
    /// Whether the protocol has sequenced lines (and so arbiters and trackers at work).
    [[nodiscard]] bool sequenced() const noexcept { return sequenced_; }

private:
    struct line_info {
        line_role role = line_role::arbitrated;
        std::uint16_t tag = 0;
        std::uint16_t arbiter_line = 0; // A 0, B 1; answers past the arbitrated lines
    };

    /// The arbiter's lines (A 0, B 1) as the runtime's, for the input probe.
    class line_probe final : public md::input_probe {
    public:
        explicit line_probe(feed_parser const& parser)
            : parser_(parser) {}
        [[nodiscard]] bool waiting(std::size_t line) const noexcept override;

    private:
        feed_parser const& parser_;
    };

    /// One independently sequenced stream: its tracker, the arbiter in front of it and the
    /// protocol's recovery of it.
    struct stream_state {
        explicit stream_state(md::sequence_tracker_options const& options)
            : tracker(options) {}
        md::sequence_tracker tracker;
        std::optional<md::sequence_arbiter> arbiter; // when the protocol has sequenced lines
        md::gap_recovery* recovery = nullptr;        // the protocol's
        std::uint64_t recovery_deferred_since = 0;   // a due re-request waits for input since then
    };

    void deliver(stream_state& stream, std::span<std::byte const> datagram);
    void service(); // what is due at now_: holds, the recoveries, the protocol, the book rows
    void poll_recovery(stream_state& stream);
    void tick(stream_state& stream);
    void publish() noexcept;
    bool publish_books(); // false: a reader holds the rows' lock (nothing waited)
    void arm_timer() noexcept;
    void log_ignored() noexcept;

    static constexpr std::uint64_t ignored_log_interval_ns = 1'000'000'000;
    /// Work that is due but could not be done (a request the socket refused) is tried again
    /// this much later, not at every poll.
    static constexpr std::uint64_t retry_ns = 1'000'000;
    /// The longest a hold or a re-request timeout waits past its time for input already
    /// waiting (a receiver behind its input, not a lost packet).
    /// A second: a single worker serving many lines on a loaded machine was seen more than
    /// 100 ms behind its input. The defer applies only while input is queued, so a real gap
    /// under a steady stream still goes when the hold is full (1024 packets with A/B).
    static constexpr std::uint64_t max_input_defer_ns = 1'000'000'000;
    /// A/B lines seen to reorder: how long a packet both lines are past waits for its
    /// reordered predecessor (sequence_arbiter's rule 2).
    static constexpr std::uint64_t ab_reorder_ns = 5'000'000;

    feed_config config_;
    std::unique_ptr<feed_protocol> protocol_;
    std::vector<line_spec> lines_;
    std::vector<line_info> line_info_;                   // by the runtime's line index
    std::vector<std::unique_ptr<stream_state>> streams_; // protocol_->streams() of them
    bool sequenced_ = false;
    std::uint64_t unfollowed_ = 0;                   // datagrams of a stream it does not follow
    metrics::histogram sequence_latency_;            // every stream's arbiter records here
    std::function<bool(std::size_t)> input_waiting_; // by the runtime's line index
    std::function<void()> after_run_;
    line_probe probe_{*this};
    std::vector<std::size_t> arbitrated_lines_; // the runtime's index of arbiter line 0, 1
    std::vector<std::size_t> answer_lines_;     // the runtime's index of each answers line
    // The datagram being framed: the arbiter hands it straight back when it is in order.
    std::byte const* framed_data_ = nullptr;
    md::sequence_unit framed_unit_{};
    net::timer timer_;
    std::uint64_t armed_for_ = 0;  // realtime ns the timer is armed for; 0: not armed
    std::uint64_t now_ = 0;        // CLOCK_REALTIME ns of the packet (or wake-up) being handled
    std::uint64_t receive_ns_ = 0; // the packet's kernel receive stamp (else now_)
    std::uint64_t book_interval_ns_ = 0;
    std::uint64_t next_books_ns_ = 0;
    std::uint64_t packets_ = 0;
    std::uint64_t malformed_ = 0;
    net::stage_latency stages_;
    // live(): relaxed, independent counters (a snapshot); the flags too — nothing else is
    // published with them.
    struct atomic_counters {
        std::atomic<std::uint64_t> packets{0};
        std::atomic<std::uint64_t> messages{0};
        std::atomic<std::uint64_t> gaps{0};
        std::atomic<std::uint64_t> missing{0};
        std::atomic<std::uint64_t> recovered{0};
        std::atomic<std::uint64_t> lost{0};
        std::atomic<std::uint64_t> malformed{0};
        std::atomic<std::uint64_t> duplicates{0};
        std::atomic<std::uint64_t> ignored{0};
        std::atomic<std::uint64_t> late_start{0};
        std::atomic<bool> recovering{false};
        std::atomic<bool> end_of_stream{false};
        std::atomic<book_state> book{book_state::none};
    } live_;
    std::vector<book_row> books_scratch_; // parser contract only
    mutable std::mutex books_mutex_;      // guards books_published_
    std::vector<book_row> books_published_;
    std::uint64_t ignored_logged_ = 0; // ignored + resyncs when last logged
    std::uint64_t ignored_log_ns_ = 0; // now_ when last logged
};

} // namespace signet::receiver
