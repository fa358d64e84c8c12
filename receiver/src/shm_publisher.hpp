#pragma once

// shm_publisher: the writer of the shared-memory segment (config `[publish] shm`; layout in
// signet/receiver/shm_layout.hpp, docs/publishing.md). The receiver subscribes it inline to every
// feed's events: each event goes into the feed's ring, definitions and statuses into the
// instrument's slot, and at the end of each run of the feed's parser contract the instruments
// whose book changed get their best levels from the feed's protocol (feed_protocol::
// book_levels()).
//
// Threading: construction and destruction on the controlling thread (before start(), after
// stop()); on_event() and end_of_run() for feed f on f's parser contract only, the one writer of
// f's region (a contract never runs on two threads at once). Readers are other processes (or
// threads) with read-only mappings; the memory orders are shm_layout.hpp's.
//
// Costs: per event a 72-byte ring write (three atomic stores besides the copy); per changed
// instrument and run one 576-byte slot write. Nothing allocates after construction.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <signet/md/events.hpp>
#include <signet/receiver/feed_protocol.hpp>
#include <signet/receiver/shm_layout.hpp>

namespace signet::receiver {

class shm_publisher {
public:
    /// Creates the segment /dev/shm/`name` (replacing one a previous run left) with a region
    /// per feed. Throws std::runtime_error naming the call that failed.
    shm_publisher(std::string const& name, std::vector<std::string> const& feeds,
                  std::size_t instruments, std::size_t events);
    shm_publisher(shm_publisher const&) = delete;
    shm_publisher& operator=(shm_publisher const&) = delete;
    /// Unmaps the segment (closing it first); the name stays for readers of the final state
    /// (the next run replaces it).
    ~shm_publisher();
    /// Marks the segment closed: what it holds is final (receiver::stop(), after the last
    /// writes).
    void close() noexcept;

    void on_event(std::size_t feed, md::event const& e) noexcept;
    void end_of_run(std::size_t feed, feed_protocol const& protocol, book_state state) noexcept;

    [[nodiscard]] std::string const& name() const noexcept { return name_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

private:
    struct last_change { // what an instrument's slot says of its last change
        std::uint64_t sequence = 0;
        std::uint64_t receive_ns = 0;
        std::uint64_t exchange_ns = 0;
    };
    struct feed_state {
        shm::feed_header* header = nullptr;
        shm::instrument_slot* slots = nullptr;
        shm::event_slot* ring = nullptr;
        std::uint32_t instruments = 0;
        std::uint32_t events = 0;
        std::uint64_t written = 0;          // the writer's own copy of header->written
        std::vector<std::uint8_t> dirty;    // by instrument: its levels changed this run
        std::vector<std::uint32_t> marked;  // the dirty ones, in order
        std::vector<std::uint32_t> defined; // instruments defined so far
        std::vector<last_change> last;      // by instrument
    };

    void append(feed_state& f, md::event const& e) noexcept;
    void mark(feed_state& f, std::uint32_t instrument) noexcept;
    /// Rewrites a slot under its seqlock: `change` edits a copy (its last change's sequence and
    /// times come from `last`).
    template <typename Change>
    void update(feed_state& f, std::uint32_t instrument, Change change) noexcept;
    /// The same for a book change, storing only the words that change: the level counts, the
    /// last change, and the levels now valid or valid before (end_of_run's path, per changed
    /// instrument and run).
    void write_levels(feed_state& f, std::uint32_t instrument, std::span<book_level const> bids,
                      std::span<book_level const> asks) noexcept;

    std::string name_;
    int lock_fd_ = -1; // the segment's descriptor, locked (one writer per name)
    std::byte* base_ = nullptr;
    std::size_t size_ = 0;
    std::vector<feed_state> feeds_;
};

} // namespace signet::receiver
