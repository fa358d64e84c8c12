#pragma once

// shm_reader: reads a receiver's shared-memory segment (shm_layout.hpp; config
// `[publish] shm = "NAME"`) from another process. Header-only, nothing beyond the C++ standard
// library and POSIX: copy it beside shm_layout.hpp and md/events.hpp into any program.
//
//   signet::receiver::shm::reader r("signet-demo");
//   shm::instrument_slot s;
//   if (r.read_instrument(0, id, s)) { ... s.bids[0] ... }
//   auto c = r.tail(0);                  // the events written from now on
//   md::event e;
//   while (r.next(c, e) == shm::poll::event) { ... }
//
// The mapping is read-only: a reader can neither slow nor corrupt the receiver, and one killed
// mid-read leaves nothing behind. A restarted receiver makes a new segment: replaced() says so
// (open a new reader).
//
// Threading: one reader object per thread (its counters are plain). Costs: read_instrument()
// copies 576 bytes (more on a retry); next() copies 72.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signet/receiver/shm_layout.hpp>

namespace signet::receiver::shm {

enum class poll { event, none, overrun };

/// A position in one feed's event ring.
struct cursor {
    std::size_t feed = 0;
    std::uint64_t position = 0;
};

class reader {
public:
    /// Maps the segment `name` (as given to the receiver; a leading '/' is added). Throws
    /// std::runtime_error when there is none, it is not a version-1 segment, or it is still
    /// being created.
    explicit reader(std::string const& name) {
        std::string const path = name.starts_with('/') ? name : "/" + name;
        int const fd = ::shm_open(path.c_str(), O_RDONLY, 0);
        if (fd < 0) {
            throw std::runtime_error("no shared-memory segment " + path);
        }
        struct stat st {};
        if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < header_size) {
            ::close(fd);
            throw std::runtime_error(path + " is not a signet segment (too small)");
        }
        size_ = static_cast<std::size_t>(st.st_size);
        // MAP_POPULATE: mapped now, not at the first read of each page (a page fault a page).
        void* const at = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
        ::close(fd); // the mapping keeps the segment
        if (at == MAP_FAILED) {
            throw std::runtime_error("cannot map " + path);
        }
        base_ = static_cast<std::byte const*>(at);
        path_ = path;
        segment_header const& h = header();
        if (h.magic != magic || h.version != layout_version) {
            unmap();
            throw std::runtime_error(path + " is not a version-1 signet segment");
        }
        if (atomic(h.state).load(std::memory_order_acquire) == state_creating) {
            unmap(); // acquire: pairs with the writer's release store of state_live
            throw std::runtime_error(path + " is still being created");
        }
        if (h.size > size_ || h.feeds > max_feeds) {
            unmap();
            throw std::runtime_error(path + " has an inconsistent header");
        }
    }
    reader(reader const&) = delete;
    reader& operator=(reader const&) = delete;
    ~reader() { unmap(); }

    [[nodiscard]] segment_header const& header() const noexcept {
        return *reinterpret_cast<segment_header const*>(base_);
    }
    [[nodiscard]] std::size_t feeds() const noexcept { return header().feeds; }
    [[nodiscard]] std::string_view feed_name(std::size_t feed) const noexcept {
        auto const& n = header().feed[feed].name;
        return {n.data(), ::strnlen(n.data(), n.size())};
    }
    [[nodiscard]] std::uint32_t instruments(std::size_t feed) const noexcept {
        return header().feed[feed].instruments;
    }
    [[nodiscard]] std::uint64_t generation() const noexcept { return header().generation; }
    /// The receiver stopped cleanly (what the segment holds is final).
    [[nodiscard]] bool closed() const noexcept {
        return atomic(header().state).load(std::memory_order_acquire) == state_closed;
    }
    /// The name now opens another segment (a restarted receiver) or none: open a new reader.
    [[nodiscard]] bool replaced() const {
        int const fd = ::shm_open(path_.c_str(), O_RDONLY, 0);
        if (fd < 0) {
            return true;
        }
        segment_header h{};
        bool const read = ::pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
        ::close(fd);
        return !read || h.generation != generation();
    }
    [[nodiscard]] feed_header const& feed(std::size_t feed) const noexcept {
        return *reinterpret_cast<feed_header const*>(base_ + header().feed[feed].offset);
    }

    /// A consistent copy of instrument `id` of `feed`; false when it was never written (or
    /// `id` is beyond the feed's slots).
    bool read_instrument(std::size_t feed, std::uint32_t id, instrument_slot& out) noexcept {
        feed_entry const& f = header().feed[feed];
        if (id >= f.instruments) {
            return false;
        }
        auto const& slot =
            reinterpret_cast<instrument_slot const*>(base_ + f.instruments_offset)[id];
        for (;;) {
            // acquire: pairs with the writer's release store of an even version.
            std::uint64_t const before = atomic(slot.version).load(std::memory_order_acquire);
            if (before == 0) {
                return false;
            }
            if ((before & 1) == 0) {
                load_words(&out, &slot, sizeof out); // acquire loads: before the re-check
                if (atomic(slot.version).load(std::memory_order_relaxed) == before) {
                    return true;
                }
            }
            ++retries_;
        }
    }

    /// A cursor at the event the feed's writer writes next.
    [[nodiscard]] cursor tail(std::size_t feed) const noexcept {
        // acquire: pairs with the writer's release store of written.
        return {feed, atomic(this->feed(feed).written).load(std::memory_order_acquire)};
    }

    /// The event at `c`: event (copied to `out`, `c` advanced), none (not written yet), or
    /// overrun (the writer lapped this reader: `c` moves to the oldest event still whole,
    /// lost() counts what was skipped; re-read the books).
    poll next(cursor& c, md::event& out) noexcept {
        feed_entry const& f = header().feed[c.feed];
        auto const* ring = reinterpret_cast<event_slot const*>(base_ + f.events_offset);
        event_slot const& slot = ring[c.position & (f.events - 1)];
        std::uint64_t const want = 2 * c.position + 2;
        // acquire: pairs with the writer's release store of the slot's even sequence.
        std::uint64_t const seen = atomic(slot.sequence).load(std::memory_order_acquire);
        if (seen == want) {
            load_words(&out, &slot.event, sizeof out); // acquire loads: before the re-check
            if (atomic(slot.sequence).load(std::memory_order_relaxed) == want) {
                ++c.position;
                return poll::event;
            }
        } else if (seen < want) {
            return poll::none;
        }
        // Lapped: resume where the ring still holds whole events, a ring's length behind.
        std::uint64_t const written = atomic(feed(c.feed).written).load(std::memory_order_acquire);
        std::uint64_t const resume = written > f.events / 2 ? written - f.events / 2 : 0;
        lost_ += resume > c.position ? resume - c.position : 0;
        c.position = std::max(resume, c.position + 1);
        return poll::overrun;
    }

    /// Seqlock retries so far (a copy that raced with the writer).
    [[nodiscard]] std::uint64_t retries() const noexcept { return retries_; }
    /// Events skipped by overruns so far.
    [[nodiscard]] std::uint64_t lost() const noexcept { return lost_; }

private:
    void unmap() noexcept {
        if (base_ != nullptr) {
            ::munmap(const_cast<std::byte*>(base_), size_);
            base_ = nullptr;
        }
    }

    std::byte const* base_ = nullptr;
    std::size_t size_ = 0;
    std::string path_;
    std::uint64_t retries_ = 0;
    std::uint64_t lost_ = 0;
};

} // namespace signet::receiver::shm
