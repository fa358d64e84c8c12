#include <stdexcept>

#include <signet/core/saturating.hpp>
#include <signet/md/sequence_tracker.hpp>

namespace signet::md {

namespace {

std::uint64_t distance(std::uint64_t a, std::uint64_t b) noexcept {
    return a > b ? a - b : b - a;
}

} // namespace

sequence_tracker::sequence_tracker(std::uint64_t first_sequence) noexcept
    : next_(first_sequence)
    , adopt_(first_sequence == late_join) {}

sequence_tracker::sequence_tracker(sequence_tracker_options const& options)
    : sequence_tracker(options.first_sequence) {
    if (options.resync_units < 2) {
        throw std::invalid_argument("sequence_tracker: resync_units must be at least 2");
    }
    max_jump_ = options.max_jump;
    resync_units_ = options.resync_units;
    if (options.key) {
        key_ = *options.key;
        have_key_ = true;
        pinned_ = true;
    }
}

bool sequence_tracker::plausible(std::uint64_t first) const noexcept {
    return adopt_ || distance(first, next_) <= max_jump_;
}

bool sequence_tracker::believe(sequence_unit const& unit, sequence_step& step) noexcept {
    auto const consistent = [&] { // with the anchor
        return !(have_key_ && unit.key != key_) && plausible(unit.first);
    };
    if (consistent()) {
        candidate_.units = 0;
        return true;
    }
    bool const foreign = have_key_ && unit.key != key_;
    // 1a: the anchor rests on one unit: a unit of items that agrees with what was known before
    // it (the configured sequence; anything on a late join) replaces it. Heartbeats never do,
    // so stale heartbeats interleaved with a young stream cannot flip it.
    std::uint64_t const base = sequence_from_unit_ ? unit.first : provisional_base_;
    if (provisional_ && !(foreign && pinned_) && unit.count != 0 &&
        distance(unit.first, base) <= max_jump_) {
        key_ = unit.key;
        if (sequence_from_unit_) {
            adopt_ = true; // rule 2 takes this unit's sequence
        } else {
            next_ = provisional_base_; // as configured, before that one unit
        }
        ++stats_.resyncs;
        step.resynced = true;
        if (consistent()) {
            candidate_.units = 0;
            return true;
        }
    }
    // 1b: ignored, unless it completes a contiguous run of ignored units.
    if (candidate_.units != 0 && unit.key == candidate_.key && unit.first == candidate_.next) {
        ++candidate_.units;
    } else {
        candidate_ = {unit.key, unit.first, unit.first, 1};
    }
    candidate_.next = unit.first + unit.count;
    if (candidate_.units >= resync_units_ && !(pinned_ && candidate_.key != key_)) {
        if (!adopt_ && candidate_.first > next_) {
            ++stats_.gaps; // the jump itself; the run's earlier units are the next gap
            stats_.missing = saturating_add(stats_.missing, candidate_.first - next_);
        }
        key_ = candidate_.key;
        have_key_ = true;
        next_ = candidate_.first;
        adopt_ = false;
        provisional_ = false;
        candidate_.units = 0;
        ++stats_.resyncs;
        step.resynced = true;
        return true;
    }
    step.foreign = foreign;
    ++(foreign ? stats_.foreign : stats_.implausible);
    return false;
}

sequence_step sequence_tracker::track_other(sequence_unit const& unit) noexcept {
    ++stats_.units;
    sequence_step step;
    if (!believe(unit, step)) {
        step.ignored = true;
        return step;
    }
    if (!step.resynced) {
        provisional_ = false; // a consistent unit confirms a provisional anchor
        if (!have_key_) {
            key_ = unit.key; // the first unit's, provisionally (rule 1a)
            have_key_ = true;
            provisional_ = true;
            provisional_base_ = next_;
        }
    }
    if (adopt_) {
        next_ = unit.first;
        adopt_ = false;
        sequence_from_unit_ = true;
        provisional_ = true;
        stats_.late_start = unit.first > 1 ? unit.first - 1 : 0;
    }
    sequence_step const located = locate(next_, unit.first, unit.count);
    step.missing = located.missing;
    if (located.missing != 0) {
        ++stats_.gaps;
        stats_.missing = saturating_add(stats_.missing, located.missing);
        next_ = unit.first;
    }
    if (unit.end_of_stream) {
        stats_.end_of_stream = true;
        // The next stream may start anywhere: its first unit re-anchors (rule 1a).
        provisional_ = !pinned_;
        sequence_from_unit_ = true;
        return step;
    }
    if (unit.count == 0) {
        ++stats_.heartbeats;
        return step;
    }
    step.skip = located.skip;
    step.fresh = located.fresh;
    if (step.skip != 0) {
        ++(step.fresh == 0 ? stats_.duplicates : stats_.overlaps);
    }
    stats_.items += step.fresh;
    next_ = unit.first + unit.count > next_ ? unit.first + unit.count : next_;
    return step;
}

} // namespace signet::md
