// A work callable may take a work_contract_token: the same control as this_contract, passed
// explicitly. Here two workers share one self-scheduling contract that never runs on both.
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include <signet/core.hpp>

int main() {
    signet::work_contract_group group(64);
    int steps = 0; // plain int: the contract never runs on two threads at once
    std::atomic<bool> done{false};
    auto contract = group.create_contract(
        [&](signet::work_contract_token& token) {
            if (++steps < 10'000) {
                token.schedule();
            } else {
                token.release();
            }
        },
        [&] { done.store(true, std::memory_order_release); }, signet::initial_state::scheduled);
    std::vector<std::thread> workers;
    for (int i = 0; i < 2; ++i) {
        workers.emplace_back([&] {
            // acquire: pairs with the release store in the release callback.
            while (!done.load(std::memory_order_acquire)) {
                group.execute_next_contract();
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    std::printf("steps: %d\n", steps);
    return steps == 10'000 ? 0 : 1;
}
