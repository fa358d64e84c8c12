#pragma once

/// MoldUDP64 (Nasdaq MoldUDP64 v1.00): the receive-side session layer and a send-side packer.
///
/// Packet: a 20-byte header — session (10 bytes ASCII, space padded), sequence number of the
/// first message (u64 big-endian), message count (u16 big-endian) — then `count` blocks of
/// (u16 big-endian length, that many bytes). Count 0 is a heartbeat, count 0xFFFF the end of the
/// session (no blocks); both carry the next expected sequence number.
///
/// moldudp64_session turns packets into messages delivered strictly in sequence order, once
/// each. Threading: none; one session per feed, never called concurrently (the parser contract
/// that owns it runs on one thread at a time). A/B line arbitration is one session fed the
/// packets of both lines in arrival order: whichever copy arrives second is a duplicate.
///
/// Algorithm (on_packet):
///   1. Validate the whole packet before delivering anything: header present, a sequence number
///      of at least 1 (MoldUDP64 numbers messages from 1; 0 would also read as "no sequence
///      yet", the late-join state, so a run of forged 0-sequence heartbeats could re-anchor the
///      session on whatever came next), every block inside the datagram, exactly `count`
///      blocks that exactly fill it, sequence + count not overflowing. Otherwise the packet is
///      malformed: counted, nothing delivered, no state change.
///   2-6. md::sequence_tracker, the sequencing every protocol shares (sequence_tracker.hpp has
///      the rules): plausibility against the anchor (the session id and next_sequence(); a
///      packet of another session, or more than max_sequence_jump away, is ignored and counted
///      unless the anchor was provisional or a run of packets proves the stream moved), late
///      join, gaps, duplicates and partial overlaps; heartbeats and end of session counted. The
///      packet's new messages are then delivered in order (next_sequence() is already past them).
///
/// Costs: two walks over the block headers (validate, then deliver), no allocation, no locks,
/// no exceptions (unless `deliver` throws). Memory: about 200 bytes.

#include <array>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

#include <signet/md/big_endian.hpp>
#include <signet/md/sequence_tracker.hpp>

namespace signet::md::nasdaq {

inline constexpr std::size_t moldudp64_header_size = 20;
inline constexpr std::size_t moldudp64_session_size = 10;
/// Message count of an end-of-session packet.
inline constexpr std::uint16_t moldudp64_end_of_session_count = 0xFFFF;
/// The largest message count of a data packet.
inline constexpr std::uint16_t moldudp64_max_messages = 0xFFFE;

using moldudp64_session_id = std::array<char, moldudp64_session_size>;

struct moldudp64_header {
    moldudp64_session_id session{};
    std::uint64_t sequence = 0;
    std::uint16_t count = 0;
};

/// A session id from text: the first 10 characters, space padded.
[[nodiscard]] moldudp64_session_id make_moldudp64_session_id(std::string_view session) noexcept;

/// The header of a datagram without consuming or validating the blocks; nullopt if shorter than
/// a header. For merging lines by sequence before feeding a session.
[[nodiscard]] std::optional<moldudp64_header>
moldudp64_peek_header(std::span<std::byte const> datagram) noexcept;
/// The header's sequence number, or 0 (never a valid sequence) if shorter than a header.
[[nodiscard]] std::uint64_t moldudp64_sequence(std::span<std::byte const> datagram) noexcept;
/// True if exactly `count` message blocks (2-byte length, then the message) fill `datagram`
/// after its header: the block check of on_packet's step 1.
[[nodiscard]] bool moldudp64_blocks_fill(std::span<std::byte const> datagram,
                                         std::uint16_t count) noexcept;
/// The header of a well-formed data packet — messages (not a heartbeat or end of session), a
/// sequence that is not 0 and does not wrap, blocks that exactly fill it — else nullopt. For
/// services that store or apply what a publisher sent, outside a session.
[[nodiscard]] std::optional<moldudp64_header>
moldudp64_data_header(std::span<std::byte const> datagram) noexcept;
/// A packet validated in full (step 1 of on_packet: a header, a sequence of at least 1, exactly
/// `count` blocks that exactly fill it, no overflow) as the unit md::sequence_tracker sequences:
/// its first sequence, its messages (0 for heartbeats and end of session), its session as the
/// stream key; nullopt when it is malformed. What a receiver frames before anything else.
[[nodiscard]] std::optional<sequence_unit>
moldudp64_frame(std::span<std::byte const> datagram) noexcept;
/// Calls f(sequence, message) for each message of a packet moldudp64_data_header() accepted.
template <typename F>
void for_each_moldudp64_message(std::span<std::byte const> datagram, moldudp64_header const& header,
                                F&& f) {
    std::size_t offset = moldudp64_header_size;
    for (std::uint32_t i = 0; i < header.count; ++i) {
        std::size_t const length = load_be16(datagram.data() + offset);
        f(header.sequence + i, datagram.subspan(offset + 2, length));
        offset += 2 + length;
    }
}

/// Session counters. A plain struct: the owner reads it, others get a copy.
struct moldudp64_stats {
    std::uint64_t packets = 0;           ///< every datagram passed to on_packet, malformed too
    std::uint64_t messages = 0;          ///< messages delivered
    std::uint64_t gaps = 0;              ///< gap events (a packet ahead of next_sequence)
    std::uint64_t missing_messages = 0;  ///< sum of the gap sizes (saturates: forged jumps)
    std::uint64_t duplicate_packets = 0; ///< data packets whose messages were all delivered before
    std::uint64_t partial_overlaps = 0;  ///< data packets with some messages delivered before
    std::uint64_t heartbeats = 0;
    std::uint64_t malformed_packets = 0;
    std::uint64_t foreign_session_packets = 0; ///< ignored: another session id (step 2)
    std::uint64_t implausible_packets = 0;     ///< ignored: sequence beyond max_sequence_jump
    std::uint64_t resyncs = 0;                 ///< anchor moves (step 2a, 2b)
    std::uint64_t next_sequence = 0; ///< 0 until a late-joining session saw its first packet
    bool end_of_session = false;
};

enum class packet_kind : std::uint8_t {
    data,
    heartbeat,
    end_of_session,
    malformed,
    ignored, ///< well formed but implausible: another session, or a sequence far away (step 2)
};

/// What one packet did.
struct packet_result {
    packet_kind kind = packet_kind::malformed;
    std::uint16_t delivered = 0; ///< messages passed to deliver
    std::uint16_t skipped = 0;   ///< messages delivered before (duplicates)
    std::uint64_t missing = 0;   ///< gap revealed by this packet; 0 if none
    bool resynced = false;       ///< this packet moved the anchor (step 2a, 2b)

    [[nodiscard]] bool gap() const noexcept { return missing != 0; }
    [[nodiscard]] bool duplicate() const noexcept { return skipped != 0 && delivered == 0; }
    [[nodiscard]] bool partial_overlap() const noexcept { return skipped != 0 && delivered != 0; }
};

/// void(std::uint64_t sequence, std::span<std::byte const> message); the span points into the
/// datagram and is valid during the call only.
template <typename Deliver>
concept moldudp64_deliver = std::invocable<Deliver&, std::uint64_t, std::span<std::byte const>>;

struct moldudp64_session_options {
    /// The first expected sequence; 0 (moldudp64_session::late_join) adopts the first packet's.
    std::uint64_t first_sequence = 1;
    /// The farthest (in messages) a packet's sequence may be from next_sequence() and still be
    /// taken at face value (step 2).
    std::uint64_t max_sequence_jump = 100'000;
    /// Contiguous implausible packets that prove the stream moved (step 2b); at least 2.
    std::uint32_t resync_packets = 3;
    /// Pins the session id (space padded to 10); empty: the first packet's, provisionally.
    std::string_view session{};
};

class moldudp64_session {
public:
    /// first_sequence 0 adopts the first valid packet's sequence (late join).
    static constexpr std::uint64_t late_join = 0;

    explicit moldudp64_session(std::uint64_t first_sequence = 1) noexcept;
    /// Throws std::invalid_argument for a session id longer than 10 or resync_packets < 2.
    explicit moldudp64_session(moldudp64_session_options const& options);

    /// Validates the whole datagram, then delivers its new messages in sequence order.
    template <moldudp64_deliver Deliver>
    packet_result on_packet(std::span<std::byte const> datagram, Deliver&& deliver) noexcept(
        std::is_nothrow_invocable_v<Deliver&, std::uint64_t, std::span<std::byte const>>);

    /// The sequence number the next new message must carry (0 before a late join).
    [[nodiscard]] std::uint64_t next_sequence() const noexcept { return tracker_.next(); }
    [[nodiscard]] moldudp64_stats stats() const noexcept;
    /// The session id fixed by the first valid packet (space padded); empty before that.
    [[nodiscard]] std::string_view session() const noexcept;

private:
    // Result of steps 1–4, computed out of line; the template only walks the blocks to deliver.
    struct plan {
        packet_result result;
        std::uint64_t first = 0; // sequence of the packet's first block
        std::uint16_t count = 0; // blocks in the packet (data only)
        std::uint16_t skip = 0;  // leading blocks already delivered
    };
    plan plan_packet(std::span<std::byte const> datagram) noexcept;

    sequence_tracker tracker_; // steps 2 to 6: md's shared sequencing and its guard
    std::uint64_t packets_ = 0;
    std::uint64_t malformed_packets_ = 0;
};

struct moldudp64_packer_options {
    /// Bytes per packet, header included (the UDP payload). At least header + 2 bytes.
    std::size_t max_payload = 1400;
    /// Messages per packet, 1 to moldudp64_max_messages.
    std::uint16_t max_messages = moldudp64_max_messages;
};

/// Builds MoldUDP64 packets into a caller buffer (send side; one thread). Usage: append() (or
/// message_space() + commit()) until it returns false, then finish() and send the bytes; the
/// next packet starts empty with next_sequence() advanced. Nothing allocates or throws after
/// construction.
class moldudp64_packer {
public:
    /// Throws std::invalid_argument if the buffer (or max_payload) cannot hold a header and one
    /// empty message, or max_messages is 0 or above moldudp64_max_messages. The buffer must
    /// outlive the packer; finish() returns views into it.
    moldudp64_packer(std::span<std::byte> buffer, std::string_view session,
                     std::uint64_t next_sequence = 1, moldudp64_packer_options options = {});

    /// The first 10 characters, space padded. Takes effect at the next finish().
    void set_session(std::string_view session) noexcept;
    /// Requires empty(): the sequence of the next appended message.
    void set_next_sequence(std::uint64_t sequence) noexcept;
    [[nodiscard]] std::uint64_t next_sequence() const noexcept { return next_sequence_; }

    /// Copies one message in; false (and nothing changes) if it does not fit this packet.
    [[nodiscard]] bool append(std::span<std::byte const> message) noexcept;
    /// Zero-copy append: write the message into message_space(), then commit(its length).
    /// message_space() is empty when the packet is full (or only a 0-byte message still fits).
    [[nodiscard]] std::span<std::byte> message_space() noexcept;
    void commit(std::size_t length) noexcept;
    /// The largest message an empty packet takes.
    [[nodiscard]] std::size_t max_message_size() const noexcept;

    [[nodiscard]] std::uint16_t message_count() const noexcept { return count_; }
    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
    /// Bytes of the packet so far, header included.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

    /// Writes the header and returns the packet (empty span if no message was appended);
    /// next_sequence() advances by the message count and the packer starts a new packet.
    [[nodiscard]] std::span<std::byte const> finish() noexcept;
    /// Requires empty(): a heartbeat (count 0, sequence next_sequence()).
    [[nodiscard]] std::span<std::byte const> heartbeat() noexcept;
    /// Requires empty(): an end-of-session packet (count 0xFFFF, sequence next_sequence()).
    [[nodiscard]] std::span<std::byte const> end_of_session() noexcept;

private:
    bool can_add_block() const noexcept;
    std::size_t room() const noexcept; // body bytes the next block may take; needs can_add_block()
    std::span<std::byte const> header_only(std::uint16_t count) noexcept;
    void write_header(std::uint16_t count) noexcept;

    std::span<std::byte> buffer_;
    moldudp64_session_id session_{};
    std::uint64_t next_sequence_;
    std::size_t limit_;
    std::uint16_t max_messages_;
    std::uint16_t count_ = 0;
    std::size_t size_ = moldudp64_header_size;
};

// ---------------------------------------------------------------------------------------------

template <moldudp64_deliver Deliver>
packet_result
moldudp64_session::on_packet(std::span<std::byte const> datagram, Deliver&& deliver) noexcept(
    std::is_nothrow_invocable_v<Deliver&, std::uint64_t, std::span<std::byte const>>) {
    plan const p = plan_packet(datagram);
    if (p.result.delivered == 0) {
        return p.result;
    }
    // plan_packet validated every block, so these reads stay inside the datagram.
    std::byte const* const data = datagram.data();
    std::size_t offset = moldudp64_header_size;
    for (std::uint16_t i = 0; i < p.count; ++i) {
        std::size_t const length = load_be16(data + offset);
        offset += 2;
        if (i >= p.skip) {
            deliver(p.first + i, datagram.subspan(offset, length));
        }
        offset += length;
    }
    return p.result;
}

} // namespace signet::md::nasdaq
