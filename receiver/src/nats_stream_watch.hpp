#pragma once

// nats_stream_watch: tells whether the JetStream last-value streams keep what the NATS bridge
// sends them (docs/publishing.md). Core NATS publishing is not acknowledged: a stream whose
// store is full (the server's or account's JetStream limit), or that is electing a leader,
// silently keeps nothing of what arrives. Once a second this watch asks each feed's stream for
// its last sequence (a JetStream request on its own thread, never the publisher's) and compares
// how far it moved with how many messages the bridge handed over for that stream's subjects
// up to the previous check (a second earlier: time to be stored). The shortfall is the
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
// joins the watch's thread, before the connection goes); unstored() from any thread.
// Memory orders: `sent` counters are relaxed statistics (the bridge's thread writes them); the
// total is relaxed (read on its own); stop_ is guarded by mutex_ with the condition variable.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct __natsConnection;

namespace signet::receiver {

class nats_stream_watch {
public:
    /// `streams[i]`: feed i's stream; `sent[i]`: messages the bridge handed over for its
    /// subjects; `epoch()`: changes whenever the connection was lost.
    nats_stream_watch(__natsConnection* connection, std::vector<std::string> streams,
                      std::atomic<std::uint64_t> const* sent, std::function<std::uint64_t()> epoch);
    nats_stream_watch(nats_stream_watch const&) = delete;
    nats_stream_watch& operator=(nats_stream_watch const&) = delete;
    ~nats_stream_watch();

    /// Messages the streams did not store, so far (all feeds).
    [[nodiscard]] std::uint64_t unstored() const noexcept {
        return unstored_.load(std::memory_order_relaxed); // relaxed: a statistic
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
    void observe(std::size_t i, std::uint64_t sent, std::uint64_t epoch, std::uint64_t sequence);

    __natsConnection* connection_;
    std::vector<std::string> streams_;
    std::atomic<std::uint64_t> const* sent_;
    std::function<std::uint64_t()> epoch_;
    std::vector<stream_state> states_; // the watch thread's own
    std::atomic<std::uint64_t> unstored_{0};
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false; // guarded by mutex_
    std::thread thread_;
};

} // namespace signet::receiver
