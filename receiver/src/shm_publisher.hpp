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
// A slot is one consistent state: on_event() only notes what an event changes (an instrument's
// definition, status and stale flag are kept here until then), and end_of_run() writes each
// changed slot once, whole: its fields, its levels from the protocol's book (as of the same
// moment: the end of the run), and the sequence of the last event that changed it.
//
// Costs: per event a 72-byte ring write (three atomic stores besides the copy); per changed
// instrument and run one slot write (its first 80 bytes and the levels valid now or before).
// Nothing allocates after construction.

#include <array>
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

    // What changed in an instrument's slot this run (feed_state::dirty).
    static constexpr std::uint8_t levels_changed = 1;
    static constexpr std::uint8_t fields_changed = 2; ///< its fields or only its sequence

private:
    struct last_change { // what an instrument's slot says of its last change
        std::uint64_t sequence = 0;
        std::uint64_t receive_ns = 0;
        std::uint64_t exchange_ns = 0;
    };
    struct fields { // an instrument's definition and status as the events so far left them
        std::array<char, 20> symbol{};
        std::int8_t price_exponent = 0;
        std::uint8_t trading_state = 0;
        std::uint8_t stale = 0;
        std::uint8_t defined = 0;
        std::array<char, 6> status_code{};
        std::int64_t tick = 0;
    };
    struct feed_state {
        shm::feed_header* header = nullptr;
        shm::instrument_slot* slots = nullptr;
        shm::event_slot* ring = nullptr;
        std::uint32_t instruments = 0;
        std::uint32_t events = 0;
        std::uint64_t written = 0;          // the writer's own copy of header->written
        std::vector<std::uint8_t> dirty;    // by instrument: levels_changed | fields_changed
        std::vector<std::uint32_t> marked;  // the dirty ones, in order
        std::vector<std::uint32_t> defined; // instruments defined so far
        std::vector<last_change> last;      // by instrument
        std::vector<fields> now;            // by instrument
    };

    void append(feed_state& f, md::event const& e) noexcept;
    /// Notes that `e` changed `what` of the instrument's slot (written at the end of the run).
    void mark(feed_state& f, std::uint32_t instrument, std::uint8_t what,
              md::event const& e) noexcept;
    /// Rewrites a slot under its seqlock (end_of_run's path, per changed instrument and run):
    /// its fields, last change and level counts, and the levels now valid or valid before.
    /// Without `levels` the slot keeps its levels (the book did not change).
    void write(feed_state& f, std::uint32_t instrument, bool levels,
               std::span<book_level const> bids, std::span<book_level const> asks) noexcept;

    std::string name_;
    int lock_fd_ = -1; // the segment's descriptor, locked (one writer per name)
    std::byte* base_ = nullptr;
    std::size_t size_ = 0;
    std::vector<feed_state> feeds_;
};

} // namespace signet::receiver
