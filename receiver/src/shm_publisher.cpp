#include "shm_publisher.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

namespace signet::receiver {

namespace {

constexpr std::size_t page = 4096;

std::size_t round_up(std::size_t n) noexcept {
    return (n + page - 1) / page * page;
}

[[noreturn]] void fail(std::string const& what) {
    throw std::runtime_error("[publish] shm: " + what + ": " +
                             std::system_category().message(errno));
}

std::uint64_t realtime_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

// What a book event changes in its instrument's slot. Every change of a level in the top
// shm::depth of a side comes as a level_update at that depth (a level that left: the depth it
// had), so a deeper level_update, or an order event (its level's level_update follows), moves
// only the slot's sequence: the run's end writes the slot's head and reads no levels. A bbo
// or a clear re-reads the levels. 0: not a book event.
std::uint8_t book_change(md::event const& e) noexcept {
    switch (e.kind) {
    case md::event_kind::level_update:
        return e.level.depth < shm::depth ? shm_publisher::levels_changed
                                          : shm_publisher::fields_changed;
    case md::event_kind::bbo:
    case md::event_kind::book_clear:
        return shm_publisher::levels_changed;
    case md::event_kind::order_add:
    case md::event_kind::order_modify:
    case md::event_kind::order_delete:
    case md::event_kind::order_execute:
        return shm_publisher::fields_changed;
    default:
        return 0;
    }
}

} // namespace

shm_publisher::shm_publisher(std::string const& name, std::vector<std::string> const& feeds,
                             std::size_t instruments, std::size_t events)
    : name_(name) {
    if (feeds.size() > shm::max_feeds) {
        throw std::runtime_error("[publish] shm: at most " + std::to_string(shm::max_feeds) +
                                 " feeds share a segment, the config has " +
                                 std::to_string(feeds.size()));
    }
    std::size_t const region =
        round_up(sizeof(shm::feed_header) + instruments * sizeof(shm::instrument_slot) +
                 events * sizeof(shm::event_slot));
    size_ = shm::header_size + feeds.size() * region;
    std::string const path = "/" + name;
    // One writer per name: the writer holds an exclusive lock on its segment for its lifetime
    // (the kernel drops it when the process ends, however it ends). A segment whose lock is
    // free is a previous run's, and is replaced.
    if (int const old = ::shm_open(path.c_str(), O_RDWR, 0); old >= 0) {
        bool const in_use = ::flock(old, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
        ::close(old);
        if (in_use) {
            throw std::runtime_error("[publish] shm: /dev/shm" + path +
                                     " is in use by another running receiver: give this one "
                                     "another name");
        }
    }
    if (::shm_unlink(path.c_str()) != 0 && errno != ENOENT) {
        fail("cannot remove the previous /dev/shm" + path);
    }
    int const fd = ::shm_open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0644);
    if (fd < 0) {
        fail("cannot create /dev/shm" + path);
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int const error = errno;
        ::close(fd);
        errno = error;
        fail("cannot lock /dev/shm" + path);
    }
    auto const give_up = [&](std::string const& what) {
        int const error = errno;
        ::shm_unlink(path.c_str());
        ::close(fd);
        errno = error;
        fail(what);
    };
    if (::ftruncate(fd, static_cast<off_t>(size_)) != 0) {
        give_up("cannot size /dev/shm" + path + " to " + std::to_string(size_) + " bytes");
    }
    // MAP_POPULATE: every page allocated and mapped now, not at the parser's first write to
    // it (a page fault per 56 ring events, microseconds each, on the parser's path).
    void* const at =
        ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (at == MAP_FAILED) {
        give_up("cannot map /dev/shm" + path);
    }
    lock_fd_ = fd;
    base_ = static_cast<std::byte*>(at); // ftruncate zeroed it: state_creating, versions 0
    auto& h = *reinterpret_cast<shm::segment_header*>(base_);
    h.magic = shm::magic;
    h.version = shm::layout_version;
    h.header_size = shm::header_size;
    h.generation = realtime_ns();
    h.size = size_;
    h.feeds = static_cast<std::uint32_t>(feeds.size());
    h.instrument_slot_size = sizeof(shm::instrument_slot);
    h.event_slot_size = sizeof(shm::event_slot);
    h.depth = shm::depth;
    feeds_.resize(feeds.size());
    for (std::size_t i = 0; i < feeds.size(); ++i) {
        shm::feed_entry& e = h.feed[i];
        std::copy_n(feeds[i].begin(), std::min(feeds[i].size(), e.name.size() - 1), e.name.begin());
        e.offset = shm::header_size + i * region;
        e.instruments = static_cast<std::uint32_t>(instruments);
        e.events = static_cast<std::uint32_t>(events);
        e.instruments_offset = e.offset + sizeof(shm::feed_header);
        e.events_offset = e.instruments_offset + instruments * sizeof(shm::instrument_slot);
        feed_state& f = feeds_[i];
        f.header = reinterpret_cast<shm::feed_header*>(base_ + e.offset);
        f.slots = reinterpret_cast<shm::instrument_slot*>(base_ + e.instruments_offset);
        f.ring = reinterpret_cast<shm::event_slot*>(base_ + e.events_offset);
        f.instruments = e.instruments;
        f.events = e.events;
        f.dirty.assign(instruments, 0);
        f.marked.reserve(instruments);
        f.defined.reserve(instruments);
        f.last.assign(instruments, {});
        f.now.assign(instruments, {});
    }
    // release: pairs with a reader's acquire load of state; the header above is complete.
    shm::atomic(h.state).store(shm::state_live, std::memory_order_release);
}

shm_publisher::~shm_publisher() {
    close();
    ::munmap(base_, size_);
    ::close(lock_fd_); // releases the lock: the name may be taken again
}

void shm_publisher::close() noexcept {
    auto& h = *reinterpret_cast<shm::segment_header*>(base_);
    // release: pairs with a reader's acquire load in closed(); every write above is final.
    shm::atomic(h.state).store(shm::state_closed, std::memory_order_release);
}

void shm_publisher::append(feed_state& f, md::event const& e) noexcept {
    std::uint64_t const p = f.written;
    shm::event_slot& slot = f.ring[p & (f.events - 1)];
    shm::atomic(slot.sequence).store(2 * p + 1, std::memory_order_relaxed); // odd: writing
    // Release stores of the words: a reader that reads any of them also sees the odd sequence
    // (stored before), so its second load of the sequence tells it the copy may be torn.
    shm::store_words(&slot.event, &e, sizeof e);
    // release: pairs with a reader's acquire load of the sequence; the event is whole.
    shm::atomic(slot.sequence).store(2 * p + 2, std::memory_order_release);
    f.written = p + 1;
    // release: pairs with the acquire load in reader::tail() and the overrun resync.
    shm::atomic(f.header->written).store(p + 1, std::memory_order_release);
    if (e.receive_ns != 0) { // relaxed: a statistic read on its own
        shm::atomic(f.header->updated_ns).store(e.receive_ns, std::memory_order_relaxed);
    }
}

void shm_publisher::write(feed_state& f, std::uint32_t instrument, bool levels,
                          std::span<book_level const> bids,
                          std::span<book_level const> asks) noexcept {
    shm::instrument_slot& slot = f.slots[instrument];
    // This writer's own words: plain reads are exact (no other writer).
    std::uint64_t const version = slot.version;
    std::size_t const old_bids = slot.bid_levels;
    std::size_t const old_asks = slot.ask_levels;
    fields const& now = f.now[instrument];
    last_change const& last = f.last[instrument];
    shm::instrument_slot head; // its words from symbol to updates, all set here
    head.symbol = now.symbol;
    head.price_exponent = now.price_exponent;
    head.trading_state = now.trading_state;
    head.stale = now.stale;
    head.defined = now.defined;
    head.bid_levels = static_cast<std::uint8_t>(levels ? bids.size() : old_bids);
    head.ask_levels = static_cast<std::uint8_t>(levels ? asks.size() : old_asks);
    head.status_code = now.status_code;
    head.tick = now.tick;
    head.sequence = last.sequence;
    head.receive_ns = last.receive_ns;
    head.exchange_ns = last.exchange_ns;
    head.updates = slot.updates + 1;
    shm::atomic(slot.version).store(version + 1, std::memory_order_relaxed); // odd: writing
    // Then release stores of the words, after the odd version (see append()).
    constexpr std::size_t from = offsetof(shm::instrument_slot, symbol);
    constexpr std::size_t to = offsetof(shm::instrument_slot, bids);
    static_assert(from == 8 && offsetof(shm::instrument_slot, updates) + 8 == to);
    shm::store_words(&slot.symbol, &head.symbol, to - from);
    if (levels) {
        auto const side = [](std::span<book_level const> in, std::size_t before,
                             std::array<shm::level, shm::depth>& out) {
            std::array<shm::level, shm::depth> copy{};
            for (std::size_t i = 0; i < in.size(); ++i) {
                copy[i] = {in[i].price, in[i].size, in[i].orders, 0};
            }
            // The valid ones and those valid before (cleared): the rest are zero already.
            shm::store_words(out.data(), copy.data(),
                             std::max(in.size(), std::min(before, shm::depth)) *
                                 sizeof(shm::level));
        };
        side(bids, old_bids, slot.bids);
        side(asks, old_asks, slot.asks);
    }
    // release: pairs with a reader's acquire load of the version; the slot is consistent.
    shm::atomic(slot.version).store(version + 2, std::memory_order_release);
}

void shm_publisher::mark(feed_state& f, std::uint32_t instrument, std::uint8_t what,
                         md::event const& e) noexcept {
    if (f.dirty[instrument] == 0) {
        f.marked.push_back(instrument); // reserved for every instrument: never allocates
    }
    f.dirty[instrument] |= what;
    f.last[instrument] = {
        .sequence = e.sequence, .receive_ns = e.receive_ns, .exchange_ns = e.exchange_ns};
}

void shm_publisher::on_event(std::size_t feed, md::event const& e) noexcept {
    feed_state& f = feeds_[feed];
    append(f, e);
    std::uint32_t const id = e.instrument;
    if (id == md::all_instruments) {
        bool const stale = e.kind == md::event_kind::instrument_stale;
        if (stale || e.kind == md::event_kind::instrument_recovered) {
            for (std::uint32_t const i : f.defined) {
                f.now[i].stale = stale ? 1 : 0;
                mark(f, i, fields_changed, e);
            }
        } else if (e.kind == md::event_kind::book_clear) {
            for (std::uint32_t const i : f.defined) {
                mark(f, i, levels_changed, e);
            }
        }
        return;
    }
    if (id >= f.instruments) {
        shm::atomic(f.header->unslotted) // relaxed: a statistic with one writer
            .store(f.header->unslotted + 1, std::memory_order_relaxed);
        return;
    }
    fields& now = f.now[id];
    switch (e.kind) {
    case md::event_kind::instrument_definition:
        if (now.defined == 0) {
            f.defined.push_back(id); // reserved: never allocates
        }
        now.symbol = e.definition.symbol;
        now.price_exponent = e.definition.price_exponent;
        now.tick = e.definition.tick;
        now.defined = 1;
        mark(f, id, fields_changed, e);
        break;
    case md::event_kind::trading_status:
        now.trading_state = static_cast<std::uint8_t>(e.status.state);
        now.status_code = {};
        std::copy_n(e.status.code.begin(), now.status_code.size(), now.status_code.begin());
        mark(f, id, fields_changed, e);
        break;
    case md::event_kind::instrument_stale:
    case md::event_kind::instrument_recovered:
        now.stale = e.kind == md::event_kind::instrument_stale ? 1 : 0;
        mark(f, id, fields_changed, e);
        break;
    default:
        if (std::uint8_t const what = book_change(e); what != 0) {
            mark(f, id, what, e);
        }
        break;
    }
}

void shm_publisher::end_of_run(std::size_t feed, feed_protocol const& protocol,
                               book_state state) noexcept {
    feed_state& f = feeds_[feed];
    for (std::uint32_t const id : f.marked) {
        bool const levels = (f.dirty[id] & levels_changed) != 0;
        f.dirty[id] = 0;
        std::array<book_level, shm::depth> bids{};
        std::array<book_level, shm::depth> asks{};
        std::size_t const nb = levels ? protocol.book_levels(id, 'B', bids) : 0;
        std::size_t const na = levels ? protocol.book_levels(id, 'S', asks) : 0;
        write(f, id, levels, std::span(bids).first(nb), std::span(asks).first(na));
    }
    f.marked.clear();
    // relaxed: a value read on its own.
    shm::atomic(f.header->book_state)
        .store(static_cast<std::uint32_t>(state), std::memory_order_relaxed);
}

} // namespace signet::receiver
