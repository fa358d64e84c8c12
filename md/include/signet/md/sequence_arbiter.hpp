#pragma once

// sequence_arbiter: protocol-neutral A/B arbitration and reordering for sequenced packets. It
// sits in front of a session (MoldUDP64's, or one of your own) and holds a packet that arrives
// ahead of the expected sequence for a moment, so that a reordered packet, or line B's copy of a
// packet line A lost, can fill the gap first. The caller passes each packet's first sequence
// number (0: not sequenced, delivered at once; `far`: one the session will not believe, see
// below) and the session's next expected one. It releases a held packet (letting the session
// count the gap) when
//   1. the packets before it arrived (no gap after all), or
//   2. with two lines: both lines have delivered packets at or past it (both lost the data) —
//      once a line was seen to reorder (a packet below one it delivered before), only after it
//      has been held reorder_ns too: such a wire may deliver the missing packet after one past
//      it, on both lines alike — or
//   3. it has been held longer than hold_ns (by the arriving packets' receive times), or
//   4. the hold is full (max_held packets), or
//   5. flush() at the end.
// With a gap_recovery attached (set_recovery), rules 2 and 3 ask it to recover the gap in front
// of the held packet instead: they keep holding while it recovers, and release (the session
// counts the gap) once it gave up; rule 4 makes it give up (the hold is the bound on what waits
// for a recovery). next_deadline() tells the owner when rule 3 or the recovery needs a tick().
// With an input_probe attached (set_input_probe), rules 2 and 3 (after a recovery, if any,
// gave up: a recovery is asked first, waiting input or not) wait while input is already
// waiting before the arbiter on any line — a line that passed the held sequence may still hold
// the missing packet, as the wire reorders — for at most hold_ns + max_defer_ns from the held
// packet's arrival: a receiver behind its input on a loaded machine does not turn scheduling
// delay into loss. (A real gap under a steady stream waits that long, or until the hold is
// full: rule 4.) With a probe and no recovery, rule 3 also needs the lines to have moved on: a
// packet that arrived more than hold_ns after the held one (by the arrivals' stamps). A timer
// (tick) alone does not call the gap lost before hold_ns + max_defer_ns: a sender descheduled
// between a packet and the one it reordered behind it (a loaded machine) leaves nothing in any
// socket, and the wall clock would turn that pause into loss. Rule 4 still bounds the wait.
// A `far` packet (its sequence too far from the session's to be believed, or to order or
// recover by) is delivered at once when nothing is held, else it waits behind everything held
// and goes as soon as the packets before it went: it never overtakes packets waiting for a gap
// (the session judges them, in sequence, first), it never asks the recovery for anything and
// it moves neither a line's position (rule 2) nor the reordering it watches. So what the
// session gets does not depend on whether a far packet came a moment sooner or later.
// Packets are copied into a fixed pool allocated at construction: nothing allocates later.
// hold_latency() is the time each held packet waited: from its arrival to the arrival (or
// timer) that released it, the "sequence" stage of md_receiver's per-stage latency.
// Threading: none (it runs inside the feed's parser contract); hold_latency().take() from any
// thread (metrics::histogram).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include <signet/core/metrics/histogram.hpp>
#include <signet/md/gap_recovery.hpp>
#include <signet/md/input_probe.hpp>

namespace signet::md {

class sequence_arbiter {
public:
    static constexpr std::size_t max_lines = 2;
    /// The sequence to pass for a packet the session will not believe (see above).
    static constexpr std::uint64_t far = std::numeric_limits<std::uint64_t>::max();

    /// `lines`: 1, or 2 for A/B (enables rule 2, after `reorder_ns`).
    explicit sequence_arbiter(std::size_t lines, std::size_t max_held = 64,
                              std::size_t max_packet = 2048, std::uint64_t hold_ns = 2'000'000,
                              std::uint64_t reorder_ns = 0)
        : lines_(std::min(lines, max_lines))
        , max_held_(max_held)
        , max_packet_(max_packet)
        , hold_ns_(hold_ns)
        , reorder_ns_(reorder_ns)
        , storage_(std::make_unique<std::byte[]>(max_held * max_packet))
        , held_(max_held)
        , order_() {
        order_.reserve(max_held);
        free_.reserve(max_held);
        for (std::size_t i = 0; i < max_held; ++i) {
            free_.push_back(i);
        }
    }

    /// A packet whose first item carries `sequence` (0: none, e.g. malformed; far: not to be
    /// believed) arrived on `line` at `now_ns`. `deliver(span)` hands a datagram to the
    /// session; `next()` is the session's next expected sequence (0 before a late join).
    template <typename Deliver, typename Next>
    void on_packet(std::span<std::byte const> datagram, std::uint64_t sequence, std::uint16_t line,
                   std::uint64_t now_ns, Deliver&& deliver, Next&& next) {
        if (line < lines_ && sequence != far) {
            reordering_ = reordering_ || (sequence != 0 && sequence < last_seen_[line]);
            last_seen_[line] = std::max(last_seen_[line], sequence);
        }
        if (line < lines_) {
            last_arrival_ = std::max(last_arrival_, now_ns); // the lines moved on (rule 3)
        }
        std::uint64_t const expected = next();
        if (sequence == far ? order_.empty()
                            : sequence == 0 || expected == 0 || sequence <= expected) {
            deliver(datagram); // in order, duplicate, malformed, or far with nothing held
        } else if (datagram.size() > max_packet_) {
            deliver(datagram); // too big to hold (larger than any datagram of its protocol)
        } else {
            hold(datagram, sequence, now_ns, deliver);
        }
        release(now_ns, deliver, next, false);
    }

    /// Applies the release rules at `now` without a new packet (timers: rule 3, recovery).
    template <typename Deliver, typename Next>
    void tick(std::uint64_t now_ns, Deliver&& deliver, Next&& next) {
        release(now_ns, deliver, next, false);
    }

    /// Releases everything held, in sequence order.
    template <typename Deliver, typename Next>
    void flush(Deliver&& deliver, Next&& next) {
        release(0, deliver, next, true);
    }

    /// Attaches a gap recovery client (or detaches it with nullptr).
    void set_recovery(gap_recovery* recovery) noexcept { recovery_ = recovery; }
    /// Records hold_latency() into `h` instead of its own (several arbiters of one feed, one
    /// histogram: one writer, the feed's parser contract).
    void record_holds_in(metrics::histogram& h) noexcept { held_for_ = &h; }
    /// Attaches an input probe (or detaches it with nullptr): rule 3 waits for input already
    /// waiting and, without a recovery, for the lines to move on past the hold; at most
    /// `max_defer_ns` past its hold.
    void set_input_probe(input_probe const* probe, std::uint64_t max_defer_ns) noexcept {
        probe_ = probe;
        max_defer_ns_ = max_defer_ns;
    }

    [[nodiscard]] std::size_t held() const noexcept { return order_.size(); }
    /// When the hold of the first packet in sequence order runs out (rule 3, or rule 2's
    /// reorder allowance once both lines are past it: the release rules look at that packet
    /// first), ns on the caller's clock; 0 when nothing is held. A tick() then releases it or
    /// hands its gap to the recovery.
    [[nodiscard]] std::uint64_t next_deadline() const noexcept {
        if (order_.empty()) {
            return 0;
        }
        slot const& h = held_[order_.front()];
        bool const both_past =
            lines_ >= 2 && std::all_of(last_seen_.begin(),
                                       last_seen_.begin() + static_cast<std::ptrdiff_t>(lines_),
                                       [&](std::uint64_t seen) { return seen >= h.sequence; });
        // Rule 2 waits for its reorder allowance, rule 3 for the hold; a timer alone expires
        // it only at its bound while the lines have not moved on (see lines_paused).
        if (!both_past && paused_rule_applies() && !moved_on(h)) {
            return h.arrived + hold_ns_ + max_defer_ns_ + 1;
        }
        return h.arrived +
               (both_past ? (reordering_ ? std::min(reorder_ns_, hold_ns_) : 0) : hold_ns_) + 1;
    }
    /// Packets that waited in the hold and whose gap was filled in time.
    [[nodiscard]] std::uint64_t gaps_filled() const noexcept { return gaps_filled_; }
    /// How long released packets waited in the hold, ns (not those flush() released).
    [[nodiscard]] metrics::histogram const& hold_latency() const noexcept { return *held_for_; }

private:
    struct slot {
        std::uint64_t sequence = 0;
        std::uint64_t arrived = 0;
        std::size_t size = 0;
    };

    void record_hold(slot const& h, std::uint64_t now) noexcept {
        if (h.arrived != 0 && now != 0) { // unstamped packets (user_rx_ns 0) have no wait to tell
            held_for_->record(now > h.arrived ? now - h.arrived : 0);
        }
    }

    std::span<std::byte const> bytes(std::size_t s) const noexcept {
        return {storage_.get() + s * max_packet_, held_[s].size};
    }

    template <typename Deliver>
    void hold(std::span<std::byte const> datagram, std::uint64_t sequence, std::uint64_t now,
              Deliver& deliver) {
        if (free_.empty()) {
            if (recovery_ != nullptr) {
                recovery_->abandon(now); // nothing more can wait for the gap
            }
            std::size_t const oldest = order_.front(); // full: the lowest sequence goes first
            order_.erase(order_.begin());
            record_hold(held_[oldest], now);
            deliver(bytes(oldest));
            free_.push_back(oldest);
        }
        std::size_t const s = free_.back();
        free_.pop_back();
        std::memcpy(storage_.get() + s * max_packet_, datagram.data(), datagram.size());
        held_[s] = {sequence, now, datagram.size()};
        auto at = std::upper_bound(
            order_.begin(), order_.end(), sequence,
            [this](std::uint64_t q, std::size_t o) { return q < held_[o].sequence; });
        order_.insert(at, s);
    }

    /// Rules 2 and 3's exception: input that could fill the gap in front of `h` is waiting. Any
    /// line's: one that delivered packets past the held sequence may still hold the missing
    /// one when the wire reorders.
    bool input_may_fill(slot const& h, std::uint64_t now) const noexcept {
        if (probe_ == nullptr || (now > h.arrived && now - h.arrived > hold_ns_ + max_defer_ns_)) {
            return false;
        }
        for (std::size_t line = 0; line < lines_; ++line) {
            if (probe_->waiting(line)) {
                return true;
            }
        }
        return false;
    }

    /// Rule 3 waits for the lines to move on: a probe tells waiting input, no recovery decides.
    bool paused_rule_applies() const noexcept { return probe_ != nullptr && recovery_ == nullptr; }

    /// A packet arrived on the lines more than hold_ns after `h` (by the arrivals' stamps).
    bool moved_on(slot const& h) const noexcept {
        return last_arrival_ > h.arrived && last_arrival_ - h.arrived > hold_ns_;
    }

    /// Rule 3's second exception: nothing arrived more than hold_ns after `h`, so the sender may
    /// not have sent the missing packet yet (descheduled between a packet and the one it
    /// reordered behind it); a timer alone calls the gap lost only past hold_ns + max_defer_ns.
    bool lines_paused(slot const& h, std::uint64_t now) const noexcept {
        return paused_rule_applies() && !moved_on(h) &&
               !(now > h.arrived && now - h.arrived > hold_ns_ + max_defer_ns_);
    }

    template <typename Deliver, typename Next>
    void release(std::uint64_t now, Deliver& deliver, Next& next, bool everything) {
        while (!order_.empty()) {
            std::size_t const s = order_.front();
            slot const& h = held_[s];
            if (h.sequence == far) { // it waited for the packets before it only
                order_.erase(order_.begin());
                if (!everything) {
                    record_hold(h, now);
                }
                deliver(bytes(s));
                free_.push_back(s);
                continue;
            }
            std::uint64_t const expected = next();
            bool const due = h.sequence <= expected;
            bool const lost_everywhere =
                lines_ >= 2 && (!reordering_ || now >= h.arrived + reorder_ns_) &&
                std::all_of(last_seen_.begin(),
                            last_seen_.begin() + static_cast<std::ptrdiff_t>(lines_),
                            [&](std::uint64_t seen) { return seen >= h.sequence; });
            bool const expired = now > h.arrived && now - h.arrived > hold_ns_;
            if (!(due || lost_everywhere || expired || everything)) {
                return;
            }
            // A recovery is asked at once, input waiting or not: a receiver behind a backlog
            // would otherwise fill the hold before asking, and lose a gap it could recover
            // (a gap the waiting input fills after all ends the recovery as filled).
            if (!due && !everything && recovery_ != nullptr &&
                recovery_->want(expected, h.sequence, now)) {
                return; // being recovered: keep holding
            }
            if (!(due || everything) && input_may_fill(h, now)) {
                return; // behind its input, not lost: held a little longer
            }
            if (!(due || everything || lost_everywhere) && lines_paused(h, now)) {
                return; // the lines paused: the missing packet may not have been sent yet
            }
            if (everything && !due && recovery_ != nullptr) {
                recovery_->abandon(now);
            }
            if (due) {
                ++gaps_filled_;
            }
            order_.erase(order_.begin());
            if (!everything) {
                record_hold(h, now);
            }
            deliver(bytes(s));
            free_.push_back(s);
        }
    }

    std::size_t lines_;
    std::size_t max_held_;
    std::size_t max_packet_;
    std::uint64_t hold_ns_;
    std::uint64_t reorder_ns_;
    metrics::histogram own_held_for_;
    metrics::histogram* held_for_ = &own_held_for_;
    std::unique_ptr<std::byte[]> storage_;
    std::vector<slot> held_;
    std::vector<std::size_t> order_; // held slots by ascending sequence
    std::vector<std::size_t> free_;
    std::array<std::uint64_t, max_lines> last_seen_{};
    std::uint64_t last_arrival_ = 0; // latest arrival stamp on the lines (rule 3)
    bool reordering_ = false;        // a line delivered a packet below one it delivered before
    std::uint64_t gaps_filled_ = 0;
    gap_recovery* recovery_ = nullptr;
    input_probe const* probe_ = nullptr;
    std::uint64_t max_defer_ns_ = 0;
};

} // namespace signet::md
