// Many threads set and select at once: every signal is selected exactly once, none is lost.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/signal_tree.hpp>

#include "support/stress.hpp"

namespace {

using signet::lane;
using signet::signal_tree;

void run_set_select_stress(std::size_t capacity, unsigned threads, bool with_lanes) {
    signet::test::watchdog dog(std::chrono::seconds(120), "signal tree stress");
    signal_tree tree(capacity);
    std::uint64_t const seed = signet::test::test_seed();
    std::uint64_t const rounds = 20'000 * signet::test::stress_scale();
    // Per slot: how many set() calls published a new signal, and how many selects returned it.
    auto published = std::make_unique<std::atomic<std::uint64_t>[]>(tree.capacity());
    auto selected = std::make_unique<std::atomic<std::uint64_t>[]>(tree.capacity());
    signet::test::start_gate gate;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            std::mt19937_64 rng(seed + t);
            std::size_t cursor = rng() % tree.capacity();
            lane const mine =
                with_lanes && t % 2 == 0 ? lane{(t * 64) % tree.capacity(), 64} : lane{};
            gate.wait();
            for (std::uint64_t i = 0; i < rounds; ++i) {
                std::size_t const s = rng() % tree.capacity();
                if (tree.set(s)) {
                    // relaxed: counters only; the joins below order them for the final check.
                    published[s].fetch_add(1, std::memory_order_relaxed);
                }
                std::size_t const got = tree.select(cursor, mine);
                if (got != signal_tree::npos) {
                    selected[got].fetch_add(1, std::memory_order_relaxed);
                    cursor = got + 1 == tree.capacity() ? 0 : got + 1;
                }
            }
        });
    }
    gate.open();
    for (auto& t : pool) {
        t.join();
    }
    for (std::size_t got = tree.select(0); got != signal_tree::npos; got = tree.select(0)) {
        selected[got].fetch_add(1, std::memory_order_relaxed);
    }
    EXPECT_TRUE(tree.empty());
    std::uint64_t total = 0;
    for (std::size_t s = 0; s < tree.capacity(); ++s) {
        ASSERT_EQ(published[s].load(), selected[s].load()) << "slot " << s;
        total += published[s].load();
    }
    EXPECT_GT(total, 0U);
}

TEST(SignalTreeStress, LeafOnlyTree) {
    run_set_select_stress(64, 4, false);
}
TEST(SignalTreeStress, OneInnerLevel) {
    run_set_select_stress(512, 4, false);
}
TEST(SignalTreeStress, DeepTree) {
    run_set_select_stress(1 << 18, 4, false);
}
TEST(SignalTreeStress, WithLanes) {
    run_set_select_stress(4096, 4, true);
}

} // namespace
