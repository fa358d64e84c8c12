#pragma once

// fault_injector: the fault injection of a publisher's data packets, counted from 1 by packet:
// every Nth is not sent (on line A, B or both), sent twice, or sent after the packet that
// follows it. A publisher hands it each data packet with the send it uses; the injector
// decides, holds a reordered packet until the next one (flush() sends it at the end; on two
// lines the pair goes out line by line, A's both before B's), and says what it did so the
// publisher can count.
//
// Threading: the publisher's thread. Costs: the held packet's buffer is reserved at
// construction (any datagram); nothing allocates per packet.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace signet::publisher {

/// The line(s) a dropped packet is kept off.
enum class fault_line : std::uint8_t { a, b, both };
/// "a", "b" or "both"; nullopt otherwise.
[[nodiscard]] std::optional<fault_line> parse_fault_line(std::string_view text) noexcept;

struct fault_options {
    std::uint64_t drop_every = 0; ///< do not send every Nth data packet; 0: off
    fault_line drop_line = fault_line::both;
    std::uint64_t duplicate_every = 0; ///< send every Nth data packet twice; 0: off
    std::uint64_t reorder_every = 0;   ///< send every Nth after the next one; 0: off
};

/// What happened to one packet.
struct fault_outcome {
    bool dropped = false;          ///< kept off every line
    bool dropped_one_line = false; ///< kept off one line of two
    bool duplicated = false;
    bool reordered = false;
};

class fault_injector {
public:
    explicit fault_injector(fault_options const& options);

    /// One data packet on `lines` lines (1 or 2): sends it (and a packet held for reordering)
    /// through send(datagram, skip_a, skip_b, copies) -> bool as the faults say. False when a
    /// send failed.
    template <typename Send>
    bool emit(std::span<std::byte const> packet, std::size_t lines, Send&& send,
              fault_outcome& outcome);
    /// Sends a packet still held for reordering (the end of a run). False when the send failed.
    template <typename Send>
    bool flush(Send&& send) {
        if (!holding_) {
            return true;
        }
        holding_ = false;
        return send(std::span<std::byte const>(held_), false, false, held_copies_);
    }

private:
    fault_options options_;
    std::uint64_t index_ = 0;
    std::vector<std::byte> held_;
    int held_copies_ = 1;
    bool holding_ = false;
};

template <typename Send>
bool fault_injector::emit(std::span<std::byte const> packet, std::size_t lines, Send&& send,
                          fault_outcome& outcome) {
    fault_options const& f = options_;
    ++index_;
    bool const drop = f.drop_every != 0 && index_ % f.drop_every == 0;
    bool const drop_a = drop && f.drop_line != fault_line::b;
    bool const drop_b = drop && f.drop_line != fault_line::a;
    outcome = {};
    outcome.dropped = drop_a && (lines == 1 || drop_b);
    outcome.dropped_one_line = drop && !outcome.dropped;
    outcome.duplicated =
        !outcome.dropped && f.duplicate_every != 0 && index_ % f.duplicate_every == 0;
    outcome.reordered =
        !outcome.dropped && !holding_ && f.reorder_every != 0 && index_ % f.reorder_every == 0;
    if (outcome.reordered) {
        held_.assign(packet.begin(), packet.end());
        held_copies_ = outcome.duplicated ? 2 : 1;
        holding_ = true;
        return true; // goes out after the next packet
    }
    int const copies = outcome.duplicated ? 2 : 1;
    if (!holding_) {
        return outcome.dropped || send(packet, drop_a, drop_b, copies);
    }
    // Line by line: this packet, then the held one, on A before anything reaches B. A sender
    // descheduled within the pair then never shows both lines past the held packet (which a
    // receiver may call lost after a short wait), only line A ahead of it.
    holding_ = false;
    std::span<std::byte const> const held(held_);
    return send(packet, drop_a, true, copies) && send(held, false, true, held_copies_) &&
           (lines == 1 ||
            (send(packet, true, drop_b, copies) && send(held, true, false, held_copies_)));
}

} // namespace signet::publisher
