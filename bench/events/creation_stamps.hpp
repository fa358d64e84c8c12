#pragma once

// creation_stamps: when each message's first event was made, for a consumer on another thread
// that wants its latency from the event's making rather than from the packet's stamp
// (signet_event_latency --path memory, the queued design).
//
// One writer, the parser's thread: an inline subscription placed ahead of the consumer's
// (a feed's subscriptions run in the order they were made) calls stamp() with each event
// before the dispatcher hands that event on. One reader, the consumer: made() looks its
// event's message up by sequence. A slot is a cache line of its own (two on x86-64: the
// adjacent-line prefetcher pulls lines in pairs), indexed by the sequence modulo
// the ring's size. The writer clears the slot's sequence, fences (release), stores the time,
// then the sequence (release); the reader loads the sequence (acquire: the time stored before
// it is visible), the time, fences (acquire), then loads the sequence again. If the time it
// read came from a later message being written into the slot, that write follows the clearing
// and the writer's fence, so the reader's fence makes its second load see the cleared (or a
// later) sequence, never the one it wants: an equal second load means the time is the one
// stored with that sequence. A lookup that fails (a reader more than the ring's size behind
// the writer) is counted by the caller.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include <signet/core/cache_line.hpp>
#include <signet/md/events.hpp>

namespace signet::bench {

class creation_stamps {
public:
    /// `slots`: a power of two, more than the messages a consumer can fall behind by (its
    /// queue's capacity in events: every message the consumer gets has an event in it).
    explicit creation_stamps(std::size_t slots)
        : mask_(slots - 1)
        , slots_(std::make_unique<slot[]>(slots)) {}

    /// The writer: stamps `now` for the first event of each message (a new sequence).
    void stamp(md::event const& e, std::uint64_t now) noexcept {
        if (e.sequence == last_) {
            return;
        }
        last_ = e.sequence;
        slot& s = slots_[e.sequence & mask_];
        // relaxed: a reader checks the sequence around its load of the time.
        s.sequence.store(0, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release); // the 0 before the new time
        s.made_ns.store(now, std::memory_order_relaxed);
        // release: pairs with made()'s acquire loads; the time is stored.
        s.sequence.store(e.sequence, std::memory_order_release);
    }

    /// The reader: when the message `sequence` made its first event, if its slot still holds
    /// it.
    [[nodiscard]] std::optional<std::uint64_t> made(std::uint64_t sequence) const noexcept {
        slot const& s = slots_[sequence & mask_];
        // acquire: pairs with stamp()'s release store; the time stored before it is visible.
        if (s.sequence.load(std::memory_order_acquire) != sequence) {
            return std::nullopt;
        }
        std::uint64_t const made = s.made_ns.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire); // the time before the re-check
        if (s.sequence.load(std::memory_order_relaxed) != sequence) {
            return std::nullopt; // being written again meanwhile
        }
        return made;
    }

private:
    struct alignas(destructive_interference_size) slot {
        std::atomic<std::uint64_t> sequence{0};
        std::atomic<std::uint64_t> made_ns{0};
    };
    std::uint64_t mask_;
    std::uint64_t last_ = 0; // the writer's own
    std::unique_ptr<slot[]> slots_;
};

} // namespace signet::bench
