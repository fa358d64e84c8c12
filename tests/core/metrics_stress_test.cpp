#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/metrics.hpp>
#include <signet/core/work_contract_group.hpp>

#include "support/stress.hpp"

// A writer records a known sequence while a reader takes snapshots. Every snapshot must be
// consistent: counts never go back, and min, max and sum cover the counted samples (the release
// store of a count pairs with the snapshot's acquire load). After the writer stops, the final
// snapshot must equal one recorded without a reader. The second test moves the writer between
// worker threads, as a work contract's runs move. Run under ThreadSanitizer in the tsan preset.

namespace {

using signet::metrics::counter;
using signet::metrics::gauge;
using signet::metrics::histogram;
using signet::test::start_gate;
using signet::test::stress_scale;
using signet::test::watchdog;

constexpr auto watchdog_limit = std::chrono::seconds(120);

std::uint64_t sample_count() {
    return 300'000 * stress_scale();
}

// The k-th sample: spread over [0, 2^40) by a multiplicative hash, with some small values.
std::uint64_t sample(std::uint64_t k) {
    std::uint64_t const h = (k + 1) * 0x9E3779B97F4A7C15ULL;
    return k % 4 == 0 ? h >> 58 : (h >> 24) >> (h % 24);
}

/// `h` holds exactly the samples 0..sample_count()-1 (as one writer recording them would).
void expect_every_sample(histogram const& h) {
    histogram reference;
    for (std::uint64_t k = 0; k < sample_count(); ++k) {
        reference.record(sample(k));
    }
    EXPECT_EQ(h.take(), reference.take());
}

// Checks one snapshot against the previous one; counts how many were checked.
struct snapshot_checker {
    histogram::snapshot previous{};
    std::uint64_t snapshots = 0;

    void check(histogram::snapshot const& s) {
        ++snapshots;
        ASSERT_GE(s.count, previous.count);
        ASSERT_LE(s.count, sample_count());
        std::uint64_t total = 0;
        std::uint64_t at_least = 0; // the sum of the counted samples' lower bounds
        std::size_t first = histogram::bucket_count;
        std::size_t last = 0;
        for (std::size_t i = 0; i < histogram::bucket_count; ++i) {
            ASSERT_GE(s.counts[i], previous.counts[i]) << "bucket " << i << " went back";
            total += s.counts[i];
            at_least += s.counts[i] * histogram::bucket_lower_bound(i);
            if (s.counts[i] != 0) {
                first = std::min(first, i);
                last = i;
            }
        }
        ASSERT_EQ(total, s.count);
        if (s.count == 0) {
            ASSERT_EQ(s.min, 0U);
            ASSERT_EQ(s.max, 0U);
        } else {
            // min and max lie in the first and last counted buckets; sum covers every counted
            // sample (the samples stay below 2^40, so the sum does not wrap here).
            ASSERT_GE(s.min, histogram::bucket_lower_bound(first));
            ASSERT_LE(s.min, histogram::bucket_upper_bound(first));
            ASSERT_GE(s.max, histogram::bucket_lower_bound(last));
            ASSERT_LE(s.max, histogram::bucket_upper_bound(last));
            ASSERT_GE(s.sum, at_least);
            std::uint64_t below = s.min;
            for (double q : {0.0, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0}) {
                std::uint64_t const p = s.percentile(q);
                ASSERT_GE(p, below) << "q " << q;
                ASSERT_LE(p, s.max) << "q " << q;
                below = p;
            }
            ASSERT_EQ(s.percentile(1.0), s.max);
            auto const d = s - previous;
            ASSERT_EQ(d.count, s.count - previous.count);
        }
        previous = s;
    }
};

TEST(MetricsHistogramStress, SnapshotsWhileOneWriterRecords) {
    watchdog dog(watchdog_limit, "MetricsHistogramStress.SnapshotsWhileOneWriterRecords");
    histogram h;
    counter recorded;
    gauge last_value;
    start_gate gate;
    std::atomic<bool> done{false};
    std::thread writer([&] {
        gate.wait();
        for (std::uint64_t k = 0; k < sample_count(); ++k) {
            h.record(sample(k));
            recorded.add();
            last_value.set(static_cast<std::int64_t>(k));
        }
        // release: pairs with the reader's acquire load; the final snapshot sees everything.
        done.store(true, std::memory_order_release);
    });
    snapshot_checker checker;
    std::uint64_t last_recorded = 0;
    std::int64_t last_seen = -1;
    gate.open();
    // acquire: pairs with the writer's release store of done.
    while (!done.load(std::memory_order_acquire)) {
        checker.check(h.take());
        if (::testing::Test::HasFatalFailure()) {
            break;
        }
        std::uint64_t const r = recorded.value();
        ASSERT_GE(r, last_recorded) << "counter went back";
        last_recorded = r;
        std::int64_t const v = last_value.value();
        ASSERT_GE(v, last_seen) << "gauge went back (one writer, increasing values)";
        last_seen = v;
    }
    writer.join();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    checker.check(h.take());

    expect_every_sample(h);
    EXPECT_EQ(recorded.value(), sample_count());
    EXPECT_EQ(last_value.value(), static_cast<std::int64_t>(sample_count() - 1));
    std::printf("[ info     ] %llu snapshots while recording\n",
                static_cast<unsigned long long>(checker.snapshots));
    EXPECT_GT(checker.snapshots, 1U);
}

TEST(MetricsHistogramStress, WriterMovesBetweenWorkersAsAContract) {
    watchdog dog(watchdog_limit, "MetricsHistogramStress.WriterMovesBetweenWorkersAsAContract");
    histogram h;
    signet::work_contract_group group(64);
    std::uint64_t next = 0; // plain: the contract never runs on two threads at once
    std::atomic<bool> done{false};
    constexpr std::uint64_t per_run = 64;
    auto contract = group.create_contract(
        [&](signet::work_contract_token& token) {
            for (std::uint64_t i = 0; i < per_run && next < sample_count(); ++i) {
                h.record(sample(next++));
            }
            if (next < sample_count()) {
                token.schedule();
            } else {
                token.release();
            }
        },
        // release: pairs with the acquire loads below; the contract's writes are visible.
        [&] { done.store(true, std::memory_order_release); }, signet::initial_state::scheduled);
    start_gate gate;
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w) {
        workers.emplace_back([&] {
            gate.wait();
            // acquire: pairs with the release store in the release callback.
            while (!done.load(std::memory_order_acquire)) {
                group.execute_next_contract();
            }
        });
    }
    snapshot_checker checker;
    gate.open();
    // acquire: as the workers'.
    while (!done.load(std::memory_order_acquire)) {
        checker.check(h.take());
        if (::testing::Test::HasFatalFailure()) {
            break;
        }
    }
    for (auto& w : workers) {
        w.join();
    }
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    checker.check(h.take());
    expect_every_sample(h);
}

} // namespace
