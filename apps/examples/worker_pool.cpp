// worker_pool: two threads run the group's contracts; the release callback runs once, last, on a
// worker. (Without a pool, any thread of yours calls group.execute_next_contract().)
#include <atomic>
#include <cstdio>

#include <signet/core.hpp>

int main() {
    signet::work_contract_group group; // 512 contract slots
    std::atomic<int> runs{0};
    auto contract = group.create_contract(
        [&] { runs.fetch_add(1, std::memory_order_relaxed); }, // work: never concurrent with itself
        [] { std::puts("released"); });                        // release: runs once, last
    signet::worker_pool pool(group, {.threads = 2});
    contract.schedule(); // any thread; schedules before a run coalesce into one run
    while (runs.load(std::memory_order_relaxed) == 0) {
    }
    contract.release(); // the release callback runs on a worker
    pool.stop();        // drains what is still scheduled
    return runs.load(std::memory_order_relaxed) == 1 ? 0 : 1;
}
