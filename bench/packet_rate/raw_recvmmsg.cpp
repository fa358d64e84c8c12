// raw recvmmsg: the other ceiling. One thread, recvmmsg batches of 32 straight into a fixed
// buffer array, the parser called inline.
//   block, one feed:    a blocking recvmmsg(MSG_WAITFORONE) (SO_RCVTIMEO 20 ms, to see stop())
//   block, many feeds:  epoll_wait (level-triggered), then recvmmsg(MSG_DONTWAIT) per ready
//                       socket until it comes back short
//   spin:               recvmmsg(MSG_DONTWAIT) over every socket in turn
//
// Memory mode ("raw" pipeline): one thread copies each feed's next packet into a buffer and
// parses it inline: the parser's cost alone, no queue and no second thread.

#include <array>
#include <atomic>
#include <cerrno>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.hpp"

namespace signet::bench {

namespace {

constexpr std::size_t batch = 32;

class raw_recvmmsg_receiver final : public receiver {
public:
    raw_recvmmsg_receiver(receiver_config const& config, sink_set& sinks)
        : config_(config)
        , sinks_(sinks)
        , memory_(std::make_unique<std::byte[]>(batch * packet_buffer_size)) {
        for (std::size_t f = 0; f < config.feeds; ++f) {
            fds_.push_back(open_udp_socket(config.receive_buffer));
        }
        if (config.idle == idle_mode::block && fds_.size() == 1) {
            // The blocking variant: clear O_NONBLOCK, bound each wait so stop() is seen.
            int const flags = ::fcntl(fds_[0].get(), F_GETFL);
            ::fcntl(fds_[0].get(), F_SETFL, flags & ~O_NONBLOCK);
            timeval timeout{0, 20'000};
            ::setsockopt(fds_[0].get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
        } else if (config.idle == idle_mode::block) {
            epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
            if (!epoll_.is_open()) {
                throw std::system_error(errno, std::generic_category(), "epoll_create1");
            }
            for (std::size_t f = 0; f < fds_.size(); ++f) {
                epoll_event event{};
                event.events = EPOLLIN;
                event.data.u64 = f;
                if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fds_[f].get(), &event) != 0) {
                    throw std::system_error(errno, std::generic_category(), "epoll_ctl");
                }
            }
        }
        for (std::size_t i = 0; i < batch; ++i) {
            vectors_[i] = {memory_.get() + i * packet_buffer_size, packet_buffer_size};
        }
    }
    ~raw_recvmmsg_receiver() override { stop(); }

    [[nodiscard]] std::vector<std::uint16_t> ports() const override {
        std::vector<std::uint16_t> result;
        for (net::unique_fd const& fd : fds_) {
            result.push_back(local_port(fd.get()));
        }
        return result;
    }

    void start() override {
        thread_ = std::thread([this] {
            pin_this_thread(cpu_at(config_.cpus, 0));
            run();
        });
    }

    void stop() override {
        if (!thread_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in run().
        stopping_.store(true, std::memory_order_release);
        thread_.join();
    }

private:
    /// recvmmsg into the buffers, parse inline; returns the datagrams received.
    std::size_t drain(std::size_t feed, int flags) {
        for (std::size_t i = 0; i < batch; ++i) {
            messages_[i].msg_hdr = {};
            messages_[i].msg_hdr.msg_iov = &vectors_[i];
            messages_[i].msg_hdr.msg_iovlen = 1;
        }
        int const n = ::recvmmsg(fds_[feed].get(), messages_.data(), batch, flags, nullptr);
        if (n <= 0) {
            return 0;
        }
        for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
            sinks_[feed]->on_packet({memory_.get() + i * packet_buffer_size, messages_[i].msg_len});
        }
        return static_cast<std::size_t>(n);
    }

    void run() {
        std::array<epoll_event, 64> events{};
        // acquire: pairs with the release store in stop().
        while (!stopping_.load(std::memory_order_acquire)) {
            if (config_.idle == idle_mode::spin) {
                bool any = false;
                for (std::size_t f = 0; f < fds_.size(); ++f) {
                    any = drain(f, MSG_DONTWAIT) != 0 || any;
                }
                if (!any) {
                    cpu_relax();
                }
            } else if (!epoll_.is_open()) {
                drain(0, MSG_WAITFORONE);
            } else {
                int const n =
                    ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), 20);
                for (int i = 0; i < n; ++i) {
                    auto const f =
                        static_cast<std::size_t>(events[static_cast<std::size_t>(i)].data.u64);
                    while (drain(f, MSG_DONTWAIT) == batch) {
                    }
                }
            }
        }
    }

    receiver_config config_;
    sink_set& sinks_;
    std::vector<net::unique_fd> fds_;
    net::unique_fd epoll_;
    std::unique_ptr<std::byte[]> memory_;
    std::array<iovec, batch> vectors_{};
    std::array<mmsghdr, batch> messages_{};
    std::thread thread_;
    std::atomic<bool> stopping_{false};
};

class raw_pipeline final : public pipeline {
public:
    raw_pipeline(pipeline_config const& config, sink_set& sinks)
        : config_(config)
        , sinks_(sinks)
        , cursors_(config.feeds) {}
    ~raw_pipeline() override { stop(); }

    void start() override {
        thread_ = std::thread([this] { run(); });
    }

    void stop() override {
        if (!thread_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in run().
        stopping_.store(true, std::memory_order_release);
        thread_.join();
    }

    [[nodiscard]] std::vector<feed_cursor> const& cursors() const override { return cursors_; }

private:
    void run() {
        pin_this_thread(cpu_at(config_.worker_cpus, 0));
        constexpr std::size_t burst = 8; // as the injectors: packets per feed and round
        packet_templates const& templates = *config_.templates;
        std::vector<std::byte> buffer(packet_buffer_size);
        // acquire: pairs with the release store in stop().
        while (!stopping_.load(std::memory_order_acquire)) {
            for (std::size_t f = 0; f < cursors_.size(); ++f) {
                for (std::size_t k = 0; k < burst; ++k) {
                    std::size_t const size = produce_packet(templates, cursors_[f], buffer.data());
                    sinks_[f]->on_packet({buffer.data(), size});
                }
            }
        }
    }

    pipeline_config config_;
    sink_set& sinks_;
    std::vector<feed_cursor> cursors_;
    std::thread thread_;
    std::atomic<bool> stopping_{false};
};

} // namespace

std::unique_ptr<receiver> make_raw_recvmmsg_receiver(receiver_config const& config,
                                                     sink_set& sinks) {
    return std::make_unique<raw_recvmmsg_receiver>(config, sinks);
}

std::unique_ptr<pipeline> make_raw_pipeline(pipeline_config const& config, sink_set& sinks) {
    return std::make_unique<raw_pipeline>(config, sinks);
}

} // namespace signet::bench
