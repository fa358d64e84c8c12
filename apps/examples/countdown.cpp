// this_contract: a contract reschedules itself until done, then releases itself; the release
// callback runs once, after the last run.
#include <cstdio>

#include <signet/core.hpp>

int main() {
    signet::work_contract_group group(64);
    int remaining = 5;
    bool released = false;
    auto countdown = group.create_contract(
        [&] {
            std::printf("%d...\n", remaining);
            if (--remaining > 0) {
                signet::this_contract::schedule();
            } else {
                signet::this_contract::release();
            }
        },
        [&] {
            std::puts("lift-off (release callback)");
            released = true;
        },
        signet::initial_state::scheduled);
    while (group.execute_next_contract()) {
    }
    return remaining == 0 && released && !countdown.is_valid() ? 0 : 1;
}
