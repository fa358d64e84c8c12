#pragma once

/// cme::mdp3_channel: one CME MDP 3.0 channel's books by price (and by order where the channel
/// sends templates 47 and 53), kept right through loss — the incremental feed (packets in
/// MsgSeqNum order: on_incremental() sequences them itself, on_sequenced() takes them from a
/// caller that already did, as the receiver's shared sequencing does), the market recovery feed
/// (the snapshot loop) and the instrument definition feed.
///
///   definitions   MDInstrumentDefinitionFuture54 creates an instrument (security id, symbol,
///                 security group, tick, display factor, book depth from MarketDepth of "GBX"),
///                 or deletes it.
///   status        SecurityStatus30 sets an instrument's trading status; one without a
///                 SecurityID sets every instrument of its SecurityGroup; 103 (no change)
///                 keeps the status.
///                 One created after incrementals began starts stale (its book missed them).
///   incrementals  MDIncrementalRefreshBook46 entries update their instrument's book; 46, 48
///                 (trades), 37 (volume), 49, 50, 51 (statistics, limits) all carry the
///                 instrument's one RptSeq and advance it, book change or not. A RptSeq gap, or an
///                 update that does not fit the book, makes that instrument stale: its later
///                 entries wait (the packets are held, bounded) while the others go on.
///                 A gap in MsgSeqNum (lost on every line) may have lost any instrument's
///                 data, and which ones is unknown: every instrument (and its by-order book)
///                 goes stale and recovers from the snapshot loop.
///   loop position A snapshot's LastMsgSeqNumProcessed past the last packet applied shows
///                 packets that were sent; if none comes for loop_ahead_ns (the last ones of
///                 the stream, lost on every line, that no later packet shows), they are lost:
///                 a gap as above (counted; the MsgSeqNum moves past them).
///   snapshots     SnapshotFullRefresh52, while recovering: an instrument that is stale, or
///                 whose snapshot RptSeq is ahead of its own (it lost entries: it goes stale
///                 first), loads the snapshot and replays its held entries newer than the
///                 snapshot's RptSeq; a snapshot that is not ahead confirms the book. Recovery
///                 ends once a whole loop (TotNumReports instruments, a snapshot of one not
///                 yet defined included) has been seen since it began and no instrument is
///                 stale; the held packets are then dropped. A snapshot older than the held
///                 packets (LastMsgSeqNumProcessed before the first held one) cannot be
///                 completed by them: it is skipped (counted) and the next loop awaited.
///   kept snapshot One of a packet L not applied yet (the snapshot socket ran ahead of the
///                 incremental ones) would put a book ahead of the MsgSeqNum: it is kept
///                 (counted snapshots_ahead) and applied once packet L is, right after the
///                 packet that reached it, exactly as if it had come then (its rebuild and
///                 replay carry that packet's MsgSeqNum, >= L: never back). Storage: one slot
///                 of kept_snapshot_bytes per instrument, allocated when the instrument is
///                 defined (definitions are setup-time events), none per packet; a snapshot
///                 larger than its slot, or with an unbelievable L, is skipped and the next
///                 loop awaited. One kept per instrument: a later loop's copy is dropped while
///                 an older one is kept (the older L is reached first, so it recovers the
///                 instrument sooner; should it fail, too old after a gap, the next loop's
///                 comes). A by-order snapshot (53) whose chunks are all in is kept the same
///                 way, assembled (its load waits uncommitted; the instrument's chunks of
///                 later loops are ignored meanwhile). Packets up to L declared lost (loop
///                 position) count as applied: a kept snapshot of L is applied then, one of an
///                 older packet is too old (counted, dropped). Recovery's end, or a
///                 ChannelReset4, drops what is kept.
///   ChannelReset4 empties every book, resets every RptSeq and ends any recovery.
///
/// Events (set_event_sink; md/events.hpp), instrument id = the instrument's index in the
/// channel (definition order), prices of 10^-9: a definition creates it
/// (instrument_definition); 46 entries their levels' level_update (a level that left: size 0;
/// depth = MDPriceLevel - 1) and, when a side's best moved, a bbo; 47 entries order_add,
/// order_modify, order_delete (with their priority); 48 a trade per entry (aggressor side);
/// 30 trading_status. An instrument that goes stale emits instrument_stale; its snapshot
/// snapshot_begin, book_clear, its levels (and orders, when its by-order book is good) flagged
/// from_snapshot, its bbo, snapshot_end, then the replayed entries' events and
/// instrument_recovered, all with the sequence of the last packet applied (the one the
/// rebuilt book is right as of: sequences never go back; packets the loop showed lost count as
/// applied). A gap's instrument_stale events come before the packet that showed it is
/// applied: they carry the last packet before the gap. A by-order book reloaded from the loop
/// (53) comes the same way between snapshot_begin and snapshot_end (levels and orders);
/// ChannelReset4 emits book_clear for all_instruments.
///
/// recovering() tells the caller to listen to the snapshot loop; on_time() counts a silent
/// loop and declares packets the loop showed lost (next_deadline(): when). Threading: none (the
/// channel's parser contract). Costs: per entry a lookup of the instrument (detail::fixed_hash_map:
/// open addressing, one probe as a rule) and a book update; nothing allocates in steady state
/// (instruments are created by definitions, with their kept-snapshot slots; the held-packet
/// store is allocated once; a by-order book's tables double when they fill, within
/// max_orders: mdp3_order_book.hpp). Per packet applied, one comparison with the first kept
/// snapshot's L.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <signet/md/cme/mdp3.hpp>
#include <signet/md/cme/mdp3_order_book.hpp>
#include <signet/md/cme/mdp3_price_book.hpp>
#include <signet/md/detail/fixed_hash_map.hpp>
#include <signet/md/events.hpp>
#include <signet/md/message_store.hpp>
#include <signet/md/sequence_tracker.hpp>

namespace signet::md::cme {

struct mdp3_channel_options {
    std::size_t held_packets = 4096;               ///< incremental packets kept while recovering
    std::size_t held_bytes = std::size_t{8} << 20; ///< and their bytes
    std::uint64_t snapshot_silence_ns = 2'000'000'000; ///< a loop this quiet is counted
    /// on_incremental(): the farthest a MsgSeqNum may be from the next expected one and still be
    /// believed (md::sequence_tracker's guard).
    std::uint64_t max_sequence_jump = 100'000;
    /// Order slots the channel's by-order books may hold in all (the live orders and a snapshot
    /// being loaded; mdp3_order_book.hpp): past it an instrument's orders are recovered from
    /// the snapshot loop and counted (order_budget_full).
    std::size_t max_orders = std::size_t{1} << 20;
    /// How long the snapshot loop may be past the last packet applied, with no packet arriving,
    /// before the packets up to the loop's are declared lost: longer than the receiver's A/B
    /// hold (20 ms), so that a gap the hold still waits for is never declared first, and as
    /// long as a hold waits for input already queued (1 s): a receiver descheduled for 100 ms
    /// (a hypervisor's steal, seen on the test machines) must not declare packets lost that
    /// sit in its sockets.
    std::uint64_t loop_ahead_ns = 1'000'000'000;
    /// Bytes of a SnapshotFullRefresh52 (root and groups) kept per instrument while it is ahead
    /// of the packets applied (allocated with the instrument's definition); a larger one is
    /// skipped (the next loop). 2048: 90 entries; 0 keeps none.
    std::size_t kept_snapshot_bytes = 2048;
};

/// The channel's own counters; the incremental packets' sequencing (duplicates, gaps, ignored
/// MsgSeqNums) is md::sequence_tracker's: sequencing().
struct mdp3_channel_stats {
    std::uint64_t incremental_packets = 0;  ///< applied (fresh)
    std::uint64_t incremental_messages = 0; ///< the SBE messages of those
    std::uint64_t malformed_packets = 0;    ///< framing lost (any line)
    std::uint64_t malformed_messages = 0;
    std::uint64_t unknown_messages = 0;   ///< other templates or schemas
    std::uint64_t book_entries = 0;       ///< applied
    std::uint64_t trade_entries = 0;      ///< 48 entries applied (their RptSeq)
    std::uint64_t statistics_entries = 0; ///< 37, 49, 50, 51 entries applied
    std::uint64_t unknown_instrument_entries = 0;
    std::uint64_t rpt_seq_gaps = 0;
    /// MsgSeqNum gaps only the snapshot loop showed (the stream's last packets, lost on every
    /// line): the sequencing's gaps and missing count them too.
    std::uint64_t loop_revealed_gaps = 0;
    std::uint64_t inconsistent_updates = 0;
    std::uint64_t recoveries = 0; ///< times the channel went to the snapshot loop
    std::uint64_t recoveries_completed = 0;
    std::uint64_t recovery_ns = 0;         ///< summed: recovery begun -> every instrument live
    std::uint64_t last_recovery_ns = 0;    ///< the last completed one
    std::uint64_t snapshots_applied = 0;   ///< instruments loaded from snapshots
    std::uint64_t snapshots_confirmed = 0; ///< snapshots that found the book up to date
    std::uint64_t snapshots_too_old = 0;
    /// Of a packet not applied yet: kept and applied once it is (then counted applied,
    /// confirmed or too old), or skipped (larger than its slot; an older one kept).
    std::uint64_t snapshots_ahead = 0;
    std::uint64_t replayed_entries = 0;
    std::uint64_t held_evicted = 0;
    std::uint64_t snapshot_silences = 0;
    std::uint64_t channel_resets = 0;
    std::uint64_t definitions = 0;
    std::uint64_t order_entries = 0;           ///< MBO entries applied
    std::uint64_t order_snapshots_applied = 0; ///< MBO books loaded from 53 chunks
    std::uint64_t order_budget_full = 0;       ///< MBO entries or snapshot orders past max_orders
};

/// An instrument's statistics: the latest value of each, null until sent (or deleted).
struct mdp3_statistics {
    std::int32_t volume = null_int32;              ///< 37: cumulative traded volume
    std::int64_t settlement_price = null_price;    ///< 49 '6' (and the snapshot's)
    std::int32_t cleared_volume = null_int32;      ///< 49 'B'
    std::int32_t open_interest = null_int32;       ///< 49 'C'
    std::int64_t fixing_price = null_price;        ///< 49 'W'
    std::int64_t high_limit_price = null_price;    ///< 50 (and the snapshot's)
    std::int64_t low_limit_price = null_price;     ///< 50
    std::int64_t max_price_variation = null_price; ///< 50
    std::int64_t open_price = null_price;          ///< 51 '4'
    std::int64_t session_high_trade = null_price;  ///< 51 '7'
    std::int64_t session_low_trade = null_price;   ///< 51 '8'
    std::int64_t session_high_bid = null_price;    ///< 51 'N'
    std::int64_t session_low_offer = null_price;   ///< 51 'O'

    void apply(volume_entry const& e) noexcept;
    void apply(daily_statistics_entry const& e) noexcept;
    void apply(limits_banding_entry const& e) noexcept;
    void apply(session_statistics_entry const& e) noexcept;
    /// The statistics a SnapshotFullRefresh52 carries (its limits and statistic entries).
    void assign(snapshot_full_refresh const& s) noexcept;
};

struct mdp3_instrument {
    std::int32_t security_id = 0;
    std::array<char, 20> symbol{};
    std::int64_t tick = 0;           ///< MinPriceIncrement, PRICE9
    std::int64_t display_factor = 0; ///< Decimal9
    std::uint8_t trading_status = null_uint8;
    std::array<char, 6> security_group{}; ///< SecurityGroup (tag 1151): a group's status applies
    std::array<char, 6> asset{};          ///< Asset (tag 6937): so does an asset's
    std::uint32_t rpt_seq = 0;            ///< the last applied (every template that carries one)
    bool stale = false;                   ///< waits for a snapshot
    std::uint64_t seen_in_recovery = 0;   ///< the recovery whose loop showed it
    mdp3_price_book book;
    // market by order (channels that send it: templates 47 and 53)
    mdp3_order_book orders;
    bool orders_stale = false;
    std::uint64_t orders_seen_in_recovery = 0;
    std::uint32_t next_chunk = 0;     ///< of the order snapshot being assembled; 0: none
    std::uint32_t chunk_sequence = 0; ///< its LastMsgSeqNumProcessed
    /// Its chunks are all in, ahead of the packets applied: the load waits for chunk_sequence.
    bool orders_kept = false;
    /// The incremental packet the MBO book was loaded as of: entries of packets up to it are
    /// in it already (they may still arrive: another socket).
    std::uint64_t orders_as_of = 0;
    /// Volume, settlement, limits, session statistics (templates 37, 49, 50, 51, 52): last, as
    /// the book updates need none of it.
    mdp3_statistics statistics{};
};

class mdp3_channel {
public:
    explicit mdp3_channel(mdp3_channel_options const& options = {});

    /// An incremental packet, on its own: validated in full (validate_packet), sequenced by the
    /// channel's md::sequence_tracker (late join, the guard against implausible MsgSeqNums,
    /// duplicates, gaps), then on_sequenced().
    void on_incremental(std::span<std::byte const> packet, std::uint64_t now_ns);
    /// A validated incremental packet that the caller sequenced (the receiver's shared
    /// sequencing): MsgSeqNum `sequence` and what the tracker said of it. A duplicate (no fresh
    /// item), or a packet the loop showed lost (before next_sequence()), changes nothing; a gap
    /// (not one the loop showed), a resync or a first packet other than 1 (a late join) makes
    /// every instrument stale and starts a recovery.
    /// `receive_ns`: the packet's receive stamp, for its events (0: now_ns).
    void on_sequenced(std::span<std::byte const> packet, std::uint64_t sequence,
                      sequence_step const& step, std::uint64_t now_ns,
                      std::uint64_t receive_ns = 0);
    void on_snapshot(std::span<std::byte const> packet, std::uint64_t now_ns);
    void on_definition(std::span<std::byte const> packet, std::uint64_t now_ns);
    /// Counts a silent loop; declares lost the packets the loop showed, once loop_ahead_ns
    /// passed without one arriving (the caller's sequencing then counts the gap and moves past
    /// them: next_sequence() is past them).
    void on_time(std::uint64_t now_ns) noexcept;
    /// When on_time() has packets to declare lost; 0: none pending.
    [[nodiscard]] std::uint64_t next_deadline() const noexcept;
    /// Events of `kinds` to `sink` from here on (nullptr: none).
    void set_event_sink(event_sink* sink, event_mask kinds = event_mask::all()) noexcept {
        sink_ = sink;
        kinds_ = kinds;
    }

    /// Listen to the snapshot loop.
    [[nodiscard]] bool recovering() const noexcept { return recovering_; }
    [[nodiscard]] mdp3_instrument const* find(std::int32_t security_id) const noexcept;
    template <typename F>
    void for_each_instrument(F&& f) const {
        for (mdp3_instrument const& i : instruments_) {
            f(i);
        }
    }
    [[nodiscard]] std::size_t instrument_count() const noexcept { return instruments_.size(); }
    /// The instrument of an event's id (its index); nullptr beyond them.
    [[nodiscard]] mdp3_instrument const* at(std::uint32_t index) const noexcept {
        return index < instruments_.size() ? &instruments_[index] : nullptr;
    }
    [[nodiscard]] mdp3_channel_stats const& stats() const noexcept { return stats_; }
    /// on_incremental()'s sequencing counters (all zero when the caller sequences).
    [[nodiscard]] sequence_stats const& sequencing() const noexcept { return tracker_.stats(); }
    /// The next expected incremental MsgSeqNum (0 before the first packet); past the packets
    /// the snapshot loop showed lost (on_time()).
    [[nodiscard]] std::uint64_t next_sequence() const noexcept { return next_sequence_; }

private:
    mdp3_instrument* lookup(std::int32_t security_id) noexcept;
    enum class replay : std::uint8_t { none, mbp, mbo };
    /// Applies a packet's messages; a replay: `only`'s MBP (46, 48) or MBO (47) entries alone.
    packet_walk apply_packet(std::span<std::byte const> packet, std::uint64_t now_ns,
                             mdp3_instrument* only, replay kind = replay::none);
    void load_order_snapshot(snapshot_order_book const& s, std::uint64_t now_ns);
    void replay_held(mdp3_instrument& i, std::uint64_t from, std::uint64_t now_ns, replay kind);
    /// The RptSeq rule: true if the entry is the instrument's next (apply it); false if it is
    /// old (skip) or after a gap (the instrument goes stale).
    bool next_in_sequence(mdp3_instrument& i, std::uint32_t rpt_seq, std::uint64_t now_ns) noexcept;
    void make_stale(mdp3_instrument& i, std::uint64_t now_ns) noexcept;
    void load_snapshot(message const& m, snapshot_full_refresh const& s, std::uint64_t now_ns);
    /// A snapshot not ahead of the packets applied: confirms, or reloads and replays.
    void rebuild(mdp3_instrument& i, snapshot_full_refresh const& s, std::uint64_t now_ns);
    /// A snapshot ahead of the packets applied: into the instrument's slot (or skipped).
    void keep_snapshot(mdp3_instrument& i, message const& m, snapshot_full_refresh const& s);
    /// The assembled by-order snapshot of i, not ahead of the packets applied: commits it.
    void commit_order_snapshot(mdp3_instrument& i, std::uint64_t now_ns);
    /// The kept snapshots whose packet has been applied (next_sequence_ past it), rebuilt.
    [[gnu::noinline]] void apply_kept_snapshots(std::uint64_t now_ns);
    void drop_kept_snapshots() noexcept;
    void start_recovery(std::uint64_t now_ns) noexcept;
    /// The loop counts from here: every instrument must be shown again (after a loss).
    void restart_loop(std::uint64_t now_ns) noexcept;
    /// A snapshot as of incremental packet `last`: past the packets applied, the wait for them.
    void note_loop_position(std::uint64_t last, std::uint64_t now_ns) noexcept;
    /// The packets the loop showed, declared lost once loop_ahead_ns passed without one.
    void lose_packets_if_due(std::uint64_t now_ns) noexcept;
    // on_sequenced()'s rare paths, out of line: a discontinuity, and holding while recovering.
    [[gnu::noinline]] void on_discontinuity(std::uint64_t now_ns);
    [[gnu::noinline]] void hold(std::uint64_t sequence, std::span<std::byte const> packet);
    void finish_recovery_if_done(std::uint64_t now_ns) noexcept;
    void reset_channel() noexcept;
    /// SecurityStatus30 for one instrument: its state unless the status is 103 (no change).
    void apply_status(mdp3_instrument& i, security_status const& s, std::uint64_t now_ns) noexcept;

    // Events (mdp3_channel_events.cpp). All but wants() require a sink.
    [[nodiscard]] bool wants(event_kind kind) const noexcept {
        return sink_ != nullptr && kinds_.has(kind);
    }
    /// Both sides of a book, as they were before an entry (levels up to the book's depth).
    struct book_copy {
        std::array<mdp3_price_level, mdp3_price_book::max_depth> bids; // the first bid_count
        std::array<mdp3_price_level, mdp3_price_book::max_depth> offers;
        std::size_t bid_count = 0;
        std::size_t offer_count = 0;
    };
    [[nodiscard]] static book_copy copy_of(mdp3_price_book const& b) noexcept;
    [[nodiscard]] event base_event(mdp3_instrument const& i, std::uint64_t now_ns) const noexcept;
    void emit(event_kind kind, mdp3_instrument const& i, std::uint64_t now_ns,
              std::uint16_t flags = 0) noexcept;
    void emit_definition(mdp3_instrument const& i, std::uint64_t now_ns) noexcept;
    void emit_book_changes(mdp3_instrument const& i, book_copy const& before,
                           std::uint64_t now_ns) noexcept;
    void emit_bbo(mdp3_instrument const& i, event const& base) noexcept;
    void emit_order(mdp3_instrument const& i, order_book_entry const& e,
                    std::uint64_t now_ns) noexcept;
    void emit_trade(mdp3_instrument const& i, trade_entry const& e, std::uint64_t now_ns) noexcept;
    void emit_status(mdp3_instrument const& i, std::uint8_t status, std::uint64_t now_ns) noexcept;
    /// snapshot_begin, book_clear, the levels (and the orders unless they are stale) flagged
    /// from_snapshot, the bbo, snapshot_end.
    void emit_loaded_book(mdp3_instrument const& i, std::uint64_t now_ns) noexcept;

    mdp3_channel_options options_;
    std::vector<mdp3_instrument> instruments_;
    // The by-order books' shared budget: on the heap, so the books' pointer to it survives a
    // move of the channel.
    std::unique_ptr<mdp3_order_budget> order_budget_;
    detail::fixed_hash_map<std::int32_t, std::size_t> index_{64}; // security id -> instruments_
    message_store held_;
    sequence_tracker tracker_; // on_incremental() only
    std::uint64_t next_sequence_ = 0;
    bool started_ = false; // an incremental packet was applied
    bool recovering_ = false;
    std::uint64_t last_snapshot_ns_ = 0;
    std::uint64_t recovery_started_ns_ = 0;
    std::uint64_t applying_sequence_ = 0; // the MsgSeqNum of the packet being applied
    // The events' sequence: the last incremental packet applied live. A snapshot's load and the
    // held packets replayed over it bring the instrument up to this packet, so their events
    // carry it too (never an older MsgSeqNum).
    std::uint64_t event_sequence_ = 0;
    // The snapshot loop past the packets applied: its LastMsgSeqNumProcessed (pending while at
    // least next_sequence_), since when, and when the last packet was applied (either restarts
    // the wait).
    std::uint64_t loop_ahead_of_ = 0;
    std::uint64_t loop_ahead_since_ns_ = 0;
    std::uint64_t last_packet_ns_ = 0;
    // The loop since the recovery began: instruments seen, and the loop's size.
    std::uint64_t recovery_id_ = 0;
    std::uint32_t seen_in_loop_ = 0;
    std::uint32_t loop_size_ = 0;
    std::vector<std::int32_t> seen_undefined_; // in the loop, without a definition
    // Snapshots ahead of the packets applied, per instrument (index as instruments_): a 52's
    // message in kept_bytes_ (kept_snapshot_bytes each), and the smallest L kept (52 or 53).
    static constexpr std::uint64_t none_kept = ~std::uint64_t{0};
    struct kept_snapshot {
        std::uint64_t as_of = none_kept; // its LastMsgSeqNumProcessed
        std::uint16_t block_length = 0;
        std::uint16_t version = 0;
        std::uint32_t size = 0; // root and groups
    };
    std::vector<kept_snapshot> kept_;
    std::vector<std::byte> kept_bytes_;
    std::uint64_t kept_first_ = none_kept;
    bool carries_orders_ = false; // MBO seen on this channel (47 or 53)
    std::uint32_t order_seen_in_loop_ = 0;
    std::uint32_t order_loop_size_ = 0;
    mdp3_channel_stats stats_{};
    event_sink* sink_ = nullptr;
    event_mask kinds_{};
    std::uint64_t transact_time_ = 0; // of the message being applied (events' exchange_ns)
    std::uint64_t receive_ns_ = 0;    // of the packet being applied (events'; 0: now_ns)
};

} // namespace signet::md::cme
