#pragma once

// nats_stream_watch: makes the JetStream last-value streams and tells whether they keep what
// the NATS bridge sends them (docs/publishing.md). Both are JetStream requests, which wait for
// an answer (5 s at most to make a stream, 1 s to watch it), so both run on the watch's own
// thread, never the publisher's: a cluster electing its JetStream leader, or a stalled server,
// holds this thread and never the publishing of the core subjects.
//
// Making: each feed's stream (its bbo, trade, status and definition subjects, one message per
// subject) is made or updated at construction when the connection is up (before the feeds
// start: the first values are stored), then again on the watch's thread after every
// (re)connect (streams_due, stored by the connection's callback) and once a second while one
// is missing (a cluster still electing: logged once, counted as stream_errors; logged again
// when they are made).
//
// Watching: core NATS publishing is not acknowledged: a stream whose store is full (the
// server's or account's JetStream limit), or that is electing a leader, silently keeps nothing
// of what arrives. Once a second this watch asks each feed's stream for its last sequence and
// compares how far it moved with how many messages the bridge handed over for that stream's
// subjects up to the previous check (a second earlier: time to be stored). The shortfall is the
// messages the stream did not store: counted (nats_stats::stream_unstored) and logged once per
// stream.
//
// A baseline (the stream's last sequence and the bridge's count) is taken at the first answer,
// and again after the connection was lost (publishing resumed from libnats's reconnect buffer)
// or when the stream's sequence went back (it was deleted and made again). Messages in flight
// at a baseline only make the stream look ahead, so the count errs toward zero, never above
// what was lost. Losses while the connection itself is down are the bridge's failed count.
//
// Threading: construction and destruction on the controlling thread (the destructor stops and
// joins the watch's thread, before the connection goes); unstored(), made() and errors() from
// any thread.
// Memory orders: `sent` counters are relaxed statistics (the bridge's thread writes them); the
// totals are relaxed (each read on its own); streams_due is stored with release by the
// connection's callback and exchanged with acquire here (its status is read after it), the
// callback then wakes the thread (wake()); stop_ and woken_ are guarded by mutex_ with the
// condition variable.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct __natsConnection;
struct __jsCtx;

namespace signet::receiver {

class nats_stream_watch {
public:
    /// `streams[i]`: feed i's stream, of the subjects `prefixes[i]` + "*." + bbo, trade, status
    /// and definition, `replicas` times; `sent[i]`: messages the bridge handed over for its
    /// subjects; `epoch()`: changes whenever the connection was lost; `streams_due`: set by
    /// each (re)connect. Makes the streams before it returns if `streams_due` is set.
    nats_stream_watch(__natsConnection* connection, std::vector<std::string> streams,
                      std::vector<std::string> prefixes, int replicas,
                      std::atomic<std::uint64_t> const* sent, std::function<std::uint64_t()> epoch,
                      std::atomic<bool>& streams_due);
    nats_stream_watch(nats_stream_watch const&) = delete;
    nats_stream_watch& operator=(nats_stream_watch const&) = delete;
    ~nats_stream_watch();

    /// Messages the streams did not store, so far (all feeds).
    [[nodiscard]] std::uint64_t unstored() const noexcept {
        return unstored_.load(std::memory_order_relaxed); // relaxed: a statistic
    }
    /// Makes the streams now, if due (a (re)connect callback's call, after it set streams_due).
    void wake() noexcept;
    /// Streams made or updated, so far.
    [[nodiscard]] std::uint64_t made() const noexcept {
        return made_.load(std::memory_order_relaxed); // relaxed: a statistic
    }
    /// Attempts to make a stream that failed, so far.
    [[nodiscard]] std::uint64_t errors() const noexcept {
        return errors_.load(std::memory_order_relaxed); // relaxed: a statistic
    }

private:
    struct stream_state {
        bool based = false;
        std::uint64_t epoch = 0;
        std::uint64_t sent0 = 0;       // the bridge's count at the baseline
        std::uint64_t sequence0 = 0;   // the stream's last sequence at the baseline
        std::uint64_t sent_before = 0; // the bridge's count at the previous check
        std::uint64_t shortfall = 0;   // the largest of this baseline
        std::uint64_t past = 0;        // the shortfalls of earlier baselines
        bool logged = false;
    };

    void run();
    /// Makes (or updates) every stream; false when one failed (the next second tries again).
    bool make();
    void observe(std::size_t i, std::uint64_t sent, std::uint64_t epoch, std::uint64_t sequence);

    __natsConnection* connection_;
    __jsCtx* js_ = nullptr;
    std::vector<std::string> streams_;
    std::vector<std::string> prefixes_;
    int replicas_;
    std::atomic<bool>& streams_due_;
    bool missing_ = false; // the watch thread's own (the constructor's before it starts)
    std::atomic<std::uint64_t> const* sent_;
    std::function<std::uint64_t()> epoch_;
    std::vector<stream_state> states_; // the watch thread's own
    std::atomic<std::uint64_t> unstored_{0};
    std::atomic<std::uint64_t> made_{0};
    std::atomic<std::uint64_t> errors_{0};
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;  // guarded by mutex_
    bool woken_ = false; // guarded by mutex_
    std::thread thread_;
};

} // namespace signet::receiver
