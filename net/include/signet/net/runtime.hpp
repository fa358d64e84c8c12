#pragma once

// runtime: owns a contract group, its workers and a receive backend, and wires feeds:
//
//   socket ──(backend: reactor contract or poller thread)──► spsc_fixed_queue<packet> ──► parser
//                                                              (one per line)          contract
//
// Where the backend runs (runtime_options::poller):
//   contract (default)  a *reactor* contract in the group reaps completions / readiness without
//                       sleeping and schedules the parsers; the workers' fair selection
//                       alternates reactor and parsers (run-to-completion on one core). An idle
//                       worker sleeps in the backend (io_uring_submit_and_wait / epoll_wait), so
//                       a packet wakes exactly one thread, the one that parses it; a contract
//                       scheduled from another thread wakes it through an eventfd. idle spin:
//                       the reactor re-schedules itself after every poll (never sleeps); block:
//                       it parks after each poll and the worker sleeps in the ring; backoff:
//                       it parks after 64 empty polls. A worker that keeps running other
//                       contracts never sleeps, so it schedules the parked reactor itself
//                       after two batches in a row without it: a flooded feed, or a contract
//                       that stays scheduled, starves neither the other sockets nor the
//                       timers. io_uring serves one worker this way
//                       (single issuer); with more workers, and with Asio, the runtime uses:
//   thread              a dedicated poller thread hands packets to the workers (pipelined over
//                       two cores; today's design before the reactor).
//
// The socket, the queue and the parser know nothing of each other: contracts connect them.
// A parser contract may read several lines (A/B): it takes packets in arrival order.
//
// TCP (tcp_client.hpp): make_tcp_client(feed) gives a client connection the feed's parser
// contract drives (snapshots, logins); the backend watches its socket beside the lines.
//
// Timers (timer.hpp): parser_timer(feed) and create_timer(work) give deadlines that schedule a
// contract; the reactor contract or the poller thread fires them (no thread of their own), and
// a worker sleeping in the backend sleeps no longer than the earliest.
//
// Threading: add_feed(), create_timer(), parser_timer(), start(), stop() from one controlling
// thread; stats() from any thread; timers are armed from any thread.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <signet/core/work_contract_group.hpp>
#include <signet/core/worker_pool.hpp>
#include <signet/net/detail/feed_state.hpp>
#include <signet/net/detail/parser_contract.hpp>
#include <signet/net/detail/readiness_set.hpp>
#include <signet/net/detail/timer_queue.hpp>
#include <signet/net/feed.hpp>
#include <signet/net/memory_line.hpp>
#include <signet/net/receive_backend.hpp>
#include <signet/net/tcp_client.hpp>
#include <signet/net/timer.hpp>

namespace signet::net {

struct runtime_options {
    backend_kind backend = backend_kind::automatic;
    std::size_t workers = 1;
    std::vector<int> cpus{}; ///< worker i pinned to cpus[i % size]; empty: no pinning
    int poller_cpu = -1;     ///< pin the poller thread; -1: no pinning
    idle_strategy idle = idle_strategy::backoff;
    poller_mode poller = poller_mode::contract; ///< see above; falls back to thread (logged)
    std::size_t contract_capacity = 1024; ///< contract slots: 1 per feed + 1 per line, plus yours
    std::chrono::milliseconds drain_timeout{5000}; ///< bound on stop()'s drain
};

class runtime {
public:
    /// Chooses the backend (logged with the reason). Throws std::system_error when an explicitly
    /// requested backend is unavailable.
    explicit runtime(runtime_options options);
    runtime(runtime const&) = delete;
    runtime& operator=(runtime const&) = delete;
    ~runtime();

    /// Setup, before start(). Opens the feed's sockets (throws std::system_error with a message
    /// naming the address and what to fix) and installs `parser` as its parser contract.
    /// Returns the feed's index.
    template <packet_parser Parser>
    std::size_t add_feed(feed_options options, Parser parser);

    void start();
    /// Stops the backend (nothing more is read), then drains: every received packet is parsed
    /// or counted as dropped. Idempotent; the destructor calls it.
    void stop();

    [[nodiscard]] backend_kind backend() const noexcept { return backend_->kind(); }
    /// The poller mode in effect (after start(): a fallback to thread mode is logged).
    [[nodiscard]] poller_mode poller() const noexcept { return poller_; }
    [[nodiscard]] std::string const& backend_reason() const noexcept { return backend_reason_; }
    [[nodiscard]] std::size_t feed_count() const noexcept { return feeds_.size(); }
    [[nodiscard]] std::size_t line_count(std::size_t feed) const {
        return feeds_.at(feed)->lines.size();
    }
    [[nodiscard]] std::string const& feed_name(std::size_t feed) const {
        return feeds_.at(feed)->name;
    }
    [[nodiscard]] feed_stats stats(std::size_t feed) const;
    /// One line's receive counters (parsed and parser_errors stay the feed's: 0 here).
    [[nodiscard]] feed_stats stats(std::size_t feed, std::size_t line) const;
    /// The bound address of a feed's line (the kernel's port choice for port 0); on backend
    /// memory, which opens no socket, the address the line was given.
    [[nodiscard]] udp_endpoint local_endpoint(std::size_t feed, std::size_t line = 0) const;
    /// The receive timestamps in effect on a feed's line (udp_socket::timestamps(); off on the
    /// memory backend).
    [[nodiscard]] timestamping timestamps(std::size_t feed, std::size_t line = 0) const;
    /// Why the line's timestamps differ from those requested (udp_socket::timestamp_note());
    /// empty when they do not.
    [[nodiscard]] std::string const& timestamp_note(std::size_t feed, std::size_t line = 0) const;
    /// backend_kind::memory: the writer's end of a feed's line (feed_options::lines gives the
    /// number of lines, at least one; their socket options are unused). Throws
    /// std::logic_error on another backend.
    [[nodiscard]] net::memory_line memory_line(std::size_t feed, std::size_t line = 0);
    /// A feed's line socket, e.g. to send from it (udp_socket::send_to is thread-safe).
    [[nodiscard]] udp_socket const& line_socket(std::size_t feed, std::size_t line = 0) const {
        return feeds_.at(feed)->lines.at(line)->socket;
    }
    /// Any thread, rarely (it may make a syscall per line): whether input for the feed's line
    /// is waiting that its parser has not taken yet — in the line's queue, or before it
    /// (receive_backend::input_waiting). What a parser asks before it calls a gap lost on
    /// the wall clock's word, so that scheduling delay never becomes loss.
    [[nodiscard]] bool input_waiting(std::size_t feed, std::size_t line) const;
    /// Any thread: runs the feed's parser contract soon even if no packet arrives; a parser
    /// with a member `on_idle()` has it called by a run that found no packets. (A parser with
    /// a member `on_batch()` has it called after each run that parsed packets.)
    void wake_parser(std::size_t feed) { feeds_.at(feed)->parser.schedule(); }
    /// Setup, before start(): a timer that runs the feed's parser contract when it falls due
    /// (its on_idle() when no packet waits). The parser arms it, e.g. from on_batch().
    [[nodiscard]] net::timer parser_timer(std::size_t feed);
    /// Setup, before start(): a timer that runs `work` (a work callable, see
    /// work_contract_group) as a contract of the runtime's group when it falls due. Throws
    /// std::length_error without a free contract slot.
    template <work_callable Work>
    [[nodiscard]] net::timer create_timer(Work&& work);
    /// Setup, before start(): a TCP client connection (tcp_client.hpp) whose readiness edges
    /// run the feed's parser contract, which calls its service(). Destroy it after stop().
    /// Throws std::invalid_argument on bad options.
    [[nodiscard]] std::unique_ptr<net::tcp_client> make_tcp_client(std::size_t feed,
                                                                   tcp_client_options options);
    /// The group the runtime runs: add your own contracts to it.
    blocking_work_contract_group& group() noexcept { return group_; }

private:
    detail::feed_state& open_feed(feed_options const& options);
    void start_reactor();
    void run_reactor();
    void reactor_worker(std::size_t index);
    void stop_reactor();

    runtime_options options_;
    blocking_work_contract_group group_;
    std::string backend_reason_;
    detail::readiness_set readiness_; // before backend_: the backend watches it
    std::unique_ptr<receive_backend> backend_;
    std::vector<std::unique_ptr<detail::feed_state>> feeds_;
    std::unique_ptr<detail::timer_queue> timers_;
    std::unique_ptr<worker_pool<blocking_work_contract_group>> workers_; // thread mode
    poller_mode poller_ = poller_mode::thread;
    // reactor mode
    work_contract reactor_;
    std::vector<std::thread> reactor_workers_;
    unsigned empty_polls_ = 0; // reactor contract only
    // The reactor's runs: written by the reactor contract, read by every worker after each
    // batch (relaxed: a scheduling heuristic, see reactor_worker).
    std::atomic<std::uint64_t> reactor_runs_{0};
    std::atomic<bool> reactor_finished_{false}; // after stop: the backend queued everything
    std::atomic<bool> workers_stop_{false};
    std::atomic<bool> stopping_requested_{false}; // reactor: stop() asked the backend to wind down
    std::atomic<bool> stopping_{false};
    bool started_ = false;
    bool stopped_ = false;
};

template <packet_parser Parser>
std::size_t runtime::add_feed(feed_options options, Parser parser) {
    detail::feed_state& feed = open_feed(options);
    feed.parser = group_.create_contract(
        [&feed, parser = std::move(parser)]() mutable { detail::run_parser(feed, parser); });
    if (!feed.parser.is_valid()) {
        feeds_.pop_back();
        throw std::length_error("runtime::add_feed: no free contract slot; raise "
                                "runtime_options::contract_capacity");
    }
    for (auto& line : feed.lines) {
        backend_->attach(*line);
    }
    return feeds_.size() - 1;
}

template <work_callable Work>
net::timer runtime::create_timer(Work&& work) {
    if (started_) {
        throw std::logic_error("runtime::create_timer: create timers before start()");
    }
    work_contract contract = group_.create_contract(std::forward<Work>(work));
    if (!contract.is_valid()) {
        throw std::length_error("runtime::create_timer: no free contract slot; raise "
                                "runtime_options::contract_capacity");
    }
    return net::timer(*timers_, timers_->add(std::move(contract)));
}

} // namespace signet::net
