// memory backend: lines without sockets, written by the application's threads (memory_line).
// Nothing to watch: the writers schedule the parser contracts themselves. As a reactor the
// backend's poll() finds nothing and an idle worker sleeps on an eventfd that wake() signals (a
// contract scheduled while it sleeps, an earlier timer); in thread mode the poller thread only
// drives the runtime's timers, sleeping on the same eventfd. The runtime's readiness set (TCP
// connections) is polled beside the eventfd by wait(), and by poll() once a socket is watched.
#include <array>
#include <atomic>
#include <chrono>
#include <thread>

#include <poll.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/net/detail/readiness_set.hpp>
#include <signet/net/detail/timer_queue.hpp>
#include <signet/net/unique_fd.hpp>

#include "backends.hpp"

namespace signet::net::detail {

namespace {

class memory_backend final : public receive_backend {
public:
    memory_backend()
        : wake_("memory backend") {}
    ~memory_backend() override { stop(); }

    backend_kind kind() const noexcept override { return backend_kind::memory; }
    void attach(line_state& /*line*/) override {}
    void watch(readiness_set& set) override { readiness_ = &set; }
    void start(int cpu, timer_queue& timers) override {
        thread_ = std::thread([this, &timers] { run(timers); });
        try {
            pin_thread(thread_, cpu, "memory backend's poller");
        } catch (...) {
            stop();
            throw;
        }
    }
    void stop() override {
        // release: pairs with the acquire load in run().
        stop_requested_.store(true, std::memory_order_release);
        wake();
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    bool supports_reactor(std::size_t /*workers*/) const noexcept override { return true; }
    bool poll() override {
        return readiness_ != nullptr && readiness_->in_use() && readiness_->dispatch();
    }

    bool wait(std::chrono::nanoseconds timeout) override {
        std::array<pollfd, 2> watched{pollfd{.fd = wake_.get(), .events = POLLIN, .revents = 0},
                                      pollfd{.fd = readiness_ != nullptr ? readiness_->fd() : -1,
                                             .events = POLLIN,
                                             .revents = 0}};
        auto const ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
        if (::poll(watched.data(), watched.size(), static_cast<int>(ms)) > 0) {
            if (watched[0].revents != 0) {
                wake_.drain();
            }
            if (watched[1].revents != 0) {
                (void)readiness_->dispatch();
            }
        }
        return false; // whatever woke us scheduled its contract already
    }

    void wake() noexcept override { wake_.signal(); }

private:
    void run(timer_queue& timers) {
        // acquire: pairs with the release store in stop() (which then writes the eventfd).
        while (!stop_requested_.load(std::memory_order_acquire)) {
            (void)timers.begin_sleep(); // the only sleeper in thread mode
            (void)wait(timers.sleep_bound(idle_sleep));
            timers.end_sleep();
            (void)timers.fire_due();
        }
    }

    event_fd wake_;
    readiness_set* readiness_ = nullptr;
    std::thread thread_;
    std::atomic<bool> stop_requested_{false};
};

} // namespace

std::unique_ptr<receive_backend> make_memory_backend() {
    return std::make_unique<memory_backend>();
}

} // namespace signet::net::detail
