#pragma once

// memory_line: the writer's end of one line of a feed on backend_kind::memory. A thread of yours
// (one writer per line) hands packets to the feed's parser contract without a socket, through
// the runtime's own path: the line's packet pool and spsc_fixed_queue<packet>, the parser
// contract, the workers. Tests, benchmarks and replay tools share it.
//
//   auto line = rt.memory_line(feed);           // after add_feed, before or after start()
//   while (...) {
//       line.write([&](std::span<std::byte> buffer) { return fill(buffer); });
//       line.flush();                           // once per burst: schedules the parser
//   }
//
// Threading: write() and flush() from one thread per line at a time (the queue's producer).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include <signet/net/detail/delivery.hpp>
#include <signet/net/detail/feed_state.hpp>

namespace signet::net {

class memory_line {
public:
    explicit memory_line(detail::line_state& line) noexcept
        : line_(&line) {}

    /// Writes one packet: `fill(std::span<std::byte> buffer)` writes the payload into a pool
    /// buffer of the feed's buffer_size and returns its length (at most buffer.size()). The
    /// packet reaches the parser after the next flush(). False when it was not written: no
    /// free buffer, or the queue is full — under full_policy::backpressure nothing is counted
    /// (write again later); under full_policy::drop the packet is counted as dropped.
    template <typename Fill>
    requires std::is_invocable_r_v<std::size_t, Fill&, std::span<std::byte>>
    bool write(Fill&& fill,
               std::uint64_t rx_ns = 0) noexcept(noexcept(fill(std::span<std::byte>{})));

    /// Copies `payload` (truncated to the buffer size and counted so) as one packet.
    bool write(std::span<std::byte const> payload, std::uint64_t rx_ns = 0) noexcept {
        return write(
            [payload](std::span<std::byte> buffer) noexcept {
                std::size_t const n = std::min(payload.size(), buffer.size());
                std::memcpy(buffer.data(), payload.data(), n);
                return payload.size();
            },
            rx_ns);
    }

    /// Schedules the parser contract if anything was written since the last flush.
    void flush() noexcept {
        if (written_) {
            written_ = false;
            line_->feed.parser.schedule();
        }
    }

private:
    detail::line_state* line_;
    bool written_ = false;
};

template <typename Fill>
requires std::is_invocable_r_v<std::size_t, Fill&, std::span<std::byte>>
bool memory_line::write(Fill&& fill,
                        std::uint64_t rx_ns) noexcept(noexcept(fill(std::span<std::byte>{}))) {
    detail::line_state& line = *line_;
    if (line.feed.on_full == full_policy::backpressure &&
        line.ready.size() == line.ready.capacity()) {
        return false;
    }
    std::uint32_t index = 0;
    if (line.stash.empty()) {
        if (!line.pool.returns().pop(index)) {
            return false; // every buffer is in flight
        }
    } else {
        index = line.stash.back();
        line.stash.pop_back();
    }
    std::size_t const capacity = line.pool.buffer_size();
    std::size_t const length = fill(std::span<std::byte>(line.pool.buffer(index), capacity));
    packet p;
    p.data = line.pool.buffer(index);
    p.size = static_cast<std::uint32_t>(std::min(length, capacity));
    p.truncated = length > capacity;
    p.buffer = index;
    p.user_rx_ns = rx_ns;
    p.line = line.index;
    if (detail::deliver(line, p) == detail::delivery::queued) {
        written_ = true;
        return true;
    }
    line.stash.push_back(index); // dropped: the buffer is free again
    return false;
}

} // namespace signet::net
