// Guarantee 6: nothing allocates after creation; small callables are stored inline. This binary
// replaces the global operator new to count allocations on the test thread.
#include <array>
#include <cstddef>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include <signet/core/work_contract_group.hpp>

#include "support/allocation_counter.hpp"

namespace {

using signet::work_contract_group;

using signet::test::allocations_in;

TEST(WorkContractAllocation, SmallCallablesNeverAllocate) {
    work_contract_group group(64);
    int runs = 0;
    int releases = 0;
    std::array<char, 40> payload{}; // with the references: about 56 bytes of captures
    std::size_t const n = allocations_in([&] {
        auto contract = group.create_contract([&runs, payload] { runs += payload[0] + 1; },
                                              [&releases] { ++releases; });
        for (int i = 0; i < 1000; ++i) {
            contract.schedule();
            group.execute_next_contract();
        }
        contract.release();
        group.execute_next_contract();
    });
    EXPECT_EQ(n, 0U);
    EXPECT_EQ(runs, 1000);
    EXPECT_EQ(releases, 1);
}

TEST(WorkContractAllocation, LargeCallablesAllocateOnceAtCreationOnly) {
    work_contract_group group(64);
    int runs = 0;
    std::array<char, 256> big{};
    signet::work_contract contract;
    EXPECT_EQ(allocations_in(
                  [&] { contract = group.create_contract([&runs, big] { runs += big[0] + 1; }); }),
              1U);
    EXPECT_EQ(allocations_in([&] {
                  for (int i = 0; i < 1000; ++i) {
                      contract.schedule();
                      group.execute_next_contract();
                  }
                  contract.release();
                  group.execute_next_contract();
              }),
              0U);
    EXPECT_EQ(runs, 1000);
}

} // namespace
