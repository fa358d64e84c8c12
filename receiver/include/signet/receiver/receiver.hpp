#pragma once

// receiver: a complete market-data receiver as a library type — what md_receiver runs, for
// every protocol. From a receiver_config (code, or load_receiver_config() of a TOML file) it
// builds a net::runtime with one feed per [[feed]]: the lines its protocol declares (by name:
// a, b, request, snapshot, definitions), a feed_parser as the parser contract (the shared
// sequencing and the feed's one protocol object: feed_protocol.hpp), the runtime timers the
// parser and its protocol need, the stats lines or live view, the silence warning and the
// Prometheus endpoint.
//
//   auto receiver = signet::receiver::receiver(signet::receiver::load_receiver_config(path));
//   receiver.subscribe({.symbols = {"AAPL"}, .kinds = md::event_mask::of({md::event_kind::bbo})},
//                      [](signet::receiver::event_view const& v) { ... });   // optional
//   receiver.start();
//   ...                                   // feeds run on the runtime's workers
//   receiver.stop();                      // drains; then books and counters are final
//   std::puts(signet::receiver::summary_json(receiver).c_str());
//
// Market events go to subscribers (subscription.hpp: inline in the feed's parser contract, or
// queued to the subscriber's own work contract on the receiver's event workers).
//
// Threading: construct, subscribe(), start(), stop() and destroy from one controlling thread.
// parser(i)'s live(), books() and histograms, net_stats() and subscriber(), from any thread
// while running; its protocol and summary_json() after stop().

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <signet/core/work_contract_group.hpp>
#include <signet/core/worker_pool.hpp>
#include <signet/net/runtime.hpp>
#include <signet/receiver/config.hpp>
#include <signet/receiver/feed_parser.hpp>
#include <signet/receiver/publish.hpp>
#include <signet/receiver/standby.hpp>
#include <signet/receiver/subscription.hpp>

namespace signet::receiver {

/// What the receiver does besides receiving.
struct receiver_options {
    /// Record what each feed delivered, in sequence, here (with several feeds: record_path +
    /// "." + feed name), in its protocol's format (a protocol with nothing to record ignores
    /// it); empty: no recording.
    std::string record_path{};
    /// Every config.stats_interval_s: a stats line per feed (spdlog, info) and the silence
    /// warning (config.silent_warning_s). Off: the program reports on its own.
    bool stats_lines = true;
    /// > 0: instead of stats lines, redraw a live view on stdout every interval: per feed its
    /// rates, gaps, recovery state, stage latencies and the `top` busiest instruments' top of
    /// book.
    std::size_t top = 0;
    /// Threads that run the queued subscribers' contracts; 0: one per queued subscriber, at
    /// most 4 (a subscriber that blocks then holds only its own thread).
    std::size_t event_workers = 0;
    /// How an event worker waits for events: block (sleeps; a wake-up costs microseconds) or
    /// spin (lowest latency, burns its core).
    idle_strategy event_idle = idle_strategy::block;
    /// Event worker i pinned to event_cpus[i % size] (a spinning one wants a core of its own);
    /// empty: not pinned.
    std::vector<int> event_cpus{};
};

class metrics_endpoint;
class shm_publisher;
class nats_publisher;
class reporter;
namespace detail {
class subscriber;
class feed_dispatcher;
} // namespace detail

class receiver {
public:
    /// Opens every feed's sockets and builds everything; nothing runs until start(). Throws
    /// std::system_error naming the address and what to fix (a port in use, a missing
    /// multicast route), std::invalid_argument for options the runtime or a protocol rejects
    /// (a feed without protocol settings), and std::runtime_error when a recording file or the
    /// metrics port cannot be opened.
    explicit receiver(receiver_config config, receiver_options options = {});
    receiver(receiver const&) = delete;
    receiver& operator=(receiver const&) = delete;
    ~receiver();

    /// Starts the workers (and the poller thread in thread mode). Throws std::system_error
    /// when a worker cannot be pinned to a configured CPU.
    void start();
    /// Stops receiving, parses everything received (runtime::stop()), releases what the
    /// arbiters still hold and lets the protocols flush (recordings closed), and delivers
    /// what the queued subscribers' queues hold (both bounded by five seconds; a subscriber
    /// whose events did not all go out gets an events_lost, on this thread). Idempotent; the
    /// destructor calls it.
    void stop();

    /// Before start(): `handler` gets the events `s` selects (subscription.hpp). Returns the
    /// subscriber's index for subscriber(). Throws std::invalid_argument for a feed that does
    /// not exist, an inline subscription that could run on two feeds' threads (name one feed),
    /// a queue capacity of 0 or more than 64 subscribers on a feed; std::logic_error after
    /// start().
    std::size_t subscribe(subscription s, event_handler handler);
    [[nodiscard]] std::size_t subscriber_count() const noexcept { return subscribers_.size(); }
    /// A subscriber's counters (any thread; final after stop()).
    [[nodiscard]] subscriber_stats subscriber(std::size_t i) const;
    /// The NATS bridge's state and counters ([publish] nats; any thread); none without one.
    [[nodiscard]] std::optional<nats_stats> nats() const;
    /// The standby group's state as this member sees it ([publish] standby; any thread).
    [[nodiscard]] std::optional<standby_stats> standby() const;

    [[nodiscard]] receiver_config const& config() const noexcept { return config_; }
    [[nodiscard]] std::size_t feed_count() const noexcept { return feeds_.size(); }
    /// Feed `i`'s parser: live(), books() and the histograms from any thread; its protocol and
    /// the rest after stop().
    [[nodiscard]] feed_parser const& parser(std::size_t i) const { return *feeds_.at(i).parser; }
    /// Feed `i`'s receive counters, all lines (any thread).
    [[nodiscard]] net::feed_stats net_stats(std::size_t i) const {
        return runtime_->stats(feeds_.at(i).id);
    }
    /// Feed `i`'s receive counters of one line (its index in parser(i).lines()).
    [[nodiscard]] net::feed_stats net_stats(std::size_t i, std::size_t line) const {
        return runtime_->stats(feeds_.at(i).id, line);
    }
    /// Seconds since start() (until stop(): frozen there).
    [[nodiscard]] double elapsed_s() const noexcept;
    [[nodiscard]] net::runtime& runtime() noexcept { return *runtime_; }
    [[nodiscard]] net::runtime const& runtime() const noexcept { return *runtime_; }

private:
    struct feed_entry {
        std::size_t id = 0; // the runtime's feed index
        std::unique_ptr<feed_parser> parser;
    };
    void add_feed(feed_config const& config);
    void log_feed_lines(feed_parser const& parser, std::size_t id) const;
    [[nodiscard]] std::vector<std::string> feed_names() const;
    void publish_shm();
    void publish_nats();

    receiver_config config_;
    receiver_options options_;
    std::vector<feed_entry> feeds_;
    std::unique_ptr<net::runtime> runtime_;
    std::vector<std::unique_ptr<detail::subscriber>> subscribers_;
    std::vector<std::unique_ptr<detail::feed_dispatcher>> dispatchers_; // by feed; null: none
    std::unique_ptr<blocking_work_contract_group> event_group_;         // queued subscribers
    std::unique_ptr<worker_pool<blocking_work_contract_group>> event_workers_;
    std::unique_ptr<reporter> reporter_;
    std::unique_ptr<metrics_endpoint> endpoint_; // before runtime_ in destruction order
    std::unique_ptr<shm_publisher> shm_;         // [publish] shm
    std::unique_ptr<nats_publisher> nats_;       // [publish] nats
    std::size_t nats_subscriber_ = 0;            // its subscriber's index
    std::chrono::steady_clock::time_point started_{};
    std::chrono::steady_clock::time_point stopped_{};
    bool running_ = false;
};

} // namespace signet::receiver
