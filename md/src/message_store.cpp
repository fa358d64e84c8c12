#include <cstring>
#include <limits>
#include <stdexcept>

#include <signet/md/message_store.hpp>

namespace signet::md {

message_store::message_store(std::size_t max_messages, std::size_t max_bytes)
    : max_messages_(max_messages)
    , max_bytes_(max_bytes) {
    if (max_messages == 0 || max_messages > (std::size_t{1} << 40)) {
        throw std::invalid_argument("message_store: max_messages must be 1 to 2^40");
    }
    if (max_bytes == 0 || max_bytes > max_byte_capacity) {
        throw std::invalid_argument("message_store: max_bytes must be 1 to 2^46");
    }
    // Default-initialised: the pages are touched only as messages arrive.
    bytes_ = std::make_unique_for_overwrite<std::byte[]>(max_bytes);
    index_ = std::make_unique_for_overwrite<std::uint64_t[]>(max_messages);
}

std::uint64_t message_store::position_of(std::uint64_t entry) const noexcept {
    // The entry keeps the low 48 bits of an absolute position in [tail_, head_]; the window is
    // at most max_bytes_ < 2^48 long, so the distance back from head_ is exact modulo 2^48.
    std::uint64_t const low = entry >> 16;
    return head_ - ((head_ - low) & position_mask);
}

void message_store::evict_oldest() noexcept {
    ++first_;
    ++evicted_;
    tail_ = first_ == next_ ? head_ : position_of(index_[first_ % max_messages_]);
}

bool message_store::append(std::uint64_t sequence, std::span<std::byte const> message) noexcept {
    std::size_t const length = message.size();
    if (sequence == 0 || sequence == std::numeric_limits<std::uint64_t>::max() ||
        length > max_message_size || length > max_bytes_) {
        return false;
    }
    if (empty()) {
        first_ = next_ = sequence;
    } else if (sequence != next_) {
        return false;
    }
    if (size() == max_messages_) {
        evict_oldest();
    }
    // A message never wraps: when it does not fit before the ring's end, skip that tail.
    std::uint64_t position = head_;
    std::size_t const offset = static_cast<std::size_t>(position % max_bytes_);
    if (offset + length > max_bytes_) {
        position += max_bytes_ - offset;
    }
    while (!empty() && position + length - tail_ > max_bytes_) {
        evict_oldest();
    }
    if (empty()) {
        tail_ = position;
    }
    if (length != 0) {
        std::memcpy(bytes_.get() + position % max_bytes_, message.data(), length);
    }
    index_[next_ % max_messages_] = ((position & position_mask) << 16) | length;
    ++next_;
    head_ = position + length;
    return true;
}

std::optional<std::span<std::byte const>>
message_store::find(std::uint64_t sequence) const noexcept {
    if (!contains(sequence)) {
        return std::nullopt;
    }
    std::uint64_t const entry = index_[sequence % max_messages_];
    std::size_t const length = static_cast<std::size_t>(entry & 0xFFFF);
    std::size_t const offset = static_cast<std::size_t>(position_of(entry) % max_bytes_);
    return std::span<std::byte const>(bytes_.get() + offset, length);
}

void message_store::clear() noexcept {
    evicted_ += size();
    first_ = next_;
    tail_ = head_;
}

} // namespace signet::md
