#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/core/cpu_relax.hpp>
#include <signet/core/realtime_clock.hpp>
#include <signet/net/log.hpp>
#include <signet/net/runtime.hpp>

#include "backends.hpp"

namespace signet::net {

namespace {
constexpr unsigned reactor_backoff_polls = 64; // backoff: empty polls before sleeping
// A worker that ran this many batches in a row without the reactor schedules it (reactor_worker).
constexpr unsigned reactor_busy_batches = 2;
// Longest sleep of an idle worker in the backend or the group; only bounds a lost wake-up.
constexpr std::chrono::milliseconds reactor_sleep_slice{100};
} // namespace

runtime::runtime(runtime_options options)
    : options_(std::move(options))
    , group_(options_.contract_capacity) {
    backend_ = make_receive_backend(options_.backend, group_, backend_reason_);
    backend_->watch(readiness_);
    timers_ = std::make_unique<detail::timer_queue>(
        [](void* backend) { static_cast<receive_backend*>(backend)->wake(); }, backend_.get());
    SPDLOG_LOGGER_INFO(logger(), "signet runtime: backend {} ({})", to_string(backend_->kind()),
                       backend_reason_);
    // The stamps' clock calibrates on first use (~2 ms): here, not on the first packet.
    (void)realtime_clock::now_ns();
}

runtime::~runtime() {
    stop();
    group_.set_external_waker(nullptr, nullptr); // the backend goes before the group
}

detail::feed_state& runtime::open_feed(feed_options const& options) {
    if (started_) {
        throw std::logic_error("runtime::add_feed: add feeds before start()");
    }
    bool const in_memory = backend_->kind() == backend_kind::memory;
    if (options.lines.empty() && !in_memory) {
        throw std::invalid_argument("feed '" + options.name + "': needs at least one line");
    }
    if (options.queue_capacity == 0 || options.buffer_size == 0) {
        throw std::invalid_argument("feed '" + options.name +
                                    "': queue_capacity and buffer_size must be positive");
    }
    auto feed = std::make_unique<detail::feed_state>();
    feed->name = options.name;
    feed->on_full = options.on_full;
    feed->ring_buffers = options.ring_buffers;
    feed->af_xdp = options.af_xdp;
    feed->stopping = &stopping_;
    std::size_t const headroom =
        backend_->kind() == backend_kind::io_uring ? detail::io_uring_headroom() : 0;
    bool const umem = backend_->kind() == backend_kind::af_xdp; // the backend holds the frames
    std::size_t const lines = std::max<std::size_t>(options.lines.size(), in_memory ? 1 : 0);
    for (std::size_t i = 0; i < lines; ++i) {
        udp_socket socket;
        if (!in_memory) {
            std::error_code error;
            std::string what;
            socket = udp_socket::open(options.lines[i], error, what);
            if (error) {
                throw std::system_error(error, "feed '" + options.name + "' line " +
                                                   std::to_string(i) + ": " + what);
            }
        }
        feed->lines.push_back(std::make_unique<detail::line_state>(
            *feed, static_cast<std::uint16_t>(i), std::move(socket),
            in_memory ? udp_socket_options{} : options.lines[i], options.queue_capacity,
            options.buffer_size, headroom, !umem));
    }
    feeds_.push_back(std::move(feed));
    return *feeds_.back();
}

void runtime::start() {
    if (started_) {
        return;
    }
    bool const reactor =
        options_.poller == poller_mode::contract && backend_->supports_reactor(options_.workers);
    if (options_.poller == poller_mode::contract && !reactor) {
        SPDLOG_LOGGER_INFO(logger(),
                           "signet runtime: backend {} has no reactor for {} worker(s); using a "
                           "dedicated poller thread",
                           to_string(backend_->kind()), options_.workers);
    }
    if (reactor) {
        start_reactor();
    } else {
        workers_ = std::make_unique<worker_pool<blocking_work_contract_group>>(
            group_, worker_pool_options{.threads = options_.workers,
                                        .cpus = options_.cpus,
                                        .idle = options_.idle,
                                        .lanes = {},
                                        .drain_timeout = options_.drain_timeout});
        try {
            backend_->start(options_.poller_cpu, *timers_);
        } catch (...) {
            workers_->stop();
            throw;
        }
        poller_ = poller_mode::thread;
    }
    started_ = true; // only now: a throwing start() leaves nothing for stop() to undo
    SPDLOG_LOGGER_INFO(logger(), "signet runtime: {} feed(s), {} worker(s), backend {}, poller {}",
                       feeds_.size(), options_.workers, to_string(backend_->kind()),
                       to_string(poller_));
}

void runtime::start_reactor() {
    if (options_.workers == 0) {
        throw std::invalid_argument("runtime: workers must be at least 1");
    }
    for (int cpu : options_.cpus) {
        if (!valid_cpu_id(cpu)) {
            throw std::invalid_argument("runtime: CPU id " + std::to_string(cpu) +
                                        " is out of range");
        }
    }
    reactor_ = group_.create_contract([this] { run_reactor(); });
    if (!reactor_.is_valid()) {
        throw std::length_error("runtime: no free contract slot for the reactor; raise "
                                "runtime_options::contract_capacity");
    }
    backend_->start_reactor(reactor_); // throws on setup errors, before any thread exists
    group_.set_external_waker([](void* backend) { static_cast<receive_backend*>(backend)->wake(); },
                              backend_.get());
    poller_ = poller_mode::contract;
    group_.set_batch_claims(options_.workers == 1); // one executing thread: batches are safe
    reactor_.schedule();
    for (std::size_t i = 0; i < options_.workers; ++i) {
        reactor_workers_.emplace_back([this, i] { reactor_worker(i); });
        if (options_.cpus.empty()) {
            continue;
        }
        int const cpu = options_.cpus[i % options_.cpus.size()];
        try {
            pin_thread(reactor_workers_.back(), cpu, "signet worker");
        } catch (...) {
            stop_reactor();
            throw;
        }
    }
}

void runtime::run_reactor() {
    // relaxed load and store, no read-modify-write: the contract never runs on two threads at
    // once, and its runs are ordered by the group's claim and release of the contract. The
    // workers read it with relaxed loads: a count for a scheduling heuristic, nothing else.
    reactor_runs_.store(reactor_runs_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    bool const polled = backend_->poll();
    bool const progress = timers_->fire_due() || polled;
    // acquire: pairs with the release store in stop().
    if (stopping_requested_.load(std::memory_order_acquire)) {
        if (backend_->finished()) {
            // release: pairs with the acquire wait in stop_reactor(): everything received is
            // in the lines' queues.
            reactor_finished_.store(true, std::memory_order_release);
            reactor_finished_.notify_all();
        } else {
            this_contract::schedule();
        }
        return;
    }
    empty_polls_ = progress ? 0 : empty_polls_ + 1;
    switch (options_.idle) {
    case idle_strategy::spin:
        this_contract::schedule(); // poll mode: never sleep
        break;
    case idle_strategy::backoff:
        if (empty_polls_ < reactor_backoff_polls) {
            this_contract::schedule();
        }
        break;
    case idle_strategy::block:
        break; // an idle worker sleeps in the backend, which wakes it on the next packet
    }
}

void runtime::reactor_worker(std::size_t /*index*/) {
    unsigned streak = 0;
    // A worker kept busy never sleeps, and only a sleep schedules the parked reactor (block;
    // backoff after its empty polls): so a worker that ran reactor_busy_batches batches in a
    // row without the reactor among them schedules it. Light load costs nothing (a wake-up runs
    // the reactor, then the parsers, then sleeps); a flooded feed or a contract that stays
    // scheduled no longer starves the other sockets and the timers.
    std::uint64_t reactor_seen = 0;
    unsigned batches_without_reactor = 0;
    for (;;) {
        if (group_.execute_next_contracts() != 0) {
            streak = 0;
            // relaxed: see run_reactor(); a count another worker's reactor run moved only
            // delays this worker's next schedule by one round.
            std::uint64_t const runs = reactor_runs_.load(std::memory_order_relaxed);
            if (runs != reactor_seen) {
                reactor_seen = runs;
                batches_without_reactor = 0;
            } else if (++batches_without_reactor >= reactor_busy_batches) {
                batches_without_reactor = 0;
                reactor_.schedule();
            }
            continue;
        }
        // acquire: pairs with the release store in stop_reactor().
        if (workers_stop_.load(std::memory_order_acquire)) {
            break;
        }
        ++streak;
        if (options_.idle == idle_strategy::spin ||
            (options_.idle == idle_strategy::backoff && streak < reactor_backoff_polls)) {
            cpu_relax();
            continue;
        }
        // One worker sleeps in the backend (a packet or the earliest timer wakes it); any
        // others in the group.
        if (timers_->begin_sleep()) {
            bool run = false;
            if (group_.begin_external_wait()) { // false: work arrived meanwhile, don't sleep
                run = backend_->wait(timers_->sleep_bound(reactor_sleep_slice));
                group_.end_external_wait();
            }
            timers_->end_sleep();
            (void)timers_->fire_due();
            if (run) {
                reactor_.schedule();
            }
        } else {
            (void)group_.execute_next_contracts(blocking_work_contract_group::max_batch,
                                                std::chrono::nanoseconds(reactor_sleep_slice));
        }
    }
    // Drain: run what is scheduled (parsers emptying their queues), within the bound.
    auto const deadline = std::chrono::steady_clock::now() + options_.drain_timeout;
    while (group_.execute_next_contracts() != 0) {
        if (std::chrono::steady_clock::now() >= deadline) {
            break;
        }
    }
}

void runtime::stop_reactor() {
    // release: pairs with the acquire load in run_reactor().
    stopping_requested_.store(true, std::memory_order_release);
    backend_->stop(); // asks poll() to wind down: cancel receives, reap what is in flight
    reactor_.schedule();
    backend_->wake();
    if (!reactor_workers_.empty()) {
        // acquire: pairs with the release store in run_reactor(); the backend's own deadline
        // bounds this wait.
        reactor_finished_.wait(false, std::memory_order_acquire);
    }
    // release: pairs with the acquire loads in receive_from_socket(): receive contracts stop
    // reading from the kernel while the workers drain the queues.
    stopping_.store(true, std::memory_order_release);
    // release: pairs with the acquire load in reactor_worker().
    workers_stop_.store(true, std::memory_order_release);
    group_.stop(); // wakes workers asleep in the group (and, through the waker, the backend)
    for (auto& t : reactor_workers_) {
        t.join();
    }
    reactor_workers_.clear();
    reactor_.release();
}

void runtime::stop() {
    if (!started_ || stopped_) {
        return;
    }
    stopped_ = true;
    if (poller_ == poller_mode::contract) {
        stop_reactor();
        return;
    }
    backend_->stop(); // nothing more is read; what was received is queued
    // release: pairs with the acquire loads in receive_from_socket(): receive contracts stop
    // reading from the kernel while the workers drain the queues.
    stopping_.store(true, std::memory_order_release);
    workers_->stop(); // drains: parser contracts run until every queue is empty
}

std::unique_ptr<net::tcp_client> runtime::make_tcp_client(std::size_t feed,
                                                          tcp_client_options options) {
    if (started_) {
        throw std::logic_error("runtime::make_tcp_client: create clients before start()");
    }
    return std::make_unique<net::tcp_client>(std::move(options), readiness_,
                                             feeds_.at(feed)->parser);
}

net::timer runtime::parser_timer(std::size_t feed) {
    if (started_) {
        throw std::logic_error("runtime::parser_timer: create timers before start()");
    }
    return net::timer(*timers_, timers_->add(&feeds_.at(feed)->parser));
}

bool runtime::input_waiting(std::size_t feed, std::size_t line) const {
    detail::line_state const& l = *feeds_.at(feed)->lines.at(line);
    // A queued datagram answers at once, without a syscall: a receiver behind its input (the
    // case this probe exists for) asks while its queue holds packets, during a whole gap.
    if (!l.ready.empty()) {
        return true;
    }
    // Else in the order datagrams travel: the socket (or ring), a receive under way, the queue.
    // A datagram that left the socket is then seen as received or queued
    // (line_state::receiving; acquire pairs with its release store after the pushes).
    return backend_->input_waiting(l) || l.receiving.load(std::memory_order_acquire) ||
           !l.ready.empty();
}

feed_stats runtime::stats(std::size_t feed, std::size_t line) const {
    auto const& l = *feeds_.at(feed)->lines.at(line);
    feed_stats s;
    s.packets = l.packets.value();
    s.bytes = l.bytes.value();
    s.dropped = l.dropped.value();
    s.truncated = l.truncated.value();
    // The cmsg counter only moves with a received datagram; the socket's own counter also has
    // the drops after the last one (a flood that ends while the queue is full).
    s.kernel_drops =
        std::max(static_cast<std::uint64_t>(l.kernel_drops.value()), backend_->kernel_drops(l));
    s.rearms = l.rearms.value();
    s.hardware_timestamps = l.hardware_timestamps.value();
    s.malformed = l.malformed.value();
    return s;
}

feed_stats runtime::stats(std::size_t feed) const {
    auto const& f = *feeds_.at(feed);
    feed_stats s;
    for (std::size_t line = 0; line < f.lines.size(); ++line) {
        s += stats(feed, line);
    }
    s.parsed = f.parsed.value(); // the parser's counters are the feed's, not a line's
    s.parser_errors = f.parser_errors.value();
    return s;
}

memory_line runtime::memory_line(std::size_t feed, std::size_t line) {
    if (backend_->kind() != backend_kind::memory) {
        throw std::logic_error("runtime::memory_line: the backend is " +
                               std::string(to_string(backend_->kind())) +
                               ", not memory (runtime_options::backend)");
    }
    return net::memory_line(*feeds_.at(feed)->lines.at(line));
}

udp_endpoint runtime::local_endpoint(std::size_t feed, std::size_t line) const {
    detail::line_state const& l = *feeds_.at(feed)->lines.at(line);
    // backend memory opens no socket: the line's endpoint is the one it was given
    return l.socket.is_open() ? l.socket.local_endpoint() : l.options.bind;
}

timestamping runtime::timestamps(std::size_t feed, std::size_t line) const {
    return feeds_.at(feed)->lines.at(line)->socket.timestamps();
}

std::string const& runtime::timestamp_note(std::size_t feed, std::size_t line) const {
    return backend_->timestamp_note(*feeds_.at(feed)->lines.at(line));
}

} // namespace signet::net
