#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <signet/md/ascii_field.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>

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

namespace {

stream_key key_of(moldudp64_session_id const& session) noexcept {
    stream_key key{};
    std::copy(session.begin(), session.end(), key.begin());
    return key;
}

} // namespace

moldudp64_session::moldudp64_session(std::uint64_t first_sequence) noexcept
    : moldudp64_session(moldudp64_session_options{.first_sequence = first_sequence}) {}

moldudp64_session::moldudp64_session(moldudp64_session_options const& options)
    : tracker_([&] {
        if (options.session.size() > moldudp64_session_size) {
            throw std::invalid_argument(
                "moldudp64_session: a session id has at most 10 characters");
        }
        if (options.resync_packets < 2) {
            throw std::invalid_argument("moldudp64_session: resync_packets must be at least 2");
        }
        sequence_tracker_options t{.first_sequence = options.first_sequence,
                                   .max_jump = options.max_sequence_jump,
                                   .resync_units = options.resync_packets};
        if (!options.session.empty()) {
            t.key = key_of(make_moldudp64_session_id(options.session));
        }
        return t;
    }()) {}

moldudp64_stats moldudp64_session::stats() const noexcept {
    sequence_stats const& t = tracker_.stats();
    moldudp64_stats s;
    s.packets = packets_;
    s.messages = t.items;
    s.gaps = t.gaps;
    s.missing_messages = t.missing;
    s.duplicate_packets = t.duplicates;
    s.partial_overlaps = t.overlaps;
    s.heartbeats = t.heartbeats;
    s.malformed_packets = malformed_packets_;
    s.foreign_session_packets = t.foreign;
    s.implausible_packets = t.implausible;
    s.resyncs = t.resyncs;
    s.next_sequence = tracker_.next();
    s.end_of_session = t.end_of_stream;
    return s;
}

std::string_view moldudp64_session::session() const noexcept {
    if (!tracker_.keyed()) {
        return {};
    }
    return {tracker_.key().data(), moldudp64_session_size};
}

std::optional<sequence_unit> moldudp64_frame(std::span<std::byte const> datagram) noexcept {
    std::optional<moldudp64_header> const header = moldudp64_peek_header(datagram);
    if (!header) {
        return std::nullopt;
    }
    bool const end = header->count == moldudp64_end_of_session_count;
    std::uint16_t const blocks = end ? 0 : header->count;
    if (header->sequence == 0 || !moldudp64_blocks_fill(datagram, blocks) ||
        header->sequence > std::numeric_limits<std::uint64_t>::max() - blocks) {
        return std::nullopt;
    }
    return sequence_unit{header->sequence, blocks, key_of(header->session), end};
}

moldudp64_session::plan
moldudp64_session::plan_packet(std::span<std::byte const> datagram) noexcept {
    ++packets_;
    plan p;
    std::optional<sequence_unit> const unit = moldudp64_frame(datagram);
    if (!unit) {
        ++malformed_packets_;
        return p;
    }
    sequence_step const step = tracker_.track(*unit);
    p.result.resynced = step.resynced;
    if (step.ignored) {
        p.result.kind = packet_kind::ignored;
        return p;
    }
    p.result.missing = step.missing;
    if (unit->end_of_stream) {
        p.result.kind = packet_kind::end_of_session;
        return p;
    }
    if (unit->count == 0) {
        p.result.kind = packet_kind::heartbeat;
        return p;
    }
    auto const blocks = static_cast<std::uint16_t>(unit->count);
    p.result.kind = packet_kind::data;
    p.first = unit->first;
    p.count = blocks;
    p.skip = static_cast<std::uint16_t>(step.skip); // at most `blocks`
    p.result.skipped = p.skip;
    p.result.delivered = static_cast<std::uint16_t>(blocks - p.skip);
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
