// asio: the Asio baseline — asio::io_context run by W threads, one async_receive_from per packet
// per socket (re-issued from its completion handler), every feed's handlers on its own strand
// so the feed's parser never runs concurrently with itself and sees its packets in order. Each
// socket receives into its own buffer, so the kernel's copy is the only copy.
//
// Block idle: io_context::run(). Spin idle: io_context::poll() in a loop.
//
// Memory mode: an injector thread posts one handler per packet to the feed's strand; the packet
// sits in a per-feed ring of slots bounded by the same in-flight count as signet's queue.

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <asio.hpp>

#include "common.hpp"

namespace signet::bench {

namespace {

using strand_type = asio::strand<asio::io_context::executor_type>;

void run_context(asio::io_context& context, idle_mode idle, std::atomic<bool> const& stopping) {
    if (idle == idle_mode::block) {
        context.run();
        return;
    }
    // acquire: pairs with the release store of the owner's stop flag.
    while (!stopping.load(std::memory_order_acquire)) {
        if (context.poll() == 0) {
            cpu_relax();
        }
    }
}

class asio_receiver final : public receiver {
public:
    asio_receiver(receiver_config const& config, sink_set& sinks)
        : config_(config)
        , context_(static_cast<int>(config.workers)) {
        for (std::size_t f = 0; f < config.feeds; ++f) {
            auto feed = std::make_unique<feed_state>(context_, *sinks.at(f));
            // The Asio socket owns the descriptor from here on.
            feed->socket.assign(asio::ip::udp::v4(),
                                open_udp_socket(config.receive_buffer).release());
            feeds_.push_back(std::move(feed));
        }
    }
    ~asio_receiver() override { stop(); }

    [[nodiscard]] std::vector<std::uint16_t> ports() const override {
        std::vector<std::uint16_t> result;
        for (auto const& f : feeds_) {
            result.push_back(f->socket.local_endpoint().port());
        }
        return result;
    }

    void start() override {
        guard_.emplace(asio::make_work_guard(context_));
        for (auto& f : feeds_) {
            arm(*f);
        }
        for (std::size_t w = 0; w < config_.workers; ++w) {
            threads_.emplace_back([this, cpu = cpu_at(config_.cpus, w)] {
                pin_this_thread(cpu);
                run_context(context_, config_.idle, stopping_);
            });
        }
    }

    void stop() override {
        if (threads_.empty()) {
            return;
        }
        // release: pairs with the acquire loads in run_context() and the handlers.
        stopping_.store(true, std::memory_order_release);
        guard_.reset();
        context_.stop();
        for (auto& t : threads_) {
            t.join();
        }
        threads_.clear();
    }

private:
    struct feed_state {
        feed_state(asio::io_context& context, feed_sink& s)
            : socket(context)
            , strand(asio::make_strand(context))
            , sink(s) {}
        asio::ip::udp::socket socket;
        strand_type strand;
        std::array<std::byte, packet_buffer_size> buffer{};
        asio::ip::udp::endpoint from{};
        feed_sink& sink;
    };

    void arm(feed_state& f) {
        f.socket.async_receive_from(
            asio::buffer(f.buffer), f.from,
            asio::bind_executor(f.strand, [this, &f](asio::error_code error, std::size_t n) {
                if (!error) {
                    f.sink.on_packet({f.buffer.data(), n});
                }
                // acquire: pairs with the release store in stop().
                if (error != asio::error::operation_aborted &&
                    !stopping_.load(std::memory_order_acquire)) {
                    arm(f);
                }
            }));
    }

    receiver_config config_;
    asio::io_context context_;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
    std::vector<std::unique_ptr<feed_state>> feeds_;
    std::vector<std::thread> threads_;
    std::atomic<bool> stopping_{false};
};

class asio_pipeline final : public pipeline {
public:
    asio_pipeline(pipeline_config const& config, sink_set& sinks)
        : config_(config)
        , context_(static_cast<int>(config.workers))
        , cursors_(config.feeds) {
        for (std::size_t f = 0; f < config.feeds; ++f) {
            feeds_.push_back(
                std::make_unique<feed_state>(context_, *sinks.at(f), config.queue_capacity));
        }
    }
    ~asio_pipeline() override { stop(); }

    void start() override {
        guard_.emplace(asio::make_work_guard(context_));
        for (std::size_t w = 0; w < config_.workers; ++w) {
            threads_.emplace_back([this, cpu = cpu_at(config_.worker_cpus, w)] {
                pin_this_thread(cpu);
                run_context(context_, config_.idle, stopping_);
            });
        }
        injector_ = std::thread([this] { inject(); });
    }

    void stop() override {
        if (!injector_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in inject().
        stop_injecting_.store(true, std::memory_order_release);
        injector_.join();
        for (auto const& f : feeds_) {
            // acquire: pairs with the release decrement in the handlers.
            while (f->in_flight.load(std::memory_order_acquire) != 0) {
                std::this_thread::yield();
            }
        }
        // release: pairs with the acquire load in run_context().
        stopping_.store(true, std::memory_order_release);
        guard_.reset();
        context_.stop();
        for (auto& t : threads_) {
            t.join();
        }
    }

    [[nodiscard]] std::vector<feed_cursor> const& cursors() const override { return cursors_; }

private:
    struct feed_state {
        feed_state(asio::io_context& context, feed_sink& s, std::size_t capacity)
            : strand(asio::make_strand(context))
            , sink(s)
            , slots(capacity)
            , memory(std::make_unique<std::byte[]>(capacity * packet_buffer_size)) {}
        strand_type strand;
        feed_sink& sink;
        std::size_t slots;
        std::unique_ptr<std::byte[]> memory;
        std::size_t next_slot = 0; // injector only
        // alignas: the injector and the strand's handlers both touch the in-flight count.
        alignas(128) std::atomic<std::size_t> in_flight{0};
    };

    void inject() {
        pin_this_thread(config_.injector_cpu);
        constexpr std::size_t burst = 8; // as signet's injector: packets per feed and round
        packet_templates const& templates = *config_.templates;
        // acquire: pairs with the release store in stop().
        while (!stop_injecting_.load(std::memory_order_acquire)) {
            bool progress = false;
            for (std::size_t f = 0; f < feeds_.size(); ++f) {
                feed_state& feed = *feeds_[f];
                for (std::size_t k = 0; k < burst; ++k) {
                    // acquire: pairs with the release decrement in the handler; the slot we
                    // reuse next has been parsed.
                    if (feed.in_flight.load(std::memory_order_acquire) == feed.slots) {
                        break;
                    }
                    std::byte* const slot = feed.memory.get() + feed.next_slot * packet_buffer_size;
                    feed.next_slot = feed.next_slot + 1 == feed.slots ? 0 : feed.next_slot + 1;
                    std::size_t const size = produce_packet(templates, cursors_[f], slot);
                    // relaxed: only the injector increments; the post below publishes the slot.
                    feed.in_flight.fetch_add(1, std::memory_order_relaxed);
                    asio::post(feed.strand, [&feed, slot, size] {
                        feed.sink.on_packet({slot, size});
                        // release: the slot may be reused by the injector after this.
                        feed.in_flight.fetch_sub(1, std::memory_order_release);
                    });
                    progress = true;
                }
            }
            if (!progress) {
                std::this_thread::yield();
            }
        }
    }

    pipeline_config config_;
    asio::io_context context_;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
    std::vector<std::unique_ptr<feed_state>> feeds_;
    std::vector<feed_cursor> cursors_;
    std::vector<std::thread> threads_;
    std::thread injector_;
    std::atomic<bool> stop_injecting_{false};
    std::atomic<bool> stopping_{false};
};

} // namespace

std::unique_ptr<receiver> make_asio_receiver(receiver_config const& config, sink_set& sinks) {
    return std::make_unique<asio_receiver>(config, sinks);
}

std::unique_ptr<pipeline> make_asio_pipeline(pipeline_config const& config, sink_set& sinks) {
    return std::make_unique<asio_pipeline>(config, sinks);
}

} // namespace signet::bench
