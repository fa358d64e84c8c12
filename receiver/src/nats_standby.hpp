#pragma once

// nats_standby: hot standby through NATS ([publish] standby = "GROUP"; docs/publishing.md,
// "Standby groups"). Receivers of one group each receive the same feeds and keep their own
// books; per feed one of them leads (publishes to NATS and its JetStream stream), the others
// follow silently and take over, with no event lost and none doubled, when the leader dies,
// is cut off, or hands over at a clean stop.
//
// Design
// 1. The lease. One JetStream key-value bucket per group, "signet_standby_<group>" (memory
//    storage, history 1, the bucket's TTL = standby_lease_ms, nats_replicas replicas), one key
//    per feed whose value names the holder. A member takes a free key with kvStore_Create (it
//    fails when the key exists), a released one ("released <sequence> <index>", written by a
//    leader that stops cleanly) with kvStore_Update on its revision (compare-and-set), and
//    keeps it with kvStore_Update on the revision it last wrote, every lease/4. No home-made
//    consensus: the server's CAS on the revision decides. A key whose revision a follower has
//    read unchanged for 3/4 lease (timed from after its first read) it takes with
//    kvStore_Update on that revision (bounded by its clock, not by when the server expires
//    the key); the bucket's TTL frees the key when nobody is there to time it. All of it runs
//    on the lease thread (this class's own), never on the parser's or the publishing path.
// 2. Never two leaders. A leader publishes only before its deadline: the start of its last
//    successful renew (taken before the request left) plus lease/2. That write came before a
//    follower read it, so a follower's CAS on it, 3/4 lease after the read, succeeds only
//    when the leader has not renewed since and stopped at least lease/4 before (the TTL path
//    leaves lease/2): a leader that cannot renew (no connection, a stalled server, a paused
//    process) is silent before another can hold the key, and the margin covers its messages
//    still in flight and the clock check before each send (clocks' rates, not their
//    readings, are compared). A lost connection stops publishing at once (the disconnect
//    callback), and a send that fails stops it too. The events go out on a connection of
//    their own that never reconnects by itself (the publisher makes a new one at each
//    takeover or resume: standby_sender::prepare()), since libnats flushes into a reconnected
//    connection what a publish left in its reconnect buffer — one whole message even with a
//    one-byte buffer. What it sent before its deadline but the network did not deliver (a
//    partition) is dropped with that connection: a fence thread cuts it when a deadline passes
//    without a renew, and its socket resets instead of delivering late (nats_fence.hpp). Each
//    send reads the clock first (one blocked on a full socket must not let the next go late).
// 3. Positions. Every published event carries its feed sequence, its index among the
//    published events of that sequence and the previous published sequence (nats_position,
//    standby.hpp): deterministic from the feed, so both members compute the same positions.
// 4. History. Every member records each event it would publish (the NATS subscriber's
//    events, on the publishing thread) into a preallocated ring per feed (standby_history
//    entries of 80 bytes), and each instrument's symbol, definition, trading status,
//    stale/recovered state and bbo into a preallocated table (standby_instruments ids).
// 5. Takeover. A member that took the key reads the last position the group published: the
//    greatest of (a) the last position its own subscription to the feed's subjects
//    (signet.<feed>.>, core NATS: the path every consumer takes) delivered, (b) a hand-over's
//    released value, and (c) the last message of the feed's JetStream last-value stream (a
//    floor for a member that has seen nothing yet). (a) is the exact one: the old leader
//    stopped publishing at least lease/4 before the key could pass, so by then the server has
//    what it sent (or its fence cut it). What the server has sent this member is not yet what
//    its subscription took, though: a member starved of CPU (measured: a takeover under
//    AddressSanitizer on a loaded machine) took its position 3 messages short and doubled
//    them. So the position is read after a round trip to the server (a PING: libnats queues
//    everything the server sent before the PONG) and once on_message has taken every message
//    queued by then (its count against libnats's delivered + pending, read together);
//    until the deadline at most, else the resume waits for the next tick. The lease's value,
//    written every lease/4, would be coarse; a stream capturing every subject was tried and lags
//    under load (measured here: an R3 stream 25000 messages behind the live subjects at 48000
//    events/s on 2 CPUs, so a takeover from it doubled them, and its load delayed the lease's
//    renewals). Every source is a position that was published, so the greatest is never ahead of
//    the group. It then publishes from its history every event after that position (at most
//    catch_up_budget at once on the lease thread; the rest on the next record() or tick) and
//    follows on live. If the position is ahead of its history (it is behind the old leader) it
//    skips its events up to it. Before each send the gate checks that the event continues the chain
//    of what was published (standby.hpp's rule); where it does not — its history does not reach
//    back, it started late and made other events, its own queue lost events, the last message has
//    no position — it publishes each instrument's current state (definition, status,
//    stale/recovered, bbo) flagged as a resynchronization (nats_position::resync), counted,
//    then goes on live from its newest event.
// 6. Hand-over. At a clean stop (SIGTERM) the leader publishes what its queue holds, flushes,
//    and writes "released <last position>" on its key: a follower takes over at its next poll
//    (every min(100 ms, lease/10)) instead of a lease later.
//
// Threading: standby_gate::record() on the NATS subscriber's thread (one at a time);
// take_over(), renewed(), demote() on the lease thread; deadline_ns() on the fence thread;
// suspend() from libnats's disconnect callback; stats from any thread. The gate's ring, table and
// cursors are guarded by one mutex (uncontended on the publishing path: the lease thread takes it
// only to change role and to catch up; no allocation, no syscall, no log per event). The parser's
// path never reaches this class: the publisher is a queued subscriber. Memory orders: deadline_ns
// (per feed) is stored by the lease thread and loaded by the publishing thread, relaxed: a
// self-contained value, no data is published through it (the mutex orders the rest); suspended is a
// relaxed flag for the same reason (set by the disconnect callback or a failed send, cleared only
// under the mutex by take_over()); the statistics are relaxed counters read on their own.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <signet/md/events.hpp>
#include <signet/receiver/standby.hpp>

#include "nats_fence.hpp"

struct __natsConnection;
struct __jsCtx;
struct __kvStore;
struct __natsSubscription;
struct __natsMsg;

namespace signet::receiver {

/// Where the gate sends (the NATS publisher; a fake in tests). Called under the gate's mutex.
class standby_sender {
public:
    virtual ~standby_sender() = default;
    /// Publishes one event; false when the connection refused it.
    virtual bool send(std::size_t feed, md::event const& e, std::string_view symbol,
                      nats_position const& p) noexcept = 0;
    /// Before a takeover publishes (under the gate's mutex): makes what send() publishes on
    /// ready; false when it cannot (the takeover does not happen, the lease thread tries again).
    virtual bool prepare() noexcept { return true; }
};

/// The last position a group published, as a member taking over reads it.
struct group_position {
    enum class state : std::uint8_t {
        none,    ///< the group never published (an empty stream)
        at,      ///< `position` is the last published
        unknown, ///< a message without a position: continue only through a resynchronization
    };
    state what = state::none;
    nats_position position{};
};

/// The history, the instrument table and the publishing cursor of each feed, and the rule
/// deciding what goes out. No NATS in here: tests drive it with a fake sender and their clock.
class standby_gate {
public:
    using clock = std::chrono::steady_clock;
    /// `history`: entries per feed (rounded up to a power of two); `instruments`: table slots.
    /// `now`: the clock (tests inject theirs).
    standby_gate(std::size_t feeds, std::size_t history, std::size_t instruments,
                 standby_sender& sender, clock::time_point (*now)() = &clock::now);
    /// Entries a takeover (or a tick of the lease thread) publishes at most at once: a long
    /// catch-up never holds the lease thread past a renew; the rest goes out on the next
    /// record() or tick.
    static constexpr std::size_t catch_up_budget = 8192;
    /// Whether `p` comes right after `last` in a feed's chain (standby.hpp's rule).
    [[nodiscard]] static bool continues(nats_position const& last, nats_position const& p) noexcept;
    standby_gate(standby_gate const&) = delete;
    standby_gate& operator=(standby_gate const&) = delete;

    /// Publishing thread: records the event and, when this member leads the feed before its
    /// deadline, publishes what is due (normally this event).
    void record(std::size_t feed, md::event const& e, std::string_view symbol,
                nats_position const& p, clock::time_point now) noexcept;
    /// Lease thread: this member holds the feed's lease until `deadline`; `last` is what the
    /// group published. Publishes the missing events (or a resynchronization) and leads.
    /// Returns the events (or state messages) it published. When the sender cannot prepare,
    /// it does not lead and stays suspended (suspended(feed)).
    std::uint64_t take_over(std::size_t feed, group_position const& last, clock::time_point now,
                            clock::time_point deadline, bool counted);
    /// Lease thread: publishes what a catch-up left (at most `budget`) while leading.
    std::uint64_t pump(std::size_t feed, std::size_t budget);
    /// Lease thread: a renew succeeded; publishing may go on until `deadline`.
    void renewed(std::size_t feed, clock::time_point deadline) noexcept;
    /// Lease thread: the lease is lost (another holds it) or this member stops: publish nothing.
    void demote(std::size_t feed);
    /// Any thread (libnats's disconnect callback): stop publishing every feed until a
    /// take_over() resumes it.
    void suspend() noexcept;
    [[nodiscard]] bool suspended(std::size_t feed) const noexcept;
    [[nodiscard]] bool leading(std::size_t feed) const noexcept;
    /// Any thread: the time (clock ns) until which this member may publish the feed; 0 when it
    /// does not lead it.
    [[nodiscard]] std::int64_t deadline_ns(std::size_t feed) const noexcept;
    /// The last position this member published of the feed (under the mutex).
    [[nodiscard]] std::optional<nats_position> last_published(std::size_t feed);
    /// Any thread: counters (standby_feed_stats' takeovers, resyncs, resync_messages, history).
    void fill(std::size_t feed, standby_feed_stats& s) const noexcept;

private:
    struct entry {
        md::event event;
        std::uint64_t previous;
        std::uint32_t index;
        std::uint32_t flags; // 1: the event had a symbol when recorded; 2: after a loss
    };
    static_assert(sizeof(entry) == 80, "the history's entry: the event and its position");
    struct instrument {
        std::array<char, 31> symbol{};
        std::uint8_t symbol_size = 0;
        std::uint8_t have = 0; // bits: 1 definition, 2 status, 4 stale/recovered, 8 bbo
        md::event definition{};
        md::event status{};
        md::event stale{};
        md::event bbo{};
    };
    struct feed_state {
        std::vector<entry> ring;       // guarded by mutex_
        std::vector<instrument> table; // guarded by mutex_
        md::event feed_stale{};        // the last stale/recovered for all instruments
        bool have_feed_stale = false;
        std::uint64_t written = 0; // entries recorded (guarded by mutex_)
        std::uint64_t next = 0;    // the next entry to publish when leading (guarded)
        std::optional<nats_position> skip_through; // publish nothing at or before it
        std::optional<nats_position> published;    // the last position sent
        bool leader = false;                       // guarded by mutex_
        bool broken = false; // guarded: the history overran the cursor (resync next)
        std::atomic<std::int64_t> deadline_ns{0}; // clock ns; relaxed (see the file's top)
        std::atomic<bool> suspended{false};       // relaxed flag (see the file's top)
        std::atomic<bool> leader_seen{false};     // for stats(): relaxed
        std::atomic<std::uint64_t> takeovers{0};
        std::atomic<std::uint64_t> resyncs{0};
        std::atomic<std::uint64_t> resync_messages{0};
        std::atomic<std::uint64_t> history{0};
    };

    [[nodiscard]] nats_position position(entry const& e) const noexcept {
        return {.sequence = e.event.sequence, .index = e.index, .previous = e.previous, .flags = 0};
    }
    void remember(feed_state& f, md::event const& e, std::string_view symbol) noexcept;
    [[nodiscard]] std::string_view symbol_of(feed_state const& f, entry const& e) const noexcept;
    /// Not suspended and `now` before the deadline.
    [[nodiscard]] bool may_send(feed_state const& f, clock::time_point now) const noexcept;
    void drain(std::size_t feed, feed_state& f, clock::time_point now, std::size_t budget) noexcept;
    std::uint64_t resync(std::size_t feed, feed_state& f) noexcept;

    std::size_t mask_;
    standby_sender& sender_;
    clock::time_point (*now_)();
    std::vector<std::unique_ptr<feed_state>> feeds_;
    std::mutex mutex_;
};

/// The lease thread of one member of a group, over the publisher's connection.
class nats_standby {
public:
    struct options {
        std::string group;
        std::string member;
        std::chrono::milliseconds lease{2000};
        std::size_t replicas = 1;
        std::vector<std::string> feeds;    // names, for the log and the stats
        std::vector<std::string> keys;     // the feeds' keys in the bucket
        std::vector<std::string> streams;  // the feeds' JetStream streams
        std::vector<std::string> subjects; // the feeds' subjects ("signet.<feed>.>")
    };
    /// Starts the lease thread and the fence thread. `connected()`: the publisher's connection
    /// is up; `fence`: its socket's (nats_fence.hpp), cut when a deadline passes unrenewed.
    nats_standby(options o, __natsConnection* connection, standby_gate& gate,
                 std::function<bool()> connected, nats_fence& fence);
    nats_standby(nats_standby const&) = delete;
    nats_standby& operator=(nats_standby const&) = delete;
    /// Stops the lease thread (call release() first for a hand-over).
    ~nats_standby();

    /// Controlling thread, after the last publish and a flush: stops the lease thread and
    /// writes "released <last position>" on every key this member holds.
    void release() noexcept;
    [[nodiscard]] standby_stats stats() const;

    /// The lease's timing.
    [[nodiscard]] std::chrono::milliseconds renew_every() const noexcept { return o_.lease / 4; }
    [[nodiscard]] std::chrono::milliseconds publish_for() const noexcept { return o_.lease / 2; }
    /// Another holder's revision unchanged for this long: its lease is taken by CAS.
    [[nodiscard]] std::chrono::milliseconds stale_after() const noexcept {
        return o_.lease * 3 / 4;
    }
    [[nodiscard]] std::chrono::milliseconds poll_every() const noexcept {
        return std::min(std::chrono::milliseconds(100), o_.lease / 10);
    }

private:
    struct lease {
        bool holding = false;
        bool resume_due = false; // holding, but the catch-up is still to be done
        bool counted = false;    // that catch-up completes a takeover (not a resume)
        std::uint64_t revision = 0;
        standby_gate::clock::time_point next_renew{};
        standby_gate::clock::time_point deadline{};
        standby_gate::clock::time_point free_since{};    // when it was first seen free
        std::uint64_t watched_revision = 0;              // another holder's, as last read
        standby_gate::clock::time_point watched_since{}; // when that revision was first read
        std::optional<nats_position> released;           // a hand-over's position
        std::string holder;                              // as last read (the thread's own)
    };
    void run();
    /// The fence thread: every poll, a feed whose deadline passed without a renew has the
    /// connection cut (once per deadline), whatever the lease thread is waiting for.
    void watch_deadlines();
    /// Cuts the connection (what it has not delivered is dropped) and says so.
    void cut(std::size_t feed, char const* why);
    void stop_thread();
    void tick(std::size_t feed);
    void poll(std::size_t feed, standby_gate::clock::time_point now);
    void renew(std::size_t feed, standby_gate::clock::time_point now);
    void resume(std::size_t feed);
    [[nodiscard]] bool read_last(std::size_t feed, group_position& out,
                                 standby_gate::clock::time_point until);
    /// The feed's subscription has taken every message the server sent before a round trip
    /// made now (point 5 above); false if not by `until`.
    [[nodiscard]] bool subscription_caught_up(std::size_t feed,
                                              standby_gate::clock::time_point until);
    void set_holder(std::size_t feed, std::string const& holder);
    /// libnats's delivery thread: a message of feed `closure`'s subjects went by.
    static void on_message(__natsConnection* nc, __natsSubscription* sub, __natsMsg* msg,
                           void* closure) noexcept;
    void stop_subscriptions() noexcept;

    /// What this member's subscription saw of a feed: the greatest position delivered.
    struct seen {
        std::mutex mutex; // libnats's delivery thread per message, the lease thread at takeovers
        std::optional<nats_position> last; // guarded by mutex
        std::int64_t taken = 0;            // messages on_message took; guarded by mutex
        std::condition_variable took;      // notified at each, for subscription_caught_up()
    };

    options o_;
    __natsConnection* connection_;
    standby_gate& gate_;
    std::function<bool()> connected_;
    nats_fence& fence_;
    __jsCtx* js_ = nullptr;
    __kvStore* kv_ = nullptr;
    std::vector<lease> leases_;               // the lease thread's own (release() after it stopped)
    std::vector<std::unique_ptr<seen>> seen_; // per feed
    std::vector<__natsSubscription*> subscriptions_; // per feed: signet.<feed>.>
    mutable std::mutex stats_mutex_;                 // guards the strings and times below (stats())
    std::vector<std::string> holders_;
    std::vector<double> last_takeover_ms_;
    std::vector<nats_position> resumed_after_;
    std::vector<std::string> roles_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> lease_errors_; // relaxed statistics
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false; // guarded by mutex_
    std::thread thread_;
    std::thread fence_thread_; // watch_deadlines(); waits on wake_ too
};

} // namespace signet::receiver
