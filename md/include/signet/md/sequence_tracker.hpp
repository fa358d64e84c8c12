#pragma once

/// sequence_tracker: the sequencing every sequenced protocol shares — which units of a stream are
/// new, seen before or missing, and which are not to be believed. A *unit* (a MoldUDP64 or Cboe
/// packet, an MDP 3.0 packet) carries a run of consecutively numbered items [first, first +
/// count): messages, or the packet itself. Heartbeats are units of no items that carry the next
/// expected sequence; an end-of-stream unit says the stream ended there.
///
/// Nothing in these protocols is authenticated, so a unit must be validated in full by its
/// protocol before it reaches track() (a malformed unit never claims a sequence), and one
/// forged or stale unit must not blind the stream. The *anchor* is the stream key (MoldUDP64's
/// session; none for protocols without one) and next(). Rules, in order, for each unit:
///   1. Plausibility. A unit of another key, or whose first sequence is more than max_jump away
///      from next() (ahead or behind), does not move the anchor: it is ignored and counted
///      (foreign, implausible), unless
///        a. the anchor is provisional — taken from a single unit (the first unit's key when none
///           is pinned, the first sequence of a late join, anything after an end of stream) and
///           not yet confirmed by a second consistent unit — and this is a unit of items whose
///           sequence is plausible against what was known before that one unit (the configured
///           first sequence; anything on a late join): the anchor moves to this unit at once (a
///           resync), or
///        b. resync_units ignored units in a row form one contiguous stream (same key, each
///           starting where the previous ended): the stream really moved; the anchor moves to
///           the first of them (a resync) and the units in between count as missing.
///   2. Late join (first_sequence 0): the first unit's sequence becomes next(); the items before
///      it (first - 1: streams number from 1) are counted as late_start, not as a gap.
///   3. first > next(): a gap of (first - next()) items; counted, and next() jumps to first.
///   4. The leading next() - first items were seen before: skipped (a duplicate unit if all are,
///      a partial overlap if some are); the rest are fresh, to be delivered in order, and next()
///      ends past the unit.
/// Heartbeats and ends of stream go through 1 to 3 (a heartbeat ahead reveals a gap); after an
/// end of stream the next stream may start anywhere (its first unit re-anchors, rule 1a).
///
/// Threading: none (one tracker per stream, owned by its parser contract). Costs: a few compares
/// per unit, no allocation, no exceptions after construction.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>

namespace signet::md {

/// A stream's identity: MoldUDP64's 10-character session, space padded (the rest zero); all zero
/// for protocols without one.
using stream_key = std::array<char, 16>;

/// What one unit did.
struct sequence_step {
    std::uint64_t missing = 0; ///< items skipped over by a gap in front of this unit
    std::uint64_t skip = 0;    ///< leading items seen before (not to be delivered again)
    std::uint64_t fresh = 0;   ///< items to deliver, starting at first + skip
    bool ignored = false;      ///< rule 1: not believed; nothing else applies
    bool foreign = false;      ///< ignored for its key (else for its sequence)
    bool resynced = false;     ///< this unit moved the anchor (rule 1a, 1b)
};

/// Where a unit [first, first + count) stands against `next`, the next expected sequence (rules
/// 3 and 4 alone).
[[nodiscard]] constexpr sequence_step locate(std::uint64_t next, std::uint64_t first,
                                             std::uint64_t count) noexcept {
    sequence_step step;
    if (first > next) {
        step.missing = first - next;
        next = first;
    }
    step.skip = next - first < count ? next - first : count;
    step.fresh = count - step.skip;
    return step;
}

/// One unit as its protocol framed it (after validating it in full).
struct sequence_unit {
    std::uint64_t first = 0; ///< sequence of the first item (heartbeat, end: the next expected)
    std::uint64_t count = 0; ///< items; 0 for heartbeats and ends of stream
    stream_key key{};
    bool end_of_stream = false;
    /// Which of the feed's independently sequenced streams it belongs to (Cboe's units: each
    /// numbers its messages on its own); 0 for a protocol with one. One tracker per stream.
    std::uint32_t stream = 0;
};

struct sequence_stats {
    std::uint64_t units = 0;       ///< units tracked, ignored ones too
    std::uint64_t items = 0;       ///< fresh items (delivered)
    std::uint64_t gaps = 0;        ///< gap events (a resync's jump included)
    std::uint64_t missing = 0;     ///< items skipped over by gaps (saturates: forged jumps)
    std::uint64_t duplicates = 0;  ///< units of items, all seen before
    std::uint64_t overlaps = 0;    ///< units of items, some seen before
    std::uint64_t heartbeats = 0;  ///< units of no items (ends of stream aside)
    std::uint64_t foreign = 0;     ///< ignored: another key (rule 1)
    std::uint64_t implausible = 0; ///< ignored: a sequence more than max_jump away (rule 1)
    std::uint64_t resyncs = 0;     ///< anchor moves (rules 1a, 1b)
    std::uint64_t late_start = 0;  ///< items before the first unit of a late join (rule 2)
    bool end_of_stream = false;    ///< an end-of-stream unit was tracked
};

struct sequence_tracker_options {
    /// The first expected sequence; 0 (sequence_tracker::late_join) adopts the first unit's.
    std::uint64_t first_sequence = 1;
    /// The farthest a unit's sequence may be from next() and still be taken at face value
    /// (rule 1); no_limit turns the guard off.
    std::uint64_t max_jump = std::numeric_limits<std::uint64_t>::max();
    /// Contiguous ignored units that prove the stream moved (rule 1b); at least 2.
    std::uint32_t resync_units = 3;
    /// Pins the stream key; none: the first unit's, provisionally.
    std::optional<stream_key> key{};
};

class sequence_tracker {
public:
    static constexpr std::uint64_t late_join = 0;
    static constexpr std::uint64_t no_limit = std::numeric_limits<std::uint64_t>::max();

    /// Gap tracking alone: no guard, any key.
    explicit sequence_tracker(std::uint64_t first_sequence = 1) noexcept;
    /// Throws std::invalid_argument for resync_units < 2.
    explicit sequence_tracker(sequence_tracker_options const& options);

    /// A unit of items [first, first + count) (no key, not an end): track({first, count}).
    sequence_step track(std::uint64_t first, std::uint64_t count) noexcept {
        return track(sequence_unit{first, count, {}, false});
    }
    /// Rules 1 to 4 for one validated unit; next() moves past its fresh items. The common
    /// case, the next unit of a confirmed stream, is decided here inline: rules 1 to 4 give
    /// exactly this for it (believed, no gap, nothing seen before).
    sequence_step track(sequence_unit const& unit) noexcept {
        if (unit.first == next_ && unit.count != 0 && !unit.end_of_stream && have_key_ &&
            !provisional_ && !adopt_ && unit.key == key_) {
            candidate_.units = 0;
            ++stats_.units;
            stats_.items += unit.count;
            next_ += unit.count;
            return {.fresh = unit.count};
        }
        return track_other(unit);
    }

    /// The sequence the next new item must carry (0 before a late join's first unit).
    [[nodiscard]] std::uint64_t next() const noexcept { return next_; }
    /// Whether `first` is within max_jump of next() (always while next() is unknown): the
    /// arbiter in front holds only such units, so that a forged one never waits for a gap.
    [[nodiscard]] bool plausible(std::uint64_t first) const noexcept;
    /// The anchor's key (all zero before the first unit of an unpinned stream).
    [[nodiscard]] stream_key const& key() const noexcept { return key_; }
    /// Whether the anchor has a key (pinned, or taken from a unit).
    [[nodiscard]] bool keyed() const noexcept { return have_key_; }
    [[nodiscard]] sequence_stats const& stats() const noexcept { return stats_; }

private:
    // Every other unit: rules 1 to 4 in full.
    sequence_step track_other(sequence_unit const& unit) noexcept;
    // Rule 1: whether `unit` may move the anchor; may resync (and then sets step.resynced).
    bool believe(sequence_unit const& unit, sequence_step& step) noexcept;

    // Rule 1b: the latest run of contiguous ignored units.
    struct candidate_run {
        stream_key key{};
        std::uint64_t first = 0; // sequence of the run's first unit
        std::uint64_t next = 0;  // where the run continues
        std::uint32_t units = 0;
    };

    std::uint64_t next_;
    std::uint64_t max_jump_ = no_limit;
    std::uint32_t resync_units_ = 3;
    stream_key key_{};
    bool have_key_ = false;
    bool pinned_ = false;                // key_ came from the options
    bool adopt_ = false;                 // the next believed unit sets next_ (late join)
    bool provisional_ = false;           // the anchor rests on one unit (rule 1a)
    bool sequence_from_unit_ = false;    // next_ was adopted, not configured
    std::uint64_t provisional_base_ = 0; // next_ before the provisional unit
    candidate_run candidate_{};
    sequence_stats stats_{};
};

} // namespace signet::md
