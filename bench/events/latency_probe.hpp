#pragma once

// latency_probe: the user's handler of the event benchmarks (signet_event_latency,
// signet_publish_rate). Its first instructions read the clocks; once per packet (the first
// event of its first message, which carries the sender's stamp as its exchange time) it records
// now - send stamp and now - the kernel's receive stamp; with made_by(), also now - when the
// message's first event was made (creation_stamps.hpp).

#include <atomic>
#include <cstdint>
#include <optional>

#include <time.h>

#include <signet/core/metrics/counter.hpp>
#include <signet/core/metrics/histogram.hpp>
#include <signet/md/events.hpp>

#include "common.hpp"
#include "creation_stamps.hpp"
#include <nlohmann/json.hpp>

namespace signet::bench {

/// The user's handler: its first instruction reads the clock; once per stamped message it
/// records the two latencies (one writer: the handler runs on one thread at a time).
class latency_probe {
public:
    /// `per_packet`: the clocks are read only on the first event of each packet (a new kernel
    /// receive stamp) - the stamped one - so the probe costs little beside what it measures
    /// (signet_publish_rate's CPU time per packet); needs the receive stamps.
    explicit latency_probe(bool per_packet = false) noexcept
        : per_packet_(per_packet) {}

    void on_event(md::event const& e) noexcept {
        if (per_packet_) {
            if (e.receive_ns == last_receive_ns_) {
                events_.add();
                return;
            }
            last_receive_ns_ = e.receive_ns;
        }
        // The first instructions: the sender stamps CLOCK_MONOTONIC, the kernel CLOCK_REALTIME.
        std::uint64_t const now = bench::monotonic_ns();
        timespec t{};
        ::clock_gettime(CLOCK_REALTIME, &t); // the kernel's own clock, not a per-thread anchor
        std::uint64_t const now_realtime = static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
                                           static_cast<std::uint64_t>(t.tv_nsec);
        events_.add();
        if (e.sequence == last_sequence_ || !recording_.load(std::memory_order_relaxed)) {
            return; // relaxed: a flag the controlling thread flips between phases
        }
        std::uint64_t const from_send = (now - e.exchange_ns) & bench::timestamp_mask;
        if (from_send > 1'000'000'000) {
            return; // not the stamped message of its packet (a generator's timestamp)
        }
        last_sequence_ = e.sequence;
        send_.record(from_send);
        if (e.receive_ns != 0 && now_realtime > e.receive_ns) {
            kernel_.record(now_realtime - e.receive_ns);
        }
        if (stamps_ != nullptr) {
            std::optional<std::uint64_t> const made = stamps_->made(e.sequence);
            if (made && now >= *made) {
                made_.record(now - *made);
            } else {
                unmatched_.add();
            }
        }
    }
    void record(bool on) noexcept { recording_.store(on, std::memory_order_relaxed); }
    /// Before the run: also record now - when the message's first event was made, as `stamps`
    /// says (its writer stamps on the monotonic clock this probe reads).
    void made_by(creation_stamps const* stamps) noexcept { stamps_ = stamps; }
    [[nodiscard]] metrics::histogram const& from_made() const noexcept { return made_; }
    /// Stamped messages whose making `stamps` no longer (or never) held.
    [[nodiscard]] std::uint64_t unmatched() const noexcept { return unmatched_.value(); }
    [[nodiscard]] metrics::histogram const& from_send() const noexcept { return send_; }
    [[nodiscard]] metrics::histogram const& from_kernel() const noexcept { return kernel_; }
    /// Any thread: the events handled so far.
    [[nodiscard]] std::uint64_t events() const noexcept { return events_.value(); }

private:
    bool per_packet_;
    std::uint64_t last_receive_ns_ = 0;
    std::atomic<bool> recording_{false};
    std::uint64_t last_sequence_ = 0;
    metrics::counter events_; // one writer, the handler's thread (counter.hpp)
    metrics::histogram send_;
    metrics::histogram kernel_;
    creation_stamps const* stamps_ = nullptr;
    metrics::histogram made_;
    metrics::counter unmatched_; // the same writer
};

/// p50, p99, p99.9 and the count of the samples `s`.
inline nlohmann::ordered_json percentiles(metrics::histogram::snapshot const& s) {
    return {{"p50", s.percentile(0.50)},
            {"p99", s.percentile(0.99)},
            {"p999", s.percentile(0.999)},
            {"count", s.count}};
}

/// The same of `h`'s samples so far.
inline nlohmann::ordered_json percentiles(metrics::histogram const& h) {
    return percentiles(h.take());
}

} // namespace signet::bench
