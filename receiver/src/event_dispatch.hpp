#pragma once

// The receiver's side of subscriptions (subscription.hpp): a subscriber per subscribe() and a
// feed_dispatcher per feed with subscribers, which is the sink of the feed's protocol.
//
// Threading and memory orders
//   feed_dispatcher::on_event() and end_of_run() run on the feed's parser contract (or, after
//   the runtime stopped, on the controlling thread: joined workers order it). They are the one
//   producer of each (feed, subscriber) queue; a queued subscriber's run() is its one consumer,
//   on an event worker (a work contract never runs on two threads at once).
//   - The queue (spsc_fixed_queue) orders an event's bytes: written before the push's release,
//     read after the pop's acquire.
//   - An instrument's symbol is written once, before `defined` is stored with release; a
//     consumer reads it only after an acquire load of `defined` saw true. It is never written
//     again, so a consumer reading it races with nothing.
//   - No signal is lost: the producer schedules the subscriber's contract after the first push
//     of each parser run (the consumer starts at once) and again in flush() at the end of the
//     run when it pushed more after that one (one schedule per run, not one per event: each is
//     a read-modify-write of a line the event workers share). Every push is thus followed by a
//     schedule; a schedule during a run causes exactly one more run (work_contract_group), and
//     a run that leaves events in a queue schedules itself again (token.schedule()). The
//     receiver calls flush() after every parser run (feed_dispatcher::end_of_run()), also the
//     last one at stop.
//   - The counters are relaxed: each is a statistic read on its own (delivered and
//     lost_notices have one writer, the consumer; dropped and conflated one per feed).
//   Producer-only state (the unreported loss, the bbos kept by conflation) is touched by the
//   producer alone.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <signet/core/spsc_fixed_queue.hpp>
#include <signet/core/work_contract.hpp>
#include <signet/core/work_contract_group.hpp>
#include <signet/md/events.hpp>
#include <signet/receiver/subscription.hpp>

namespace signet::receiver::detail {

/// Instrument ids a subscription can tell apart by symbol (ITCH's locates, MDP 3.0's indices).
inline constexpr std::size_t max_instrument_ids = 65536;
/// Subscribers per feed (one bit each in an instrument's mask).
inline constexpr std::size_t max_feed_subscribers = 64;
/// Conflation: instruments whose bbo a (feed, subscriber) queue keeps at once.
inline constexpr std::size_t max_kept_bbos = 4096;

/// A feed's instruments as its subscribers see them.
struct instrument_entry {
    std::array<char, 20> symbol{};
    std::uint8_t length = 0;
    std::atomic<bool> defined{false};
    std::uint64_t subscribers = 0; // routes whose symbol filter passes it (producer only)
};

class subscriber;

/// One (feed, queued subscriber) pair: its queue and the producer's state.
struct feed_queue {
    feed_queue(std::size_t capacity, std::string const& feed, instrument_entry const* instruments,
               bool conflate);
    spsc_fixed_queue<md::event> queue;
    std::string const& feed;
    instrument_entry const* instruments;
    // Producer only.
    std::uint64_t unreported_lost = 0;      // dropped since the last events_lost that went in
    std::uint64_t pushes_in_run = 0;        // since the last flush(); the first one schedules
    std::vector<std::int32_t> pending_slot; // conflation: per instrument id, index in pending
    std::vector<md::event> pending;         // conflation: kept bbos, oldest first
};

class subscriber {
public:
    subscriber(subscription options, event_handler handler, std::string name);
    [[nodiscard]] subscription const& options() const noexcept { return options_; }
    [[nodiscard]] std::string const& name() const noexcept { return name_; }

    /// Inline delivery (the feed's parser contract).
    void call(event_view const& view) noexcept;
    /// Queued: a queue for one more feed (setup).
    feed_queue& add_feed(std::string const& feed, instrument_entry const* instruments);
    /// Queued: its contract, in the receiver's event group (setup).
    void attach(blocking_work_contract_group& group);
    /// Queued, producer side: the event into the feed's queue (or dropped, or kept).
    void push(feed_queue& q, md::event const& e) noexcept;
    /// Queued, producer side: what the producer still holds (a loss notice, kept bbos).
    void flush(feed_queue& q) noexcept;
    /// Queued, consumer side: the work contract's run.
    void run(work_contract_token& token);
    /// After the event workers stopped (controlling thread): what is left in the queues counts
    /// as dropped, and the handler gets one last events_lost per feed that lost any.
    void abandon() noexcept;
    [[nodiscard]] subscriber_stats stats() const;

private:
    [[nodiscard]] bool catch_up(feed_queue& q) noexcept; // false: still behind
    void lose(feed_queue& q, md::event const& e) noexcept;
    static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n) noexcept {
        counter.fetch_add(n, std::memory_order_relaxed); // a statistic: no ordering
    }

    static constexpr std::size_t batch = 256; // events per queue per run

    subscription options_;
    event_handler handler_;
    std::string name_;
    std::vector<std::unique_ptr<feed_queue>> queues_;
    work_contract contract_;
    std::atomic<std::uint64_t> delivered_{0};
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<std::uint64_t> conflated_{0};
    std::atomic<std::uint64_t> lost_notices_{0};
};

/// A feed's events to its subscribers: the sink the feed's protocol emits into.
class feed_dispatcher final : public md::event_sink {
public:
    explicit feed_dispatcher(std::string feed);
    /// Setup: a subscriber of this feed (its queue for this feed when queued). Throws
    /// std::invalid_argument past max_feed_subscribers.
    void add(subscriber& s, feed_queue* queue);
    /// The kinds any subscriber wants (what the protocol needs to make).
    [[nodiscard]] md::event_mask kinds() const noexcept { return kinds_; }
    [[nodiscard]] std::string const& feed() const noexcept { return feed_; }
    [[nodiscard]] instrument_entry const* instruments() const noexcept {
        return instruments_.get();
    }

    void on_event(md::event const& e) noexcept override;
    /// After each run of the parser contract: flushes what the queued routes hold.
    void end_of_run() noexcept;

private:
    struct route {
        subscriber* s;
        feed_queue* queue; // nullptr: inline
        md::event_mask kinds;
        std::uint64_t bit;
    };
    void define(md::event const& e) noexcept;

    std::string feed_;
    std::vector<route> routes_;
    std::unique_ptr<instrument_entry[]> instruments_;
    std::uint64_t unfiltered_ = 0; // routes without a symbol filter
    md::event_mask kinds_;
};

} // namespace signet::receiver::detail
