#pragma once

// The sender: one thread pinned to its own CPU sends the feeds' packets over the run's path
// (loopback, or from the sending namespace of --path veth: network_path.hpp) with
// sendmmsg, round-robin over the feeds (packet k goes to feed k % F), each packet stamped with
// its send time just before the sendmmsg call. Paced (a fixed packets/s rate; batches are
// what is due, at most `batch`) or as fast as possible (drain fill). Packets are copies of the
// pre-generated templates with the feed's sequence number patched in: no generation while timed.

#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include <sys/types.h>

#include <signet/net/udp_sender.hpp>

#include "common.hpp"

namespace signet::bench {

struct sender_options {
    std::vector<std::uint16_t> ports; ///< one per feed, on the path's receiving address
    packet_templates const* templates = nullptr;
    double rate = 0;         ///< packets/s; 0 = as fast as possible
    std::size_t batch = 32;  ///< at most this many packets per sendmmsg
    std::uint64_t limit = 0; ///< stop after this many packets; 0 = until stop()
    int cpu = -1;
};

class sender {
public:
    explicit sender(sender_options options);
    sender(sender const&) = delete;
    sender& operator=(sender const&) = delete;
    ~sender();

    void start();
    /// Requests the stop and joins.
    void stop();
    /// Joins (returns when `limit` packets were sent); rethrows the sender thread's error.
    void wait();

    /// Any thread: packets sent so far.
    [[nodiscard]] std::uint64_t sent() const noexcept {
        return sent_.load(std::memory_order_relaxed); // relaxed: a snapshot
    }
    /// After stop()/wait(): per-feed packets and messages sent.
    [[nodiscard]] std::vector<feed_cursor> const& cursors() const noexcept { return cursors_; }
    /// After stop()/wait(): the sender thread's CPU time and its sending time.
    [[nodiscard]] std::uint64_t cpu_ns() const noexcept { return cpu_ns_; }
    [[nodiscard]] double seconds() const noexcept { return seconds_; }

private:
    void run();

    sender_options options_;
    net::udp_sender socket_; // sendmmsg on its native_handle()
    std::vector<feed_cursor> cursors_;
    std::thread thread_;
    std::exception_ptr error_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> sent_{0};
    std::uint64_t cpu_ns_ = 0;
    double seconds_ = 0;
};

} // namespace signet::bench
