#pragma once

// itch_receiver: a complete market-data receiver as a library type — what md_receiver runs.
// From a receiver_config (code, or load_receiver_config() of a TOML file) it builds a
// net::runtime with one feed per [[feed]]: its lines (A, B for A/B arbitration, R for
// re-requests), a feed_parser as the parser contract (MoldUDP64 + ITCH 5.0 into an order book,
// or raw packet counting), the runtime timers that parser needs, an optional recording per feed
// (md::binary_file_writer), the stats lines or live view, the silence warning and the
// Prometheus endpoint.
//
//   auto receiver = signet::receiver::itch_receiver(signet::receiver::load_receiver_config(path));
//   receiver.start();
//   ...                                   // feeds run on the runtime's workers
//   receiver.stop();                      // drains; then books and counters are final
//   std::puts(signet::receiver::summary_json(receiver).c_str());
//
// Threading: construct, start(), stop() and destroy from one controlling thread. live(),
// net_stats(), books() from any thread while running. parser(i)'s book and session counters,
// and summary_json(), after stop().

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <signet/md/nasdaq/binary_file_writer.hpp>
#include <signet/net/runtime.hpp>
#include <signet/receiver/config.hpp>
#include <signet/receiver/feed_parser.hpp>

namespace signet::receiver {

/// What the receiver does besides receiving.
struct receiver_options {
    /// Record what each MoldUDP64 feed delivered, in sequence, as a BinaryFILE here (with
    /// several feeds: record_path + "." + feed name); empty: no recording.
    std::string record_path{};
    /// Every config.stats_interval_s: a stats line per feed (spdlog, info) and the silence
    /// warning (config.silent_warning_s). Off: the program reports on its own.
    bool stats_lines = true;
    /// > 0: instead of stats lines, redraw a live view on stdout every interval: per feed its
    /// rates, gaps, recovery state, stage latencies and the `top` busiest stocks' top of book.
    std::size_t top = 0;
};

class metrics_endpoint;
class reporter;

class itch_receiver {
public:
    /// Opens every feed's sockets and builds everything; nothing runs until start(). Throws
    /// std::system_error naming the address and what to fix (a port in use, a missing
    /// multicast route), std::invalid_argument for options the runtime rejects, and
    /// std::runtime_error when a recording file or the metrics port cannot be opened.
    explicit itch_receiver(receiver_config config, receiver_options options = {});
    itch_receiver(itch_receiver const&) = delete;
    itch_receiver& operator=(itch_receiver const&) = delete;
    ~itch_receiver();

    /// Starts the workers (and the poller thread in thread mode). Throws std::system_error
    /// when a worker cannot be pinned to a configured CPU.
    void start();
    /// Stops receiving, parses or counts everything received (runtime::stop()), releases what
    /// the arbiters still hold and closes the recordings. Idempotent; the destructor calls it.
    void stop();

    [[nodiscard]] receiver_config const& config() const noexcept { return config_; }
    [[nodiscard]] std::size_t feed_count() const noexcept { return feeds_.size(); }
    /// Feed `i`'s parser: live(), books() and the histograms from any thread; the rest after
    /// stop().
    [[nodiscard]] feed_parser const& parser(std::size_t i) const { return *feeds_.at(i).parser; }
    /// Feed `i`'s receive counters, all lines (any thread).
    [[nodiscard]] net::feed_stats net_stats(std::size_t i) const {
        return runtime_->stats(feeds_.at(i).id);
    }
    /// Feed `i`'s recording (nullptr without record_path, or for a raw feed).
    [[nodiscard]] md::nasdaq::binary_file_writer const* recording(std::size_t i) const {
        return feeds_.at(i).recording.get();
    }
    /// Seconds since start() (until stop(): frozen there).
    [[nodiscard]] double elapsed_s() const noexcept;
    [[nodiscard]] net::runtime& runtime() noexcept { return *runtime_; }
    [[nodiscard]] net::runtime const& runtime() const noexcept { return *runtime_; }

private:
    struct feed_entry {
        std::size_t id = 0; // the runtime's feed index
        std::unique_ptr<feed_parser> parser;
        std::unique_ptr<md::nasdaq::binary_file_writer> recording;
    };
    void add_feed(feed_config const& config);
    void log_feed_lines(feed_config const& config, std::size_t id) const;

    receiver_config config_;
    receiver_options options_;
    std::vector<feed_entry> feeds_;
    std::unique_ptr<net::runtime> runtime_;
    std::unique_ptr<reporter> reporter_;
    std::unique_ptr<metrics_endpoint> endpoint_; // before runtime_ in destruction order
    std::chrono::steady_clock::time_point started_{};
    std::chrono::steady_clock::time_point stopped_{};
    bool running_ = false;
};

} // namespace signet::receiver
