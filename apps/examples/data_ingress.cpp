// The data-ingress pattern: a producer pushes into an spsc_fixed_queue and schedules the
// consumer contract; workers run it; the contract drains the queue. Queue and consumer know
// nothing of each other; the contract guarantees the queue has exactly one consumer thread at a
// time even with several workers.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>

#include <signet/core.hpp>

int main() {
    constexpr std::uint64_t messages = 100'000;
    signet::work_contract_group group(64);
    signet::spsc_fixed_queue<std::uint64_t> queue(1024);
    std::uint64_t sum = 0; // touched only by the consumer contract
    std::uint64_t expected_next = 0;
    bool in_order = true;
    std::atomic<std::uint64_t> consumed{0};

    auto consumer = group.create_contract([&] {
        std::uint64_t value = 0;
        int batch = 0;
        while (batch < 256 && queue.pop(value)) { // bounded batch: stay fair to other contracts
            in_order = in_order && value == expected_next++;
            sum += value;
            ++batch;
        }
        consumed.fetch_add(static_cast<std::uint64_t>(batch), std::memory_order_release);
        if (!queue.empty()) {
            signet::this_contract::schedule(); // more to do: run again
        }
    });

    signet::worker_pool pool(group, {.threads = 2});
    for (std::uint64_t i = 0; i < messages; ++i) {
        while (!queue.push(i)) {
            consumer.schedule(); // full: make sure the consumer is on its way
            std::this_thread::yield();
        }
        consumer.schedule();
    }
    // acquire: pairs with the consumer's release increment.
    while (consumed.load(std::memory_order_acquire) < messages) {
        std::this_thread::yield();
    }
    pool.stop();
    std::printf("consumed %llu messages, sum %llu, in order: %s\n",
                static_cast<unsigned long long>(messages), static_cast<unsigned long long>(sum),
                in_order ? "yes" : "no");
    return in_order && sum == messages * (messages - 1) / 2 ? 0 : 1;
}
