// signet: the design under test.
//
// Sockets: signet::net::runtime with the chosen backend (io_uring / epoll / asio), W workers of a
// blocking work-contract group; one feed (one line) per socket, its parser contract calling the
// feed's sink. Kernel timestamps (unless --stages) and the SO_RXQ_OVFL counter are off (no other
// design asks the kernel for control messages). Design `signet`: the runtime's default poller mode
// (a reactor contract on the workers; workers start on the first receiver CPU). Design
// `signet_poller`: the dedicated poller thread on the first receiver CPU, the workers on the others
// (cycling).
//
// Memory mode: the runtime on backend_kind::memory — its own per-feed path without sockets
// (packet pool, spsc_fixed_queue<packet>, the parser contract, the workers in thread mode) — with
// an injector thread writing each feed's memory_line in the poller's place: a packet written
// straight into a pool buffer, one flush (parser schedule) per feed and round.
//
// --stages on/system: the parser is timed by net::stage_latency (md_receiver's instrumentation);
// sockets ask for kernel software timestamps, the injector stamps user_rx_ns once per burst.
//
// Backend af_xdp (--path veth): the lines on the veth interface. Its drain cannot fill socket
// buffers before the receiver starts (the XDP program comes with the runtime), so the runtime
// starts first with every parser held at a gate (receiver_config::hold_until_start): frames
// wait in the AF_XDP RX ring, sized from the queue capacity, as datagrams wait in a socket
// buffer for the others; start() opens the gate.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <signet/core/realtime_clock.hpp>
#include <signet/net/memory_line.hpp>
#include <signet/net/runtime.hpp>

#include "common.hpp"
#include "network_path.hpp"

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

/// The feed's parser contract calls its sink; with `stages`, timed by the sink's stage_latency.
/// With a `gate`, the parser waits at it until it opens.
void add_parser(net::runtime& runtime, net::feed_options const& feed, feed_sink& sink, bool stages,
                std::atomic<bool> const* gate = nullptr) {
    if (gate != nullptr) {
        runtime.add_feed(feed, [s = &sink, gate](net::packet const& p) {
            // acquire: pairs with the release store in signet_receiver::start().
            while (!gate->load(std::memory_order_acquire)) {
                cpu_relax();
            }
            s->on_packet(p.payload());
        });
        return;
    }
    if (stages) {
        runtime.add_feed(feed, [s = &sink](net::packet const& p) {
            s->stages().begin(p);
            s->on_packet(p.payload());
            s->stages().end(p);
        });
    } else {
        runtime.add_feed(feed, [s = &sink](net::packet const& p) { s->on_packet(p.payload()); });
    }
}

class signet_receiver final : public receiver {
public:
    signet_receiver(receiver_config const& config, sink_set& sinks)
        : bind_address{AF_INET, 0, current_path().receiver, {}}
        , runtime_(net::runtime_options{
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
            line.bind = net::udp_endpoint::from_sockaddr(
                reinterpret_cast<sockaddr const*>(&bind_address), sizeof(bind_address));
            if (config.backend == "af_xdp") {
                line.interface = current_path().interface;
            }
            line.receive_buffer = config.receive_buffer;
            line.timestamps = config.stages ? net::timestamping::software : net::timestamping::off;
            line.kernel_drop_counter = false;
            feed.lines.push_back(line);
            feed.queue_capacity = config.queue_capacity;
            feed.buffer_size = packet_buffer_size;
            feed.on_full = net::full_policy::backpressure;
            feed.ring_buffers = config.ring_buffers;
            add_parser(runtime_, feed, *sinks.at(f), config.stages,
                       config.hold_until_start ? &gate_ : nullptr);
        }
        if (config.hold_until_start) {
            runtime_.start();
        }
    }

    [[nodiscard]] std::vector<std::uint16_t> ports() const override {
        std::vector<std::uint16_t> result;
        for (std::size_t f = 0; f < runtime_.feed_count(); ++f) {
            result.push_back(runtime_.local_endpoint(f).port());
        }
        return result;
    }
    void start() override {
        runtime_.start(); // no-op when it started held
        // release: pairs with the acquire loads at the parsers' gate.
        gate_.store(true, std::memory_order_release);
    }
    void stop() override {
        gate_.store(true, std::memory_order_release); // as in start()
        runtime_.stop();
    }

private:
    sockaddr_in bind_address;
    std::atomic<bool> gate_{false};
    net::runtime runtime_;
};

class signet_pipeline final : public pipeline {
public:
    signet_pipeline(pipeline_config const& config, sink_set& sinks)
        : config_(config)
        , runtime_(net::runtime_options{.backend = net::backend_kind::memory,
                                        .workers = config.workers,
                                        .cpus = config.worker_cpus,
                                        .idle = to_strategy(config.idle),
                                        .poller = net::poller_mode::thread,
                                        .contract_capacity = config.feeds + 64,
                                        .drain_timeout = std::chrono::milliseconds(5000)})
        , cursors_(config.feeds) {
        for (std::size_t f = 0; f < config.feeds; ++f) {
            net::feed_options feed;
            feed.name = "feed" + std::to_string(f);
            feed.queue_capacity = config.queue_capacity;
            feed.buffer_size = packet_buffer_size;
            feed.on_full = net::full_policy::backpressure;
            add_parser(runtime_, feed, *sinks.at(f), config.stages);
            lines_.push_back(runtime_.memory_line(f));
        }
    }
    ~signet_pipeline() override { stop(); }

    void start() override {
        runtime_.start();
        injector_ = std::thread([this] { inject(); });
    }

    void stop() override {
        if (!injector_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in inject().
        stopping_.store(true, std::memory_order_release);
        injector_.join();
        runtime_.stop(); // drains: parser contracts run until every queue is empty
    }

    [[nodiscard]] std::vector<feed_cursor> const& cursors() const override { return cursors_; }

private:
    void inject() {
        pin_this_thread(config_.injector_cpu);
        constexpr std::size_t burst = 8; // packets per feed and round, then one flush()
        packet_templates const& templates = *config_.templates;
        // acquire: pairs with the release store in stop().
        while (!stopping_.load(std::memory_order_acquire)) {
            bool progress = false;
            for (std::size_t f = 0; f < lines_.size(); ++f) {
                // --stages: one stamp per burst, as a socket line's receive side per batch.
                std::uint64_t const rx_ns = config_.stages ? realtime_clock::now_ns() : 0;
                std::size_t pushed = 0;
                while (pushed < burst) {
                    feed_cursor const saved = cursors_[f];
                    bool const written = lines_[f].write(
                        [&](std::span<std::byte> buffer) noexcept {
                            return produce_packet(templates, cursors_[f], buffer.data());
                        },
                        rx_ns);
                    if (!written) {
                        cursors_[f] = saved; // no room: not injected
                        break;
                    }
                    ++pushed;
                }
                if (pushed != 0) {
                    lines_[f].flush();
                    progress = true;
                }
            }
            if (!progress) {
                std::this_thread::yield();
            }
        }
    }

    pipeline_config config_;
    net::runtime runtime_;
    std::vector<net::memory_line> lines_;
    std::vector<feed_cursor> cursors_;
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
