// memory backend: lines without sockets, written by the application's threads (memory_line).
// Nothing to watch: the writers schedule the parser contracts themselves. As a reactor the
// backend's poll() finds nothing and an idle worker sleeps on an eventfd that wake() signals (a
// contract scheduled while it sleeps); in thread mode no poller thread is started.
#include <chrono>

#include <poll.h>

#include <signet/net/unique_fd.hpp>

#include "backends.hpp"

namespace signet::net::detail {

namespace {

class memory_backend final : public receive_backend {
public:
    memory_backend()
        : wake_("memory backend") {}

    backend_kind kind() const noexcept override { return backend_kind::memory; }
    void attach(line_state& /*line*/) override {}
    void start(int /*cpu*/) override {}
    void stop() override { wake(); }
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
    event_fd wake_;
};

} // namespace

std::unique_ptr<receive_backend> make_memory_backend() {
    return std::make_unique<memory_backend>();
}

} // namespace signet::net::detail
