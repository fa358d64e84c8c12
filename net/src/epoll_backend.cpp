// epoll backend: the poller thread waits on an edge-triggered epoll set and only schedules the
// ready line's receive contract, which drains the socket with recvmmsg (receive_from_socket).
// Per packet: no syscall of its own (recvmmsg batches of 32), one spsc push, no allocation.
// Per batch: one recvmmsg, one parser schedule; per readiness edge: one epoll_wait wake-up and
// one contract schedule.
//
// Reactor mode (no poller thread): the runtime's reactor contract calls poll(), an epoll_wait
// that does not sleep, and an idle worker sleeps in wait(), an epoll_wait that does; both only
// schedule receive contracts, and epoll_wait is safe from several threads, so any number of
// workers may serve the feeds. The eventfd interrupts a sleeping worker (wake()). The runtime's
// readiness set (TCP connections) is one more entry of the same epoll set.
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include <sys/epoll.h>

#include <spdlog/spdlog.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/net/detail/feed_state.hpp>
#include <signet/net/detail/readiness_set.hpp>
#include <signet/net/detail/timer_queue.hpp>
#include <signet/net/log.hpp>
#include <signet/net/unique_fd.hpp>

#include "backends.hpp"
#include "socket_receive.hpp"

namespace signet::net::detail {

namespace {

class epoll_backend final : public receive_backend {
public:
    explicit epoll_backend(blocking_work_contract_group& group)
        : group_(group)
        , epoll_fd_(::epoll_create1(EPOLL_CLOEXEC))
        , wake_("epoll backend") {
        if (!epoll_fd_.is_open()) {
            throw std::system_error(errno, std::generic_category(), "epoll backend: epoll_create1");
        }
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.ptr = nullptr; // the wake-up
        if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_.get(), &event) != 0) {
            throw std::system_error(errno, std::generic_category(),
                                    "epoll backend: epoll_ctl (eventfd)");
        }
    }
    ~epoll_backend() override { stop(); }

    backend_kind kind() const noexcept override { return backend_kind::epoll; }

    void attach(line_state& line) override {
        line.receive = group_.create_contract([&line] {
            if (receive_from_socket(line) == receive_result::budget_spent) {
                this_contract::schedule(); // edge-triggered: no new edge for what is left
            }
        });
        if (!line.receive.is_valid()) {
            throw std::length_error("epoll backend: no free contract slot for a receive contract");
        }
        line.resume = [](line_state& l) {
            l.receive.schedule();
        };
        epoll_event event{};
        event.events = EPOLLIN | EPOLLET;
        event.data.ptr = &line;
        if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, line.socket.native_handle(), &event) != 0) {
            throw std::system_error(errno, std::generic_category(), "epoll backend: epoll_ctl");
        }
        lines_.push_back(&line);
    }

    void watch(readiness_set& set) override {
        readiness_ = &set;
        epoll_event event{};
        event.events = EPOLLIN; // level: readable while the set holds an undispatched event
        event.data.ptr = &set;
        if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, set.fd(), &event) != 0) {
            throw std::system_error(errno, std::generic_category(),
                                    "epoll backend: epoll_ctl (readiness set)");
        }
    }

    void start(int cpu, timer_queue& timers) override {
        timers_ = &timers;
        thread_ = std::thread([this] { run(); });
        signet::pin_thread(thread_, cpu, "epoll poller");
        for (auto* line : lines_) {
            line->receive.schedule(); // whatever arrived before the first edge
        }
    }

    void stop() override {
        if (!thread_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in run().
        stop_requested_.store(true, std::memory_order_release);
        wake();
        thread_.join();
    }

    bool supports_reactor(std::size_t /*workers*/) const noexcept override { return true; }

    void start_reactor(work_contract& /*reactor*/) override {
        for (auto* line : lines_) {
            line->receive.schedule(); // whatever arrived before the first edge
        }
    }

    bool poll() override { return dispatch(0) > 0; }

    bool wait(std::chrono::nanoseconds timeout) override {
        auto const ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
        (void)dispatch(static_cast<int>(ms));
        return false; // the ready lines' receive contracts are scheduled already
    }

    void wake() noexcept override { wake_.signal(); }

private:
    // One epoll_wait (timeout_ms 0: a poll; -1: until an event); schedules the ready lines'
    // receive contracts and consumes a wake-up. Returns the number of ready lines, or -1 with
    // errno set when epoll_wait failed.
    int dispatch(int timeout_ms) noexcept {
        std::array<epoll_event, 64> events{};
        int const n = ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()),
                                   timeout_ms);
        if (n < 0) {
            return -1;
        }
        int lines = 0;
        for (int i = 0; i < n; ++i) {
            void* const target = events[static_cast<std::size_t>(i)].data.ptr;
            if (target == nullptr) {
                wake_.drain();
                continue;
            }
            if (target == readiness_) {
                (void)readiness_->dispatch();
                continue;
            }
            static_cast<line_state*>(target)->receive.schedule();
            ++lines;
        }
        return lines;
    }

    void run() {
        for (;;) {
            (void)timers_->begin_sleep(); // the only sleeper in thread mode
            auto const sleep = timers_->sleep_bound(idle_sleep);
            int const ready = dispatch(
                static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(sleep).count()));
            timers_->end_sleep();
            (void)timers_->fire_due();
            if (ready < 0 && errno != EINTR) {
                SPDLOG_LOGGER_ERROR(logger(), "epoll backend: epoll_wait failed: {}",
                                    std::strerror(errno));
                return;
            }
            // acquire: pairs with the release store in stop() (which then writes the eventfd).
            if (stop_requested_.load(std::memory_order_acquire)) {
                return;
            }
        }
    }

    blocking_work_contract_group& group_;
    unique_fd epoll_fd_;
    event_fd wake_;
    std::vector<line_state*> lines_;
    readiness_set* readiness_ = nullptr;
    std::thread thread_;
    timer_queue* timers_ = nullptr; // thread mode (start())
    std::atomic<bool> stop_requested_{false};
};

} // namespace

std::unique_ptr<receive_backend> make_epoll_backend(blocking_work_contract_group& group) {
    return std::make_unique<epoll_backend>(group);
}

} // namespace signet::net::detail
