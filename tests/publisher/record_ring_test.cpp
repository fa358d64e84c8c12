// detail::record_ring: records come back byte for byte and in order, across the ring's end;
// a consumer that falls behind is told what it lost and resumes at the oldest intact record;
// the producer never waits. The stress test runs a producer and a consumer on their own threads
// (started by one gate): every record the consumer gets is intact and later than the previous
// one, and what it did not get is accounted for as lost. SIGNET_STRESS_ITERATIONS sets its
// length.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/publisher/detail/record_ring.hpp>

namespace {

using signet::publisher::detail::record_ring;
using bytes = std::vector<std::byte>;

/// Record `n`: its number in the first 8 bytes, then bytes derived from it; size 8 + n % 300.
bytes make_record(std::uint64_t n) {
    bytes b(8 + n % 300);
    std::memcpy(b.data(), &n, 8);
    for (std::size_t i = 8; i < b.size(); ++i) {
        b[i] = static_cast<std::byte>((n * 131 + i) & 0xFF);
    }
    return b;
}

struct reader {
    record_ring& ring;
    std::uint64_t position = 0;
    std::uint64_t lost = 0;
    bytes buffer = bytes(record_ring::max_record_size);

    std::optional<bytes> next() {
        record_ring::read_result const r = ring.read(position, buffer);
        lost += r.lost;
        if (!r.record) {
            return std::nullopt;
        }
        return bytes(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(r.size));
    }
};

TEST(RecordRing, RecordsComeBackInOrderAcrossTheEnd) {
    record_ring ring(0); // the smallest ring: a few of the largest records
    reader r{ring};
    EXPECT_FALSE(r.next().has_value());
    std::uint64_t next = 0;
    // Many times the capacity, read as it goes: nothing is lost.
    for (std::uint64_t n = 0; n < 20'000; ++n) {
        ASSERT_TRUE(ring.push(make_record(n)));
        if (n % 7 == 6) {
            while (auto const got = r.next()) {
                ASSERT_EQ(*got, make_record(next)) << next;
                ++next;
            }
        }
    }
    while (auto const got = r.next()) {
        ASSERT_EQ(*got, make_record(next));
        ++next;
    }
    EXPECT_EQ(next, 20'000U);
    EXPECT_EQ(r.lost, 0U);
}

TEST(RecordRing, EmptyAndLargestRecords) {
    record_ring ring(1 << 20);
    reader r{ring};
    ASSERT_TRUE(ring.push({}));
    bytes const largest(record_ring::max_record_size, std::byte{0x5A});
    ASSERT_TRUE(ring.push(largest));
    EXPECT_FALSE(ring.push(bytes(record_ring::max_record_size + 1)));
    EXPECT_EQ(r.next(), bytes{});
    EXPECT_EQ(r.next(), largest);
    EXPECT_FALSE(r.next().has_value());
}

TEST(RecordRing, AConsumerThatFellBehindSkipsToTheOldestIntactRecord) {
    record_ring ring(0);
    std::size_t const capacity = ring.capacity();
    reader r{ring};
    // Twice the capacity without reading: the producer never waits, it overwrites.
    std::uint64_t pushed = 0;
    std::size_t bytes_pushed = 0;
    while (bytes_pushed < 2 * capacity) {
        bytes const record = make_record(pushed++);
        bytes_pushed += 8 + (record.size() + 7) / 8 * 8;
        ASSERT_TRUE(ring.push(record));
    }
    auto const first = r.next();
    ASSERT_TRUE(first.has_value());
    EXPECT_GT(r.lost, 0U);
    std::uint64_t n = 0;
    std::memcpy(&n, first->data(), 8);
    EXPECT_GT(n, 0U);
    EXPECT_EQ(*first, make_record(n));
    // From there on, every record to the newest, in order.
    while (auto const got = r.next()) {
        ASSERT_EQ(*got, make_record(++n));
    }
    EXPECT_EQ(n, pushed - 1);
    // What was skipped: the records before the first one read, header words included.
    std::uint64_t skipped = 0;
    std::memcpy(&n, first->data(), 8);
    for (std::uint64_t k = 0; k < n; ++k) {
        skipped += 8 + (make_record(k).size() + 7) / 8 * 8;
    }
    EXPECT_EQ(r.lost, skipped);
}

TEST(RecordRing, StressProducerNeverWaitsConsumerGetsIntactRecordsInOrder) {
    char const* const env = std::getenv("SIGNET_STRESS_ITERATIONS");
    std::uint64_t const records = env != nullptr ? std::strtoull(env, nullptr, 10) : 200'000;
    record_ring ring(1 << 16); // small: the consumer falls behind now and then
    std::atomic<bool> go{false};
    std::atomic<bool> done{false};
    std::uint64_t received = 0;
    std::uint64_t lost_bytes = 0;
    std::uint64_t last = 0;
    bool ordered = true;
    bool intact = true;
    std::thread consumer([&] {
        reader r{ring};
        // acquire: pairs with the release store of `go` (the gate).
        while (!go.load(std::memory_order_acquire)) {
            std::this_thread::yield();
        }
        bool first = true;
        for (;;) {
            // acquire: pairs with the producer's release store of `done`: every push is visible
            // to the reads after it.
            bool const finished = done.load(std::memory_order_acquire);
            while (auto const got = r.next()) {
                std::uint64_t n = 0;
                std::memcpy(&n, got->data(), 8);
                intact = intact && *got == make_record(n);
                ordered = ordered && (first || n > last);
                first = false;
                last = n;
                if (++received % 256 == 0) {
                    std::this_thread::yield(); // fall behind now and then: overwrites happen
                }
            }
            if (finished) {
                break;
            }
        }
        lost_bytes = r.lost;
    });
    go.store(true, std::memory_order_release); // the gate; pairs with the consumer's acquire
    for (std::uint64_t n = 0; n < records; ++n) {
        ring.push(make_record(n));
    }
    done.store(true, std::memory_order_release); // pairs with the consumer's acquire
    consumer.join();
    std::printf("%llu of %llu records read, %llu bytes lost to overwrites\n",
                static_cast<unsigned long long>(received), static_cast<unsigned long long>(records),
                static_cast<unsigned long long>(lost_bytes));
    EXPECT_TRUE(intact);
    EXPECT_TRUE(ordered);
    EXPECT_EQ(last, records - 1) << "the newest record is never lost";
    EXPECT_EQ(received == records, lost_bytes == 0)
        << received << " of " << records << " records, " << lost_bytes << " bytes lost";
}

} // namespace
