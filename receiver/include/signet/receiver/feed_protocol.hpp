#pragma once

// feed_protocol: what an exchange protocol brings to the receiver — everything protocol-specific
// behind one interface, so that the receiver's per-feed parser contract (feed_parser.hpp) holds
// exactly one protocol object and names no protocol. A protocol is its settings (its config
// keys: protocol_settings, parsed by its registration in receiver/src/protocols.cpp) and this
// object, which declares
//   - its lines, by name and role (lines()): the sequenced stream's A and B, a line for
//     re-request answers, side lines of its own (a snapshot loop, definitions);
//   - how its datagrams are framed (frame(): validated in full, or refused) and where its
//     stream starts (sequencing()); the receiver's shared sequencing then applies the guards
//     every protocol needs — a packet is valid before it claims a sequence, an implausible jump
//     is ignored and counted, lines A and B are arbitrated, gaps, duplicates and late starts are
//     counted (md::sequence_tracker, md::sequence_arbiter) — and hands over what is fresh
//     (deliver());
//   - how many independently sequenced streams its lines carry (streams(): one for most
//     protocols; Cboe's units each number their messages on their own): each has its own
//     sequencing, arbiter and recovery, and frame() says which stream a datagram is of;
//   - its recovery (recovery(stream): the md::gap_recovery the arbiter asks while it holds
//     packets behind a gap; snapshots it drives from service()), decode and books;
//   - its counters (counters(): the protocol-neutral ones it owns; its own in its summary
//     section, metrics and stats lines), its live-view state and book rows, and the summary
//     section the verdict reads.
//
// Threading: the setup calls on the controlling thread before the runtime starts; the parser
// contract calls on the feed's parser contract (never concurrently with themselves); the "any
// thread" calls read what publish() left for them (atomics of the protocol's own); the
// summary calls after the runtime stopped. Costs: two virtual calls per packet (frame,
// deliver), the rest per run of the contract or rarer.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <signet/core/metrics/histogram.hpp>
#include <signet/core/work_contract_group.hpp>
#include <signet/md/events.hpp>
#include <signet/md/gap_recovery.hpp>
#include <signet/md/sequence_tracker.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/tcp_client.hpp>
#include <signet/net/timer.hpp>
#include <signet/receiver/config.hpp>

#include <nlohmann/json_fwd.hpp>

namespace signet::receiver {

/// Whether a feed's book is what the exchange has.
enum class book_state : std::uint8_t {
    none,       ///< the feed builds no book (counting only)
    complete,   ///< every update applied: the book is the exchange's
    recovering, ///< a gap or a snapshot is being recovered: the book catches up
    stale,      ///< data was lost and nothing will bring it back (no recovery configured)
};
[[nodiscard]] char const* to_string(book_state state) noexcept;

/// A feed's counters, one meaning for every protocol (the stats line, the summary, the metrics,
/// --top and scripts/md-verdict read these). Sequence numbers are the protocol's (messages or
/// packets: its summary section says which).
struct feed_counters {
    std::uint64_t packets = 0;    ///< datagrams the feed's parser took, all lines
    std::uint64_t messages = 0;   ///< protocol messages delivered in sequence
    std::uint64_t gaps = 0;       ///< sequence gaps not recovered
    std::uint64_t missing = 0;    ///< sequence numbers lost in those gaps
    std::uint64_t recovered = 0;  ///< messages a recovery brought back (re-requests)
    std::uint64_t lost = 0;       ///< messages of gaps whose recovery was given up
    std::uint64_t malformed = 0;  ///< packets that failed validation (they claimed nothing)
    std::uint64_t duplicates = 0; ///< packets delivered before (line B's copies, resends)
    std::uint64_t ignored = 0;    ///< packets of another stream, or with an implausible sequence
    std::uint64_t late_start = 0; ///< sequence numbers before the first packet of a late join
    bool recovering = false;      ///< a gap or the book is being recovered
    bool end_of_stream = false;   ///< the stream said it ended (an end-of-session packet)
    book_state book = book_state::none;
};

/// The part of feed_counters a protocol owns (the rest is the shared sequencing's).
struct protocol_counters {
    std::uint64_t messages = 0;
    std::uint64_t recovered = 0;
    std::uint64_t lost = 0;
    bool recovering = false;
    book_state book = book_state::none;
};

/// One instrument's top of book, for books() and the live view: prices are integers of
/// 10^price_exponent (the protocol's: -4 for prices in 1/10000), sizes in the protocol's units;
/// 0 when empty.
struct book_row {
    std::array<char, 20> symbol{}; ///< NUL padded
    std::int64_t bid_price = 0;
    std::uint64_t bid_size = 0;
    std::int64_t ask_price = 0;
    std::uint64_t ask_size = 0;
    std::uint32_t orders = 0; ///< live orders in the instrument's book (by order), else 0
    std::int8_t price_exponent = 0;
};

/// One price level of an instrument's book (book_levels()), in book_row's units.
struct book_level {
    std::int64_t price = 0;
    std::uint64_t size = 0;
    std::uint32_t orders = 0; ///< 0 when the protocol does not say
};

/// A sequenced datagram the shared sequencing let through, with what it found (md::sequence_step:
/// the gap in front, the items seen before, the fresh ones).
struct delivery {
    std::span<std::byte const> datagram;
    md::sequence_unit unit;
    md::sequence_step step;
    std::uint64_t next_sequence = 0; ///< after this datagram
    std::uint64_t now_ns = 0;        ///< CLOCK_REALTIME ns the receiver took the packet (timers)
    /// The kernel's receive stamp of the packet (CLOCK_REALTIME; without one, now_ns); 0 for a
    /// packet released from the hold (its stamp was not kept). Events carry it.
    std::uint64_t receive_ns = 0;
};

/// A metric sample's labels: (name, value) pairs.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

/// Where metrics go (the Prometheus endpoint): families by name, in the order first written.
class metric_writer {
public:
    virtual void counter(std::string_view name, std::string_view help, metric_labels labels,
                         double value) = 0;
    virtual void gauge(std::string_view name, std::string_view help, metric_labels labels,
                       double value) = 0;
    virtual void histogram(std::string_view name, std::string_view help, metric_labels labels,
                           metrics::histogram const& h) = 0;

protected:
    metric_writer() = default;
    metric_writer(metric_writer const&) = default;
    metric_writer& operator=(metric_writer const&) = default;
    ~metric_writer() = default;
};

/// What a protocol may reach at setup: the receiver's runtime, for its feed.
class feed_setup {
public:
    /// The socket of one of the protocol's lines, by name (to send on: re-requests).
    [[nodiscard]] virtual net::udp_socket const& line_socket(std::string_view line) const = 0;
    /// A TCP connection the feed's parser contract drives (snapshot servers).
    [[nodiscard]] virtual std::unique_ptr<net::tcp_client>
    tcp_client(net::tcp_client_options const& options) = 0;
    /// Another timer that runs the feed's parser contract.
    [[nodiscard]] virtual net::timer parser_timer() = 0;
    /// The runtime's contract group (for contracts of the protocol's own: a recording's writer).
    [[nodiscard]] virtual blocking_work_contract_group& group() = 0;
    /// Where to record what the feed delivered (md_receiver --record); "" for none.
    [[nodiscard]] virtual std::string const& record_path() const = 0;

protected:
    feed_setup() = default;
    feed_setup(feed_setup const&) = default;
    feed_setup& operator=(feed_setup const&) = default;
    ~feed_setup() = default;
};

class feed_protocol {
public:
    virtual ~feed_protocol() = default;

    // ---- setup (controlling thread, before the runtime starts) ----
    /// The feed's lines, in the order the runtime opens them.
    [[nodiscard]] virtual std::vector<line_spec> lines() const = 0;
    /// Where each sequenced stream starts (first sequence, or late join) and its pinned key;
    /// the receiver sets max_jump from the feed's max_sequence_jump.
    [[nodiscard]] virtual md::sequence_tracker_options sequencing() const { return {}; }
    /// The independently sequenced streams of its lines (at least 1, at most max_streams);
    /// frame() puts each datagram's index in sequence_unit::stream (one past the last: a
    /// stream the feed does not follow, counted as ignored).
    [[nodiscard]] virtual std::size_t streams() const noexcept { return 1; }
    static constexpr std::size_t max_streams = 256;
    /// Sockets, connections, timers, recordings: what the protocol needs of the runtime.
    virtual void setup(feed_setup& setup) { (void)setup; }
    /// The recovery the arbiter of stream `stream` asks while it holds packets behind a gap;
    /// none: gaps are lost once the hold gives up.
    [[nodiscard]] virtual md::gap_recovery* recovery(std::size_t stream) noexcept {
        (void)stream;
        return nullptr;
    }
    /// Where its market events go (md/events.hpp), from start() on; `kinds` are those anyone
    /// wants (the rest need not be made). A protocol without events ignores it.
    virtual void set_event_sink(md::event_sink* sink, md::event_mask kinds) {
        (void)sink, (void)kinds;
    }
    /// What the startup line adds after the lines ("re-requests to 127.0.0.1:31002").
    [[nodiscard]] virtual std::string describe() const { return {}; }

    // ---- the feed's parser contract ----
    /// A datagram of a sequenced line, validated in full: its unit (first sequence, items, key,
    /// end of stream), or nullopt when it is malformed (counted; it claims no sequence).
    [[nodiscard]] virtual std::optional<md::sequence_unit>
    frame(std::span<std::byte const> datagram) const noexcept = 0;
    /// A framed datagram, in sequence: apply its fresh items, react to a gap in front of it.
    virtual void deliver(delivery const& d) = 0;
    /// A datagram of one of the protocol's side lines (`tag` from its line_spec).
    virtual void on_side_packet(std::uint16_t tag, net::packet const& p, std::uint64_t now_ns) {
        (void)tag, (void)p, (void)now_ns;
    }
    /// A recovery has requests due (called while one of recovery(stream) is recovering, after
    /// packets and on every run): send them.
    virtual void poll_recovery(std::uint64_t now_ns) { (void)now_ns; }
    /// Every run of the contract, after the packets (or on a timer): what is due.
    virtual void service(std::uint64_t now_ns) { (void)now_ns; }
    /// The earliest realtime ns the protocol needs service() at; 0: nothing.
    [[nodiscard]] virtual std::uint64_t next_deadline(std::uint64_t now_ns) const noexcept {
        (void)now_ns;
        return 0;
    }
    /// Where its stream stands by evidence other than its packets, as a heartbeat unit (count
    /// 0) would say it (MDP 3.0: the snapshot loop showed the last packets lost on every line,
    /// with no later packet to show it); nullopt: none. Asked after each service(): one ahead
    /// of the shared sequencing is tracked as that heartbeat (the gap is counted and passed).
    [[nodiscard]] virtual std::optional<md::sequence_unit> inferred_heartbeat() const noexcept {
        return std::nullopt;
    }
    /// Its instruments' top of book (appended), for books() and the live view.
    virtual void book_rows(std::vector<book_row>& out) const { (void)out; }
    /// Instrument `instrument`'s best levels of one side (side 'B' or 'S'), best first, into
    /// `out` (at most out.size()); how many. Ids as its events'. 0: an unknown instrument, an
    /// empty side, or a protocol that keeps no levels. For the shared-memory segment.
    [[nodiscard]] virtual std::size_t book_levels(std::uint32_t instrument, char side,
                                                  std::span<book_level> out) const {
        (void)instrument, (void)side, (void)out;
        return 0;
    }
    /// Its part of the feed's counters.
    [[nodiscard]] virtual protocol_counters counters() const noexcept = 0;
    /// End of a run: publishes what the "any thread" calls below read.
    virtual void publish() noexcept {}
    /// After the runtime stopped: flush what is held (pipelines, recordings).
    virtual void finish() {}

    // ---- any thread, while running ----
    /// Lines the feed's stats line is followed by ("recovery A | ..."); `live` is the feed's.
    virtual void stats_lines(std::string_view feed, feed_counters const& live,
                             std::vector<std::string>& out) const {
        (void)feed, (void)live, (void)out;
    }
    /// The live view's state column ("synchronized", "snapshot loading").
    [[nodiscard]] virtual std::string live_state(feed_counters const& live) const {
        (void)live;
        return {};
    }
    /// Its metrics, labelled with the feed.
    virtual void metrics(metric_writer& out, std::string const& feed) const {
        (void)out, (void)feed;
    }

    // ---- after the runtime stopped ----
    /// Its summary section ("" for none): the protocol-specific counters and books.
    virtual void summary(nlohmann::ordered_json& out) const { (void)out; }
    /// Its lines of the text summary (counters, `books` instruments' top of book).
    virtual void summary_text(std::string& out, std::size_t books) const { (void)out, (void)books; }
};

class config_reader; // receiver/src/config_reader.hpp: a [[feed]] table's typed getters

/// One field of the summary JSON: its name (top level, in each element of "feeds", or in a
/// protocol's section: "<protocol>.<field>") and what it holds.
struct summary_field {
    std::string_view name;
    std::string_view meaning;
    bool per_feed = true;
};

/// A [[feed]] key a protocol renamed: an old config fails with one line naming the new one.
struct renamed_key {
    std::string_view old_name;
    std::string_view new_name;
    std::string_view why;
};

/// A protocol as the receiver and md_receiver know it: its name, its [[feed]] keys and how to
/// read them, its summary section. receiver/src/protocols.cpp lists the registered ones; the
/// first is the protocol of a feed that names none.
struct protocol_registration {
    std::string_view name;                  ///< `protocol = "name"`, and the summary section's key
    std::string_view description;           ///< one line, for docs and errors
    std::span<std::string_view const> keys; ///< its own [[feed]] keys
    bool sequenced = true;                  ///< max_sequence_jump and recovery_buffer apply
    /// Reads and validates its keys of a [[feed]] table (throws config_error).
    std::shared_ptr<protocol_settings const> (*parse)(config_reader const& feed) = nullptr;
    /// Its summary section's fields, documented (md_receiver --summary-fields).
    std::span<summary_field const> fields{};
    /// Keys it renamed.
    std::span<renamed_key const> renamed{};
};

/// A protocol's config keys, parsed (or filled in code); makes the feed's protocol object.
class protocol_settings {
public:
    virtual ~protocol_settings() = default;
    /// The name `protocol = "..."` selects (its registration's).
    [[nodiscard]] virtual std::string_view protocol() const noexcept = 0;
    /// The feed's protocol object. Throws std::invalid_argument for settings it cannot run.
    [[nodiscard]] virtual std::unique_ptr<feed_protocol> make(feed_config const& feed) const = 0;
};

} // namespace signet::receiver
