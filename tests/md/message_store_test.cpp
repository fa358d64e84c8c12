// message_store: consecutive appends, lookups by sequence, eviction by count and by bytes, the
// ring's skipped tails, the documented bounds, and no allocation after construction.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/message_store.hpp>

#include "md/md_test_support.hpp"
#include "support/allocation_counter.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using test::bytes;
using test::view;

bytes message(std::uint64_t sequence, std::size_t length) {
    bytes b(length);
    for (std::size_t i = 0; i < length; ++i) {
        b[i] = static_cast<std::byte>(sequence * 31 + i);
    }
    return b;
}

bytes stored(message_store const& store, std::uint64_t sequence) {
    auto const found = store.find(sequence);
    if (!found) {
        ADD_FAILURE() << "sequence " << sequence << " not found";
        return {};
    }
    return {found->begin(), found->end()};
}

TEST(MessageStore, ConstructorRejectsBadBounds) {
    EXPECT_THROW(message_store(0, 100), std::invalid_argument);
    EXPECT_THROW(message_store(10, 0), std::invalid_argument);
    EXPECT_THROW(message_store((std::size_t{1} << 40) + 1, 100), std::invalid_argument);
    EXPECT_THROW(message_store(10, message_store::max_byte_capacity + 1), std::invalid_argument);
    message_store const store(10, 100);
    EXPECT_EQ(store.max_messages(), 10U);
    EXPECT_EQ(store.max_bytes(), 100U);
}

TEST(MessageStore, EmptyStoreFindsNothing) {
    message_store const store(4, 64);
    EXPECT_TRUE(store.empty());
    EXPECT_EQ(store.size(), 0U);
    EXPECT_EQ(store.first_sequence(), 0U);
    EXPECT_EQ(store.next_sequence(), 0U);
    for (std::uint64_t s : {0ULL, 1ULL, 2ULL, ~0ULL}) {
        EXPECT_FALSE(store.find(s).has_value()) << s;
        EXPECT_FALSE(store.contains(s)) << s;
    }
}

TEST(MessageStore, FindsConsecutiveMessagesFromAnyFirstSequence) {
    message_store store(16, 1024);
    for (std::uint64_t s = 100; s < 110; ++s) {
        ASSERT_TRUE(store.append(s, view(message(s, 10 + s % 7))));
    }
    EXPECT_EQ(store.first_sequence(), 100U);
    EXPECT_EQ(store.next_sequence(), 110U);
    EXPECT_EQ(store.size(), 10U);
    for (std::uint64_t s = 100; s < 110; ++s) {
        EXPECT_EQ(stored(store, s), message(s, 10 + s % 7)) << s;
    }
    EXPECT_FALSE(store.find(99).has_value());  // never stored
    EXPECT_FALSE(store.find(110).has_value()); // not yet
    EXPECT_EQ(store.evicted(), 0U);
}

TEST(MessageStore, RejectsWhatItCannotStoreAndChangesNothing) {
    message_store store(8, 64);
    EXPECT_FALSE(store.append(0, view(message(0, 4))));     // sequences start at 1
    EXPECT_FALSE(store.append(~0ULL, view(message(0, 4)))); // next_sequence would overflow
    EXPECT_FALSE(store.append(1, view(message(1, 65))));    // longer than the byte ring
    EXPECT_TRUE(store.empty());
    ASSERT_TRUE(store.append(1, view(message(1, 4))));
    EXPECT_FALSE(store.append(3, view(message(3, 4)))); // a gap
    EXPECT_FALSE(store.append(1, view(message(1, 4)))); // a repeat
    EXPECT_EQ(store.next_sequence(), 2U);
    EXPECT_EQ(store.size(), 1U);
    EXPECT_EQ(stored(store, 1), message(1, 4));

    message_store big(2, 1 << 17);
    EXPECT_FALSE(big.append(1, view(message(1, message_store::max_message_size + 1))));
    EXPECT_TRUE(big.append(1, view(message(1, message_store::max_message_size))));
    EXPECT_EQ(stored(big, 1), message(1, message_store::max_message_size));
}

TEST(MessageStore, ZeroLengthMessageIsAnEmptySpanNotAMiss) {
    message_store store(4, 16);
    ASSERT_TRUE(store.append(7, {}));
    ASSERT_TRUE(store.append(8, view(message(8, 3))));
    auto const empty = store.find(7);
    ASSERT_TRUE(empty.has_value());
    EXPECT_TRUE(empty->empty());
    EXPECT_EQ(stored(store, 8), message(8, 3));
}

TEST(MessageStore, EvictsTheOldestByCount) {
    message_store store(4, 1024);
    for (std::uint64_t s = 1; s <= 10; ++s) {
        ASSERT_TRUE(store.append(s, view(message(s, 5))));
    }
    EXPECT_EQ(store.first_sequence(), 7U);
    EXPECT_EQ(store.next_sequence(), 11U);
    EXPECT_EQ(store.evicted(), 6U);
    for (std::uint64_t s = 1; s < 7; ++s) {
        EXPECT_FALSE(store.find(s).has_value()) << s;
    }
    for (std::uint64_t s = 7; s <= 10; ++s) {
        EXPECT_EQ(stored(store, s), message(s, 5)) << s;
    }
}

TEST(MessageStore, EvictsTheOldestByBytesAndSkipsTheRingTail) {
    // 100 ring bytes, 30-byte messages: 3 fit at offsets 0, 30, 60; the 4th does not fit
    // before the end (90 + 30 > 100), so it starts at 0 again and the first goes.
    message_store store(100, 100);
    for (std::uint64_t s = 1; s <= 3; ++s) {
        ASSERT_TRUE(store.append(s, view(message(s, 30))));
    }
    EXPECT_EQ(store.bytes_used(), 90U);
    ASSERT_TRUE(store.append(4, view(message(4, 30))));
    EXPECT_EQ(store.first_sequence(), 2U);
    EXPECT_EQ(store.bytes_used(), 30U + 10U + 60U); // 2, 3, the skipped 10-byte tail, 4
    for (std::uint64_t s = 2; s <= 4; ++s) {
        EXPECT_EQ(stored(store, s), message(s, 30)) << s;
    }
    // A 90-byte message needs the whole ring but for 10 bytes: only it remains.
    ASSERT_TRUE(store.append(5, view(message(5, 90))));
    EXPECT_EQ(store.first_sequence(), 5U);
    EXPECT_EQ(stored(store, 5), message(5, 90));
    // A message as long as the ring.
    ASSERT_TRUE(store.append(6, view(message(6, 100))));
    EXPECT_EQ(store.size(), 1U);
    EXPECT_EQ(stored(store, 6), message(6, 100));
    ASSERT_TRUE(store.append(7, view(message(7, 1))));
    EXPECT_EQ(store.size(), 1U);
    EXPECT_EQ(stored(store, 7), message(7, 1));
    EXPECT_EQ(store.evicted(), 6U);
}

TEST(MessageStore, DocumentedByteBoundKeepsExactlyTheLastMaxMessages) {
    // max_bytes = N * L + L keeps the last N messages of up to L bytes, whatever their mix.
    constexpr std::size_t n = 50;
    constexpr std::size_t l = 37;
    message_store store(n, n * l + l);
    std::mt19937_64 random(5);
    std::vector<std::size_t> lengths;
    for (std::uint64_t s = 1; s <= 5000; ++s) {
        std::size_t const length = s % 3 == 0 ? l : random() % (l + 1);
        lengths.push_back(length);
        ASSERT_TRUE(store.append(s, view(message(s, length))));
        ASSERT_EQ(store.size(), std::min<std::size_t>(s, n)) << s;
    }
    for (std::uint64_t s = 5000 - n + 1; s <= 5000; ++s) {
        EXPECT_EQ(stored(store, s), message(s, lengths[s - 1])) << s;
    }
}

TEST(MessageStore, RandomAppendsMatchAShadowAndKeepTheBound) {
    std::uint64_t const seed = std::random_device{}();
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    std::mt19937_64 random(seed);
    for (int round = 0; round < 20; ++round) {
        std::size_t const max_messages = 1 + random() % 64;
        std::size_t const max_length = random() % 200;
        std::size_t const max_bytes = std::max<std::size_t>(max_length, 1) + random() % 2000;
        message_store store(max_messages, max_bytes);
        std::deque<std::pair<std::uint64_t, bytes>> shadow; // the newest messages, oldest first
        std::uint64_t sequence = 1 + random() % 1000;
        for (int i = 0; i < 3000; ++i, ++sequence) {
            bytes const m = message(sequence, random() % (max_length + 1));
            ASSERT_TRUE(store.append(sequence, view(m)));
            shadow.emplace_back(sequence, m);
            ASSERT_LE(store.bytes_used(), max_bytes);
            ASSERT_EQ(store.next_sequence(), sequence + 1);
            // Every stored message is one of the newest, intact.
            for (std::uint64_t s = store.first_sequence(); s < store.next_sequence(); ++s) {
                auto const& [want_sequence, want] = shadow[shadow.size() - (sequence + 1 - s)];
                ASSERT_EQ(want_sequence, s);
                ASSERT_EQ(stored(store, s), want) << "seed " << seed << " sequence " << s;
            }
            ASSERT_FALSE(store.find(store.first_sequence() - 1).has_value());
            // The documented bound: the last min(N, (max_bytes - L + 1) / L) are all there.
            std::size_t const bound =
                max_length == 0 ? max_messages
                                : std::min(max_messages, (max_bytes - max_length + 1) / max_length);
            ASSERT_GE(store.size(), std::min<std::size_t>(bound, shadow.size())) << "seed " << seed;
            while (shadow.size() > max_messages) {
                shadow.pop_front();
            }
        }
        EXPECT_EQ(store.evicted() + store.size(), 3000U);
    }
}

TEST(MessageStore, ClearForgetsAndRestartsAnywhere) {
    message_store store(4, 64);
    for (std::uint64_t s = 1; s <= 3; ++s) {
        ASSERT_TRUE(store.append(s, view(message(s, 8))));
    }
    store.clear();
    EXPECT_TRUE(store.empty());
    EXPECT_EQ(store.evicted(), 3U);
    EXPECT_FALSE(store.find(2).has_value());
    ASSERT_TRUE(store.append(1000, view(message(1000, 8))));
    EXPECT_EQ(store.first_sequence(), 1000U);
    EXPECT_EQ(stored(store, 1000), message(1000, 8));
}

TEST(MessageStore, AppendAndFindDoNotAllocate) {
    message_store store(1000, 1000 * 50 + 50);
    bytes const m = message(1, 50);
    std::size_t found = 0;
    std::size_t const allocations = signet::test::allocations_in([&] {
        for (std::uint64_t s = 1; s <= 100'000; ++s) {
            if (!store.append(s, view(m))) {
                return;
            }
            found += store.find(s - s % 500).has_value() ? 1U : 0U;
        }
    });
    EXPECT_EQ(allocations, 0U);
    EXPECT_EQ(store.next_sequence(), 100'001U);
    EXPECT_GT(found, 0U);
}

} // namespace
