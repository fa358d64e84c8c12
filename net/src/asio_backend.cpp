// Asio backend: an asio::io_context on the poller thread waits for readability with
// async_wait(wait_read) and only schedules the line's receive contract; the contract drains the
// socket with recvmmsg, and when the socket is empty it posts the next async_wait back to the
// io_context (so at most one wait is outstanding per line). Applications that already run Asio
// can host signet this way. Per readiness: one async_wait completion + one post; per batch: one
// recvmmsg; per packet: one spsc push. The runtime's readiness set (TCP connections) is one more
// descriptor waited on the same way; its handler dispatches the set and waits again.
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <asio.hpp>
#include <spdlog/spdlog.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/net/detail/feed_state.hpp>
#include <signet/net/detail/readiness_set.hpp>
#include <signet/net/detail/timer_queue.hpp>
#include <signet/net/log.hpp>

#include "backends.hpp"
#include "socket_receive.hpp"

namespace signet::net::detail {

namespace {

class asio_backend final : public receive_backend {
public:
    explicit asio_backend(blocking_work_contract_group& group)
        : group_(group)
        , guard_(asio::make_work_guard(context_)) {}
    ~asio_backend() override {
        stop();
        // The descriptors belong to the udp_sockets and the readiness set, started or not.
        for (auto& w : watched_) {
            (void)w->descriptor.release();
        }
        if (readiness_descriptor_) {
            (void)readiness_descriptor_->release();
        }
    }

    backend_kind kind() const noexcept override { return backend_kind::asio; }

    void attach(line_state& line) override {
        auto w = std::make_unique<watched>(context_, line);
        watched* self = w.get();
        line.backend = self;
        line.receive = group_.create_contract([this, self] {
            switch (receive_from_socket(self->line)) {
            case receive_result::budget_spent:
                this_contract::schedule();
                break;
            case receive_result::drained:
                asio::post(context_, [this, self] { arm(*self); });
                break;
            case receive_result::paused:   // resume() schedules us again
            case receive_result::stopping: // no more reading
                break;
            }
        });
        if (!line.receive.is_valid()) {
            throw std::length_error("asio backend: no free contract slot for a receive contract");
        }
        line.resume = [](line_state& l) {
            l.receive.schedule();
        };
        watched_.push_back(std::move(w));
    }

    void watch(readiness_set& set) override {
        readiness_ = &set;
        readiness_descriptor_.emplace(context_, set.fd());
    }

    void start(int cpu, timer_queue& timers) override {
        for (auto& w : watched_) {
            w->line.receive.schedule(); // drains what arrived already, then arms the wait
        }
        if (readiness_descriptor_) {
            arm_readiness();
        }
        thread_ = std::thread([this, &timers] { run(timers); });
        signet::pin_thread(thread_, cpu, "asio poller");
    }

    void stop() override {
        if (!thread_.joinable()) {
            return;
        }
        guard_.reset();
        context_.stop();
        thread_.join();
    }

    /// Any thread: ends a run_one_for() in progress (a timer armed earlier than the sleep).
    void wake() noexcept override {
        try {
            asio::post(context_, [] {});
        } catch (...) { // NOLINT(bugprone-empty-catch): the sleep's bound still holds
        }
    }

private:
    // The poller thread: runs the io_context's handlers one at a time, firing the runtime's
    // timers in between and sleeping at most until the earliest.
    void run(timer_queue& timers) {
        while (!context_.stopped()) {
            (void)timers.begin_sleep(); // the only sleeper in thread mode
            (void)context_.run_one_for(timers.sleep_bound(idle_sleep));
            timers.end_sleep();
            (void)timers.fire_due();
        }
    }

    struct watched {
        watched(asio::io_context& context, line_state& l)
            : line(l)
            , descriptor(context, l.socket.native_handle()) {}
        line_state& line;
        asio::posix::stream_descriptor descriptor;
    };

    void arm(watched& w) {
        w.descriptor.async_wait(asio::posix::stream_descriptor::wait_read,
                                [&w](asio::error_code const& error) {
                                    if (!error) {
                                        w.line.receive.schedule();
                                    }
                                });
    }

    void arm_readiness() {
        readiness_descriptor_->async_wait(asio::posix::stream_descriptor::wait_read,
                                          [this](asio::error_code const& error) {
                                              if (!error) {
                                                  (void)readiness_->dispatch();
                                                  arm_readiness();
                                              }
                                          });
    }

    blocking_work_contract_group& group_;
    asio::io_context context_;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
    std::vector<std::unique_ptr<watched>> watched_;
    readiness_set* readiness_ = nullptr;
    std::optional<asio::posix::stream_descriptor> readiness_descriptor_;
    std::thread thread_;
};

} // namespace

std::unique_ptr<receive_backend> make_asio_backend(blocking_work_contract_group& group) {
    return std::make_unique<asio_backend>(group);
}

} // namespace signet::net::detail
