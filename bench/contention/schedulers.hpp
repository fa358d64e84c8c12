#pragma once

// The implementations compared by the contention benchmark, all driven by the same harness
// (harness.hpp). Every task re-schedules (contracts) or re-enqueues (queues) itself each time it
// runs. Queue designs carry a 32-bit task index; nothing allocates per task. The queue designs
// call the body directly (no indirect call), which if anything favours them.
//
// The third-party queues are optional: each is compiled in when its header is found (TBB also
// needs its library, so CMake defines SIGNET_BENCH_HAVE_TBB).

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <signet/core/work_contract_group.hpp>

#include "harness.hpp"

#if __has_include(<concurrentqueue/concurrentqueue.h>)
// GCC reports -Wnull-dereference inside the header after inlining (a false positive); the
// pragma covers the header's own lines, where the diagnostic is located.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <concurrentqueue/concurrentqueue.h>
#pragma GCC diagnostic pop
#define SIGNET_BENCH_HAVE_MOODYCAMEL 1
#endif
#if __has_include(<boost/lockfree/queue.hpp>)
#include <boost/lockfree/queue.hpp>
#define SIGNET_BENCH_HAVE_BOOST_LOCKFREE 1
#endif
#if defined(SIGNET_BENCH_HAVE_TBB)
#include <tbb/concurrent_queue.h>
#endif

namespace signet::bench {

// ---- signet: one contract per task, re-scheduled from inside its own run -------------------

template <unsigned N, synchronization_mode Mode>
class signet_scheduler {
public:
    signet_scheduler(std::size_t tasks, std::size_t /*threads*/)
        : group_(tasks) {
        contracts_.reserve(tasks);
        for (std::size_t i = 0; i < tasks; ++i) {
            contracts_.push_back(group_.create_contract(
                [index = static_cast<std::uint32_t>(i)](work_contract_token& token) {
                    run_task<N>(index);
                    token.schedule();
                },
                initial_state::scheduled));
            if (!contracts_.back().is_valid()) {
                throw std::runtime_error("signet_scheduler: the group has no free slot");
            }
        }
    }

    bool run_one(std::size_t /*worker*/) { return group_.execute_next_contract(); }

    void stop() {
        if constexpr (Mode == synchronization_mode::blocking) {
            group_.stop();
        }
    }

private:
    basic_work_contract_group<Mode> group_;
    std::vector<work_contract> contracts_; // destroyed before the group
};

template <unsigned N>
using signet_nonblocking = signet_scheduler<N, synchronization_mode::non_blocking>;
template <unsigned N>
using signet_blocking = signet_scheduler<N, synchronization_mode::blocking>;

// ---- a fixed-capacity double-ended ring (no allocation after construction) -----------------

class ring_deque {
public:
    explicit ring_deque(std::size_t capacity)
        : mask_(std::bit_ceil(capacity) - 1)
        , slots_(std::make_unique<std::uint32_t[]>(mask_ + 1)) {}

    void push_back(std::uint32_t value) noexcept {
        assert(tail_ - head_ <= mask_ && "ring_deque: full (capacity must cover every task)");
        slots_[tail_++ & mask_] = value;
    }
    bool pop_back(std::uint32_t& value) noexcept {
        if (tail_ == head_) {
            return false;
        }
        value = slots_[--tail_ & mask_];
        return true;
    }
    bool pop_front(std::uint32_t& value) noexcept {
        if (tail_ == head_) {
            return false;
        }
        value = slots_[head_++ & mask_];
        return true;
    }

private:
    std::size_t mask_;
    std::unique_ptr<std::uint32_t[]> slots_;
    std::size_t head_ = 0; // monotonic; index = counter & mask_
    std::size_t tail_ = 0;
};

// ---- mutex + deque: one lock around one FIFO (the floor) -----------------------------------

template <unsigned N>
class mutex_deque_scheduler {
public:
    mutex_deque_scheduler(std::size_t tasks, std::size_t /*threads*/)
        : queue_(tasks) {
        for (std::size_t i = 0; i < tasks; ++i) {
            queue_.push_back(static_cast<std::uint32_t>(i));
        }
    }

    bool run_one(std::size_t /*worker*/) {
        std::uint32_t index = 0;
        {
            std::lock_guard lock(mutex_);
            if (!queue_.pop_front(index)) {
                return false;
            }
        }
        run_task<N>(index);
        std::lock_guard lock(mutex_);
        queue_.push_back(index);
        return true;
    }

    void stop() {}

private:
    std::mutex mutex_;
    ring_deque queue_;
};

// ---- work stealing: a mutex-protected deque per worker, LIFO own / FIFO steal --------------

template <unsigned N>
class work_stealing_scheduler {
public:
    work_stealing_scheduler(std::size_t tasks, std::size_t threads) {
        queues_.reserve(threads);
        for (std::size_t w = 0; w < threads; ++w) {
            queues_.push_back(std::make_unique<worker_queue>(tasks));
        }
        for (std::size_t i = 0; i < tasks; ++i) {
            queues_[i % threads]->tasks.push_back(static_cast<std::uint32_t>(i));
        }
    }

    bool run_one(std::size_t worker) {
        worker_queue& own = *queues_[worker];
        std::uint32_t index = 0;
        bool found = false;
        {
            std::lock_guard lock(own.mutex);
            found = own.tasks.pop_back(index); // LIFO: the newest of our own tasks
        }
        for (std::size_t k = 1; !found && k < queues_.size(); ++k) {
            worker_queue& victim = *queues_[(worker + k) % queues_.size()];
            std::lock_guard lock(victim.mutex);
            found = victim.tasks.pop_front(index); // FIFO steal: the victim's oldest task
        }
        if (!found) {
            return false;
        }
        run_task<N>(index);
        std::lock_guard lock(own.mutex);
        own.tasks.push_back(index);
        return true;
    }

    void stop() {}

private:
    // alignas: each worker locks its own queue; keep the queues on separate lines.
    struct alignas(128) worker_queue {
        explicit worker_queue(std::size_t capacity)
            : tasks(capacity) {}
        std::mutex mutex;
        ring_deque tasks; // can hold every task, since others may steal into it
    };
    std::vector<std::unique_ptr<worker_queue>> queues_;
};

// ---- moodycamel::ConcurrentQueue, with a producer and a consumer token per worker -----------

#if defined(SIGNET_BENCH_HAVE_MOODYCAMEL)
template <unsigned N>
class moodycamel_scheduler {
public:
    moodycamel_scheduler(std::size_t tasks, std::size_t threads)
        : queue_(tasks, threads, 0) {
        tokens_.reserve(threads);
        for (std::size_t w = 0; w < threads; ++w) {
            tokens_.push_back(std::make_unique<worker_tokens>(queue_));
        }
        for (std::size_t i = 0; i < tasks; ++i) {
            (void)queue_.enqueue(tokens_[i % threads]->producer, static_cast<std::uint32_t>(i));
        }
    }

    bool run_one(std::size_t worker) {
        worker_tokens& mine = *tokens_[worker];
        std::uint32_t index = 0;
        if (!queue_.try_dequeue(mine.consumer, index)) {
            return false;
        }
        run_task<N>(index);
        while (!queue_.enqueue(mine.producer, index)) {
        }
        return true;
    }

    void stop() {}

private:
    using queue_type = moodycamel::ConcurrentQueue<std::uint32_t>;
    // alignas: each worker's tokens are written on every operation; keep them apart.
    struct alignas(128) worker_tokens {
        explicit worker_tokens(queue_type& q)
            : producer(q)
            , consumer(q) {}
        moodycamel::ProducerToken producer;
        moodycamel::ConsumerToken consumer;
    };
    queue_type queue_;
    std::vector<std::unique_ptr<worker_tokens>> tokens_; // destroyed before the queue
};
#endif

// ---- tbb::concurrent_queue ---------------------------------------------------------------------

#if defined(SIGNET_BENCH_HAVE_TBB)
template <unsigned N>
class tbb_scheduler {
public:
    tbb_scheduler(std::size_t tasks, std::size_t /*threads*/) {
        for (std::size_t i = 0; i < tasks; ++i) {
            queue_.push(static_cast<std::uint32_t>(i));
        }
    }

    bool run_one(std::size_t /*worker*/) {
        std::uint32_t index = 0;
        if (!queue_.try_pop(index)) {
            return false;
        }
        run_task<N>(index);
        queue_.push(index);
        return true;
    }

    void stop() {}

private:
    tbb::concurrent_queue<std::uint32_t> queue_;
};
#endif

// ---- boost::lockfree::queue (node pool sized up front; bounded_push never allocates) --------

#if defined(SIGNET_BENCH_HAVE_BOOST_LOCKFREE)
template <unsigned N>
class boost_lockfree_scheduler {
public:
    boost_lockfree_scheduler(std::size_t tasks, std::size_t /*threads*/)
        : queue_(tasks) {
        for (std::size_t i = 0; i < tasks; ++i) {
            if (!queue_.bounded_push(static_cast<std::uint32_t>(i))) {
                throw std::runtime_error("boost_lockfree_scheduler: node pool too small");
            }
        }
    }

    bool run_one(std::size_t /*worker*/) {
        std::uint32_t index = 0;
        if (!queue_.pop(index)) {
            return false;
        }
        run_task<N>(index);
        while (!queue_.bounded_push(index)) {
        }
        return true;
    }

    void stop() {}

private:
    boost::lockfree::queue<std::uint32_t> queue_;
};
#endif

} // namespace signet::bench
