#pragma once

// unique_fd: sole owner of a file descriptor (closed on destruction; move-only): what every fd
// of the library, the apps and the benchmarks is held in.
// event_fd: a non-blocking eventfd used to interrupt a thread sleeping in epoll_wait or in an
// io_uring wait (the backends' wake()).

#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

#include <sys/eventfd.h>
#include <unistd.h>

namespace signet::net {

class unique_fd {
public:
    unique_fd() noexcept = default;
    explicit unique_fd(int fd) noexcept
        : fd_(fd) {}
    unique_fd(unique_fd&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& other) noexcept {
        if (this != &other) {
            reset(std::exchange(other.fd_, -1));
        }
        return *this;
    }
    unique_fd(unique_fd const&) = delete;
    unique_fd& operator=(unique_fd const&) = delete;
    ~unique_fd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
    /// Gives the descriptor up to a new owner (who closes it); this one is left empty.
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

class event_fd {
public:
    /// Throws std::system_error naming `owner` when the eventfd cannot be created.
    explicit event_fd(char const* owner)
        : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
        if (!fd_.is_open()) {
            throw std::system_error(errno, std::generic_category(),
                                    std::string(owner) + ": eventfd");
        }
    }
    [[nodiscard]] int get() const noexcept { return fd_.get(); }
    /// Any thread: makes the descriptor readable (wakes its watcher).
    void signal() noexcept {
        std::uint64_t const one = 1;
        [[maybe_unused]] auto const written = ::write(fd_.get(), &one, sizeof(one));
    }
    /// The watcher: consumes the pending signals (readable again on the next signal()).
    void drain() noexcept {
        std::uint64_t count = 0;
        [[maybe_unused]] auto const got = ::read(fd_.get(), &count, sizeof(count));
    }

private:
    unique_fd fd_;
};

} // namespace signet::net
