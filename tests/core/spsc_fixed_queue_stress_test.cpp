#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <signet/core/spsc_fixed_queue.hpp>

#include "support/stress.hpp"

// A producer sends 0..N-1 and a consumer checks strict order and the sum (rigtorp fuzz test).
// Both threads start on one gate; a watchdog aborts a hung run. SIGNET_STRESS_SCALE multiplies N.

namespace {

using signet::spsc_fixed_queue;
using signet::test::start_gate;
using signet::test::stress_scale;
using signet::test::watchdog;

constexpr auto watchdog_limit = std::chrono::seconds(60);

// Short by default: well under 2 s in a Debug build and 10 s under ThreadSanitizer.
std::uint64_t item_count() {
    return 200'000 * stress_scale();
}

// Waits for the other side: spins for a few microseconds, then yields. Spinning keeps a thread
// that shares a core with another runnable thread (busy CI machine, ctest -j) on the core while
// the peer catches up; the time bound stops a thread whose peer is descheduled on the same core
// from wasting a whole time slice per element. Call reset() after each success.
class backoff {
public:
    void pause() {
        if (spins_++ == 0) {
            spin_start_ = std::chrono::steady_clock::now();
        } else if (spins_ % 64 == 0 && std::chrono::steady_clock::now() - spin_start_ > spin_for) {
            spins_ = 0;
            std::this_thread::yield();
        }
    }
    void reset() noexcept { spins_ = 0; }

private:
    static constexpr auto spin_for = std::chrono::microseconds(5);
    unsigned spins_ = 0;
    std::chrono::steady_clock::time_point spin_start_;
};

enum class consume_mode { pop_into, pop_optional, front_pop_front };

struct consumer_result {
    std::uint64_t received = 0;
    std::uint64_t sum = 0;
    std::uint64_t out_of_order = 0;
    std::uint64_t first_bad_index = 0;
    std::uint64_t first_bad_value = 0;

    void check(std::uint64_t index, std::uint64_t value) {
        if (value != index && out_of_order++ == 0) {
            first_bad_index = index;
            first_bad_value = value;
        }
        sum += value;
        ++received;
    }
};

// Takes one element if there is one; false when the queue looked empty.
bool consume_one(spsc_fixed_queue<std::uint64_t>& queue, consume_mode mode,
                 consumer_result& result) {
    switch (mode) {
    case consume_mode::pop_into: {
        std::uint64_t value = 0;
        if (!queue.pop(value)) {
            return false;
        }
        result.check(result.received, value);
        return true;
    }
    case consume_mode::pop_optional: {
        auto value = queue.pop();
        if (!value) {
            return false;
        }
        result.check(result.received, *value);
        return true;
    }
    case consume_mode::front_pop_front: {
        std::uint64_t const* value = queue.front();
        if (value == nullptr) {
            return false;
        }
        result.check(result.received, *value);
        queue.pop_front();
        return true;
    }
    }
    return false;
}

void run_order_and_sum(std::size_t capacity, consume_mode mode) {
    watchdog guard(watchdog_limit, "SpscFixedQueueStress capacity " + std::to_string(capacity));
    // With capacity 1 every element is a round trip between the threads, which is slow when
    // they share a core; a quarter of the elements still wraps the two-slot ring 25'000 times.
    auto const count = capacity == 1 ? item_count() / 4 : item_count();
    spsc_fixed_queue<std::uint64_t> queue(capacity);
    start_gate gate;
    std::uint64_t full_spins = 0;
    consumer_result result;

    std::thread producer([&] {
        gate.wait();
        backoff wait;
        for (std::uint64_t i = 0; i < count; ++i) {
            while (!queue.push(i)) {
                ++full_spins;
                wait.pause();
            }
            wait.reset();
            // Exercise the any-thread observers from the producer side as well.
            if (queue.size() > capacity) {
                ADD_FAILURE() << "size() exceeded capacity";
            }
        }
    });
    std::thread consumer([&] {
        gate.wait();
        backoff wait;
        while (result.received < count) {
            if (consume_one(queue, mode, result)) {
                wait.reset();
            } else {
                wait.pause();
            }
        }
    });
    gate.open();
    producer.join();
    consumer.join();

    EXPECT_EQ(result.received, count);
    EXPECT_EQ(result.out_of_order, 0U) << "first bad element: index " << result.first_bad_index
                                       << " held " << result.first_bad_value;
    EXPECT_EQ(result.sum, count * (count - 1) / 2);
    EXPECT_TRUE(queue.empty());
    EXPECT_EQ(queue.size(), 0U);
    ::testing::Test::RecordProperty("full_spins", std::to_string(full_spins));
}

TEST(SpscFixedQueueStress, OrderAndSumCapacity1) {
    run_order_and_sum(1, consume_mode::pop_into);
}

TEST(SpscFixedQueueStress, OrderAndSumCapacity7) {
    run_order_and_sum(7, consume_mode::pop_into);
}

TEST(SpscFixedQueueStress, OrderAndSumCapacity1024) {
    run_order_and_sum(1024, consume_mode::pop_into);
}

TEST(SpscFixedQueueStress, OrderAndSumOptionalPop) {
    run_order_and_sum(7, consume_mode::pop_optional);
}

TEST(SpscFixedQueueStress, OrderAndSumFrontPopFrontCapacity1) {
    run_order_and_sum(1, consume_mode::front_pop_front);
}

TEST(SpscFixedQueueStress, OrderAndSumFrontPopFrontCapacity1024) {
    run_order_and_sum(1024, consume_mode::front_pop_front);
}

// Heap-owning elements: the consumer reads memory the producer wrote just before the push, so a
// missing release/acquire pair shows up as a data race (TSan) or a bad value.
TEST(SpscFixedQueueStress, MoveOnlyElementsArriveIntact) {
    watchdog guard(watchdog_limit, "SpscFixedQueueStress.MoveOnlyElementsArriveIntact");
    auto const count = item_count() / 4;
    spsc_fixed_queue<std::unique_ptr<std::uint64_t>> queue(7);
    start_gate gate;
    consumer_result result;

    std::thread producer([&] {
        gate.wait();
        backoff wait;
        for (std::uint64_t i = 0; i < count; ++i) {
            auto element = std::make_unique<std::uint64_t>(i);
            while (!queue.push(std::move(element))) {
                wait.pause();
            }
            wait.reset();
        }
    });
    std::thread consumer([&] {
        gate.wait();
        backoff wait;
        while (result.received < count) {
            std::unique_ptr<std::uint64_t> element;
            if (!queue.pop(element)) {
                wait.pause();
                continue;
            }
            wait.reset();
            result.check(result.received, element ? *element : count);
        }
    });
    gate.open();
    producer.join();
    consumer.join();

    EXPECT_EQ(result.received, count);
    EXPECT_EQ(result.out_of_order, 0U) << "first bad element: index " << result.first_bad_index
                                       << " held " << result.first_bad_value;
    EXPECT_EQ(result.sum, count * (count - 1) / 2);
}

// size() and empty() may be called from any thread; a third thread reads them while both sides
// run and checks that the snapshot never exceeds capacity.
TEST(SpscFixedQueueStress, SizeStaysWithinCapacityWhileRacing) {
    watchdog guard(watchdog_limit, "SpscFixedQueueStress.SizeStaysWithinCapacityWhileRacing");
    constexpr std::size_t capacity = 3;
    auto const count = item_count() / 2;
    spsc_fixed_queue<std::uint64_t> queue(capacity);
    start_gate gate;
    std::atomic<bool> done{false};
    std::uint64_t too_large = 0;
    std::uint64_t observations = 0;
    consumer_result result;

    std::thread observer([&] {
        gate.wait();
        backoff wait;
        // relaxed: done only stops the loop; the join below orders everything else.
        while (!done.load(std::memory_order_relaxed)) {
            auto const size = queue.size();
            static_cast<void>(queue.empty());
            too_large += size > capacity ? 1 : 0;
            ++observations;
            wait.pause(); // never reset: yields every few us so it does not starve the sides
        }
    });
    std::thread producer([&] {
        gate.wait();
        backoff wait;
        for (std::uint64_t i = 0; i < count; ++i) {
            while (!queue.push(i)) {
                wait.pause();
            }
            wait.reset();
        }
    });
    std::thread consumer([&] {
        gate.wait();
        backoff wait;
        while (result.received < count) {
            if (consume_one(queue, consume_mode::pop_into, result)) {
                wait.reset();
            } else {
                wait.pause();
            }
        }
    });
    gate.open();
    producer.join();
    consumer.join();
    // relaxed: see the observer loop.
    done.store(true, std::memory_order_relaxed);
    observer.join();

    EXPECT_EQ(too_large, 0U);
    EXPECT_GT(observations, 0U);
    EXPECT_EQ(result.out_of_order, 0U);
    EXPECT_EQ(result.sum, count * (count - 1) / 2);
}

} // namespace
