#include <algorithm>
#include <bit>
#include <cstring>

#include <signet/publisher/detail/record_ring.hpp>

namespace signet::publisher::detail {

static_assert(std::atomic_ref<std::uint64_t>::required_alignment <= alignof(std::uint64_t),
              "ring words are accessed through atomic_ref");

record_ring::record_ring(std::size_t capacity_bytes)
    : words_(std::bit_ceil(
          std::max<std::size_t>(words_for(capacity_bytes), 4 * (1 + words_for(max_record_size)))))
    , mask_(words_ - 1)
    // Not value-initialised: pages are touched as records arrive (a large ring costs little
    // until it is used). Only words below head_ are ever read.
    , ring_(std::make_unique_for_overwrite<std::uint64_t[]>(words_)) {}

std::uint64_t record_ring::load_word(std::uint64_t position) const noexcept {
    // acquire: pairs with the release store in store_word(); see "Why step 4 is enough".
    return std::atomic_ref<std::uint64_t>(ring_[position & mask_]).load(std::memory_order_acquire);
}

void record_ring::store_word(std::uint64_t position, std::uint64_t value) noexcept {
    // release: orders push()'s earlier store of oldest_ before this word for any reader of it;
    // pairs with the acquire load in load_word().
    std::atomic_ref<std::uint64_t>(ring_[position & mask_]).store(value, std::memory_order_release);
}

bool record_ring::push(std::span<std::byte const> record) noexcept {
    if (record.size() > max_record_size) {
        return false;
    }
    std::uint64_t const n = 1 + words_for(record.size());
    // relaxed: only this thread writes head_.
    std::uint64_t const head = head_.load(std::memory_order_relaxed);
    // Step 1: evict. The loop reads back header words this thread wrote; oldest < head holds
    // inside it because n <= words_.
    std::uint64_t oldest = producer_oldest_;
    while (head + n - oldest > words_) {
        oldest += 1 + words_for(static_cast<std::size_t>(load_word(oldest)));
    }
    if (oldest != producer_oldest_) {
        producer_oldest_ = oldest;
        // relaxed: the release stores of step 2 order it before the overwrites (header comment).
        oldest_.store(oldest, std::memory_order_relaxed);
    }
    // Step 2: the header, then the bytes in whole words (the last one zero padded).
    store_word(head, record.size());
    std::size_t offset = 0;
    for (std::uint64_t w = 1; w < n; ++w) {
        std::uint64_t word = 0;
        std::size_t const chunk = std::min<std::size_t>(8, record.size() - offset);
        std::memcpy(&word, record.data() + offset, chunk);
        offset += chunk;
        store_word(head + w, word);
    }
    // Step 3. release: publishes the record; pairs with the acquire load in read().
    head_.store(head + n, std::memory_order_release);
    return true;
}

record_ring::read_result record_ring::read(std::uint64_t& position,
                                           std::span<std::byte> out) noexcept {
    read_result result;
    for (;;) {
        // Step 1. acquire: pairs with the release store that ends push(); the records below
        // head are complete.
        std::uint64_t const head = head_.load(std::memory_order_acquire);
        // Step 2. relaxed: after the acquire above it sees at least the oldest_ stored before
        // that head.
        std::uint64_t oldest = oldest_.load(std::memory_order_relaxed);
        if (position < oldest) {
            result.lost += (oldest - position) * 8;
            position = oldest;
        }
        if (position >= head) {
            return result; // nothing new
        }
        // Step 3: copy. A torn header may give any length: bound it before use.
        std::uint64_t const size = load_word(position);
        std::uint64_t const n =
            1 + words_for(static_cast<std::size_t>(std::min<std::uint64_t>(size, max_record_size)));
        bool const plausible =
            size <= max_record_size && size <= out.size() && position + n <= head;
        if (plausible) {
            std::size_t offset = 0;
            for (std::uint64_t w = 1; w < n; ++w) {
                std::uint64_t const word = load_word(position + w);
                std::size_t const chunk = std::min<std::size_t>(8, size - offset);
                std::memcpy(out.data() + offset, &word, chunk);
                offset += chunk;
            }
        }
        // Step 4. relaxed: ordered after the acquire loads of step 3, which is what the
        // argument in the header needs.
        oldest = oldest_.load(std::memory_order_relaxed);
        if (position < oldest) {
            result.lost += (oldest - position) * 8; // torn: skip what was overwritten
            position = oldest;
            continue;
        }
        if (!plausible) {
            // Cannot happen while the argument holds (the words were the record's own); skip
            // everything rather than hand out garbage.
            result.lost += (head - position) * 8;
            position = head;
            return result;
        }
        position += n;
        result.size = static_cast<std::size_t>(size);
        result.record = true;
        return result;
    }
}

} // namespace signet::publisher::detail
