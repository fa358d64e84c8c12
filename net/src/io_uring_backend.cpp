// io_uring backend. The poller thread owns one ring; per line it keeps a multishot recvmsg
// armed on the socket with buffers from the line's own provided-buffer ring (the line's packet
// pool). Each completion carries a datagram already in a pool buffer: the poller builds the
// packet and pushes it into the line's queue, so the poller is the single producer of every
// line queue and of every buffer ring (parsers hand buffers back through the pool's returns
// queue; the poller re-adds them). Per packet: no syscall (one io_uring_enter per batch of
// completions), one spsc push, no copy, no allocation.
//
// A multishot receive ends when the buffer ring runs dry (-ENOBUFS) or when we cancel it for
// backpressure; the poller re-arms it once buffers are back and counts each re-arm. Under
// full_policy::backpressure a full queue cancels the receive and parks the completions still
// in flight in `held` (bounded by the pool size) until the parser makes room; data that has not
// arrived yet stays in the kernel. Under full_policy::drop the packet is counted and its buffer
// goes straight back to the ring.
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <future>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/utsname.h>

#include <liburing.h>
#include <spdlog/spdlog.h>

#include <signet/net/detail/backends.hpp>
#include <signet/net/detail/control_messages.hpp>
#include <signet/net/detail/feed_state.hpp>
#include <signet/net/log.hpp>

namespace signet::net::detail {

namespace {

constexpr std::uint64_t cancel_tag = std::uint64_t{1} << 63;
constexpr std::size_t max_ring_entries = 32768;

// The kernel lays out header, name, control data, payload back to back in the buffer; a name
// length that is a multiple of 8 keeps the control messages (cmsghdr) aligned.
constexpr std::size_t name_length = (sizeof(sockaddr_in6) + 7) / 8 * 8;

std::size_t headroom() noexcept {
    return sizeof(io_uring_recvmsg_out) + name_length + control_buffer_size;
}

class io_uring_backend final : public receive_backend {
public:
    explicit io_uring_backend(blocking_work_contract_group&) {}
    ~io_uring_backend() override { stop(); }

    backend_kind kind() const noexcept override { return backend_kind::io_uring; }

    void attach(line_state& line) override {
        if (line.pool.count() > max_ring_entries) {
            throw std::invalid_argument(
                "io_uring backend: feed '" + line.feed.name +
                "': queue_capacity too large for one buffer ring (at most " +
                std::to_string(max_ring_entries - receive_batch) + ")");
        }
        auto ul = std::make_unique<uring_line>();
        ul->line = &line;
        ul->held.reserve(line.pool.count());
        ul->message.msg_namelen = name_length;
        ul->message.msg_controllen = control_buffer_size;
        line.backend = ul.get();
        lines_.push_back(std::move(ul));
    }

    void start(int cpu) override {
        std::promise<void> ready;
        auto setup = ready.get_future();
        thread_ = std::thread([this, &ready] { run(ready); });
        try {
            pin_thread(thread_, cpu, "io_uring poller");
            setup.get(); // rethrows a setup error from the poller thread
        } catch (...) {
            stop();
            throw;
        }
    }

    void stop() override {
        if (!thread_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in run().
        stop_requested_.store(true, std::memory_order_release);
        thread_.join();
    }

private:
    struct uring_line {
        line_state* line = nullptr;
        io_uring_buf_ring* buffers = nullptr;
        std::size_t ring_bytes = 0;
        unsigned entries = 0;
        msghdr message{}; // template for recvmsg: name and control sizes
        unsigned in_ring = 0;
        int pending_adds = 0;
        bool armed = false;
        bool ever_armed = false;
        bool cancel_pending = false;
        bool paused = false;
        bool delivered = false;
        std::vector<packet> held;
    };

    io_uring_sqe* next_sqe() {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) {
            io_uring_submit(&ring_);
            sqe = io_uring_get_sqe(&ring_);
        }
        return sqe;
    }

    void setup() {
        io_uring_params params{};
        params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
        unsigned const entries =
            std::bit_ceil(std::max<unsigned>(64U, static_cast<unsigned>(lines_.size() * 4)));
        params.flags |= IORING_SETUP_CQSIZE;
        params.cq_entries = 16384;
        int rc = io_uring_queue_init_params(entries, &ring_, &params);
        if (rc == -EINVAL) { // kernels before 6.1 lack DEFER_TASKRUN
            params = {};
            params.flags = IORING_SETUP_CQSIZE;
            params.cq_entries = 16384;
            rc = io_uring_queue_init_params(entries, &ring_, &params);
        }
        if (rc < 0) {
            throw std::system_error(-rc, std::generic_category(),
                                    "io_uring backend: io_uring_queue_init");
        }
        ring_ready_ = true;
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            uring_line& ul = *lines_[i];
            packet_pool& pool = ul.line->pool;
            ul.entries = static_cast<unsigned>(std::bit_ceil(pool.count()));
            ul.ring_bytes = ul.entries * sizeof(io_uring_buf);
            void* memory = ::mmap(nullptr, ul.ring_bytes, PROT_READ | PROT_WRITE,
                                  MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
            if (memory == MAP_FAILED) {
                throw std::system_error(errno, std::generic_category(),
                                        "io_uring backend: mmap of a buffer ring");
            }
            ul.buffers = static_cast<io_uring_buf_ring*>(memory);
            io_uring_buf_ring_init(ul.buffers);
            io_uring_buf_reg registration{};
            registration.ring_addr = reinterpret_cast<std::uint64_t>(memory);
            registration.ring_entries = ul.entries;
            registration.bgid = static_cast<std::uint16_t>(i);
            rc = io_uring_register_buf_ring(&ring_, &registration, 0);
            if (rc < 0) {
                throw std::system_error(-rc, std::generic_category(),
                                        "io_uring backend: io_uring_register_buf_ring (needs "
                                        "Linux >= 5.19)");
            }
            for (std::uint32_t b = 0; b < pool.count(); ++b) {
                add_buffer(ul, b);
            }
            flush_buffers(ul);
        }
    }

    void teardown() noexcept {
        if (!ring_ready_) {
            return;
        }
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            uring_line& ul = *lines_[i];
            if (ul.buffers != nullptr) {
                io_uring_unregister_buf_ring(&ring_, static_cast<int>(i));
                ::munmap(ul.buffers, ul.ring_bytes);
                ul.buffers = nullptr;
            }
        }
        io_uring_queue_exit(&ring_);
        ring_ready_ = false;
    }

    void add_buffer(uring_line& ul, std::uint32_t index) noexcept {
        packet_pool& pool = ul.line->pool;
        io_uring_buf_ring_add(ul.buffers, pool.buffer(index), static_cast<unsigned>(pool.stride()),
                              static_cast<unsigned short>(index),
                              io_uring_buf_ring_mask(ul.entries), ul.pending_adds++);
        ++ul.in_ring;
    }

    void flush_buffers(uring_line& ul) noexcept {
        if (ul.pending_adds != 0) {
            io_uring_buf_ring_advance(ul.buffers, ul.pending_adds); // store-release of the tail
            ul.pending_adds = 0;
        }
    }

    void arm(std::size_t index) {
        uring_line& ul = *lines_[index];
        io_uring_sqe* sqe = next_sqe();
        if (sqe == nullptr) {
            return; // submission queue full even after a submit: the next loop retries
        }
        io_uring_prep_recvmsg_multishot(sqe, ul.line->socket.native_handle(), &ul.message, 0);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = static_cast<std::uint16_t>(index);
        io_uring_sqe_set_data64(sqe, index);
        ul.armed = true;
        if (ul.ever_armed) {
            ul.line->rearms.add(1);
        }
        ul.ever_armed = true;
    }

    void cancel(std::size_t index) {
        uring_line& ul = *lines_[index];
        io_uring_sqe* sqe = next_sqe();
        if (sqe == nullptr) {
            return; // retried by the next loop (paused, armed, no cancel pending)
        }
        io_uring_prep_cancel64(sqe, index, 0);
        io_uring_sqe_set_data64(sqe, cancel_tag | index);
        ul.cancel_pending = true;
    }

    void flush_held(uring_line& ul) {
        std::size_t pushed = 0;
        while (pushed < ul.held.size() && ul.line->ready.push(ul.held[pushed])) {
            ++pushed;
        }
        if (pushed != 0) {
            ul.held.erase(ul.held.begin(), ul.held.begin() + static_cast<std::ptrdiff_t>(pushed));
            ul.delivered = true;
        }
        if (ul.held.empty()) {
            ul.paused = false;
        }
    }

    void complete(io_uring_cqe const& cqe, std::uint64_t now) {
        std::uint64_t const data = io_uring_cqe_get_data64(&cqe);
        if ((data & cancel_tag) != 0) {
            lines_[data & ~cancel_tag]->cancel_pending = false;
            return;
        }
        std::size_t const index = static_cast<std::size_t>(data);
        uring_line& ul = *lines_[index];
        line_state& line = *ul.line;
        bool const more = (cqe.flags & IORING_CQE_F_MORE) != 0;
        if (!more) {
            ul.armed = false;
        }
        if (cqe.res < 0) {
            if (cqe.res != -ENOBUFS && cqe.res != -ECANCELED && !error_logged_) {
                error_logged_ = true;
                SPDLOG_LOGGER_ERROR(logger(), "io_uring backend: feed {}: receive failed: {}",
                                    line.feed.name, std::strerror(-cqe.res));
            }
            return;
        }
        if ((cqe.flags & IORING_CQE_F_BUFFER) == 0) {
            return;
        }
        auto const buffer = static_cast<std::uint32_t>(cqe.flags >> IORING_CQE_BUFFER_SHIFT);
        --ul.in_ring;
        auto* out = io_uring_recvmsg_validate(line.pool.buffer(buffer), cqe.res, &ul.message);
        if (out == nullptr) {
            add_buffer(ul, buffer); // cannot happen with our sizes; recycle, never leak
            return;
        }
        packet p;
        p.data = static_cast<std::byte const*>(io_uring_recvmsg_payload(out, &ul.message));
        p.size = io_uring_recvmsg_payload_length(out, cqe.res, &ul.message);
        p.buffer = buffer;
        p.user_rx_ns = now;
        p.line = line.index;
        p.truncated = (out->flags & MSG_TRUNC) != 0;
        store_source(p, io_uring_recvmsg_name(out), out->namelen);
        for (cmsghdr* c = io_uring_recvmsg_cmsg_firsthdr(out, &ul.message); c != nullptr;
             c = io_uring_recvmsg_cmsg_nexthdr(out, &ul.message, c)) {
            read_control_message(*c, p, line);
        }
        line.packets.add(1);
        line.bytes.add(p.size);
        if (p.truncated) {
            line.truncated.add(1);
        }
        if (ul.held.empty() && line.ready.push(p)) {
            ul.delivered = true;
            return;
        }
        if (line.feed.on_full == full_policy::drop) {
            line.dropped.add(1);
            add_buffer(ul, buffer);
            return;
        }
        ul.held.push_back(p); // backpressure: park it, stop receiving until there is room
        if (!ul.paused) {
            ul.paused = true;
            if (ul.armed && !ul.cancel_pending) {
                cancel(index);
            }
        }
    }

    void run(std::promise<void>& ready) {
        try {
            setup();
            for (std::size_t i = 0; i < lines_.size(); ++i) {
                arm(i);
            }
            io_uring_submit(&ring_);
        } catch (...) {
            teardown();
            ready.set_exception(std::current_exception());
            return;
        }
        ready.set_value();
        bool cancels_sent = false;
        auto deadline = std::chrono::steady_clock::time_point::max();
        for (;;) {
            // acquire: pairs with the release store in stop().
            bool const stopping = stop_requested_.load(std::memory_order_acquire);
            bool busy = false;
            bool waiting_on_returns = stopping;
            for (std::size_t i = 0; i < lines_.size(); ++i) {
                uring_line& ul = *lines_[i];
                std::uint32_t buffer = 0;
                while (ul.line->pool.returns().pop(buffer)) {
                    add_buffer(ul, buffer);
                }
                flush_buffers(ul);
                if (ul.paused) {
                    flush_held(ul);
                    if (ul.paused && ul.armed && !ul.cancel_pending) {
                        cancel(i);
                    }
                }
                if (!ul.armed && !ul.paused && ul.in_ring > 0 && !stopping) {
                    arm(i);
                }
                busy = busy || ul.armed || ul.cancel_pending || !ul.held.empty();
                waiting_on_returns = waiting_on_returns || !ul.armed || ul.paused;
            }
            if (stopping) {
                if (!cancels_sent) {
                    cancels_sent = true;
                    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                    for (std::size_t i = 0; i < lines_.size(); ++i) {
                        if (lines_[i]->armed && !lines_[i]->cancel_pending) {
                            cancel(i);
                        }
                    }
                } else if (!busy) {
                    break;
                } else if (std::chrono::steady_clock::now() > deadline) {
                    give_up_held();
                    break;
                }
            }
            schedule_parsers();
            // Every completion wakes us, and with it come the returned buffers. Only a line
            // that cannot receive (not armed: its ring ran dry, or paused with packets held)
            // waits on returns no completion will announce: then poll every millisecond. Else
            // sleep long (each timer re-arm costs a hypervisor exit on VMs); 100 ms bounds stop().
            __kernel_timespec timeout{};
            timeout.tv_nsec = waiting_on_returns ? 1'000'000 : 100'000'000;
            io_uring_cqe* first = nullptr;
            io_uring_submit_and_wait_timeout(&ring_, &first, 1, &timeout, nullptr);
            std::uint64_t const now = realtime_ns();
            unsigned head = 0;
            unsigned seen = 0;
            io_uring_cqe* cqe = nullptr;
            io_uring_for_each_cqe(&ring_, head, cqe) {
                complete(*cqe, now);
                ++seen;
            }
            io_uring_cq_advance(&ring_, seen);
            for (auto& ul : lines_) {
                flush_buffers(*ul);
            }
            schedule_parsers();
        }
        schedule_parsers();
        teardown();
    }

    void schedule_parsers() {
        for (auto& ul : lines_) {
            if (ul->delivered) {
                ul->delivered = false;
                ul->line->feed.parser.schedule();
            }
        }
    }

    void give_up_held() {
        for (auto& ul : lines_) {
            if (!ul->held.empty()) {
                SPDLOG_LOGGER_ERROR(logger(),
                                    "io_uring backend: feed {}: parser did not drain within 5 s of "
                                    "stop; {} received packets counted as dropped",
                                    ul->line->feed.name, ul->held.size());
                ul->line->dropped.add(ul->held.size());
                ul->held.clear();
            }
        }
    }

    io_uring ring_{};
    bool ring_ready_ = false;
    bool error_logged_ = false;
    std::vector<std::unique_ptr<uring_line>> lines_;
    std::thread thread_;
    std::atomic<bool> stop_requested_{false};
};

} // namespace

std::unique_ptr<receive_backend> make_io_uring_backend(blocking_work_contract_group& group) {
    return std::make_unique<io_uring_backend>(group);
}

std::size_t io_uring_headroom() noexcept {
    return headroom();
}

bool probe_io_uring(std::string& why_not) {
    utsname name{};
    ::uname(&name);
    int major = 0;
    int minor = 0;
    std::sscanf(name.release, "%d.%d", &major, &minor);
    if (major < 6) {
        why_not = std::string("kernel ") + name.release +
                  " lacks multishot recvmsg with provided buffer rings (needs Linux >= 6.0)";
        return false;
    }
    io_uring ring{};
    int const rc = io_uring_queue_init(8, &ring, 0);
    if (rc < 0) {
        why_not = std::string("io_uring_queue_init failed: ") + std::strerror(-rc) +
                  (rc == -EPERM ? " (io_uring disabled: sysctl kernel.io_uring_disabled, or a "
                                  "seccomp/container policy)"
                                : "");
        return false;
    }
    io_uring_queue_exit(&ring);
    return true;
}

} // namespace signet::net::detail
