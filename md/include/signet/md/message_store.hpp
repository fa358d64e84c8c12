#pragma once

/// message_store: the last messages of one MoldUDP64 session, by sequence number, for a
/// re-request server (rerequest_server.hpp) to answer from.
///
/// Bounds: at most max_messages messages and max_bytes ring bytes, both rings allocated once at
/// construction; append() evicts the oldest messages until the new one fits both. A message
/// never wraps around the ring's end: when it does not fit before the end, that tail of the
/// ring is skipped, and the window of stored messages holds at most one such skip, shorter than
/// the message after it. So with messages of at most L bytes the store holds the last
/// min(max_messages, (max_bytes - L + 1) / L) of them, and max_bytes = max_messages * L + L
/// keeps exactly the last max_messages.
///
/// Threading: none. One writer; readers must not run concurrently with append() (md_feed's
/// rerequest_service appends and reads on its own thread). Costs: append() is one memcpy plus O(1)
/// index work per evicted message; find() is O(1). Nothing allocates or throws after
/// construction. Memory: max_bytes + 8 * max_messages bytes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

namespace signet::md {

class message_store {
public:
    /// The largest message: a MoldUDP64 block length is 16 bits.
    static constexpr std::size_t max_message_size = 0xFFFF;
    /// The largest byte ring (positions are kept in 48 bits).
    static constexpr std::size_t max_byte_capacity = std::size_t{1} << 46;

    /// Throws std::invalid_argument unless 1 <= max_messages <= 2^40 and
    /// 1 <= max_bytes <= max_byte_capacity; std::bad_alloc if the rings cannot be allocated.
    message_store(std::size_t max_messages, std::size_t max_bytes);
    message_store(message_store const&) = delete;
    message_store& operator=(message_store const&) = delete;

    /// Stores a copy of `message` as `sequence`, evicting the oldest messages as needed. The
    /// sequence must be next_sequence() unless the store is empty (then any sequence >= 1
    /// starts it). False, and nothing changes, for another sequence, sequence 0 or 2^64 - 1, or
    /// a message longer than max_message_size or max_bytes.
    [[nodiscard]] bool append(std::uint64_t sequence, std::span<std::byte const> message) noexcept;

    /// The message stored as `sequence`, valid until the next append() or clear(); nullopt if
    /// it was evicted or never stored (a stored 0-byte message is an empty span, not nullopt).
    [[nodiscard]] std::optional<std::span<std::byte const>>
    find(std::uint64_t sequence) const noexcept;
    [[nodiscard]] bool contains(std::uint64_t sequence) const noexcept {
        return sequence >= first_ && sequence < next_;
    }

    /// Forgets every message (the rings stay allocated); the next append() starts anew.
    void clear() noexcept;

    /// The oldest stored sequence; equals next_sequence() when empty.
    [[nodiscard]] std::uint64_t first_sequence() const noexcept { return first_; }
    /// One past the newest stored sequence (0 before the first append()).
    [[nodiscard]] std::uint64_t next_sequence() const noexcept { return next_; }
    [[nodiscard]] std::size_t size() const noexcept {
        return static_cast<std::size_t>(next_ - first_);
    }
    [[nodiscard]] bool empty() const noexcept { return first_ == next_; }
    /// Ring bytes in use, skipped ring tails included.
    [[nodiscard]] std::size_t bytes_used() const noexcept {
        return static_cast<std::size_t>(head_ - tail_);
    }
    [[nodiscard]] std::size_t max_messages() const noexcept { return max_messages_; }
    [[nodiscard]] std::size_t max_bytes() const noexcept { return max_bytes_; }
    /// Messages evicted so far (by either bound, or by clear()).
    [[nodiscard]] std::uint64_t evicted() const noexcept { return evicted_; }

private:
    static constexpr std::uint64_t position_mask = (std::uint64_t{1} << 48) - 1;

    [[nodiscard]] std::uint64_t position_of(std::uint64_t entry) const noexcept;
    void evict_oldest() noexcept;

    std::size_t max_messages_;
    std::size_t max_bytes_;
    std::unique_ptr<std::byte[]> bytes_;
    // Per message, at index sequence % max_messages: its ring position (low 48 bits of the
    // absolute byte position) << 16 | its length.
    std::unique_ptr<std::uint64_t[]> index_;
    std::uint64_t first_ = 0;
    std::uint64_t next_ = 0;
    std::uint64_t head_ = 0; // absolute byte position where the next message may start
    std::uint64_t tail_ = 0; // absolute byte position of the oldest message (head_ when empty)
    std::uint64_t evicted_ = 0;
};

} // namespace signet::md
