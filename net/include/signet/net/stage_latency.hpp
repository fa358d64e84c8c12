#pragma once

// stage_latency: where a packet's time goes on its way to and through a parser, per feed, for a
// parser that times itself (md_receiver's feed_processor; any parser of yours):
//
//   kernel_rx_ns --receive--> user_rx_ns --queue--> parse start --parse--> parse end
//   kernel_rx_ns ------------------------ total ---------------------------> parse end
//
//   receive: the kernel's software stamp -> the receive side took the packet (per batch)
//   queue:   -> the parser contract started on it (line queue, scheduling, earlier packets)
//   parse:   -> the parser returned
//   total:   the kernel's stamp -> the parser returned
//
// receive and total need kernel software stamps (udp_socket_options::timestamps); a NIC's clock
// need not be the system's, so hardware-stamped packets skip them. queue needs user_rx_ns (every
// socket backend sets it; memory_line::write takes it).
//
// Cost: one realtime_clock read per packet (the parse end) and one more per parser contract run:
// a packet that follows another in the same run (packet::follows_in_run) starts where that one
// ended. Plus up to four histogram records. Measured by signet_packet_rate --mode memory
// --stages (docs/benchmarks.md, "What per-stage latency costs").
//
// Threading: begin()/end() on the parser contract (one writer); the histograms' take() on any
// thread (metrics::histogram).

#include <cstdint>

#include <signet/core/metrics/histogram.hpp>
#include <signet/core/realtime_clock.hpp>
#include <signet/net/packet.hpp>

namespace signet::net {

class stage_latency {
public:
    /// Parser contract, before parsing `p`. Returns the parse start (realtime_clock ns).
    std::uint64_t begin(packet const& p) noexcept {
        start_ = p.follows_in_run && last_end_ != 0 ? last_end_ : realtime_clock::now_ns();
        last_end_ = 0; // a parse that throws never ends: the next packet reads the clock
        return start_;
    }

    /// Parser contract, after parsing `p` (the packet given to begin()).
    void end(packet const& p) noexcept {
        std::uint64_t const now = realtime_clock::now_ns();
        last_end_ = now;
        parse_.record(since(now, start_));
        if (p.user_rx_ns != 0) {
            queue_.record(since(start_, p.user_rx_ns));
        }
        if (p.kernel_rx_ns != 0 && !p.hardware_timestamp) {
            total_.record(since(now, p.kernel_rx_ns));
            if (p.user_rx_ns != 0) {
                receive_.record(since(p.user_rx_ns, p.kernel_rx_ns));
            }
        }
    }

    [[nodiscard]] metrics::histogram const& receive() const noexcept { return receive_; }
    [[nodiscard]] metrics::histogram const& queue() const noexcept { return queue_; }
    [[nodiscard]] metrics::histogram const& parse() const noexcept { return parse_; }
    [[nodiscard]] metrics::histogram const& total() const noexcept { return total_; }

private:
    /// Stamps from different threads' clocks (and the kernel's) may disagree by nanoseconds:
    /// a negative difference is recorded as 0.
    static std::uint64_t since(std::uint64_t to, std::uint64_t from) noexcept {
        return to > from ? to - from : 0;
    }

    std::uint64_t start_ = 0;
    std::uint64_t last_end_ = 0;
    metrics::histogram receive_;
    metrics::histogram queue_;
    metrics::histogram parse_;
    metrics::histogram total_;
};

} // namespace signet::net
