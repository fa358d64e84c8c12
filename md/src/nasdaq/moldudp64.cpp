#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <signet/core/saturating.hpp>
#include <signet/md/ascii_field.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/sequence_tracker.hpp>

namespace signet::md::nasdaq {

constexpr std::size_t block_header_size = 2;

bool moldudp64_blocks_fill(std::span<std::byte const> datagram, std::uint16_t count) noexcept {
    std::size_t const size = datagram.size();
    std::byte const* const data = datagram.data();
    std::size_t offset = moldudp64_header_size;
    for (std::uint32_t i = 0; i < count; ++i) {
        if (size - offset < block_header_size) {
            return false;
        }
        std::size_t const length = load_be16(data + offset);
        offset += block_header_size;
        if (size - offset < length) {
            return false;
        }
        offset += length;
    }
    return offset == size;
}

std::optional<moldudp64_header>
moldudp64_data_header(std::span<std::byte const> datagram) noexcept {
    std::optional<moldudp64_header> header = moldudp64_peek_header(datagram);
    if (!header || header->count == 0 || header->count == moldudp64_end_of_session_count ||
        header->sequence == 0 ||
        header->sequence > std::numeric_limits<std::uint64_t>::max() - header->count ||
        !moldudp64_blocks_fill(datagram, header->count)) {
        return std::nullopt;
    }
    return header;
}

moldudp64_session_id make_moldudp64_session_id(std::string_view session) noexcept {
    return make_alpha<moldudp64_session_size>(session).chars;
}

std::optional<moldudp64_header>
moldudp64_peek_header(std::span<std::byte const> datagram) noexcept {
    if (datagram.size() < moldudp64_header_size) {
        return std::nullopt;
    }
    moldudp64_header header;
    std::memcpy(header.session.data(), datagram.data(), moldudp64_session_size);
    header.sequence = load_be64(datagram.data() + 10);
    header.count = load_be16(datagram.data() + 18);
    return header;
}

std::uint64_t moldudp64_sequence(std::span<std::byte const> datagram) noexcept {
    if (datagram.size() < moldudp64_header_size) {
        return 0;
    }
    return load_be64(datagram.data() + 10);
}

moldudp64_session::moldudp64_session(std::uint64_t first_sequence) noexcept
    : adopt_sequence_(first_sequence == late_join) {
    stats_.next_sequence = first_sequence;
}

moldudp64_session::moldudp64_session(moldudp64_session_options const& options)
    : moldudp64_session(options.first_sequence) {
    if (options.session.size() > moldudp64_session_size) {
        throw std::invalid_argument("moldudp64_session: a session id has at most 10 characters");
    }
    if (options.resync_packets < 2) {
        throw std::invalid_argument("moldudp64_session: resync_packets must be at least 2");
    }
    max_jump_ = options.max_sequence_jump;
    resync_packets_ = options.resync_packets;
    if (!options.session.empty()) {
        session_ = make_moldudp64_session_id(options.session);
        have_session_ = true;
        pinned_ = true;
    }
}

bool moldudp64_session::plausible(moldudp64_header const& header, std::uint16_t blocks,
                                  packet_result& result) noexcept {
    auto const consistent = [&] {
        // Whether the packet agrees with the anchor.
        if (have_session_ && header.session != session_) {
            return false;
        }
        if (adopt_sequence_) {
            return true; // a late join takes any sequence
        }
        std::uint64_t const next = stats_.next_sequence;
        std::uint64_t const distance =
            header.sequence > next ? header.sequence - next : next - header.sequence;
        return distance <= max_jump_;
    };
    if (consistent()) {
        candidate_.packets = 0;
        return true;
    }
    bool const foreign = have_session_ && header.session != session_;
    // 2a: the anchor rests on one packet: a data packet that agrees with what was known
    // before it (the configured sequence; anything on a late join) replaces it. Heartbeats
    // never do, so stale heartbeats interleaved with a young stream cannot flip it.
    std::uint64_t const base = sequence_from_packet_ ? header.sequence : provisional_base_;
    std::uint64_t const from_base =
        header.sequence > base ? header.sequence - base : base - header.sequence;
    if (provisional_ && !(foreign && pinned_) && blocks != 0 && from_base <= max_jump_) {
        session_ = header.session;
        if (sequence_from_packet_) {
            adopt_sequence_ = true; // step 3 takes this packet's sequence
        } else {
            stats_.next_sequence = provisional_base_; // as configured, before that one packet
        }
        ++stats_.resyncs;
        result.resynced = true;
        if (consistent()) {
            candidate_.packets = 0;
            return true;
        }
    }
    // 2b: ignored, unless it completes a contiguous run of ignored packets.
    if (candidate_.packets != 0 && header.session == candidate_.session &&
        header.sequence == candidate_.next) {
        ++candidate_.packets;
    } else {
        candidate_ = {header.session, header.sequence, header.sequence, 1};
    }
    candidate_.next = header.sequence + blocks;
    if (candidate_.packets >= resync_packets_ && !(pinned_ && candidate_.session != session_)) {
        if (!adopt_sequence_ && candidate_.first > stats_.next_sequence) {
            ++stats_.gaps; // the jump itself; the run's earlier packets are the next gap
            stats_.missing_messages =
                saturating_add(stats_.missing_messages, candidate_.first - stats_.next_sequence);
        }
        session_ = candidate_.session;
        have_session_ = true;
        stats_.next_sequence = candidate_.first;
        adopt_sequence_ = false;
        provisional_ = false;
        candidate_.packets = 0;
        ++stats_.resyncs;
        result.resynced = true;
        return true;
    }
    if (foreign) {
        ++stats_.foreign_session_packets;
    } else {
        ++stats_.implausible_packets;
    }
    return false;
}

std::string_view moldudp64_session::session() const noexcept {
    if (!have_session_) {
        return {};
    }
    return {session_.data(), session_.size()};
}

moldudp64_session::plan
moldudp64_session::plan_packet(std::span<std::byte const> datagram) noexcept {
    ++stats_.packets;
    plan p;
    std::optional<moldudp64_header> const header = moldudp64_peek_header(datagram);
    if (!header) {
        ++stats_.malformed_packets;
        return p;
    }
    bool const end = header->count == moldudp64_end_of_session_count;
    std::uint16_t const blocks = end ? 0 : header->count;
    bool const well_formed = header->sequence != 0 && moldudp64_blocks_fill(datagram, blocks) &&
                             header->sequence <= std::numeric_limits<std::uint64_t>::max() - blocks;
    if (!well_formed) {
        ++stats_.malformed_packets;
        return p;
    }
    if (!plausible(*header, blocks, p.result)) {
        p.result.kind = packet_kind::ignored;
        return p;
    }
    if (!p.result.resynced) {
        provisional_ = false; // a consistent packet confirms a provisional anchor
        if (!have_session_) {
            session_ = header->session; // the first packet's, provisionally (step 2a)
            have_session_ = true;
            provisional_ = true;
            provisional_base_ = stats_.next_sequence;
        }
    }
    if (adopt_sequence_) {
        stats_.next_sequence = header->sequence;
        adopt_sequence_ = false;
        sequence_from_packet_ = true;
        provisional_ = true;
    }
    sequence_step const step = locate(stats_.next_sequence, header->sequence, blocks);
    if (step.missing != 0) {
        p.result.missing = step.missing;
        ++stats_.gaps;
        stats_.missing_messages = saturating_add(stats_.missing_messages, step.missing);
        stats_.next_sequence = header->sequence;
    }
    if (end) {
        p.result.kind = packet_kind::end_of_session;
        stats_.end_of_session = true;
        // The next session may start anywhere: its first packet re-anchors (step 2a).
        provisional_ = !pinned_;
        sequence_from_packet_ = true;
        return p;
    }
    if (blocks == 0) {
        p.result.kind = packet_kind::heartbeat;
        ++stats_.heartbeats;
        return p;
    }
    p.result.kind = packet_kind::data;
    p.first = header->sequence;
    p.count = blocks;
    p.skip = static_cast<std::uint16_t>(step.skip); // at most `blocks`
    p.result.skipped = p.skip;
    p.result.delivered = static_cast<std::uint16_t>(blocks - p.skip);
    if (p.result.delivered == 0) {
        ++stats_.duplicate_packets;
    } else if (p.skip != 0) {
        ++stats_.partial_overlaps;
    }
    return p;
}

moldudp64_packer::moldudp64_packer(std::span<std::byte> buffer, std::string_view session,
                                   std::uint64_t next_sequence, moldudp64_packer_options options)
    : buffer_(buffer)
    , session_(make_moldudp64_session_id(session))
    , next_sequence_(next_sequence)
    , limit_(std::min(buffer.size(), options.max_payload))
    , max_messages_(options.max_messages) {
    if (limit_ < moldudp64_header_size + block_header_size) {
        throw std::invalid_argument(
            "moldudp64_packer: buffer and max_payload must hold at least 22 bytes");
    }
    if (max_messages_ == 0 || max_messages_ > moldudp64_max_messages) {
        throw std::invalid_argument("moldudp64_packer: max_messages must be 1 to 65534");
    }
}

void moldudp64_packer::set_session(std::string_view session) noexcept {
    session_ = make_moldudp64_session_id(session);
}

void moldudp64_packer::set_next_sequence(std::uint64_t sequence) noexcept {
    assert(empty() && "Can only call set_next_sequence() between packets");
    next_sequence_ = sequence;
}

std::size_t moldudp64_packer::max_message_size() const noexcept {
    return std::min<std::size_t>(limit_ - moldudp64_header_size - block_header_size, 0xFFFF);
}

bool moldudp64_packer::can_add_block() const noexcept {
    return count_ < max_messages_ && limit_ - size_ >= block_header_size;
}

std::size_t moldudp64_packer::room() const noexcept {
    return std::min<std::size_t>(limit_ - size_ - block_header_size, 0xFFFF);
}

std::span<std::byte> moldudp64_packer::message_space() noexcept {
    if (!can_add_block()) {
        return {};
    }
    return buffer_.subspan(size_ + block_header_size, room());
}

void moldudp64_packer::commit(std::size_t length) noexcept {
    assert(can_add_block() && length <= room() && "commit() needs a length within message_space()");
    store_be16(buffer_.data() + size_, static_cast<std::uint16_t>(length));
    size_ += block_header_size + length;
    ++count_;
}

bool moldudp64_packer::append(std::span<std::byte const> message) noexcept {
    if (!can_add_block() || message.size() > room()) {
        return false;
    }
    if (!message.empty()) {
        std::memcpy(buffer_.data() + size_ + block_header_size, message.data(), message.size());
    }
    commit(message.size());
    return true;
}

void moldudp64_packer::write_header(std::uint16_t count) noexcept {
    std::memcpy(buffer_.data(), session_.data(), session_.size());
    store_be64(buffer_.data() + 10, next_sequence_);
    store_be16(buffer_.data() + 18, count);
}

std::span<std::byte const> moldudp64_packer::finish() noexcept {
    if (count_ == 0) {
        return {};
    }
    write_header(count_);
    std::span<std::byte const> const packet = buffer_.first(size_);
    next_sequence_ += count_;
    count_ = 0;
    size_ = moldudp64_header_size;
    return packet;
}

std::span<std::byte const> moldudp64_packer::header_only(std::uint16_t count) noexcept {
    assert(empty() && "Can only send a heartbeat or end of session between packets");
    write_header(count);
    return buffer_.first(moldudp64_header_size);
}

std::span<std::byte const> moldudp64_packer::heartbeat() noexcept {
    return header_only(0);
}

std::span<std::byte const> moldudp64_packer::end_of_session() noexcept {
    return header_only(moldudp64_end_of_session_count);
}

} // namespace signet::md::nasdaq
