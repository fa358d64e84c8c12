#pragma once

/// sequence_tracker: gap tracking for any sequenced protocol whose units (packets) carry a run
/// of consecutively numbered items (messages): [first, first + count). It keeps the next
/// expected sequence number and says, per unit, what is new, what was seen before and what is
/// missing — the rules md::moldudp64_session applies (its steps 4 and 6) for MoldUDP64, here
/// for a protocol of your own (see apps/examples/custom_protocol.cpp).
///
/// Rules for a unit [first, first + count) against next():
///   first > next()   a gap of first - next() items: counted, next() jumps to first;
///   first < next()   the leading next() - first items were seen before: skipped (a duplicate
///                    unit if all of them are, a partial overlap if some are);
///   the rest is new: deliver it, in order; next() ends past the unit.
/// A tracker made with first_sequence 0 adopts the first unit's sequence (late join).
/// Threading: none (one tracker per feed, owned by its parser contract). No allocation.

#include <algorithm>
#include <cstdint>

namespace signet::md {

/// What one unit does.
struct sequence_step {
    std::uint64_t missing = 0; ///< items skipped over by a gap in front of this unit
    std::uint64_t skip = 0;    ///< leading items seen before (not to be delivered again)
    std::uint64_t fresh = 0;   ///< items to deliver, starting at first + skip
};

/// Where a unit [first, first + count) stands against `next`, the next expected sequence.
[[nodiscard]] constexpr sequence_step locate(std::uint64_t next, std::uint64_t first,
                                             std::uint64_t count) noexcept {
    sequence_step step;
    if (first > next) {
        step.missing = first - next;
        next = first;
    }
    step.skip = std::min(next - first, count);
    step.fresh = count - step.skip;
    return step;
}

struct sequence_stats {
    std::uint64_t units = 0;      ///< units tracked
    std::uint64_t items = 0;      ///< new items (delivered)
    std::uint64_t gaps = 0;       ///< gap events
    std::uint64_t missing = 0;    ///< items skipped over by gaps
    std::uint64_t duplicates = 0; ///< units whose items were all seen before
    std::uint64_t overlaps = 0;   ///< units with some items seen before
};

class sequence_tracker {
public:
    explicit constexpr sequence_tracker(std::uint64_t first_sequence = 1) noexcept
        : next_(first_sequence) {}

    /// A unit carrying [first, first + count) arrived; next() moves past its new items.
    constexpr sequence_step track(std::uint64_t first, std::uint64_t count) noexcept {
        if (next_ == 0) {
            next_ = first; // late join: adopt the first unit's sequence
        }
        sequence_step const step = locate(next_, first, count);
        ++stats_.units;
        if (step.missing != 0) {
            ++stats_.gaps;
            stats_.missing += step.missing;
        }
        if (step.skip != 0) {
            ++(step.fresh == 0 ? stats_.duplicates : stats_.overlaps);
        }
        stats_.items += step.fresh;
        next_ = std::max(next_, first + count);
        return step;
    }

    /// The sequence the next new item must carry (0 before a late join's first unit).
    [[nodiscard]] constexpr std::uint64_t next() const noexcept { return next_; }
    [[nodiscard]] constexpr sequence_stats const& stats() const noexcept { return stats_; }

private:
    std::uint64_t next_;
    sequence_stats stats_{};
};

} // namespace signet::md
