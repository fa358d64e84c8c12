// memory backend: lines without sockets, written by the application's threads (memory_line).
// Nothing to watch: the writers schedule the parser contracts themselves. As a reactor the
// backend's poll() finds nothing and an idle worker sleeps on an eventfd that wake() signals (a
// contract scheduled while it sleeps, an earlier timer); in thread mode the poller thread only
// drives the runtime's timers, sleeping on the same eventfd.
#include <atomic>
#include <chrono>
#include <thread>

#include <poll.h>

#include <signet/core/cpu_affinity.hpp>
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
    bool poll() override { return false; }

    bool wait(std::chrono::nanoseconds timeout) override {
        pollfd watched{.fd = wake_.get(), .events = POLLIN, .revents = 0};
        auto const ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
        if (::poll(&watched, 1, static_cast<int>(ms)) > 0) {
            wake_.drain();
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

    // The longest sleep without a timer due; only bounds a wake lost to an error path.
    static constexpr std::chrono::milliseconds idle_sleep{100};

    event_fd wake_;
    std::thread thread_;
    std::atomic<bool> stop_requested_{false};
};

} // namespace

std::unique_ptr<receive_backend> make_memory_backend() {
    return std::make_unique<memory_backend>();
}

} // namespace signet::net::detail
