// Steady state allocates nothing: generator -> packer -> feed handler (session, parser, book),
// once the book's tables and level vectors are warm. This binary replaces the global operator
// new to count allocations on the test thread.
#include <array>
#include <cstddef>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include <signet/md/cme/mdp3_channel.hpp>
#include <signet/md/nasdaq/itch_feed_handler.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/cme/mdp3_generator.hpp>
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

TEST(MdAllocation, Mdp3ByPriceAndByOrderSteadyStateDoesNotAllocate) {
    // Market by price and by order (templates 46, 47, 48) for 8 instruments with up to 200
    // live orders each: once every by-order table has grown to its working size, nothing
    // allocates (no node per order).
    signet::publisher::cme::mdp3_generator gen(
        {.seed = 5, .instruments = 8, .depth = 10, .max_entries = 4, .max_orders = 200});
    cme::mdp3_channel channel;
    std::array<std::byte, signet::publisher::cme::mdp3_generator::max_packet> buffer{};
    for (std::size_t i = 0; i < gen.instruments(); ++i) {
        std::size_t const n = gen.definition(buffer, i, static_cast<std::uint32_t>(i + 1));
        channel.on_definition(std::span(buffer).first(n), 0);
    }
    auto run = [&](int packets) {
        for (int k = 0; k < packets; ++k) {
            std::size_t const n = gen.next_incremental(buffer);
            channel.on_incremental(std::span(buffer).first(n), 0);
        }
    };
    run(50'000); // warm-up: the books reach their working size
    EXPECT_EQ(signet::test::allocations_in([&] { run(100'000); }), 0U);
    EXPECT_EQ(channel.stats().inconsistent_updates, 0U);
    EXPECT_EQ(channel.stats().order_budget_full, 0U);
    EXPECT_EQ(channel.stats().order_entries, gen.order_entries());
    EXPECT_GT(gen.order_entries(), 100'000U);
    EXPECT_FALSE(channel.recovering());
}

} // namespace
