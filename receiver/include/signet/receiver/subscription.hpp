#pragma once

// Subscriptions: user code acting on the market events of the receiver's feeds (md/events.hpp:
// definitions, status, orders, levels, best bid/offer, trades, clear/snapshot/stale/recovered),
// the same vocabulary for every protocol. receiver::subscribe() takes a subscription (which
// feeds, which symbols, which kinds, how delivered) and a handler, before start().
//
// Delivery modes
//   inline  the handler runs inside the feed's parser contract, as each event is made: the
//           lowest latency, and it delays that feed's parsing by whatever it takes — it must
//           not block. An inline subscription names one feed (or the receiver has one), so the
//           handler never runs on two threads at once.
//   queued  the feed's parser pushes each event into a bounded spsc_fixed_queue per (feed,
//           subscriber) and schedules the subscriber's work contract, which calls the handler
//           on one of the receiver's event workers (receiver_options::event_workers). A
//           handler never runs concurrently with itself; different subscribers may run on
//           different event workers. A slow handler never stalls a parser or another
//           subscriber: when its queue is full the event is dropped and counted (a bbo, with
//           conflate_bbo, is kept instead as its instrument's latest, delivered when there is
//           room), and once there is room again the subscriber first gets an events_lost event
//           saying how many it lost: its view of the book must be re-read.
//
// Symbols: an instrument's symbol comes from its instrument_definition event (the first one of
// its id; ITCH's stock directory, MDP 3.0's security definition). A symbol filter passes the
// events of instruments whose definition named one of them, and every event for
// all_instruments (a feed-wide clear, snapshot or stale); events of an instrument not yet
// defined pass only a subscription without a symbol filter.
//
// Costs: per event and subscriber one mask test; inline, a std::function call; queued, a 64-byte
// copy into the queue and a schedule() (one atomic). Nothing allocates after start(), nothing
// locks.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <signet/md/events.hpp>

namespace signet::receiver {

enum class delivery_mode : std::uint8_t { inline_call, queued };
[[nodiscard]] char const* to_string(delivery_mode mode) noexcept;

/// What a handler gets: the event, its feed's name and its instrument's symbol ("" before its
/// definition or for all_instruments). Valid during the call only. A handler must not throw
/// (an exception ends the process: the parser or event worker cannot know what was half done).
struct event_view {
    md::event const& event;
    std::string_view feed;
    std::string_view symbol;
};
using event_handler = std::function<void(event_view const&)>;

struct subscription {
    std::string name{};                 ///< in the summary and metrics ("" : "subscriber-N")
    std::vector<std::string> feeds{};   ///< feed names; empty: every feed
    std::vector<std::string> symbols{}; ///< empty: every instrument
    md::event_mask kinds = md::event_mask::all();
    delivery_mode mode = delivery_mode::queued;
    std::size_t queue_capacity = 65536; ///< queued: events per feed
    bool conflate_bbo = false;          ///< queued: keep a full queue's bbos as each one's latest
};

/// A subscriber's counters (any thread; final after receiver::stop()).
struct subscriber_stats {
    std::string name;
    delivery_mode mode = delivery_mode::queued;
    std::uint64_t delivered = 0;    ///< handler calls
    std::uint64_t dropped = 0;      ///< events lost to a full queue (or left in it at stop)
    std::uint64_t conflated = 0;    ///< bbos replaced by a later one of their instrument
    std::uint64_t lost_notices = 0; ///< events_lost events delivered
};

} // namespace signet::receiver
