// The smallest use: one contract, scheduled once, run by the calling thread.
#include <cstdio>

#include <signet/core.hpp>

int main() {
    signet::work_contract_group group(64);
    int greetings = 0;
    auto contract = group.create_contract([&] {
        std::puts("hello from a work contract");
        ++greetings;
    });
    contract.schedule();
    group.execute_next_contract();
    return greetings == 1 ? 0 : 1;
}
