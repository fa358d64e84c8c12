#pragma once

// reporter: what a receiver says while it runs, once per [stats] interval_s, from a
// runtime timer's contract (never from a parser): a stats line per feed (or, with
// receiver_options::top, a redrawn live view on stdout) and the silence warning
// ([stats] silent_warning_s). Both views read the same per-feed window (rates and latency
// percentiles since the previous report).
//
// Threading: report() runs as the timer's contract (never concurrently with itself); it reads
// the parsers' live counters, histograms and published books, which any thread may.

#include <chrono>
#include <cstddef>
#include <vector>

#include <signet/core/metrics/histogram.hpp>
#include <signet/net/timer.hpp>
#include <signet/receiver/feed_parser.hpp>

namespace signet::receiver {

class receiver;
struct receiver_options;

class reporter {
public:
    reporter(receiver const& receiver, receiver_options const& options);

    /// Setup: the timer whose contract calls report().
    void set_timer(net::timer timer) noexcept { timer_ = timer; }
    /// Controlling thread, at start: the first report one interval from now.
    void start();
    /// The timer's contract: reports, then re-arms for the next interval.
    void report();

private:
    using clock = std::chrono::steady_clock;
    /// The stage windows: total only for stats lines; receive, queue, parse, total, sequence
    /// for the live view.
    enum stage : std::size_t { total, receive, queue, parse, sequence };

    struct feed_window {
        feed_counters last{};
        std::vector<metrics::histogram::snapshot> stages; // previous snapshots, by `stage`
        std::uint64_t last_received = 0;
        clock::time_point last_change{};
        clock::time_point next_silence_warning{};
    };

    /// p50/p99 in µs of `h` since the previous call for the same window ("-" when empty).
    [[nodiscard]] std::string window(metrics::histogram const& h,
                                     metrics::histogram::snapshot& previous, bool words) const;
    void log_stats(std::size_t i, double seconds);
    void draw_top(double seconds);
    void watch_silence(std::size_t i, clock::time_point now);

    receiver const& receiver_;
    std::size_t top_;
    bool stats_lines_;
    clock::duration interval_;
    clock::duration silent_; // zero: no warning
    net::timer timer_;
    std::vector<feed_window> feeds_;
    clock::time_point start_{};
    clock::time_point last_{};
    clock::time_point next_{};
};

} // namespace signet::receiver
