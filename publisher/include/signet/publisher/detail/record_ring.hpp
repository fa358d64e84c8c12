#pragma once

// record_ring: a byte ring that one producer appends records to without ever waiting, and one
// consumer reads behind it. When the consumer falls more than the ring's capacity behind, the
// producer overwrites the oldest records anyway; the consumer notices and skips to the oldest
// record still intact (a seqlock-style check per record), and is told how many bytes it lost.
// nasdaq::rerequest_service and nasdaq::glimpse_service use it to hand the publisher's packets to its own thread: the publisher's
// thread never blocks behind the service, whatever the service is doing.
//
// Threading: push() on one producer thread; read() on one consumer thread; nothing else is
// concurrent. Use it where the producer must never wait and losing the oldest data under
// overload is acceptable (the capacity sets how far behind the consumer may fall without loss);
// not where every record must arrive (use core's spsc_fixed_queue, which refuses when full).
//
// Design. Positions count 8-byte words from the start, never wrapping (2^64 words); word
// position p lives at slot p % capacity. A record is one header word (its length in bytes),
// then its bytes in whole words. Three positions:
//   head_   (producer-written, release): where the next record goes; records below it are
//           complete.
//   oldest_ (producer-written): the first record not yet (being) overwritten; records from it
//           to head_ are intact.
//   the consumer's own position (its argument to read()).
// Algorithm, push(record of n words):
//   1. Evict: while head_ + n - oldest > capacity, oldest moves past its record (the producer
//      reads back its own header words). If it moved, store oldest_ (relaxed).
//   2. Write the header and the bytes, each word a release store: a consumer that reads any of
//      them is ordered after step 1's store of oldest_ (this is what tells it the record it was
//      copying is being overwritten).
//   3. head_.store(head + n, release): the record is complete.
// Algorithm, read(position):
//   1. head = head_.load(acquire); nothing new if position == head.
//   2. If position < oldest_, the records there were overwritten: skip to oldest_ (lost).
//   3. Copy the header and the bytes, each word an acquire load (a length that cannot be right
//      — too long, or past head — can only come from an overwrite: step 4 catches it).
//   4. Check again: if position < oldest_ now, some word may be from a newer record (torn):
//      discard the copy and skip to oldest_ (lost). Otherwise the copy is the record.
// Why step 4 is enough (the seqlock argument of H.-J. Boehm, "Can seqlocks get along with
// programming language memory models?", MSPC 2012, with per-word release/acquire in place of
// fences): a word of the consumer's record at position p is only overwritten after the producer
// stored oldest_ > p (step 1 precedes any write into the evicted records). If the consumer's
// acquire load in step 3 read such a word, the release store that wrote it synchronises with
// that load, so the store of oldest_ > p happens before the consumer's check in step 4, which
// therefore sees oldest_ > p (or a later value) and discards the copy. If every word read was
// the record's own, the copy is right whatever the check sees.
//
// Costs: push() is one copy of the record in 8-byte stores (release stores are plain stores on
// x86-64) plus one header read per evicted record; no allocation, no lock, no system call.
// read() copies the record twice (ring to caller). Memory: capacity bytes, allocated once.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <signet/core/cache_line.hpp>

namespace signet::publisher::detail {

class record_ring {
public:
    /// The largest record: a UDP payload.
    static constexpr std::size_t max_record_size = 65535;

    /// Room for at least `capacity_bytes` of records (rounded up to a power of two, and to at
    /// least a few of the largest records). Throws std::bad_alloc.
    explicit record_ring(std::size_t capacity_bytes);
    record_ring(record_ring const&) = delete;
    record_ring& operator=(record_ring const&) = delete;

    /// Producer-side; must not run concurrently with another push(). Appends a copy of
    /// `record`; a record longer than max_record_size is not stored (false). Never waits.
    bool push(std::span<std::byte const> record) noexcept;

    struct read_result {
        std::size_t size = 0;   ///< bytes copied into `out` (a record), or 0
        std::uint64_t lost = 0; ///< bytes of records overwritten before they could be read
        bool record = false;    ///< a record was copied
    };
    /// Consumer-side; must not run concurrently with another read(). Copies the record at
    /// `position` (0 at first) into `out` (at least max_record_size bytes) and advances
    /// `position` past it; skips what was overwritten first (lost). record false: nothing new.
    read_result read(std::uint64_t& position, std::span<std::byte> out) noexcept;
    /// Consumer-side: read() until nothing is new, calling f(std::span<std::byte const>) with
    /// each record (in `out`); returns the bytes lost on the way.
    template <typename F>
    std::uint64_t read_all(std::uint64_t& position, std::span<std::byte> out, F&& f) {
        std::uint64_t lost = 0;
        for (;;) {
            read_result const r = read(position, out);
            lost += r.lost;
            if (!r.record) {
                return lost;
            }
            f(std::span<std::byte const>(out.first(r.size)));
        }
    }

    /// The capacity in bytes.
    [[nodiscard]] std::size_t capacity() const noexcept { return words_ * 8; }

private:
    [[nodiscard]] static constexpr std::uint64_t words_for(std::size_t bytes) noexcept {
        return (bytes + 7) / 8;
    }
    [[nodiscard]] std::uint64_t load_word(std::uint64_t position) const noexcept;
    void store_word(std::uint64_t position, std::uint64_t value) noexcept;

    std::size_t words_;
    std::uint64_t mask_;
    std::unique_ptr<std::uint64_t[]> ring_;
    // alignas: the producer's positions and the consumer's reads of them sit on their own
    // cache line, apart from the fields above (read by both, written by neither).
    alignas(destructive_interference_size) std::atomic<std::uint64_t> head_{0};
    std::atomic<std::uint64_t> oldest_{0};
    std::uint64_t producer_oldest_ = 0; // the producer's copy of oldest_ (only it writes oldest_)
};

} // namespace signet::publisher::detail
