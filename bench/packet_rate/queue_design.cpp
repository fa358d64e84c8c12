// queue: the thread-pool-and-task-queue baseline users write today.
//
//   receive thread ──recvmmsg──► slot pool ──one task per packet──► moodycamel queue ──► W workers
//   (epoll_wait on all sockets;   (preallocated,   {feed, slot, size, ticket}              lock the
//    level-triggered)              1024-byte slots)                                         feed,
//    parse
//
// Choices (documented in docs/benchmarks.md):
//   - The task carries a slot index into a preallocated pool (slots x 1024 bytes); recvmmsg
//     writes each datagram straight into its slot, so the copy out of the kernel is the only
//     copy and nothing is allocated per packet. Free slots go back through a second moodycamel
//     queue. When the pool is empty the receive thread leaves the data in the kernel.
//   - Per-feed parser state is guarded by a per-feed ticket lock whose tickets the receive thread
//     hands out in arrival order: a mutex that also keeps the feed's packets in order. A plain
//     std::mutex would let two workers take two packets of one feed and parse them out of order,
//     which MoldUDP64 reports as a gap plus a duplicate (lost messages).
//   - Block idle: moodycamel::BlockingConcurrentQueue (wait_dequeue_timed) and epoll_wait. Spin
//     idle: moodycamel::ConcurrentQueue (try_dequeue + pause) and a MSG_DONTWAIT sweep over the
//     sockets. Producer and consumer tokens as moodycamel recommends.
//
// Memory mode: the receive thread's place is taken by an injector that copies template packets
// into free slots and enqueues the same tasks.

#include "common.hpp"

// GCC reports -Wnull-dereference inside the header after inlining (a false positive); the
// pragma covers the header's own lines, where the diagnostic is located.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <concurrentqueue/blockingconcurrentqueue.h>
#include <concurrentqueue/concurrentqueue.h>
#pragma GCC diagnostic pop

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace signet::bench {

namespace {

struct task {
    std::uint32_t feed = 0;
    std::uint32_t slot = 0;
    std::uint32_t size = 0;
    std::uint64_t ticket = 0;
};

/// A ticket lock per feed: the producer (receive thread or injector) numbers the feed's
/// packets in arrival order; a worker parses packet n once `serving` reaches n.
struct feed_lock {
    // alignas: workers spin on `serving`; keep each feed's on its own line.
    alignas(128) std::atomic<std::uint64_t> serving{0};
    std::uint64_t tickets = 0; // producer only
};

constexpr std::size_t receive_batch = 32;

template <idle_mode Idle>
class queue_core {
public:
    using task_queue =
        std::conditional_t<Idle == idle_mode::block, moodycamel::BlockingConcurrentQueue<task>,
                           moodycamel::ConcurrentQueue<task>>;

    queue_core(std::size_t feeds, std::size_t slots, sink_set& sinks)
        : sinks_(sinks)
        , slot_count_(slots)
        , memory_(std::make_unique<std::byte[]>(slots * packet_buffer_size))
        , free_(slots)
        , tasks_(slots)
        , locks_(std::make_unique<feed_lock[]>(feeds)) {
        moodycamel::ProducerToken token(free_);
        for (std::uint32_t s = 0; s < slots; ++s) {
            free_.enqueue(token, s);
        }
    }

    [[nodiscard]] std::byte* slot(std::uint32_t index) const noexcept {
        return memory_.get() + static_cast<std::size_t>(index) * packet_buffer_size;
    }
    [[nodiscard]] std::size_t slot_count() const noexcept { return slot_count_; }
    moodycamel::ConcurrentQueue<std::uint32_t>& free_slots() noexcept { return free_; }
    task_queue& tasks() noexcept { return tasks_; }
    /// Producer side: the feed's next ticket.
    std::uint64_t next_ticket(std::size_t feed) noexcept { return locks_[feed].tickets++; }

    void start_workers(std::size_t count, std::vector<int> const& cpus) {
        for (std::size_t w = 0; w < count; ++w) {
            workers_.emplace_back([this, cpu = cpu_at(cpus, w)] { work(cpu); });
        }
    }
    /// Stops the workers after they emptied the task queue.
    void stop_workers() {
        // release: pairs with the acquire load in work().
        stopping_.store(true, std::memory_order_release);
        for (auto& t : workers_) {
            t.join();
        }
        workers_.clear();
    }

private:
    void work(int cpu) {
        pin_this_thread(cpu);
        moodycamel::ConsumerToken consumer(tasks_);
        moodycamel::ProducerToken give_back(free_);
        task t;
        // acquire: pairs with the release store in stop_workers().
        while (!stopping_.load(std::memory_order_acquire)) {
            if constexpr (Idle == idle_mode::block) {
                if (!tasks_.wait_dequeue_timed(consumer, t, std::chrono::milliseconds(20))) {
                    continue;
                }
            } else {
                if (!tasks_.try_dequeue(consumer, t)) {
                    cpu_relax();
                    continue;
                }
            }
            run(t, give_back);
        }
        while (tasks_.try_dequeue(consumer, t)) {
            run(t, give_back);
        }
    }

    void run(task const& t, moodycamel::ProducerToken& give_back) {
        feed_lock& lock = locks_[t.feed];
        // acquire: pairs with the release store below by the worker that parsed ticket - 1.
        for (unsigned spins = 0; lock.serving.load(std::memory_order_acquire) != t.ticket;
             ++spins) {
            if (spins < 64) {
                cpu_relax();
            } else {
                std::this_thread::yield();
            }
        }
        sinks_[t.feed]->on_packet({slot(t.slot), t.size});
        // release: hands the feed's parser state to whoever holds ticket + 1.
        lock.serving.store(t.ticket + 1, std::memory_order_release);
        free_.enqueue(give_back, t.slot);
    }

    sink_set& sinks_;
    std::size_t slot_count_;
    std::unique_ptr<std::byte[]> memory_;
    moodycamel::ConcurrentQueue<std::uint32_t> free_;
    task_queue tasks_;
    std::unique_ptr<feed_lock[]> locks_;
    std::vector<std::thread> workers_;
    std::atomic<bool> stopping_{false};
};

std::vector<int> worker_cpus(std::vector<int> const& cpus) {
    if (cpus.size() <= 1) {
        return cpus;
    }
    std::vector<int> rotated(cpus.begin() + 1, cpus.end());
    rotated.push_back(cpus.front());
    return rotated;
}

template <idle_mode Idle>
class queue_receiver final : public receiver {
public:
    queue_receiver(receiver_config const& config, sink_set& sinks)
        : config_(config)
        , core_(config.feeds, config.feeds * config.queue_capacity, sinks) {
        epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
        if (!epoll_.is_open()) {
            throw std::system_error(errno, std::generic_category(), "epoll_create1");
        }
        for (std::size_t f = 0; f < config.feeds; ++f) {
            fds_.push_back(open_udp_socket(config.receive_buffer));
            epoll_event event{};
            event.events = EPOLLIN;
            event.data.u64 = f;
            if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fds_.back().get(), &event) != 0) {
                throw std::system_error(errno, std::generic_category(), "epoll_ctl");
            }
        }
    }
    ~queue_receiver() override { stop(); }

    [[nodiscard]] std::vector<std::uint16_t> ports() const override {
        std::vector<std::uint16_t> result;
        for (net::unique_fd const& fd : fds_) {
            result.push_back(local_port(fd.get()));
        }
        return result;
    }

    void start() override {
        core_.start_workers(config_.workers, worker_cpus(config_.cpus));
        thread_ = std::thread([this] { receive(); });
    }

    void stop() override {
        if (!thread_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in receive().
        stopping_.store(true, std::memory_order_release);
        thread_.join();
        core_.stop_workers();
    }

private:
    void receive() {
        pin_this_thread(cpu_at(config_.cpus, 0));
        moodycamel::ProducerToken producer(core_.tasks());
        moodycamel::ConsumerToken take_free(core_.free_slots());
        std::array<std::uint32_t, receive_batch> stash{};
        std::size_t stashed = 0;
        std::array<mmsghdr, receive_batch> messages{};
        std::array<iovec, receive_batch> vectors{};
        std::array<epoll_event, 64> events{};
        // acquire: pairs with the release store in stop().
        while (!stopping_.load(std::memory_order_acquire)) {
            std::size_t ready = fds_.size();
            if constexpr (Idle == idle_mode::block) {
                int const n =
                    ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), 20);
                if (n <= 0) {
                    continue;
                }
                ready = static_cast<std::size_t>(n);
            }
            bool starved = false;
            for (std::size_t r = 0; r < ready; ++r) {
                std::size_t const feed =
                    Idle == idle_mode::block ? static_cast<std::size_t>(events[r].data.u64) : r;
                int const fd = fds_[feed].get();
                for (int round = 0; round < 4; ++round) {
                    if (stashed < receive_batch) {
                        stashed += core_.free_slots().try_dequeue_bulk(
                            take_free, stash.data() + stashed, receive_batch - stashed);
                    }
                    if (stashed == 0) {
                        starved = true; // every slot is queued: leave the data in the kernel
                        break;
                    }
                    for (std::size_t i = 0; i < stashed; ++i) {
                        vectors[i] = {core_.slot(stash[i]), packet_buffer_size};
                        messages[i].msg_hdr = {};
                        messages[i].msg_hdr.msg_iov = &vectors[i];
                        messages[i].msg_hdr.msg_iovlen = 1;
                    }
                    std::size_t const requested = stashed;
                    int const got =
                        ::recvmmsg(fd, messages.data(), static_cast<unsigned>(requested),
                                   MSG_DONTWAIT, nullptr);
                    if (got <= 0) {
                        break;
                    }
                    auto const received = static_cast<std::size_t>(got);
                    for (std::size_t i = 0; i < received; ++i) {
                        core_.tasks().enqueue(producer,
                                              task{static_cast<std::uint32_t>(feed), stash[i],
                                                   messages[i].msg_len, core_.next_ticket(feed)});
                    }
                    // The unused slots move to the front of the stash.
                    for (std::size_t i = received; i < stashed; ++i) {
                        stash[i - received] = stash[i];
                    }
                    stashed -= received;
                    if (received < requested) {
                        break; // the socket is empty
                    }
                }
            }
            if (starved) {
                std::this_thread::yield();
            }
        }
    }

    receiver_config config_;
    queue_core<Idle> core_;
    net::unique_fd epoll_;
    std::vector<net::unique_fd> fds_;
    std::thread thread_;
    std::atomic<bool> stopping_{false};
};

template <idle_mode Idle>
class queue_pipeline final : public pipeline {
public:
    queue_pipeline(pipeline_config const& config, sink_set& sinks)
        : config_(config)
        , core_(config.feeds, config.feeds * config.queue_capacity, sinks)
        , cursors_(config.feeds) {}
    ~queue_pipeline() override { stop(); }

    void start() override {
        core_.start_workers(config_.workers, config_.worker_cpus);
        injector_ = std::thread([this] { inject(); });
    }

    void stop() override {
        if (!injector_.joinable()) {
            return;
        }
        // release: pairs with the acquire load in inject().
        stopping_.store(true, std::memory_order_release);
        injector_.join();
        core_.stop_workers();
    }

    [[nodiscard]] std::vector<feed_cursor> const& cursors() const override { return cursors_; }

private:
    void inject() {
        pin_this_thread(config_.injector_cpu);
        constexpr std::size_t burst = 8; // as signet's injector: packets per feed and round
        packet_templates const& templates = *config_.templates;
        moodycamel::ProducerToken producer(core_.tasks());
        moodycamel::ConsumerToken take_free(core_.free_slots());
        std::array<std::uint32_t, receive_batch> stash{};
        std::size_t stashed = 0;
        std::size_t feed = 0; // round-robin position, kept across starved rounds (fairness)
        std::size_t injected = 0;
        // acquire: pairs with the release store in stop().
        while (!stopping_.load(std::memory_order_acquire)) {
            if (stashed == 0) {
                stashed =
                    core_.free_slots().try_dequeue_bulk(take_free, stash.data(), receive_batch);
                if (stashed == 0) {
                    std::this_thread::yield(); // every slot is queued
                    continue;
                }
            }
            std::uint32_t const s = stash[--stashed];
            auto const size = static_cast<std::uint32_t>(
                produce_packet(templates, cursors_[feed], core_.slot(s)));
            core_.tasks().enqueue(
                producer, task{static_cast<std::uint32_t>(feed), s, size, core_.next_ticket(feed)});
            if (++injected == burst) {
                injected = 0;
                feed = feed + 1 == cursors_.size() ? 0 : feed + 1;
            }
        }
        // Slots still stashed are simply not used again; the pool is discarded after the run.
    }

    pipeline_config config_;
    queue_core<Idle> core_;
    std::vector<feed_cursor> cursors_;
    std::thread injector_;
    std::atomic<bool> stopping_{false};
};

} // namespace

std::unique_ptr<receiver> make_queue_receiver(receiver_config const& config, sink_set& sinks) {
    if (config.idle == idle_mode::spin) {
        return std::make_unique<queue_receiver<idle_mode::spin>>(config, sinks);
    }
    return std::make_unique<queue_receiver<idle_mode::block>>(config, sinks);
}

std::unique_ptr<pipeline> make_queue_pipeline(pipeline_config const& config, sink_set& sinks) {
    if (config.idle == idle_mode::spin) {
        return std::make_unique<queue_pipeline<idle_mode::spin>>(config, sinks);
    }
    return std::make_unique<queue_pipeline<idle_mode::block>>(config, sinks);
}

} // namespace signet::bench
