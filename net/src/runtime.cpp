#include <stdexcept>

#include <spdlog/spdlog.h>

#include <signet/net/detail/backends.hpp>
#include <signet/net/log.hpp>
#include <signet/net/runtime.hpp>

namespace signet::net {

runtime::runtime(runtime_options options)
    : options_(std::move(options))
    , group_(options_.contract_capacity) {
    backend_ = make_receive_backend(options_.backend, group_, backend_reason_);
    SPDLOG_LOGGER_INFO(logger(), "signet runtime: backend {} ({})", to_string(backend_->kind()),
                       backend_reason_);
}

runtime::~runtime() {
    stop();
}

detail::feed_state& runtime::open_feed(feed_options const& options) {
    if (started_) {
        throw std::logic_error("runtime::add_feed: add feeds before start()");
    }
    if (options.lines.empty()) {
        throw std::invalid_argument("feed '" + options.name + "': needs at least one line");
    }
    if (options.queue_capacity == 0 || options.buffer_size == 0) {
        throw std::invalid_argument("feed '" + options.name +
                                    "': queue_capacity and buffer_size must be positive");
    }
    auto feed = std::make_unique<detail::feed_state>();
    feed->name = options.name;
    feed->on_full = options.on_full;
    feed->stopping = &stopping_;
    std::size_t const headroom =
        backend_->kind() == backend_kind::io_uring ? detail::io_uring_headroom() : 0;
    for (std::size_t i = 0; i < options.lines.size(); ++i) {
        std::error_code error;
        std::string what;
        udp_socket socket = udp_socket::open(options.lines[i], error, what);
        if (error) {
            throw std::system_error(error, "feed '" + options.name + "' line " + std::to_string(i) +
                                               ": " + what);
        }
        feed->lines.push_back(std::make_unique<detail::line_state>(
            *feed, static_cast<std::uint16_t>(i), std::move(socket), options.queue_capacity,
            options.buffer_size, headroom));
        for (std::uint32_t b = 0; b < feed->lines.back()->pool.count(); ++b) {
            feed->lines.back()->stash.push_back(b); // all buffers start on the receive side
        }
    }
    feeds_.push_back(std::move(feed));
    return *feeds_.back();
}

void runtime::start() {
    if (started_) {
        return;
    }
    started_ = true;
    workers_ = std::make_unique<worker_pool<blocking_work_contract_group>>(
        group_, worker_pool_options{.threads = options_.workers,
                                    .cpus = options_.cpus,
                                    .idle = options_.idle,
                                    .lanes = {},
                                    .drain_timeout = options_.drain_timeout});
    try {
        backend_->start(options_.poller_cpu);
    } catch (...) {
        workers_->stop();
        throw;
    }
    SPDLOG_LOGGER_INFO(logger(), "signet runtime: {} feed(s), {} worker(s), backend {}",
                       feeds_.size(), options_.workers, to_string(backend_->kind()));
}

void runtime::stop() {
    if (!started_ || stopped_) {
        return;
    }
    stopped_ = true;
    backend_->stop(); // nothing more is read; what was received is queued
    // release: pairs with the acquire loads in receive_from_socket(): receive contracts stop
    // reading from the kernel while the workers drain the queues.
    stopping_.store(true, std::memory_order_release);
    workers_->stop(); // drains: parser contracts run until every queue is empty
}

feed_stats runtime::stats(std::size_t feed) const {
    auto const& f = *feeds_.at(feed);
    feed_stats s;
    for (auto const& line : f.lines) {
        s.packets += line->packets.get();
        s.bytes += line->bytes.get();
        s.dropped += line->dropped.get();
        s.truncated += line->truncated.get();
        s.kernel_drops += line->kernel_drops.get();
        s.rearms += line->rearms.get();
    }
    s.parsed = f.parsed.get();
    s.parser_errors = f.parser_errors.get();
    return s;
}

udp_endpoint runtime::local_endpoint(std::size_t feed, std::size_t line) const {
    return feeds_.at(feed)->lines.at(line)->socket.local_endpoint();
}

} // namespace signet::net
