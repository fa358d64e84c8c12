#include "reporter.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/receiver/receiver.hpp>
#include <signet/receiver/summary.hpp>

#include "text.hpp"

namespace signet::receiver {

namespace {

/// After the first silence warning of a feed, the next one comes this much later at the soonest.
constexpr std::chrono::seconds silence_repeat{60};

template <typename Duration>
std::chrono::steady_clock::duration to_clock(Duration d) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

} // namespace

reporter::reporter(receiver const& receiver, receiver_options const& options)
    : receiver_(receiver)
    , top_(options.top)
    , stats_lines_(options.stats_lines)
    , interval_(to_clock(std::chrono::duration<double>(receiver.config().stats_interval_s)))
    , silent_(to_clock(std::chrono::duration<double>(receiver.config().silent_warning_s)))
    , feeds_(receiver.feed_count()) {
    for (auto& f : feeds_) {
        f.stages.resize(top_ > 0 ? sequence + 1 : total + 1); // 15 KiB each: only what is shown
    }
}

void reporter::start() {
    start_ = clock::now();
    last_ = start_;
    next_ = start_ + interval_;
    for (auto& f : feeds_) {
        f.last_change = start_;
        f.next_silence_warning = start_ + silent_;
    }
    timer_.arm_at(std::min(next_, silent_ > clock::duration::zero() ? start_ + silent_ : next_));
}

void reporter::report() {
    auto const now = clock::now();
    if (silent_ > clock::duration::zero()) {
        for (std::size_t i = 0; i < feeds_.size(); ++i) {
            watch_silence(i, now);
        }
    }
    if (now >= next_) {
        double const seconds = std::chrono::duration<double>(now - last_).count();
        if (top_ > 0) {
            draw_top(seconds);
        } else if (stats_lines_) {
            for (std::size_t i = 0; i < feeds_.size(); ++i) {
                log_stats(i, seconds);
            }
            if (auto const n = receiver_.nats()) {
                SPDLOG_LOGGER_INFO(net::logger(), "{}", nats_line(*n));
            }
            if (auto const sb = receiver_.standby()) {
                SPDLOG_LOGGER_INFO(net::logger(), "{}", standby_line(*sb));
            }
        }
        last_ = now;
        next_ += interval_;
        if (next_ <= now) {
            next_ = now + interval_; // fell behind (a stalled process): skip, never burst
        }
    }
    auto due = next_;
    if (silent_ > clock::duration::zero()) {
        for (std::size_t i = 0; i < feeds_.size(); ++i) {
            if (!receiver_.parser(i).live().end_of_stream) { // an ended session is not silent
                due = std::min(due, feeds_[i].next_silence_warning);
            }
        }
    }
    timer_.arm_at(std::max(due, now + std::chrono::milliseconds(1)));
}

std::string reporter::window(metrics::histogram const& h, metrics::histogram::snapshot& previous,
                             bool words) const {
    auto const now = h.take();
    auto const w = now - previous;
    previous = now;
    if (w.count == 0) {
        return words ? "latency -" : "     -/-     ";
    }
    std::string const p50 = micros(w.percentile(0.50));
    std::string const p99 = micros(w.percentile(0.99));
    return words ? "latency p50 " + p50 + " µs, p99 " + p99 + " µs" : p50 + "/" + p99;
}

/// One line per feed: rates over the last interval, then running totals since the start; then
/// the protocol's own lines (recovery, snapshots).
void reporter::log_stats(std::size_t i, double seconds) {
    feed_window& f = feeds_[i];
    feed_parser const& parser = receiver_.parser(i);
    feed_counters const live = parser.live();
    auto const net_stats = receiver_.net_stats(i);
    std::string const latency = window(parser.stages().total(), f.stages[total], true);
    std::string const& name = parser.config().name;
    SPDLOG_LOGGER_INFO(
        net::logger(),
        "stats {} | last {:.2f} s: {:.0f} pkts/s, {:.0f} msgs/s, {} | totals: {} pkts, {} msgs, {} "
        "gaps, {} missing, {} dup pkts, {} malformed pkts, {} ignored pkts, {} queue drops, {} "
        "kernel drops, {} truncated; book {}",
        name, seconds, static_cast<double>(live.packets - f.last.packets) / seconds,
        static_cast<double>(live.messages - f.last.messages) / seconds, latency, live.packets,
        live.messages, live.gaps, live.missing, live.duplicates, live.malformed, live.ignored,
        net_stats.dropped, net_stats.kernel_drops, net_stats.truncated, to_string(live.book));
    std::vector<std::string> more;
    parser.protocol().stats_lines(name, live, more);
    for (std::string const& line : more) {
        SPDLOG_LOGGER_INFO(net::logger(), "{}", line);
    }
    f.last = live;
}

/// One screen, redrawn every interval (stdout, a terminal): per feed its rates, gaps, recovery
/// state, stage latencies (µs over the interval) and the busiest instruments.
void reporter::draw_top(double seconds) {
    std::string screen = "\x1b[H\x1b[2J"; // home, clear
    char line[512];
    for (std::size_t i = 0; i < feeds_.size(); ++i) {
        feed_window& f = feeds_[i];
        feed_parser const& parser = receiver_.parser(i);
        feed_counters const live = parser.live();
        auto const net_stats = receiver_.net_stats(i);
        auto const& config = parser.config();
        std::string const state = parser.protocol().live_state(live);
        std::snprintf(line, sizeof(line),
                      "feed %-12s %-9s %9.0f pkts/s %10.0f msgs/s  gaps %llu (missing %llu)  "
                      "ignored %llu  drops %llu+%llu  book %s  %s\n",
                      config.name.c_str(), std::string(config.protocol_name()).c_str(),
                      static_cast<double>(live.packets - f.last.packets) / seconds,
                      static_cast<double>(live.messages - f.last.messages) / seconds,
                      static_cast<unsigned long long>(live.gaps),
                      static_cast<unsigned long long>(live.missing),
                      static_cast<unsigned long long>(live.ignored),
                      static_cast<unsigned long long>(net_stats.dropped),
                      static_cast<unsigned long long>(net_stats.kernel_drops), to_string(live.book),
                      state.c_str());
        screen += line;
        auto const& stages = parser.stages();
        screen += "  latency p50/p99 µs: receive " +
                  window(stages.receive(), f.stages[receive], false) + "  queue " +
                  window(stages.queue(), f.stages[queue], false) + "  parse " +
                  window(stages.parse(), f.stages[parse], false) + "  total " +
                  window(stages.total(), f.stages[total], false) + "  sequence " +
                  window(parser.sequence_latency(), f.stages[sequence], false) + "\n";
        screen += "  symbol               bid price x size          ask price x size    orders\n";
        auto const rows = parser.books();
        for (std::size_t r = 0; r < std::min(top_, rows.size()); ++r) {
            book_row const& row = rows[r];
            std::snprintf(line, sizeof(line), "  %-20s %14s x %-9llu %14s x %-9llu %6u\n",
                          symbol_text(row).c_str(),
                          price_text(row.bid_price, row.price_exponent).c_str(),
                          static_cast<unsigned long long>(row.bid_size),
                          price_text(row.ask_price, row.price_exponent).c_str(),
                          static_cast<unsigned long long>(row.ask_size), row.orders);
            screen += line;
        }
        screen += "\n";
        f.last = live;
    }
    std::fwrite(screen.data(), 1, screen.size(), stdout);
    std::fflush(stdout);
}

/// Warns when a feed that has not ended its session received nothing for `silent` seconds; then
/// at most once per silence_repeat while it stays silent.
void reporter::watch_silence(std::size_t i, clock::time_point now) {
    feed_window& f = feeds_[i];
    std::uint64_t const received = receiver_.net_stats(i).packets;
    if (received != f.last_received) {
        f.last_received = received;
        f.last_change = now;
        f.next_silence_warning = now + silent_;
        return;
    }
    if (now < f.next_silence_warning || receiver_.parser(i).live().end_of_stream) {
        return;
    }
    auto const repeat = std::max<clock::duration>(silent_, silence_repeat);
    SPDLOG_LOGGER_WARN(net::logger(),
                       "feed {}: nothing received for {:.1f} s{} ([stats] silent_warning_s; "
                       "repeated at most every {} s while silent)",
                       receiver_.parser(i).config().name,
                       std::chrono::duration<double>(now - f.last_change).count(),
                       f.last_change == start_ ? " since start" : "",
                       std::chrono::duration_cast<std::chrono::seconds>(repeat).count());
    f.next_silence_warning = now + repeat;
}

} // namespace signet::receiver
