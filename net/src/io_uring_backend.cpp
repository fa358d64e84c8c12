// io_uring backend. The poller thread owns one ring; per line it keeps a multishot recvmsg
// armed on the socket with buffers from the line's own provided-buffer ring (the line's packet
// pool). Each completion carries a datagram already in a pool buffer: the poller builds the
// packet and pushes it into the line's queue, so the poller is the single producer of every
// line queue and of every buffer ring (parsers hand buffers back through the pool's returns
// queue; the poller re-adds them). Per packet: no syscall (one io_uring_enter per batch of
// completions), one spsc push, no copy, no allocation. The ring holds feed_options::ring_buffers
// of the pool, refilled with the buffers the parser freed last (still in cache; top_up()).
//
// A multishot receive ends when the buffer ring runs dry (-ENOBUFS) or when we cancel it for
// backpressure; the poller re-arms it once buffers are back and counts each re-arm. A dry ring
// with every buffer on the parser side uses the pause protocol too: the parser's next batch
// resumes the line, so a poller that went to sleep meanwhile is woken to re-arm. Under
// full_policy::backpressure a full queue cancels the receive and parks the completions still
// in flight in `held` (bounded by the pool size) until the parser makes room; data that has not
// arrived yet stays in the kernel. Under full_policy::drop the packet is counted and its buffer
// goes straight back to the ring. A paused line is resumed the moment the parser frees room:
// the parser side's resume hook writes the backend's eventfd (thread mode) or schedules the
// reactor contract (reactor mode); no timer is involved.
//
// Two drivers share one step function (poll_step):
//   thread mode   the poller thread loops: step, then sleep in io_uring_submit_and_wait.
//   reactor mode  the runtime's reactor contract calls poll() (a step that never sleeps) on a
//                 worker; an idle worker sleeps in the ring through wait(). The ring is created
//                 disabled (IORING_SETUP_R_DISABLED) by the controlling thread, so setup errors
//                 surface in start(), and enabled by the worker's first poll(), which makes that
//                 worker the ring's single issuer (SINGLE_ISSUER / DEFER_TASKRUN). Hence reactor
//                 mode serves one worker; the runtime keeps the poller thread for more.
// Either way an eventfd, watched by a multishot poll in the ring, lets other threads interrupt
// the sleep: stop(), a resumed line, and contracts scheduled while the worker sleeps. A second
// multishot poll watches the runtime's readiness set (TCP connections) and dispatches it.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <future>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>
#include <spdlog/spdlog.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/core/realtime_clock.hpp>
#include <signet/net/detail/delivery.hpp>
#include <signet/net/detail/feed_state.hpp>
#include <signet/net/detail/readiness_set.hpp>
#include <signet/net/detail/timer_queue.hpp>
#include <signet/net/log.hpp>
#include <signet/net/unique_fd.hpp>

#include "backends.hpp"

namespace signet::net::detail {

namespace {

constexpr std::uint64_t cancel_tag = std::uint64_t{1} << 63;
constexpr std::uint64_t wake_tag = std::uint64_t{1} << 62;
constexpr std::uint64_t readiness_tag = std::uint64_t{1} << 61;
constexpr unsigned completion_queue_entries = 16384;
constexpr std::size_t max_ring_entries = 32768;

// The kernel lays out header, name, control data, payload back to back in the buffer; a name
// length that is a multiple of 8 keeps the control messages (cmsghdr) aligned.
constexpr std::size_t name_length = (sizeof(sockaddr_in6) + 7) / 8 * 8;

std::size_t headroom() noexcept {
    return sizeof(io_uring_recvmsg_out) + name_length + control_buffer_size;
}

class io_uring_backend final : public receive_backend {
public:
    explicit io_uring_backend(blocking_work_contract_group&)
        : wake_("io_uring backend") {}
    ~io_uring_backend() override {
        stop();
        teardown();
    }

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
        line.backend = this;
        line.resume = [](line_state& l) {
            static_cast<io_uring_backend*>(l.backend)->resume_line();
        };
        lines_.push_back(std::move(ul));
    }

    void watch(readiness_set& set) override { readiness_ = &set; }

    void start(int cpu, timer_queue& timers) override {
        timers_ = &timers;
        std::promise<void> ready;
        auto setup_done = ready.get_future();
        thread_ = std::thread([this, &ready] { run_thread(ready); });
        try {
            signet::pin_thread(thread_, cpu, "io_uring poller");
            setup_done.get(); // rethrows a setup error from the poller thread
        } catch (...) {
            stop();
            throw;
        }
    }

    bool supports_reactor(std::size_t workers) const noexcept override { return workers == 1; }

    /// The socket's queue, and completions the driver has not reaped yet: datagrams already out
    /// of the socket, in pool buffers, of any line (a completion names its line once read).
    /// Read from a parser's thread: the ring's head and tail words with acquire loads (the
    /// driver stores the head with release in io_uring_cq_advance, the kernel the tail).
    bool input_waiting(line_state const& line) const noexcept override {
        if (receive_backend::input_waiting(line)) {
            return true;
        }
        unsigned const* const ktail = ring_.cq.ktail; // set before the parsers start
        unsigned const* const khead = ring_.cq.khead;
        return ktail != nullptr && khead != nullptr &&
               __atomic_load_n(ktail, __ATOMIC_ACQUIRE) != __atomic_load_n(khead, __ATOMIC_ACQUIRE);
    }

    void start_reactor(work_contract& reactor) override {
        reactor_ = &reactor;
        setup(true); // disabled ring: the first poll() enables it on the worker
    }

    bool poll() override {
        if (!enabled_) {
            enable_on_this_thread();
        }
        return poll_step(false);
    }

    bool finished() const noexcept override { return finished_; }

    bool wait(std::chrono::nanoseconds timeout) override {
        __kernel_timespec ts{};
        ts.tv_sec = static_cast<long long>(timeout.count() / 1'000'000'000);
        ts.tv_nsec = static_cast<long long>(timeout.count() % 1'000'000'000);
        io_uring_cqe* first = nullptr;
        int const rc = io_uring_submit_and_wait_timeout(&ring_, &first, 1, &ts, nullptr);
        if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY) {
            log_error_once("io_uring_submit_and_wait_timeout", rc);
        }
        return true;
    }

    void wake() noexcept override { wake_.signal(); }

    void stop() override {
        // release: pairs with the acquire load in poll_step().
        stop_requested_.store(true, std::memory_order_release);
        if (thread_.joinable()) {
            wake();
            thread_.join();
        }
    }

private:
    struct uring_line {
        line_state* line = nullptr;
        io_uring_buf_ring* buffers = nullptr;
        std::size_t ring_bytes = 0;
        unsigned entries = 0;
        msghdr message{}; // template for recvmsg: name and control sizes
        unsigned in_ring = 0;
        unsigned ring_target = 0; // buffers kept in the ring (feed_options::ring_buffers)
        int pending_adds = 0;
        bool armed = false;
        bool ever_armed = false;
        bool cancel_pending = false;
        bool paused = false;
        bool resume_asked = false; // dry ring: the parser side resumes us (rearm())
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

    void setup(bool disabled) {
        io_uring_params params{};
        params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
                       IORING_SETUP_CQSIZE | (disabled ? IORING_SETUP_R_DISABLED : 0U);
        unsigned const entries =
            std::bit_ceil(std::max<unsigned>(64U, static_cast<unsigned>(lines_.size() * 4 + 4)));
        params.cq_entries = completion_queue_entries;
        int rc = io_uring_queue_init_params(entries, &ring_, &params);
        if (rc == -EINVAL) { // kernels before 6.1 lack DEFER_TASKRUN (and SINGLE_ISSUER)
            params = {};
            params.flags = IORING_SETUP_CQSIZE | (disabled ? IORING_SETUP_R_DISABLED : 0U);
            params.cq_entries = completion_queue_entries;
            rc = io_uring_queue_init_params(entries, &ring_, &params);
        }
        disabled_ = disabled;
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
            ul.ring_target =
                static_cast<unsigned>(ul.line->feed.ring_buffers == 0
                                          ? pool.count()
                                          : std::min(pool.count(), ul.line->feed.ring_buffers));
            top_up(ul); // the line's stash holds every buffer to begin with
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
        // Header + name + control + exactly buffer_size payload bytes: the stride's padding to a
        // cache line is not receive space, so every backend truncates at buffer_size.
        io_uring_buf_ring_add(ul.buffers, pool.buffer(index),
                              static_cast<unsigned>(headroom() + pool.buffer_size()),
                              static_cast<unsigned short>(index),
                              io_uring_buf_ring_mask(ul.entries), ul.pending_adds++);
        ++ul.in_ring;
    }

    /// Takes back the buffers the parser returned (onto the stash, most recent on top) and fills
    /// the ring up to ring_target from the top of the stash. The kernel takes ring buffers in
    /// order: a ring holding the whole pool would cycle through all of it (16 MiB for 16 feeds
    /// of 1024 1-KiB buffers) and miss the cache on every copy; the top of the stash is what the
    /// parser released last.
    void top_up(uring_line& ul) noexcept {
        line_state& line = *ul.line;
        std::uint32_t buffer = 0;
        while (line.pool.returns().pop(buffer)) {
            line.stash.push_back(buffer); // never reallocates: reserved for the whole pool
        }
        while (ul.in_ring < ul.ring_target && !line.stash.empty()) {
            add_buffer(ul, line.stash.back());
            line.stash.pop_back();
        }
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

    bool flush_held(uring_line& ul) {
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
        } else {
            // Still no room: ask the parser side to resume us (pause protocol, feed_state.hpp);
            // if it made room meanwhile, the next step sees it and retries.
            ul.line->request_resume();
        }
        return pushed != 0;
    }

    void complete(io_uring_cqe const& cqe, std::uint64_t now) {
        std::uint64_t const data = io_uring_cqe_get_data64(&cqe);
        if (data == wake_tag) {
            wake_.drain(); // readable again on the next signal
            if ((cqe.flags & IORING_CQE_F_MORE) == 0) {
                wake_armed_ = false;
            }
            return;
        }
        if (data == readiness_tag) {
            (void)readiness_->dispatch(); // consumes the set's events: readable on the next
            if ((cqe.flags & IORING_CQE_F_MORE) == 0) {
                readiness_armed_ = false;
            }
            return;
        }
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
        switch (deliver(line, p, !ul.held.empty())) {
        case delivery::queued:
            ul.delivered = true;
            return;
        case delivery::dropped:
            add_buffer(ul, buffer);
            return;
        case delivery::full:
            break;
        }
        ul.held.push_back(p); // backpressure: park it, stop receiving until there is room
        if (!ul.paused) {
            ul.paused = true;
            ul.line->request_resume(); // pause protocol (feed_state.hpp)
            if (ul.armed && !ul.cancel_pending) {
                cancel(index);
            }
        }
    }

    // The parser side freed room in a paused line (pause protocol, feed_state.hpp): let the
    // driver flush what it holds and re-arm.
    void resume_line() noexcept {
        if (reactor_ != nullptr) {
            reactor_->schedule();
        } else {
            wake();
        }
    }

    void log_error_once(char const* what, int rc) noexcept {
        if (!error_logged_) {
            error_logged_ = true;
            SPDLOG_LOGGER_ERROR(logger(), "io_uring backend: {} failed: {}", what,
                                std::strerror(-rc));
        }
    }

    void enable_on_this_thread() {
        if (disabled_) {
            // Debian's liburing 2.3 declares io_uring_enable_rings() but does not export it:
            // make the register call it wraps directly.
            if (::syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS,
                          nullptr, 0) < 0) {
                throw std::system_error(errno, std::generic_category(),
                                        "io_uring backend: IORING_REGISTER_ENABLE_RINGS");
            }
        }
        enabled_ = true;
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            arm(i);
        }
        arm_wake();
        submit();
    }

    void submit() noexcept {
        if (int const rc = io_uring_submit(&ring_); rc < 0 && rc != -EBUSY && rc != -EINTR) {
            log_error_once("io_uring_submit", rc);
        }
    }

    void arm_wake() {
        io_uring_sqe* sqe = next_sqe();
        if (sqe == nullptr) {
            return; // retried by the next step
        }
        io_uring_prep_poll_multishot(sqe, wake_.get(), POLLIN);
        io_uring_sqe_set_data64(sqe, wake_tag);
        wake_armed_ = true;
    }

    void arm_readiness() {
        io_uring_sqe* sqe = next_sqe();
        if (sqe == nullptr) {
            return; // retried by the next step
        }
        io_uring_prep_poll_multishot(sqe, readiness_->fd(), POLLIN);
        io_uring_sqe_set_data64(sqe, readiness_tag);
        readiness_armed_ = true;
        // Events that came before the poll was armed raise no new wake-up of the set's fd.
        (void)readiness_->dispatch();
    }

    void run_thread(std::promise<void>& ready) {
        try {
            setup(false);
            enable_on_this_thread();
        } catch (...) {
            teardown();
            ready.set_exception(std::current_exception());
            return;
        }
        ready.set_value();
        while (!poll_step(true)) {
            (void)timers_->fire_due();
        }
        // The ring stays mapped until the destructor: parser contracts still running on the
        // workers read its completion queue's head and tail (input_waiting) until the runtime
        // has stopped them too.
    }

    // One round of the driver: take back returned buffers, flush held packets, (re)arm, reap
    // completions, schedule parsers. `may_sleep` (thread mode): wait in the ring for the first
    // completion. Returns true in thread mode when stopped and done; in reactor mode whether
    // anything happened (a completion or a flushed packet).
    bool poll_step(bool may_sleep) {
        if (finished_) {
            return true;
        }
        // acquire: pairs with the release store in stop().
        bool const stopping = stop_requested_.load(std::memory_order_acquire);
        bool busy = false;
        bool progress = false;
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            uring_line& ul = *lines_[i];
            top_up(ul);
            flush_buffers(ul);
            if (ul.paused) {
                progress = flush_held(ul) || progress;
                if (ul.paused && ul.armed && !ul.cancel_pending) {
                    cancel(i);
                }
            }
            if (!stopping) {
                rearm(i);
            }
            busy = busy || ul.armed || ul.cancel_pending || !ul.held.empty();
        }
        if (!wake_armed_ && !stopping) {
            arm_wake();
        }
        if (!readiness_armed_ && readiness_ != nullptr && !stopping) {
            arm_readiness();
        }
        if (stopping) {
            if (!cancels_sent_) {
                cancels_sent_ = true;
                stop_deadline_ = std::chrono::steady_clock::now() + stop_deadline;
                for (std::size_t i = 0; i < lines_.size(); ++i) {
                    if (lines_[i]->armed && !lines_[i]->cancel_pending) {
                        cancel(i);
                    }
                }
            } else if (!busy) {
                schedule_parsers();
                finished_ = true;
                return true;
            } else if (std::chrono::steady_clock::now() > stop_deadline_) {
                give_up_held();
                schedule_parsers();
                finished_ = true;
                return true;
            }
        }
        schedule_parsers();
        if (may_sleep) {
            // Completions, returned-buffer notices (resume_line), timers armed earlier and
            // stop() all wake us through the ring; the timeout is the earliest timer, or only
            // bounds a wake lost to an error path.
            (void)timers_->begin_sleep(); // the only sleeper in thread mode
            (void)wait(stopping ? std::chrono::nanoseconds(std::chrono::milliseconds(1))
                                : timers_->sleep_bound(idle_sleep));
            timers_->end_sleep();
        } else if (io_uring_cq_ready(&ring_) == 0 || io_uring_sq_ready(&ring_) != 0) {
            // Reactor: never sleep. With DEFER_TASKRUN completions are posted only when the
            // issuer enters the kernel, so a poll that finds the queue empty asks for them.
            if (int const rc = io_uring_submit_and_get_events(&ring_);
                rc < 0 && rc != -EBUSY && rc != -EINTR) {
                log_error_once("io_uring_submit_and_get_events", rc);
            }
        }
        std::uint64_t const now = realtime_clock::now_ns();
        unsigned head = 0;
        unsigned seen = 0;
        io_uring_cqe* cqe = nullptr;
        io_uring_for_each_cqe(&ring_, head, cqe) {
            complete(*cqe, now);
            ++seen;
        }
        io_uring_cq_advance(&ring_, seen);
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            flush_buffers(*lines_[i]);
            if (!stopping) {
                rearm(i); // a receive that just ended: its SQE goes with the next enter
            }
        }
        schedule_parsers();
        return may_sleep ? false : (progress || seen != 0);
    }

    /// A line whose multishot receive ended (and not for backpressure) gets a new one if its
    /// ring has buffers. A dry ring (-ENOBUFS: every buffer is on the parser side) asks once per
    /// dry spell to be resumed when the parser frees some (pause protocol, feed_state.hpp), then
    /// looks again: the parser may have freed some already. Without that, a worker or poller
    /// that sleeps in the ring would wait for a completion that no receive is armed to post.
    void rearm(std::size_t index) {
        uring_line& ul = *lines_[index];
        if (ul.armed || ul.paused) {
            return;
        }
        if (ul.in_ring == 0) {
            top_up(ul);
            flush_buffers(ul);
        }
        if (ul.in_ring == 0 && !ul.resume_asked) {
            ul.line->request_resume(); // pause protocol (feed_state.hpp)
            ul.resume_asked = true;
            top_up(ul);
            flush_buffers(ul);
        }
        if (ul.in_ring > 0) {
            if (ul.resume_asked) {
                // Buffers are back: withdraw the request (a resume already under way is
                // harmless).
                (void)ul.line->withdraw_resume();
                ul.resume_asked = false;
            }
            arm(index);
        }
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
    bool disabled_ = false;         // created with IORING_SETUP_R_DISABLED
    timer_queue* timers_ = nullptr; // thread mode: the runtime's timers (start())
    bool enabled_ = false; // enabled and armed by the issuer (poller thread or reactor worker)
    bool error_logged_ = false;
    bool wake_armed_ = false;
    bool readiness_armed_ = false;
    readiness_set* readiness_ = nullptr;
    bool cancels_sent_ = false;
    bool finished_ = false;
    std::chrono::steady_clock::time_point stop_deadline_{};
    event_fd wake_;
    work_contract* reactor_ = nullptr; // reactor mode: the runtime's reactor contract
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
    io_uring ring{};
    io_uring_params params{};
    int const rc = io_uring_queue_init_params(8, &ring, &params);
    if (rc < 0) {
        why_not = std::string("io_uring_queue_init failed: ") + std::strerror(-rc) +
                  (rc == -EPERM ? " (io_uring disabled: sysctl kernel.io_uring_disabled, or a "
                                  "seccomp/container policy)"
                                : "");
        return false;
    }
    // Features, not kernel versions: the opcodes we use, the ext-arg wait, and IORING_OP_SEND_ZC,
    // which arrived in the same release (6.0) as multishot recvmsg (no feature bit of its own).
    io_uring_probe* probe = io_uring_get_probe_ring(&ring);
    bool const ext_arg = (params.features & IORING_FEAT_EXT_ARG) != 0;
    bool const ops = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_RECVMSG) &&
                     io_uring_opcode_supported(probe, IORING_OP_POLL_ADD) &&
                     io_uring_opcode_supported(probe, IORING_OP_ASYNC_CANCEL);
    bool const multishot = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_SEND_ZC);
    if (probe != nullptr) {
        io_uring_free_probe(probe);
    }
    io_uring_queue_exit(&ring);
    if (!ext_arg || !ops) {
        why_not = "io_uring lacks IORING_FEAT_EXT_ARG or the recvmsg/poll/cancel opcodes";
        return false;
    }
    if (!multishot) {
        why_not = "io_uring lacks multishot recvmsg with provided buffer rings (Linux >= 6.0)";
        return false;
    }
    return true;
}

} // namespace signet::net::detail
