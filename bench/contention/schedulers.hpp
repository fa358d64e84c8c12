#pragma once

// The implementations compared by the contention benchmark, all driven by the same harness
// (harness.hpp), in three workloads:
//
//   self     Every task re-schedules (contracts) or re-enqueues (queues) itself each time it
//            runs. Every task is ready all the time: the scheduler's own cost under contention.
//   fan_in   Tasks do not re-schedule. One producer thread, pinned like a socket poller, calls
//            work_contract::schedule() on the contracts round robin as fast as it can; the
//            workers run them. A schedule of a contract that is already scheduled coalesces
//            (it causes no second run). Queues get the same semantics from a per-task "in
//            flight" flag: the producer enqueues a task only if it is not in the queue or
//            running, so each task is in the queue at most once and the queue never holds more
//            than `tasks` entries (the in-flight bound is the number of tasks). Throughput
//            counts the executions done by the workers, not the producer's schedule calls.
//   fan_out  Tasks form a ring cut into groups of 1 + fan_out_width: the first task of a group
//            is a root, the others its leaves. A root, when it runs, runs the body, schedules
//            its fan_out_width leaves and then the next group's root (the last root wraps to
//            the first), so one chain of roots circles the ring and fans out into the leaves,
//            which run the body and nothing else. Root 0 starts scheduled. Every task (root or
//            leaf) counts as one execution. Queues dedupe with the same in-flight flags.
//
// One difference remains by design: a schedule() that reaches a contract while it runs causes
// exactly one more run, while a queue task that is running (its flag still set) is skipped.
// Neither design ever runs one task on two threads at once.
//
// Queue designs carry a 32-bit task index; nothing allocates per task. They call the body
// directly (no indirect call), which if anything favours them.
//
// Batching is offered to both sides alike: a signet worker runs up to signet's max_batch (16)
// contracts per call (execute_next_contracts), and moodycamel_bulk dequeues up to the same
// number of tasks per call (try_dequeue_bulk with the worker's consumer token) and, in the
// self workload, re-enqueues them with one enqueue_bulk. moodycamel (one task per dequeue)
// stays as the plain baseline. The third-party queues are
// optional: each is compiled in when its header is found (TBB also needs its library, so CMake
// defines SIGNET_BENCH_HAVE_TBB).

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <concepts>
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

/// fan_out: how many leaves each root schedules.
inline constexpr std::size_t fan_out_width = 8;

/// The fan_out ring over tasks 0..tasks-1: roots at multiples of fan_out_width + 1, each
/// followed by its leaves (the last group may be short).
struct fan_out_ring {
    std::size_t tasks;

    [[nodiscard]] bool is_root(std::size_t index) const noexcept {
        return index % (fan_out_width + 1) == 0;
    }
    /// One past the last leaf of `root`.
    [[nodiscard]] std::size_t leaves_end(std::size_t root) const noexcept {
        return std::min(root + fan_out_width + 1, tasks);
    }
    /// The root after `root`; `root` itself when the ring has a single group.
    [[nodiscard]] std::size_t next_root(std::size_t root) const noexcept {
        return root + fan_out_width + 1 < tasks ? root + fan_out_width + 1 : 0;
    }
};

// ---- signet: one contract per task -------------------------------------------------------

template <unsigned N, workload W, synchronization_mode Mode>
class signet_scheduler {
public:
    signet_scheduler(std::size_t tasks, std::size_t /*threads*/)
        : group_(tasks) // capacity >= tasks (rounded up by the group)
        , ring_{tasks} {
        // Batch claims at every thread count: a worker takes a batch of scheduled contracts
        // with one RMW and runs them, as moodycamel_bulk dequeues a bulk of tasks and runs them
        // (both hold their batch while they run it). The net runtime with more than one worker
        // chains instead (one contract per claim): nothing waits in a worker's hands there.
        group_.set_batch_claims(true);
        contracts_.reserve(tasks);
        for (std::size_t i = 0; i < tasks; ++i) {
            auto const index = static_cast<std::uint32_t>(i);
            if constexpr (W == workload::self) {
                contracts_.push_back(group_.create_contract(
                    [index](work_contract_token& token) {
                        run_task<N>(index);
                        token.schedule();
                    },
                    initial_state::scheduled));
            } else if constexpr (W == workload::fan_in) {
                contracts_.push_back(group_.create_contract([index] { run_task<N>(index); },
                                                            initial_state::unscheduled));
            } else if (ring_.is_root(i)) {
                contracts_.push_back(group_.create_contract(
                    [this, index](work_contract_token& token) {
                        run_task<N>(index);
                        fan_out(index, token);
                    },
                    i == 0 ? initial_state::scheduled : initial_state::unscheduled));
            } else {
                contracts_.push_back(group_.create_contract([index] { run_task<N>(index); },
                                                            initial_state::unscheduled));
            }
            if (!contracts_.back().is_valid()) {
                throw std::runtime_error("signet_scheduler: the group has no free slot");
            }
        }
    }
    signet_scheduler(signet_scheduler const&) = delete; // contracts capture `this`
    signet_scheduler& operator=(signet_scheduler const&) = delete;

    /// Worker thread: one batch of up to max_batch contracts.
    bool run_one(std::size_t /*worker*/) {
        return group_.execute_next_contracts(basic_work_contract_group<Mode>::max_batch) != 0;
    }

    /// Producer thread (fan_in); one producer only.
    void produce_one() noexcept requires(W == workload::fan_in) {
        (void)contracts_[next_].schedule();
        if (++next_ == contracts_.size()) {
            next_ = 0;
        }
    }

    /// Main thread, after the measured window.
    void stop() {
        if constexpr (Mode == synchronization_mode::blocking) {
            group_.stop();
        }
    }

private:
    /// Runs inside root `root`'s contract: schedules its leaves, then the next root.
    void fan_out(std::size_t root, work_contract_token& token) noexcept {
        for (std::size_t leaf = root + 1; leaf < ring_.leaves_end(root); ++leaf) {
            (void)contracts_[leaf].schedule();
        }
        std::size_t const next = ring_.next_root(root);
        if (next == root) {
            token.schedule();
        } else {
            (void)contracts_[next].schedule();
        }
    }

    basic_work_contract_group<Mode> group_;
    fan_out_ring ring_;
    std::vector<work_contract> contracts_; // destroyed before the group
    std::size_t next_ = 0;                 // fan_in: the producer's round-robin cursor
};

template <unsigned N, workload W>
using signet_nonblocking = signet_scheduler<N, W, synchronization_mode::non_blocking>;
template <unsigned N, workload W>
using signet_blocking = signet_scheduler<N, W, synchronization_mode::blocking>;

// ---- queues: one generic scheduler over a task queue -------------------------------------

/// The queue designs' "in flight" flag per task (fan_in, fan_out): set while the task is in the
/// queue or running, so a task is enqueued at most once, as a contract is scheduled at most
/// once. claim() and finish() may run on any threads.
class in_flight_flags {
public:
    explicit in_flight_flags(std::size_t tasks)
        : flags_(std::make_unique<std::atomic<bool>[]>(tasks)) {
        for (std::size_t i = 0; i < tasks; ++i) {
            // relaxed: the threads that use the flags start after construction.
            flags_[i].store(false, std::memory_order_relaxed);
        }
    }

    /// True if the caller set the flag: the task was idle and the caller must enqueue it.
    [[nodiscard]] bool claim(std::size_t index) noexcept {
        // relaxed: a filter only (test and test-and-set), so a schedule that coalesces costs no
        // read-modify-write; the exchange below decides.
        if (flags_[index].load(std::memory_order_relaxed)) {
            return false;
        }
        // acquire: pairs with the release store in finish(), so the task's previous run
        // happens before the run this claim enqueues (the queue then carries that order on).
        return !flags_[index].exchange(true, std::memory_order_acquire);
    }

    /// After the task's run: the task may be claimed again.
    void finish(std::size_t index) noexcept {
        // release: pairs with the acquire exchange in claim().
        flags_[index].store(false, std::memory_order_release);
    }

private:
    std::unique_ptr<std::atomic<bool>[]> flags_;
};

/// Tasks one bulk dequeue takes at most: signet's batch size, so both sides batch alike.
inline constexpr std::size_t bulk_size = work_contract_group::max_batch;

/// A queue that also moves tasks in bulk (moodycamel_bulk).
template <typename Q>
concept bulk_task_queue = requires(Q& q, std::size_t who, std::uint32_t* items, std::size_t n) {
    { q.pop_bulk(who, items, n) } -> std::same_as<std::size_t>;
    q.push_bulk(who, items, n);
};

/// A scheduler over a task queue Q, which provides
///   Q(std::size_t tasks, std::size_t threads, workload w)
///   void push(std::size_t from, std::uint32_t index)  from = worker, or `threads` = the producer
///   bool pop(std::size_t worker, std::uint32_t& index)
/// and, for bulk_task_queue, pop_bulk/push_bulk of up to bulk_size tasks per call.
/// The queue never has to hold more than `tasks` entries.
template <typename Queue, unsigned N, workload W>
class queue_scheduler {
public:
    queue_scheduler(std::size_t tasks, std::size_t threads)
        : threads_(threads)
        , ring_{tasks}
        , flags_(W == workload::self ? 0 : tasks)
        , queue_(tasks, threads, W) {
        if constexpr (W == workload::self) {
            for (std::size_t i = 0; i < tasks; ++i) {
                queue_.push(i % threads, static_cast<std::uint32_t>(i));
            }
        } else if constexpr (W == workload::fan_out) {
            if (flags_.claim(0)) {
                queue_.push(0, 0); // root 0 starts scheduled
            }
        }
    }

    /// Worker thread: one task, or one bulk of up to bulk_size tasks.
    bool run_one(std::size_t worker) {
        if constexpr (bulk_task_queue<Queue>) {
            std::array<std::uint32_t, bulk_size> items;
            std::size_t const n = queue_.pop_bulk(worker, items.data(), items.size());
            for (std::size_t i = 0; i < n; ++i) {
                run_task<N>(items[i]);
                if constexpr (W != workload::self) {
                    after_run(worker, items[i]);
                }
            }
            if constexpr (W == workload::self) {
                queue_.push_bulk(worker, items.data(), n);
            }
            return n != 0;
        } else {
            std::uint32_t index = 0;
            if (!queue_.pop(worker, index)) {
                return false;
            }
            run_task<N>(index);
            if constexpr (W == workload::self) {
                queue_.push(worker, index);
            } else {
                after_run(worker, index);
            }
            return true;
        }
    }

    /// Producer thread (fan_in); one producer only.
    void produce_one() requires(W == workload::fan_in) {
        if (flags_.claim(next_)) {
            queue_.push(threads_, static_cast<std::uint32_t>(next_));
        }
        if (++next_ == ring_.tasks) {
            next_ = 0;
        }
    }

    void stop() {}

private:
    /// fan_in, fan_out: what follows a task's run (its flag, a root's leaves and successor).
    void after_run(std::size_t worker, std::uint32_t index) {
        if constexpr (W == workload::fan_in) {
            flags_.finish(index);
        } else if (!ring_.is_root(index)) {
            flags_.finish(index);
        } else {
            for (std::size_t leaf = index + 1; leaf < ring_.leaves_end(index); ++leaf) {
                if (flags_.claim(leaf)) {
                    queue_.push(worker, static_cast<std::uint32_t>(leaf));
                }
            }
            // Finish before the next root is claimed: with two groups the next root may run
            // and claim this one before this worker gets here; with one group next == index.
            flags_.finish(index);
            std::size_t const next = ring_.next_root(index);
            if (flags_.claim(next)) {
                queue_.push(worker, static_cast<std::uint32_t>(next));
            }
        }
    }

    std::size_t threads_;
    fan_out_ring ring_;
    in_flight_flags flags_; // empty in the self workload
    Queue queue_;
    std::size_t next_ = 0; // fan_in: the producer's round-robin cursor
};

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

class mutex_deque_queue {
public:
    mutex_deque_queue(std::size_t tasks, std::size_t /*threads*/, workload /*w*/)
        : queue_(tasks) {}

    void push(std::size_t /*from*/, std::uint32_t index) {
        std::lock_guard lock(mutex_);
        queue_.push_back(index);
    }
    bool pop(std::size_t /*worker*/, std::uint32_t& index) {
        std::lock_guard lock(mutex_);
        return queue_.pop_front(index);
    }

private:
    std::mutex mutex_;
    ring_deque queue_;
};

template <unsigned N, workload W>
using mutex_deque_scheduler = queue_scheduler<mutex_deque_queue, N, W>;

// ---- work stealing: a mutex-protected deque per worker, LIFO own / FIFO steal --------------
// A worker pushes to its own deque; the fan_in producer, which has none, deals the tasks out
// to the workers' deques round robin (task i to worker i mod threads).

class work_stealing_queue {
public:
    work_stealing_queue(std::size_t tasks, std::size_t threads, workload /*w*/) {
        queues_.reserve(threads);
        for (std::size_t w = 0; w < threads; ++w) {
            queues_.push_back(std::make_unique<worker_queue>(tasks));
        }
    }

    void push(std::size_t from, std::uint32_t index) {
        worker_queue& target =
            from < queues_.size() ? *queues_[from] : *queues_[index % queues_.size()];
        std::lock_guard lock(target.mutex);
        target.tasks.push_back(index);
    }
    bool pop(std::size_t worker, std::uint32_t& index) {
        {
            worker_queue& own = *queues_[worker];
            std::lock_guard lock(own.mutex);
            if (own.tasks.pop_back(index)) { // LIFO: the newest of our own tasks
                return true;
            }
        }
        for (std::size_t k = 1; k < queues_.size(); ++k) {
            worker_queue& victim = *queues_[(worker + k) % queues_.size()];
            std::lock_guard lock(victim.mutex);
            if (victim.tasks.pop_front(index)) { // FIFO steal: the victim's oldest task
                return true;
            }
        }
        return false;
    }

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

template <unsigned N, workload W>
using work_stealing_scheduler = queue_scheduler<work_stealing_queue, N, W>;

// ---- moodycamel::ConcurrentQueue, with a producer and a consumer token per thread -----------
// Producer tokens exist only for the threads that enqueue: the workers in self and fan_out, the
// producer in fan_in (an idle producer token would cost consumers a sub-queue to scan).

#if defined(SIGNET_BENCH_HAVE_MOODYCAMEL)
class moodycamel_queue {
public:
    moodycamel_queue(std::size_t tasks, std::size_t threads, workload w)
        : queue_(tasks, w == workload::fan_in ? 1 : threads, 0) {
        consumers_.reserve(threads);
        for (std::size_t t = 0; t < threads; ++t) {
            consumers_.push_back(std::make_unique<consumer_token>(queue_));
        }
        std::size_t const producers = w == workload::fan_in ? threads + 1 : threads;
        producers_.reserve(producers);
        for (std::size_t t = 0; t < producers; ++t) {
            producers_.push_back(w == workload::fan_in && t < threads
                                     ? nullptr
                                     : std::make_unique<producer_token>(queue_));
        }
    }

    void push(std::size_t from, std::uint32_t index) {
        while (!queue_.enqueue(producers_[from]->token, index)) {
        }
    }
    bool pop(std::size_t worker, std::uint32_t& index) {
        return queue_.try_dequeue(consumers_[worker]->token, index);
    }

protected:
    using queue_type = moodycamel::ConcurrentQueue<std::uint32_t>;
    // alignas: each thread's tokens are written on every operation; keep them apart.
    struct alignas(128) producer_token {
        explicit producer_token(queue_type& q)
            : token(q) {}
        moodycamel::ProducerToken token;
    };
    struct alignas(128) consumer_token {
        explicit consumer_token(queue_type& q)
            : token(q) {}
        moodycamel::ConsumerToken token;
    };
    queue_type queue_;
    std::vector<std::unique_ptr<producer_token>> producers_; // destroyed before the queue
    std::vector<std::unique_ptr<consumer_token>> consumers_;
};

template <unsigned N, workload W>
using moodycamel_scheduler = queue_scheduler<moodycamel_queue, N, W>;

/// moodycamel with bulk operations: try_dequeue_bulk of up to bulk_size tasks with the
/// worker's consumer token, and enqueue_bulk with its producer token to re-enqueue them (self).
class moodycamel_bulk_queue : public moodycamel_queue {
public:
    using moodycamel_queue::moodycamel_queue;

    std::size_t pop_bulk(std::size_t worker, std::uint32_t* items, std::size_t max) {
        return queue_.try_dequeue_bulk(consumers_[worker]->token, items, max);
    }
    void push_bulk(std::size_t from, std::uint32_t const* items, std::size_t n) {
        if (n != 0) {
            while (!queue_.enqueue_bulk(producers_[from]->token, items, n)) {
            }
        }
    }
};

template <unsigned N, workload W>
using moodycamel_bulk_scheduler = queue_scheduler<moodycamel_bulk_queue, N, W>;
#endif

// ---- tbb::concurrent_queue ---------------------------------------------------------------------

#if defined(SIGNET_BENCH_HAVE_TBB)
class tbb_queue {
public:
    tbb_queue(std::size_t /*tasks*/, std::size_t /*threads*/, workload /*w*/) {}

    void push(std::size_t /*from*/, std::uint32_t index) { queue_.push(index); }
    bool pop(std::size_t /*worker*/, std::uint32_t& index) { return queue_.try_pop(index); }

private:
    tbb::concurrent_queue<std::uint32_t> queue_;
};

template <unsigned N, workload W>
using tbb_scheduler = queue_scheduler<tbb_queue, N, W>;
#endif

// ---- boost::lockfree::queue (node pool sized up front; bounded_push never allocates) --------

#if defined(SIGNET_BENCH_HAVE_BOOST_LOCKFREE)
class boost_lockfree_queue {
public:
    boost_lockfree_queue(std::size_t tasks, std::size_t /*threads*/, workload /*w*/)
        : queue_(tasks) {}

    void push(std::size_t /*from*/, std::uint32_t index) {
        // The pool holds a node for every task and a task is queued at most once, so this
        // fails only while a popping thread has yet to return its node.
        while (!queue_.bounded_push(index)) {
        }
    }
    bool pop(std::size_t /*worker*/, std::uint32_t& index) { return queue_.pop(index); }

private:
    boost::lockfree::queue<std::uint32_t> queue_;
};

template <unsigned N, workload W>
using boost_lockfree_scheduler = queue_scheduler<boost_lockfree_queue, N, W>;
#endif

} // namespace signet::bench
