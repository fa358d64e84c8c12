#pragma once

// The shared-memory segment a receiver publishes into (config `[publish] shm = "NAME"`): its
// layout, version 1. docs/publishing.md describes it for readers in other languages (the Python
// reader, scripts/signet_shm.py, reads exactly this); shm_reader.hpp is the C++ reader.
//
//   offset 0              segment_header (4096 bytes): magic, version, generation, state, and
//                         a feed_entry per feed (where its region starts, its sizes)
//   feed_entry::offset    the feed's region: feed_header (128 bytes), then `instruments`
//                         instrument_slot records (by feed-local instrument id), then `events`
//                         event_slot records (a ring)
//
// Every field is little-endian, naturally aligned, at a fixed offset (static_asserts below).
//
// Memory orders (one writer per feed: its parser contract; any number of readers, which map
// the segment read-only and so can neither slow nor corrupt the writer):
//   - segment_header::state: the writer fills everything else, then stores state_live with
//     release; a reader that loads live with acquire sees a complete header. At a clean stop
//     the writer stores state_closed (release). A restarted receiver unlinks the name and
//     creates a new segment with a new generation: a reader notices a closed state, or a name
//     that now opens a segment of another generation.
//   - instrument_slot: a seqlock, written at the end of a parser run (one consistent state:
//     docs/publishing.md, "What a slot's sequence guarantees"). The writer stores version + 1
//     (odd: writing; relaxed), the fields as release stores of 8-byte words, then version + 2
//     with release. A reader loads version with acquire (odd: retry), copies the fields as
//     acquire loads of 8-byte words, loads version again (relaxed): unchanged means the copy
//     is not torn, else it retries (and counts the retry). Why that is enough: a word's acquire
//     load keeps the second version load after it; a reader that read a word of a later write
//     synchronizes with that word's release store, which comes after the odd version store, so its
//     second load sees the version changed. (Word-wise orders instead of fences: ThreadSanitizer
//     checks them, and on x86-64 they are plain moves.)
//   - event_slot: the event at ring position p (0, 1, 2, ...) goes to slot p % events. The
//     writer stores the slot's sequence 2p + 1 (relaxed), the event's words (release), then
//     sequence 2p + 2 with release, then feed_header::written = p + 1 with release. A reader at
//     position p loads the slot's sequence with acquire: 2p + 2 means the event is there (copy
//     it with acquire loads, load the sequence again: still 2p + 2 means the copy is whole);
//     below it, the writer has not got there yet; above it, the writer lapped the reader, which
//     lost events and resynchronizes (from written, re-reading the books).
//
// Words are copied as 8-byte atomics (std::atomic_ref), so a race between the writer and a
// reader is never undefined behaviour in either process.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <signet/md/events.hpp>

namespace signet::receiver::shm {

inline constexpr std::array<char, 8> magic{'S', 'I', 'G', 'N', 'E', 'T', 'M', 'D'};
inline constexpr std::uint32_t layout_version = 1;
inline constexpr std::size_t header_size = 4096;
inline constexpr std::size_t max_feeds = 28;
inline constexpr std::size_t depth = 10; ///< levels a side an instrument_slot holds

inline constexpr std::uint32_t state_creating = 0;
inline constexpr std::uint32_t state_live = 1;
inline constexpr std::uint32_t state_closed = 2;

struct feed_entry {
    std::array<char, 32> name;        ///< NUL padded
    std::uint64_t offset;             ///< of its feed_header, from the segment's start
    std::uint32_t instruments;        ///< instrument_slot records (ids 0 .. instruments - 1)
    std::uint32_t events;             ///< event_slot records (a power of two)
    std::uint64_t instruments_offset; ///< from the segment's start
    std::uint64_t events_offset;      ///< from the segment's start
    std::array<std::uint8_t, 64> spare;
};
static_assert(sizeof(feed_entry) == 128);

struct segment_header {
    std::array<char, 8> magic;
    std::uint32_t version;
    std::uint32_t header_size;
    std::uint64_t generation; ///< CLOCK_REALTIME ns at creation: a restart changes it
    std::uint64_t size;       ///< the segment's bytes
    std::uint32_t state;      ///< state_*: atomic (see above)
    std::uint32_t feeds;
    std::uint32_t instrument_slot_size;
    std::uint32_t event_slot_size;
    std::uint32_t depth; ///< levels a side per instrument
    std::array<std::uint8_t, 76> spare;
    std::array<feed_entry, max_feeds> feed;
};
static_assert(sizeof(segment_header) == 128 + max_feeds * 128);
static_assert(sizeof(segment_header) <= header_size);

/// The feed's own header: where its writer is.
struct feed_header {
    std::uint64_t written;    ///< events written so far (ring position of the next): atomic
    std::uint64_t updated_ns; ///< CLOCK_REALTIME ns of the last write (a heartbeat of sorts)
    std::uint64_t unslotted;  ///< events of instruments beyond `instruments` (ring only)
    std::uint32_t book_state; ///< receiver::book_state of the feed (0 none .. 3 stale)
    std::uint32_t spare0;
    std::array<std::uint8_t, 96> spare;
};
static_assert(sizeof(feed_header) == 128);

struct level {
    std::int64_t price;   ///< integer of 10^price_exponent
    std::uint64_t size;   ///< total quantity
    std::uint32_t orders; ///< 0 when the protocol does not say
    std::uint32_t spare;
};
static_assert(sizeof(level) == 24);

/// One instrument: its definition, status and best `depth` levels a side, under a seqlock.
struct instrument_slot {
    std::uint64_t version;           ///< seqlock (see above); 0: never written
    std::array<char, 20> symbol;     ///< NUL padded; empty until defined
    std::int8_t price_exponent;      ///< prices are integers of 10^price_exponent
    std::uint8_t trading_state;      ///< md::trading_state
    std::uint8_t stale;              ///< 1 from instrument_stale until instrument_recovered
    std::uint8_t defined;            ///< 1 once its instrument_definition came
    std::uint8_t bid_levels;         ///< valid entries of bids (best first)
    std::uint8_t ask_levels;         ///< valid entries of asks (best first)
    std::array<char, 6> status_code; ///< the protocol's own status code, NUL padded
    std::int64_t tick;               ///< the smallest price step (0: not given)
    std::uint64_t sequence;          ///< the feed sequence of its last change
    std::uint64_t receive_ns;        ///< kernel receive time of that change's packet (0: none)
    std::uint64_t exchange_ns;       ///< the exchange's time of that change
    std::uint64_t updates;           ///< writes of this slot so far
    std::array<level, depth> bids;
    std::array<level, depth> asks;
    std::array<std::uint8_t, 16> spare;
};
static_assert(sizeof(instrument_slot) == 576);

/// One entry of the event ring.
struct event_slot {
    std::uint64_t sequence; ///< 2p + 2 once the event at ring position p is whole (see above)
    md::event event;
};
static_assert(sizeof(event_slot) == 72);

static_assert(std::is_trivially_copyable_v<instrument_slot>);
static_assert(std::is_trivially_copyable_v<event_slot>);

/// Copies `bytes` (a multiple of 8, both 8-aligned) as 8-byte atomic loads (acquire: the
/// reader's side of the seqlocks above) or stores (release: the writer's side).
inline void load_words(void* to, void const* from, std::size_t bytes) noexcept {
    auto* out = static_cast<std::uint64_t*>(to);
    auto* in = const_cast<std::uint64_t*>(static_cast<std::uint64_t const*>(from));
    for (std::size_t i = 0; i < bytes / 8; ++i) {
        out[i] = std::atomic_ref<std::uint64_t>(in[i]).load(std::memory_order_acquire);
    }
}
inline void store_words(void* to, void const* from, std::size_t bytes) noexcept {
    auto* out = static_cast<std::uint64_t*>(to);
    auto const* in = static_cast<std::uint64_t const*>(from);
    for (std::size_t i = 0; i < bytes / 8; ++i) {
        std::atomic_ref<std::uint64_t>(out[i]).store(in[i], std::memory_order_release);
    }
}

/// An atomic view of a field of the mapped segment.
template <typename T>
[[nodiscard]] std::atomic_ref<T> atomic(T const& field) noexcept {
    return std::atomic_ref<T>(const_cast<T&>(field));
}

} // namespace signet::receiver::shm
