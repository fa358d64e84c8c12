// Steady state allocates nothing: generator -> packer -> feed handler (session, parser, book),
// once the book's tables and level vectors are warm. This binary replaces the global operator
// new to count allocations on the test thread.
#include <array>
#include <cstddef>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include <signet/md/feed_handler.hpp>
#include <signet/md/itch_generator.hpp>
#include <signet/md/moldudp64.hpp>

namespace {
thread_local bool counting = false;
thread_local std::size_t allocations = 0;
} // namespace

// GCC pairs the replaced operator delete's free() with operator new at the call sites it
// inlines and warns; both sides here are malloc/free, so the pairing is right.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
    if (counting) {
        ++allocations;
    }
    if (void* p = std::malloc(size == 0 ? 1 : size)) {
        return p;
    }
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
#pragma GCC diagnostic pop

namespace {

using namespace signet::md;

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
    allocations = 0;
    counting = true;
    run(200'000);
    counting = false;
    EXPECT_EQ(allocations, 0U);
    EXPECT_EQ(handler.itch_stats().unknown_order_refs, 0U);
    EXPECT_EQ(handler.session_stats().messages, 250'000U);
}

} // namespace
