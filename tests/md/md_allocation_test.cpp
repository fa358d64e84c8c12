// Steady state allocates nothing: generator -> packer -> feed handler (session, parser, book),
// once the book's tables and level vectors are warm. This binary replaces the global operator
// new to count allocations on the test thread.
#include <array>
#include <cstddef>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/itch_feed_handler.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

#include "support/allocation_counter.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using signet::publisher::nasdaq::itch_generator;
using signet::publisher::nasdaq::itch_generator_options;

TEST(MdAllocation, SteadyStateFeedDoesNotAllocate) {
    // Levels: quotes sit within 46 ticks of a drifting mid, so 256 per side is never exceeded.
    itch_feed_handler handler({.book = {.max_orders = 1 << 15, .level_reserve = 256}});
    itch_generator gen(
        {.seed = 21, .symbols = 16, .target_live_orders = 2000, .max_live_orders = 1 << 14});
    std::array<std::byte, 1400> buffer{};
    moldudp64_packer packer(buffer, "ALLOC");
    auto run = [&](int messages) {
        for (int i = 0; i < messages; ++i) {
            std::size_t const n = gen.next(packer.message_space());
            if (n == 0) {
                handler(packer.finish());
                --i;
                continue;
            }
            packer.commit(n);
        }
        handler(packer.finish());
    };
    run(50'000); // warm-up: opening, directory, the book reaches its working size
    EXPECT_EQ(signet::test::allocations_in([&] { run(200'000); }), 0U);
    EXPECT_EQ(handler.itch_stats().unknown_order_refs, 0U);
    EXPECT_EQ(handler.session_stats().messages, 250'000U);
}

} // namespace
