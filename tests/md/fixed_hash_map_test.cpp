// detail::fixed_hash_map: against std::unordered_map under a random mix of inserts, finds and
// erases (backward-shift deletion keeps every key reachable), refusing when full, negative and
// zero keys, rehash keeping every entry.
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>

#include <gtest/gtest.h>

#include <signet/md/detail/fixed_hash_map.hpp>

namespace {

using signet::md::detail::fixed_hash_map;

TEST(FixedHashMap, AgreesWithUnorderedMapUnderRandomInsertsAndErases) {
    std::uint64_t const seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    constexpr std::size_t capacity = 500;
    fixed_hash_map<std::int32_t, std::uint32_t> map(capacity);
    std::unordered_map<std::int32_t, std::uint32_t> want;
    for (int step = 0; step < 200'000; ++step) {
        // Few distinct keys, many collisions in a small table: long runs to shift back.
        auto const key = static_cast<std::int32_t>(rng() % 1200) - 600;
        auto const value = static_cast<std::uint32_t>(rng());
        switch (rng() % 3) {
        case 0: {
            bool const room = want.size() < capacity;
            bool const fresh = !want.contains(key);
            ASSERT_EQ(map.insert(key, value), room && fresh) << "step " << step;
            if (room && fresh) {
                want.emplace(key, value);
            }
            break;
        }
        case 1:
            ASSERT_EQ(map.erase(key), want.erase(key) == 1) << "step " << step;
            break;
        default: {
            std::uint32_t const* const got = map.find(key);
            auto const it = want.find(key);
            ASSERT_EQ(got != nullptr, it != want.end()) << "step " << step;
            if (got != nullptr) {
                ASSERT_EQ(*got, it->second);
            }
        }
        }
        ASSERT_EQ(map.size(), want.size());
    }
    for (auto const& [key, value] : want) {
        ASSERT_NE(map.find(key), nullptr) << key;
        EXPECT_EQ(*map.find(key), value);
    }
}

TEST(FixedHashMap, RefusesWhenFullAndRehashKeepsEveryEntry) {
    fixed_hash_map<std::int32_t, int> map(3);
    EXPECT_TRUE(map.insert(0, 10)); // zero and negative keys are keys like any other
    EXPECT_TRUE(map.insert(-7, 20));
    EXPECT_FALSE(map.insert(0, 99)) << "already in";
    EXPECT_TRUE(map.insert(std::numeric_limits<std::int32_t>::min(), 30));
    EXPECT_FALSE(map.insert(5, 40)) << "full";
    EXPECT_EQ(map.find(5), nullptr);
    map.rehash(2 * map.capacity());
    EXPECT_EQ(map.capacity(), 6U);
    EXPECT_TRUE(map.insert(5, 40));
    EXPECT_EQ(*map.find(0), 10);
    EXPECT_EQ(*map.find(-7), 20);
    EXPECT_EQ(*map.find(std::numeric_limits<std::int32_t>::min()), 30);
    EXPECT_EQ(*map.find(5), 40);
    map.clear();
    EXPECT_EQ(map.size(), 0U);
    EXPECT_EQ(map.find(0), nullptr);
}

} // namespace
