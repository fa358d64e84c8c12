#pragma once

// pitch: Cboe Multicast PITCH as a receiver protocol (`protocol = "pitch"`). Its lines: A (and
// B), each carrying the blocks of several units. A block is framed by md::cboe::validate_block
// (the whole datagram must frame before its sequence counts); each unit the feed follows
// (`units`) is a sequenced stream of its own (feed_protocol::streams()), so the shared layer
// arbitrates A/B, holds and tracks gaps per unit, and a gap in one unit stales only that unit's
// symbols. Every fresh message goes to one md::cboe::pitch_book (the feed's books by order).
// With `grp`, a gap is requested from Cboe's Gap Request Proxy (TCP, `login`) while the arbiter
// holds what arrived behind it: one md::request_recovery per unit (the gap-request
// state machine is protocol-neutral: chunks, timeouts, tries), its requests sent as Gap
// Requests; the messages come back on the gap line (`gap_bind`) with their own unit and
// sequences, and a Gap Response other than 'A' gives the gap up at once (counted by status).
// With `spin` (a Spin server per unit), the feed joins late: each unit buffers its live
// messages (a message store) until a Spin of the unit's book, as of a sequence at or past the
// buffer's start, has been loaded (the unit's symbols cleared, the spin's orders added), then
// replays the buffered messages past the spin's sequence and goes live. A unit that lost a gap
// for good (no proxy, or the proxy gave up) is rebuilt the same way. A unit whose stream the
// receiver saw from sequence 1 needs no spin. Spins that come too old for the buffer are asked
// again; one that claims a sequence beyond the stream by more than max_sequence_jump is
// refused (counted, logged once); a server that refuses, stalls or disconnects mid-spin leaves
// the unit buffering (nothing half-applied goes live) and is asked again.
// Its summary section "pitch" holds the units, the book's counters and the instruments' books.
//
// Threading: feed_protocol's.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <signet/md/cboe/pitch_book.hpp>
#include <signet/md/cboe/pitch_session.hpp>
#include <signet/md/message_store.hpp>
#include <signet/md/request_recovery.hpp>
#include <signet/receiver/feed_protocol.hpp>

namespace signet::receiver::cboe {

/// A pitch feed's own keys (docs/md_receiver.md).
class pitch_settings final : public protocol_settings {
public:
    /// The units the feed follows (1 to 255, each once); blocks of other units are ignored
    /// (counted).
    std::vector<std::uint8_t> units{1};
    /// The Gap Request Proxy ("ip:port", TCP); none: gaps are counted and stale their unit.
    std::optional<net::udp_endpoint> grp{};
    /// Where the GRP's answers arrive (the gap line, UDP "ip:port"); required with grp.
    std::optional<net::udp_endpoint> gap_bind{};
    /// The GRP and Spin login: SessionSubId, Username, Password.
    md::cboe::session_credentials login{};
    std::uint64_t grp_timeout_ms = 200;  ///< a gap request unanswered this long is sent again
    unsigned grp_tries = 3;              ///< requests per range before the gap is lost
    std::size_t grp_max_messages = 1000; ///< messages per Gap Request
    /// The Spin servers ("ip:port", TCP), one per unit in `units`' order; none: no late join.
    std::vector<net::udp_endpoint> spin{};
    /// Live messages a unit buffers while its spin loads (the bound: then it starts over).
    std::size_t spin_buffer_messages = std::size_t{1} << 18;

    [[nodiscard]] std::string_view protocol() const noexcept override { return "pitch"; }
    [[nodiscard]] std::unique_ptr<feed_protocol> make(feed_config const& feed) const override;
    [[nodiscard]] static protocol_registration registration();
};

class pitch_session_line; // receiver/src/cboe: a GRP or Spin TCP session

class pitch_protocol final : public feed_protocol {
public:
    pitch_protocol(feed_config const& feed, pitch_settings const& settings);

    ~pitch_protocol() override;
    [[nodiscard]] std::vector<line_spec> lines() const override;
    [[nodiscard]] md::sequence_tracker_options sequencing() const override;
    void setup(feed_setup& setup) override;
    [[nodiscard]] md::gap_recovery* recovery(std::size_t stream) noexcept override;
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] std::size_t streams() const noexcept override { return settings_.units.size(); }
    void set_event_sink(md::event_sink* sink, md::event_mask kinds) override {
        book_.set_event_sink(sink, kinds);
    }
    [[nodiscard]] std::optional<md::sequence_unit>
    frame(std::span<std::byte const> datagram) const noexcept override;
    void deliver(delivery const& d) override;
    void poll_recovery(std::uint64_t now_ns) override;
    void service(std::uint64_t now_ns) override;
    [[nodiscard]] std::uint64_t next_deadline(std::uint64_t now_ns) const noexcept override;
    void book_rows(std::vector<book_row>& out) const override;
    [[nodiscard]] std::size_t book_levels(std::uint32_t instrument, char side,
                                          std::span<book_level> out) const override;
    [[nodiscard]] protocol_counters counters() const noexcept override;
    void publish() noexcept override;

    void stats_lines(std::string_view feed, feed_counters const& live,
                     std::vector<std::string>& out) const override;
    [[nodiscard]] std::string live_state(feed_counters const& live) const override;
    void metrics(metric_writer& out, std::string const& feed) const override;
    void summary(nlohmann::ordered_json& out) const override;
    void summary_text(std::string& out, std::size_t books) const override;

    /// The books (on the parser's thread or after the runtime stopped).
    [[nodiscard]] md::cboe::pitch_book const& book() const noexcept { return book_; }

private:
    /// Per followed unit (by stream index).
    struct unit_state {
        std::uint8_t unit = 0;
        std::uint64_t next_sequence = 1;
        std::uint64_t lost_gaps = 0; ///< gaps delivered with nothing to repair them
        std::optional<md::request_recovery> recovery{}; // with grp
        std::uint64_t waiting_since = 0; // a gap waits for the GRP session since then
        // With spin: the late-join state.
        enum class phase : std::uint8_t { live, buffering, loading } sync = phase::live;
        std::unique_ptr<pitch_session_line> spin{};
        std::unique_ptr<md::message_store> buffer{}; // live messages while not live
        bool started = false;                        // a datagram of the unit was delivered
        bool requested = false;                      // a Spin Request is out
        bool spin_done = false;                      // live again: close the spin session
        std::uint64_t skip_below = 0;    // live messages below it are in the loaded spin
        std::uint64_t spin_sequence = 0; // of the spin being loaded
        std::uint64_t lost_seen = 0;     // the spin line's losses seen
        std::uint64_t requested_ns = 0;  // when the unit started buffering
    };
    struct spin_counters {
        std::uint64_t requests = 0;  ///< Spin Requests sent
        std::uint64_t completed = 0; ///< spins loaded (the unit went live)
        std::uint64_t refused = 0;   ///< Spin Responses other than 'A'
        std::uint64_t too_old = 0;   ///< spins that ended before the buffered stream
        std::uint64_t future = 0;    ///< spins beyond the stream by more than max_sequence_jump
        std::uint64_t aborted = 0;   ///< lost mid-spin (disconnect, silence)
        std::uint64_t orders_loaded = 0;
        std::uint64_t buffered_messages = 0;
        std::uint64_t replayed_messages = 0;
        std::uint64_t covered_messages = 0; ///< live messages the loaded spin already held
        std::uint64_t buffer_restarts = 0;  ///< a gap or an overflow started a buffer over
        std::uint64_t last_sync_us = 0;     ///< buffering -> live, the last time
    };
    struct grp_counters {
        std::uint64_t responses = 0;
        std::uint64_t accepted = 0;
        std::array<std::uint64_t, 8> rejected{}; // by status: O D M S C I U, other
    };
    bool send_gap_request(std::uint8_t unit, std::uint64_t first, std::uint16_t count);
    void on_session_message(md::cboe::message const& m, std::uint64_t now_ns);
    void on_spin_message(unit_state& u, md::cboe::message const& m, std::uint64_t now_ns);
    /// The unit needs a spin (start, a lost gap): buffer from here on.
    void start_buffering(unit_state& u, std::uint64_t now_ns);
    /// Keeps a delivered datagram's fresh messages in the unit's buffer.
    void buffer(unit_state& u, delivery const& d);
    void go_live(unit_state& u, std::uint64_t now_ns);
    /// The first sequence a spin must reach: the buffer's first, or the stream's next.
    [[nodiscard]] static std::uint64_t held_from(unit_state const& u) noexcept;
    /// The longest a gap waits for a GRP session that is not logged in.
    static constexpr std::uint64_t grp_wait_ns = 1'000'000'000;
    static constexpr std::uint16_t not_followed = 0xFFFF;

    feed_config feed_;
    pitch_settings settings_;
    md::cboe::pitch_book book_;
    std::array<std::uint16_t, 256> stream_of_{}; // unit -> stream index, or not_followed
    std::vector<unit_state> units_;              // by stream index
    std::uint64_t messages_ = 0;
    std::uint64_t unknown_logged_ = 0; // the parser contract's own
    std::unique_ptr<pitch_session_line> grp_;
    grp_counters grp_counters_{};
    spin_counters spin_counters_{};
    bool future_logged_ = false;
    std::uint64_t grp_send_failures_ = 0;
    bool reject_logged_ = false;
    // For the "any thread" calls, as of the last publish(): relaxed, independent values.
    std::atomic<std::uint64_t> live_instruments_{0};
    std::atomic<std::uint64_t> live_stale_units_{0};
    std::atomic<std::uint64_t> live_orders_{0};
    std::atomic<std::uint64_t> live_unknown_orders_{0};
    std::atomic<std::uint64_t> live_recovered_{0};
    std::atomic<std::uint64_t> live_requests_{0};
    std::atomic<std::uint64_t> live_syncing_units_{0};
};

} // namespace signet::receiver::cboe
