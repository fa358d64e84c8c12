// signet: the design under test.
//
// Sockets: signet::net::runtime with the chosen backend (io_uring / epoll / asio), W workers of a
// blocking work-contract group; one feed (one line) per socket, its parser contract calling the
// feed's sink. Kernel timestamps and the SO_RXQ_OVFL counter are off (no design here asks the
// kernel for control messages). Design `signet`: the runtime's default poller mode (a reactor
// contract on the workers; workers start on the first receiver CPU). Design `signet_poller`: the
// dedicated poller thread on the first receiver CPU, the workers on the others (cycling).
//
// Memory mode: the runtime's own per-feed path without sockets — net::detail::feed_state and
// line_state (packet pool, spsc_fixed_queue<packet>), the parser contract running
// net::detail::run_parser, the same worker_pool — with an injector thread in the io_uring
// poller's place: it takes buffers back from the pool's returns queue, copies a packet in, pushes
// it into the line's queue and schedules the parser contract once per feed and round.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <signet/core/work_contract_group.hpp>
#include <signet/core/worker_pool.hpp>
#include <signet/net/detail/feed_state.hpp>
#include <signet/net/runtime.hpp>

#include "common.hpp"

namespace signet::bench {

namespace {

idle_strategy to_strategy(idle_mode idle) noexcept {
    return idle == idle_mode::spin ? idle_strategy::spin : idle_strategy::block;
}

/// Workers go to the receiver CPUs after the first (the poller's), cycling; all to the first
/// when there is only one.
std::vector<int> worker_cpus(std::vector<int> const& cpus) {
    if (cpus.size() <= 1) {
        return cpus;
    }
    std::vector<int> rotated(cpus.begin() + 1, cpus.end());
    rotated.push_back(cpus.front());
    return rotated;
}

class signet_receiver final : public receiver {
public:
    signet_receiver(receiver_config const& config, sink_set& sinks)
        : runtime_(net::runtime_options{
              .backend = net::parse_backend_kind(config.backend),
              .workers = config.workers,
              .cpus = config.dedicated_poller ? worker_cpus(config.cpus) : config.cpus,
              .poller_cpu = cpu_at(config.cpus, 0),
              .idle = to_strategy(config.idle),
              .poller =
                  config.dedicated_poller ? net::poller_mode::thread : net::poller_mode::contract,
              .contract_capacity = 2 * config.feeds + 64,
              .drain_timeout = std::chrono::milliseconds(5000)}) {
        for (std::size_t f = 0; f < config.feeds; ++f) {
            net::feed_options feed;
            feed.name = "feed" + std::to_string(f);
            net::udp_socket_options line;
            line.bind = net::udp_endpoint::parse("127.0.0.1:0");
            line.receive_buffer = config.receive_buffer;
            line.kernel_timestamps = false;
            line.kernel_drop_counter = false;
            feed.lines.push_back(line);
            feed.queue_capacity = config.queue_capacity;
            feed.buffer_size = packet_buffer_size;
            feed.on_full = net::full_policy::backpressure;
            runtime_.add_feed(feed, [sink = sinks.at(f).get()](net::packet const& p) {
                sink->on_packet(p.payload());
            });
        }
    }

    [[nodiscard]] std::vector<std::uint16_t> ports() const override {
        std::vector<std::uint16_t> result;
        for (std::size_t f = 0; f < runtime_.feed_count(); ++f) {
            result.push_back(runtime_.local_endpoint(f).port());
        }
        return result;
    }
    void start() override { runtime_.start(); }
    void stop() override { runtime_.stop(); }

private:
    net::runtime runtime_;
};

class signet_pipeline final : public pipeline {
public:
    signet_pipeline(pipeline_config const& config, sink_set& sinks)
        : config_(config)
        , group_(config.feeds + 64)
        , cursors_(config.feeds) {
        for (std::size_t f = 0; f < config.feeds; ++f) {
            auto feed = std::make_unique<net::detail::feed_state>();
            feed->name = "feed" + std::to_string(f);
            feed->on_full = net::full_policy::backpressure;
            feed->stopping = &stopping_;
            feed->lines.push_back(std::make_unique<net::detail::line_state>(
                *feed, std::uint16_t{0}, net::udp_socket{}, config.queue_capacity,
                packet_buffer_size, 0));
            auto& line = *feed->lines.back();
            for (std::uint32_t b = 0; b < line.pool.count(); ++b) {
                line.stash.push_back(b);
            }
            feed->parser = group_.create_contract(
                [state = feed.get(), parse = [sink = sinks.at(f).get()](net::packet const& p) {
                    sink->on_packet(p.payload());
                }]() mutable { net::detail::run_parser(*state, parse); });
            if (!feed->parser.is_valid()) {
                throw std::length_error("signet_pipeline: no free contract slot");
            }
            feeds_.push_back(std::move(feed));
        }
    }
    ~signet_pipeline() override { stop(); }

    void start() override {
        workers_ = std::make_unique<worker_pool<blocking_work_contract_group>>(
            group_, worker_pool_options{.threads = config_.workers,
                                        .cpus = config_.worker_cpus,
                                        .idle = to_strategy(config_.idle),
                                        .lanes = {},
                                        .drain_timeout = std::chrono::milliseconds(5000)});
        injector_ = std::thread([this] { inject(); });
    }

    void stop() override {
        if (!injector_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in inject().
        stopping_.store(true, std::memory_order_release);
        injector_.join();
        workers_->stop(); // drains: parser contracts run until every queue is empty
    }

    [[nodiscard]] std::vector<feed_cursor> const& cursors() const override { return cursors_; }

private:
    void inject() {
        pin_this_thread(config_.injector_cpu);
        constexpr std::size_t burst = 8; // packets per feed and round, then one schedule()
        packet_templates const& templates = *config_.templates;
        // acquire: pairs with the release store in stop().
        while (!stopping_.load(std::memory_order_acquire)) {
            bool progress = false;
            for (std::size_t f = 0; f < feeds_.size(); ++f) {
                net::detail::feed_state& feed = *feeds_[f];
                net::detail::line_state& line = *feed.lines.front();
                std::uint32_t index = 0;
                while (line.pool.returns().pop(index)) {
                    line.stash.push_back(index);
                }
                std::size_t pushed = 0;
                while (pushed < burst && !line.stash.empty()) {
                    std::uint32_t const buffer = line.stash.back();
                    feed_cursor saved = cursors_[f];
                    net::packet p;
                    p.data = line.pool.buffer(buffer);
                    p.size = static_cast<std::uint32_t>(
                        produce_packet(templates, cursors_[f], line.pool.buffer(buffer)));
                    p.buffer = buffer;
                    if (!line.ready.push(p)) {
                        cursors_[f] = saved; // full: not injected
                        break;
                    }
                    line.stash.pop_back();
                    ++pushed;
                }
                if (pushed != 0) {
                    feed.parser.schedule();
                    progress = true;
                }
            }
            if (!progress) {
                std::this_thread::yield();
            }
        }
    }

    pipeline_config config_;
    blocking_work_contract_group group_;
    std::vector<std::unique_ptr<net::detail::feed_state>> feeds_;
    std::vector<feed_cursor> cursors_;
    std::unique_ptr<worker_pool<blocking_work_contract_group>> workers_;
    std::thread injector_;
    std::atomic<bool> stopping_{false};
};

} // namespace

std::unique_ptr<receiver> make_signet_receiver(receiver_config const& config, sink_set& sinks) {
    return std::make_unique<signet_receiver>(config, sinks);
}

std::unique_ptr<pipeline> make_signet_pipeline(pipeline_config const& config, sink_set& sinks) {
    return std::make_unique<signet_pipeline>(config, sinks);
}

} // namespace signet::bench
