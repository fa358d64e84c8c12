#include <array>
#include <cerrno>
#include <system_error>

#include <sys/epoll.h>

#include <signet/net/detail/readiness_set.hpp>

namespace signet::net::detail {

readiness_set::readiness_set()
    : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (!epoll_.is_open()) {
        throw std::system_error(errno, std::generic_category(), "readiness set: epoll_create1");
    }
}

void readiness_set::add(int fd, readiness_flag& flag) {
    epoll_event event{};
    event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    event.data.ptr = &flag;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
        throw std::system_error(errno, std::generic_category(), "readiness set: epoll_ctl");
    }
    // release: pairs with the acquire load in in_use().
    in_use_.store(true, std::memory_order_release);
}

bool readiness_set::dispatch() noexcept {
    std::array<epoll_event, 16> events{};
    bool any = false;
    for (;;) {
        int const n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), 0);
        if (n <= 0) {
            return any;
        }
        for (int i = 0; i < n; ++i) {
            auto* flag = static_cast<readiness_flag*>(events[static_cast<std::size_t>(i)].data.ptr);
            // release: pairs with the acquire exchange in readiness_flag::take().
            flag->ready.store(true, std::memory_order_release);
            flag->contract->schedule();
        }
        any = true;
        if (static_cast<std::size_t>(n) < events.size()) {
            return any;
        }
    }
}

} // namespace signet::net::detail
