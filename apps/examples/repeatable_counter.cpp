// A contract is long-lived: schedule it again and again; schedules before a run coalesce.
#include <cstdio>

#include <signet/core.hpp>

int main() {
    signet::work_contract_group group(64);
    int count = 0;
    auto counter = group.create_contract([&] { ++count; });
    for (int i = 0; i < 10; ++i) {
        counter.schedule();
        counter.schedule(); // coalesces with the one above: still one run
        group.execute_next_contract();
    }
    std::printf("counter ran %d times\n", count);
    return count == 10 ? 0 : 1;
}
