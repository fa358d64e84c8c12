// Many threads set and select at once: every signal is selected exactly once, none is lost.
#include <atomic>
#include <bit>
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

// Each thread sets random slots (one at a time, or several of a leaf with one set_bits() when
// `max_claim` > 1) and claims up to `max_claim` slots per claim(); every published signal must be
// claimed exactly once.
void run_set_select_stress(std::size_t capacity, unsigned threads, bool with_lanes,
                           unsigned max_claim = 1) {
    signet::test::watchdog dog(std::chrono::seconds(120), "signal tree stress");
    signal_tree tree(capacity);
    std::uint64_t const seed = signet::test::test_seed();
    std::uint64_t const rounds = 20'000 * signet::test::stress_scale();
    // Per slot: how many set() calls published a new signal, and how many selects returned it.
    auto published = std::make_unique<std::atomic<std::uint64_t>[]>(tree.capacity());
    auto selected = std::make_unique<std::atomic<std::uint64_t>[]>(tree.capacity());
    std::atomic<std::uint64_t> over_claims{0}; // claims that returned more than max_claim slots
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
                if (max_claim == 1) {
                    if (tree.set(s)) {
                        // relaxed: counters only; the joins below order them for the check.
                        published[s].fetch_add(1, std::memory_order_relaxed);
                    }
                } else {
                    std::size_t const leaf = s / 64;
                    std::uint64_t const fresh = tree.set_bits(leaf, rng() & rng());
                    for (std::uint64_t m = fresh; m != 0; m &= m - 1) {
                        auto const bit = static_cast<std::size_t>(std::countr_zero(m));
                        published[leaf * 64 + bit].fetch_add(1, std::memory_order_relaxed);
                    }
                }
                auto const got = tree.claim(cursor, mine, max_claim);
                for (std::uint64_t m = got.bits; m != 0; m &= m - 1) {
                    std::size_t const slot =
                        got.leaf * 64 + static_cast<std::size_t>(std::countr_zero(m));
                    selected[slot].fetch_add(1, std::memory_order_relaxed);
                    cursor = slot + 1 == tree.capacity() ? 0 : slot + 1;
                }
                if (got.bits != 0 && std::popcount(got.bits) > static_cast<int>(max_claim)) {
                    over_claims.fetch_add(1, std::memory_order_relaxed);
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
    EXPECT_EQ(over_claims.load(std::memory_order_relaxed), 0U); // after join()
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
TEST(SignalTreeStress, BatchClaimsOneLevel) {
    run_set_select_stress(512, 4, false, 16);
}
TEST(SignalTreeStress, BatchClaimsTwoLevels) {
    run_set_select_stress(1 << 14, 4, false, 64);
}
TEST(SignalTreeStress, BatchClaimsDeepTreeWithLanes) {
    run_set_select_stress(1 << 20, 4, true, 16);
}

// Empty/non-empty transitions race with retraction: few signals spread over leaves under
// different summary words, so nearly every set publishes upwards and nearly every claim finds
// a leaf empty. A signal hidden by a lost summary bit would stay unclaimed at the end.
TEST(SignalTreeStress, SummaryRetractionNeverHidesASignal) {
    signet::test::watchdog dog(std::chrono::seconds(120), "summary retraction stress");
    signal_tree tree(1 << 18); // 4096 leaves, 64 summary words, a root
    std::uint64_t const seed = signet::test::test_seed();
    std::uint64_t const rounds = 50'000 * signet::test::stress_scale();
    constexpr unsigned threads = 4;
    std::atomic<std::uint64_t> published{0};
    std::atomic<std::uint64_t> claimed{0};
    signet::test::start_gate gate;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            std::mt19937_64 rng(seed + t);
            gate.wait();
            for (std::uint64_t i = 0; i < rounds; ++i) {
                // one slot in each of 8 leaves that sit under 8 different summary words
                std::size_t const slot = (rng() % 8) * 4096 * 8 + (rng() % 64);
                if (tree.set(slot)) {
                    // relaxed: counters only; the joins order them for the final check.
                    published.fetch_add(1, std::memory_order_relaxed);
                }
                auto const got = tree.claim(rng() % tree.capacity(), signet::lane{}, 64);
                claimed.fetch_add(static_cast<std::uint64_t>(std::popcount(got.bits)),
                                  std::memory_order_relaxed);
            }
        });
    }
    gate.open();
    for (auto& t : pool) {
        t.join();
    }
    for (auto got = tree.claim(0, signet::lane{}, 64); got.bits != 0;
         got = tree.claim(0, signet::lane{}, 64)) {
        claimed.fetch_add(static_cast<std::uint64_t>(std::popcount(got.bits)),
                          std::memory_order_relaxed);
    }
    EXPECT_TRUE(tree.empty());
    // relaxed: read after join().
    EXPECT_EQ(published.load(std::memory_order_relaxed), claimed.load(std::memory_order_relaxed));
}

} // namespace
