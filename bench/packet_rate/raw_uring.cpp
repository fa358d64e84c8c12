// raw io_uring: the ceiling. One thread, one ring, a multishot recv per socket into one shared
// provided-buffer ring, the parser called inline on the buffer, the buffer handed straight back.
// No queue, no second thread, no msghdr (plain recv: no source address, no control messages).
//
// Block idle: IORING_SETUP_DEFER_TASKRUN and io_uring_submit_and_wait_timeout (10 ms, to see
// stop()). Spin idle: IORING_SETUP_COOP_TASKRUN | TASKRUN_FLAG and io_uring_peek_cqe in a loop,
// which enters the kernel only when the kernel flags pending task work.
//
// Kept in its own translation unit: <liburing.h> defines BLOCK_SIZE (via <linux/fs.h>), which
// breaks moodycamel's headers.

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <liburing.h>

#include "common.hpp"

namespace signet::bench {

namespace {

class raw_uring_receiver final : public receiver {
public:
    raw_uring_receiver(receiver_config const& config, sink_set& sinks)
        : config_(config)
        , sinks_(sinks) {
        for (std::size_t f = 0; f < config.feeds; ++f) {
            fds_.push_back(open_udp_socket(config.receive_buffer));
        }
    }
    ~raw_uring_receiver() override { stop(); }

    [[nodiscard]] std::vector<std::uint16_t> ports() const override {
        std::vector<std::uint16_t> result;
        for (net::unique_fd const& fd : fds_) {
            result.push_back(local_port(fd.get()));
        }
        return result;
    }

    void start() override {
        std::atomic<int> ready{0}; // 1: running, -1: setup failed
        thread_ = std::thread([this, &ready] {
            try {
                pin_this_thread(cpu_at(config_.cpus, 0));
                setup();
            } catch (...) {
                error_ = std::current_exception();
                teardown();
                ready.store(-1, std::memory_order_release); // release: publishes error_
                return;
            }
            ready.store(1, std::memory_order_release);
            run();
            teardown();
        });
        // acquire: pairs with the release stores above.
        while (ready.load(std::memory_order_acquire) == 0) {
            std::this_thread::yield();
        }
        if (error_) {
            thread_.join();
            std::rethrow_exception(error_);
        }
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
    void setup() {
        io_uring_params params{};
        params.flags =
            IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER |
            (config_.idle == idle_mode::spin ? IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG
                                             : IORING_SETUP_DEFER_TASKRUN);
        params.cq_entries = 16384;
        unsigned const sq_entries =
            std::bit_ceil(std::max<unsigned>(64U, static_cast<unsigned>(fds_.size() * 2)));
        int rc = io_uring_queue_init_params(sq_entries, &ring_, &params);
        if (rc == -EINVAL) { // older kernels: no DEFER_TASKRUN / COOP_TASKRUN
            params = {};
            params.flags = IORING_SETUP_CQSIZE;
            params.cq_entries = 16384;
            rc = io_uring_queue_init_params(sq_entries, &ring_, &params);
        }
        if (rc < 0) {
            throw std::system_error(-rc, std::generic_category(), "raw io_uring: queue_init");
        }
        ring_ready_ = true;
        entries_ = static_cast<unsigned>(
            std::bit_ceil(std::clamp<std::size_t>(fds_.size() * 256, 1024, 32768)));
        memory_ = std::make_unique<std::byte[]>(std::size_t{entries_} * packet_buffer_size);
        ring_bytes_ = entries_ * sizeof(io_uring_buf);
        void* const mapped = ::mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE,
                                    MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
        if (mapped == MAP_FAILED) {
            throw std::system_error(errno, std::generic_category(), "raw io_uring: mmap");
        }
        buffers_ = static_cast<io_uring_buf_ring*>(mapped);
        io_uring_buf_ring_init(buffers_);
        io_uring_buf_reg registration{};
        registration.ring_addr = reinterpret_cast<std::uint64_t>(mapped);
        registration.ring_entries = entries_;
        registration.bgid = 0;
        rc = io_uring_register_buf_ring(&ring_, &registration, 0);
        if (rc < 0) {
            throw std::system_error(-rc, std::generic_category(),
                                    "raw io_uring: register_buf_ring (needs Linux >= 5.19)");
        }
        for (unsigned b = 0; b < entries_; ++b) {
            add_buffer(b);
        }
        flush_buffers();
        armed_.assign(fds_.size(), false);
        for (std::size_t f = 0; f < fds_.size(); ++f) {
            arm(f);
        }
        io_uring_submit(&ring_);
    }

    void teardown() noexcept {
        if (buffers_ != nullptr) {
            io_uring_unregister_buf_ring(&ring_, 0);
            ::munmap(buffers_, ring_bytes_);
            buffers_ = nullptr;
        }
        if (ring_ready_) {
            io_uring_queue_exit(&ring_);
            ring_ready_ = false;
        }
    }

    void add_buffer(unsigned index) noexcept {
        io_uring_buf_ring_add(buffers_, memory_.get() + std::size_t{index} * packet_buffer_size,
                              static_cast<unsigned>(packet_buffer_size),
                              static_cast<unsigned short>(index), io_uring_buf_ring_mask(entries_),
                              pending_adds_++);
    }

    void flush_buffers() noexcept {
        if (pending_adds_ != 0) {
            io_uring_buf_ring_advance(buffers_, pending_adds_); // store-release of the tail
            pending_adds_ = 0;
        }
    }

    void arm(std::size_t feed) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) {
            io_uring_submit(&ring_);
            sqe = io_uring_get_sqe(&ring_);
            if (sqe == nullptr) {
                return; // retried after the next batch
            }
        }
        io_uring_prep_recv_multishot(sqe, fds_[feed].get(), nullptr, 0, 0);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = 0;
        io_uring_sqe_set_data64(sqe, feed);
        armed_[feed] = true;
    }

    void run() {
        bool const spin = config_.idle == idle_mode::spin;
        // acquire: pairs with the release store in stop().
        while (!stopping_.load(std::memory_order_acquire)) {
            io_uring_cqe* first = nullptr;
            if (spin) {
                if (io_uring_peek_cqe(&ring_, &first) != 0) {
                    cpu_relax();
                    continue;
                }
            } else {
                __kernel_timespec timeout{};
                timeout.tv_nsec = 10'000'000;
                io_uring_submit_and_wait_timeout(&ring_, &first, 1, &timeout, nullptr);
            }
            unsigned head = 0;
            unsigned seen = 0;
            io_uring_cqe* cqe = nullptr;
            io_uring_for_each_cqe(&ring_, head, cqe) {
                complete(*cqe);
                ++seen;
            }
            io_uring_cq_advance(&ring_, seen);
            flush_buffers();
            bool rearmed = false;
            for (std::size_t f = 0; f < fds_.size(); ++f) {
                if (!armed_[f]) {
                    arm(f);
                    rearmed = true;
                }
            }
            if (rearmed && spin) {
                io_uring_submit(&ring_); // block mode submits in submit_and_wait
            }
        }
    }

    void complete(io_uring_cqe const& cqe) {
        auto const feed = static_cast<std::size_t>(io_uring_cqe_get_data64(&cqe));
        if ((cqe.flags & IORING_CQE_F_MORE) == 0) {
            armed_[feed] = false; // ended (ENOBUFS when the ring ran dry): re-armed after the batch
        }
        if (cqe.res <= 0 || (cqe.flags & IORING_CQE_F_BUFFER) == 0) {
            return;
        }
        auto const buffer = static_cast<unsigned>(cqe.flags >> IORING_CQE_BUFFER_SHIFT);
        sinks_[feed]->on_packet({memory_.get() + std::size_t{buffer} * packet_buffer_size,
                                 static_cast<std::size_t>(cqe.res)});
        add_buffer(buffer);
    }

    receiver_config config_;
    sink_set& sinks_;
    std::vector<net::unique_fd> fds_;
    std::vector<bool> armed_;
    io_uring ring_{};
    bool ring_ready_ = false;
    io_uring_buf_ring* buffers_ = nullptr;
    std::size_t ring_bytes_ = 0;
    unsigned entries_ = 0;
    int pending_adds_ = 0;
    std::unique_ptr<std::byte[]> memory_;
    std::thread thread_;
    std::exception_ptr error_;
    std::atomic<bool> stopping_{false};
};

} // namespace

std::unique_ptr<receiver> make_raw_uring_receiver(receiver_config const& config, sink_set& sinks) {
    return std::make_unique<raw_uring_receiver>(config, sinks);
}

} // namespace signet::bench
