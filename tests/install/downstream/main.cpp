// A consumer of the installed package: one contract, scheduled twice, run by one worker.
#include <signet/core.hpp>

#include <cstdio>

int main() {
    signet::work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract([&runs] { ++runs; });
    contract.schedule();
    while (group.execute_next_contract()) {
    }
    contract.schedule();
    while (group.execute_next_contract()) {
    }
    std::printf("downstream runs: %d\n", runs);
    return runs == 2 ? 0 : 1;
}
