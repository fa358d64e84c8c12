#pragma once

// Hot standby through NATS ([publish] standby; docs/publishing.md "Standby groups") as its
// consumers and operators see it: where each published event stands in its feed
// (nats_position, carried by every NATS message, in and out of a group) and what a member of
// a group did so far (standby_stats: receiver::standby(), the summary's publish.standby, the
// stats line "publish standby").

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <signet/receiver/publish.hpp>

namespace signet::receiver {

/// Where a published event stands in its feed's stream of published events. `sequence` is the
/// event's own (md::event::sequence: the feed message that caused it); `index` counts the
/// published events of that sequence from 0; `previous` is the sequence of the last published
/// event of an earlier sequence (the same for every event of one sequence; 0 before the first). A
/// consumer of a whole feed (signet.<feed>.>) checks each message against the last one it took,
/// `last`:
///   - index > 0: the message must be (last.sequence, last.index + 1);
///   - index == 0: `previous` must be last.sequence (and sequence > previous);
///   - anything else is a hole (ahead) or a double (at or behind `last`): it never should be;
///   - `after_loss` set: the publisher's queue lost events before it (a hole, said so);
///   - `resync` set: a member took over without the history to continue; this message is one
///     instrument's current state (definition, status, bbo) as of (sequence, index); take it
///     and the next unflagged message starts a new chain (its `previous` is this sequence).
/// Binary messages carry it in their header (header size 24, after the 8 bytes of
/// nats_layout: previous u64, index u32, flags u16, 2 spare, little-endian); JSON messages as
/// the fields "index", "previous" and "resync" (when set).
struct nats_position {
    static constexpr std::size_t header = 24;  ///< the binary header's size with it
    static constexpr std::uint16_t resync = 1; ///< flags: a resynchronization's state
    /// flags: the publisher's own queue lost events just before this one (counted as the
    /// nats subscriber's drops): a hole, shown as one.
    static constexpr std::uint16_t after_loss = 2;
    std::uint64_t sequence = 0;
    std::uint32_t index = 0;
    std::uint64_t previous = 0;
    std::uint16_t flags = 0;

    /// Strict order of positions in a feed: (sequence, index).
    [[nodiscard]] friend constexpr bool operator<(nats_position const& a,
                                                  nats_position const& b) noexcept {
        return a.sequence != b.sequence ? a.sequence < b.sequence : a.index < b.index;
    }
    /// Writes a binary message: nats_layout's 8 bytes with header size 24, then this
    /// position's fields, then the 64-byte event (whose sequence is this position's).
    static void write(md::event const& e, nats_position const& p,
                      std::span<char, header + sizeof(md::event)> out) noexcept {
        std::memcpy(out.data(), nats_layout::magic, 4);
        std::uint16_t const v = nats_layout::version;
        std::uint16_t const h = header;
        std::memcpy(out.data() + 4, &v, 2);
        std::memcpy(out.data() + 6, &h, 2);
        std::memcpy(out.data() + 8, &p.previous, 8);
        std::memcpy(out.data() + 16, &p.index, 4);
        std::memcpy(out.data() + 20, &p.flags, 2);
        std::memset(out.data() + 22, 0, 2);
        std::memcpy(out.data() + header, &e, sizeof e);
    }
    /// The position of a binary message (nullopt: not a message of this layout, or one
    /// written before positions, header size 8).
    [[nodiscard]] static std::optional<nats_position> read(std::span<char const> in) noexcept {
        std::uint16_t h = 0;
        auto const e = nats_layout::read(in);
        if (!e) {
            return std::nullopt;
        }
        std::memcpy(&h, in.data() + 6, 2);
        if (h < header) {
            return std::nullopt;
        }
        nats_position p;
        p.sequence = e->sequence;
        std::memcpy(&p.previous, in.data() + 8, 8);
        std::memcpy(&p.index, in.data() + 16, 4);
        std::memcpy(&p.flags, in.data() + 20, 2);
        return p;
    }
};

/// One feed of a standby group as this member sees it.
struct standby_feed_stats {
    std::string feed;
    std::string role;   ///< "leader" (publishing), "follower", "suspended" (a leader that
                        ///< could not renew in time, or lost its connection: not publishing)
    std::string holder; ///< the lease's holder as last read ("" : none seen)
    std::uint64_t takeovers = 0;       ///< leaderships this member took
    std::uint64_t resyncs = 0;         ///< takeovers that published the current state instead of
                                       ///< the missing events (its history did not reach back)
    std::uint64_t resync_messages = 0; ///< messages those resynchronizations published
    double last_takeover_ms = 0;       ///< from finding the lease free to publishing again
    std::uint64_t resumed_after_sequence = 0; ///< the last position the group had published
    std::uint32_t resumed_after_index = 0;    ///< at the last takeover (0/0: none)
    std::uint64_t history = 0;                ///< events in its history (at most standby_history)
    std::uint64_t lease_errors = 0;           ///< lease requests that failed (timeouts, no server)
};

struct standby_stats {
    std::string group;
    std::string member; ///< this member's name (standby_name)
    std::vector<standby_feed_stats> feeds;
};

/// The group in one line ("publish standby GROUP (member): feed F leader (holder ...; N
/// takeovers, ...)"): the stats line and the text summary (summary.cpp).
[[nodiscard]] std::string standby_line(standby_stats const& s);

} // namespace signet::receiver
