#pragma once

// nats_publisher: the NATS bridge ([publish] nats; docs/publishing.md). The receiver subscribes
// it *queued* to every feed: the parser contracts only push into bounded queues (full: counted
// drops, optional bbo conflation), and the publishing runs on the receiver's event workers, so
// a slow, stalled or absent server never holds a parser. Each event goes out on the subject
// signet.<feed>.<symbol>.<kind> (kind: bbo, trade, book, status, definition) as the binary
// layout (publish.hpp's nats_layout: "SGEV", version, the 64-byte md::event) or a JSON object. With
// nats_stream, a JetStream stream per feed keeps the last bbo, trade, status and definition of
// every symbol, so a late consumer starts from the current state; nats_stream_watch counts what
// the streams did not store (a full store, an election).
//
// The connection (libnats) connects in the background when the server is not there at start,
// reconnects for ever with backoff and jitter, and buffers what is published meanwhile (up to
// its reconnect buffer; beyond it, publishing fails: counted, logged once per outage).
//
// Threading: construction, flush() and destruction on the controlling thread (flush() after
// the event workers stopped); publish() on the subscriber's contract (never two at once);
// stats() from any thread; libnats's callbacks on its threads touch atomics only, but the
// closed one, its last, which the destructor waits for (a mutex and a condition variable, off
// every hot path) before the object goes.
// Memory orders: every counter is relaxed (a statistic read on its own); streams_due_ is
// stored with release by the (re)connect callback and exchanged with acquire by the stream
// watch, which then makes the streams (on its own thread: publish() never waits for JetStream);
// wake_watch_ is stored with release once the watch is made and loaded with acquire by the
// callback, which wakes the watch (the destructor closes the connection, so no callback runs,
// before the watch goes).
//
// Positions: publish() gives each event its nats_position (standby.hpp: sequence, index among
// the published events of its sequence, the previous sequence), written into every message.
// With [publish] standby (nats_standby.hpp) publish() only records the event into the
// standby gate, which sends it (send(), under the gate's mutex, on this thread or the lease
// thread) while this member leads the feed, on a data connection of its own (below).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <signet/md/events.hpp>
#include <signet/receiver/config.hpp>
#include <signet/receiver/publish.hpp>
#include <signet/receiver/subscription.hpp>

#include "nats_standby.hpp"
#include "nats_stream_watch.hpp"

struct __natsOptions;
struct __natsConnection;

namespace signet::receiver {

/// The subject kind of an event ("" for events_lost, which is never published).
[[nodiscard]] std::string_view subject_kind(md::event_kind kind) noexcept;
/// The event kinds of a list of subject kinds.
[[nodiscard]] md::event_mask kinds_of_subjects(std::vector<std::string> const& subjects) noexcept;

class nats_publisher final : public standby_sender {
public:
    /// Starts connecting (in the background if the server is not there). Throws
    /// std::runtime_error for options libnats refuses (a missing TLS or credentials file).
    nats_publisher(nats_config const& config, std::vector<std::string> const& feeds);
    nats_publisher(nats_publisher const&) = delete;
    nats_publisher& operator=(nats_publisher const&) = delete;
    ~nats_publisher();

    void publish(event_view const& v) noexcept;
    /// Waits (bounded) until what was published reached the server.
    void flush() noexcept;
    [[nodiscard]] nats_stats stats() const;
    /// With [publish] standby: this member's view of its group (any thread).
    [[nodiscard]] std::optional<standby_stats> standby() const;
    /// The standby gate's sender: publishes one event at its position (publish()'s thread or,
    /// under the gate's mutex, the lease thread's).
    bool send(std::size_t feed, md::event const& e, std::string_view symbol,
              nats_position const& p) noexcept override;
    /// With [publish] standby, under the gate's mutex before a takeover: (re)connects the data
    /// connection if it is not up.
    bool prepare() noexcept override;
    /// The feeds' subjects start with these ("signet.<feed>.").
    [[nodiscard]] std::string const& prefix(std::size_t feed) const { return prefixes_[feed]; }

private:
    static void on_connected(__natsConnection* nc, void* self) noexcept;
    static void on_disconnected(__natsConnection* nc, void* self) noexcept;
    static void on_reconnected(__natsConnection* nc, void* self) noexcept;
    static void on_closed(__natsConnection* nc, void* self) noexcept;
    /// Closes the connection and waits for libnats's last callback.
    void shut() noexcept;
    /// What every connection of the bridge shares: servers, name, credentials, TLS, the write
    /// deadline. Throws std::runtime_error for what libnats refuses.
    void configure(__natsOptions* options, char const* name) const;

    nats_config config_;
    std::vector<std::string> feeds_;
    std::vector<std::string> prefixes_;
    __natsOptions* options_ = nullptr;
    __natsConnection* connection_ = nullptr;
    std::string subject_; // publish()'s own (reserved)
    // The subject's part before the kind, as of the last send(): a message's events (its order,
    // level, bbo) share one instrument, so most sends only swap the kind. Same owner as
    // subject_.
    std::size_t subject_feed_ = ~std::size_t{0};
    std::uint32_t subject_instrument_ = 0;
    std::string subject_symbol_;   // reserved: symbols are at most 20 characters
    std::size_t subject_stem_ = 0; // subject_'s length before the kind
    std::string payload_;          // publish()'s own (reserved)
    // publish()'s own: when the last failure line was logged, failures since.
    std::chrono::steady_clock::time_point failure_logged_{};
    std::uint64_t unlogged_failures_ = 0;
    std::atomic<bool> streams_due_{false};
    std::atomic<bool> closing_{false}; // the destructor runs: a lost connection is ours
    // The closed callback is libnats's last call into this object: the destructor waits for it.
    std::mutex closed_mutex_;
    std::condition_variable closed_cv_;
    bool closed_ = false; // guarded by closed_mutex_
    std::atomic<bool> connected_{false};
    std::atomic<bool> ever_connected_{false};
    std::atomic<std::uint64_t> published_{0};
    std::atomic<std::uint64_t> failed_{0};
    std::atomic<std::uint64_t> disconnects_{0};
    std::atomic<std::uint64_t> reconnects_{0};
    // Per feed: messages handed over for its stream's subjects (publish()'s, one writer).
    std::unique_ptr<std::atomic<std::uint64_t>[]> stream_sent_;
    std::vector<std::string> stream_names_;
    std::unique_ptr<nats_stream_watch> watch_; // with nats_stream; goes before the connection
    std::atomic<nats_stream_watch*> wake_watch_{nullptr}; // watch_, for the connect callback
    // Per feed, publish()'s own: the last sequence published, the next index within it and
    // the previous sequence (nats_position).
    std::vector<std::uint64_t> last_sequence_;
    std::vector<std::uint64_t> previous_sequence_;
    std::vector<std::uint32_t> next_index_;
    std::vector<std::uint8_t> lost_; // 1: an events_lost came (the next event is after_loss)
    // [publish] standby: the events go out on a connection of their own that never reconnects
    // by itself (libnats would flush into the new connection what a publish left in its
    // reconnect buffer, however small: one event, after another member took over); prepare()
    // makes a new one for each takeover or resume. data_mutex_ guards the pointer between
    // prepare() (which replaces it under the gate's mutex, as send() uses it) and flush().
    __natsOptions* data_options_ = nullptr;
    __natsConnection* data_ = nullptr;
    std::mutex data_mutex_;
    nats_fence fence_;                      // the data connection's socket
    std::unique_ptr<standby_gate> gate_;    // [publish] standby
    std::unique_ptr<nats_standby> standby_; // its lease thread; goes before the connection
};

} // namespace signet::receiver
