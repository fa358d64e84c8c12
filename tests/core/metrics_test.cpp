#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <signet/core/metrics.hpp>

#include "support/stress.hpp"

// metrics::histogram against a sorted-vector reference: nearest rank ceil(k * n / 1000) computed
// in integers, then the reported value is the upper bound of the sample's bucket, clamped to the
// true [min, max]. Every per-mille percentile of every sample set must match exactly, and every
// reported value must lie within [v, v + v/32).

namespace {

using signet::metrics::counter;
using signet::metrics::gauge;
using signet::metrics::histogram;

constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();

__extension__ using u128 = unsigned __int128;

// The layout, checked at compile time.
static_assert(histogram::bucket_count == 1920);
static_assert(histogram::bucket_index(0) == 0);
static_assert(histogram::bucket_index(63) == 63);
static_assert(histogram::bucket_index(64) == 64 && histogram::bucket_index(65) == 64);
static_assert(histogram::bucket_index(u64_max) == histogram::bucket_count - 1);
static_assert(histogram::bucket_upper_bound(histogram::bucket_count - 1) == u64_max);
static_assert(histogram::nearest_rank(0.07, 100) == 7);
static_assert(!std::is_copy_constructible_v<histogram> && !std::is_move_constructible_v<histogram>);
static_assert(!std::is_copy_constructible_v<counter> && !std::is_move_constructible_v<counter>);
static_assert(!std::is_copy_constructible_v<gauge> && !std::is_move_constructible_v<gauge>);
static_assert(noexcept(std::declval<histogram&>().record(1)));
static_assert(noexcept(std::declval<histogram const&>().take()));

// The value the rule reports for a sample v, given the samples' true min and max.
std::uint64_t reported(std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
    return std::clamp(histogram::bucket_upper_bound(histogram::bucket_index(v)), lo, hi);
}

// v <= r < v + v/32, and r == v below 64.
::testing::AssertionResult within_bound(std::uint64_t v, std::uint64_t r) {
    bool const ok = v < 64 ? r == v : r >= v && static_cast<u128>(r - v) * 32 < v;
    if (ok) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "value " << v << " reported as " << r;
}

// Records `samples`, then checks count, sum, min, max, every per-mille percentile, a few
// percentiles at 1e-9 resolution and (for small sets) every rank against the reference.
void check_against_reference(std::vector<std::uint64_t> samples, std::string const& what) {
    SCOPED_TRACE(what);
    histogram h;
    std::uint64_t sum = 0;
    for (auto v : samples) {
        h.record(v);
        sum += v;
    }
    auto const s = h.take();
    std::sort(samples.begin(), samples.end());
    auto const n = static_cast<std::uint64_t>(samples.size());
    ASSERT_EQ(s.count, n);
    ASSERT_EQ(s.count, n);
    EXPECT_EQ(s.sum, sum);
    EXPECT_EQ(s.min, samples.front());
    EXPECT_EQ(s.max, samples.back());
    std::uint64_t bucketed = 0;
    for (auto c : s.counts) {
        bucketed += c;
    }
    EXPECT_EQ(bucketed, n);

    std::uint64_t const lo = samples.front();
    std::uint64_t const hi = samples.back();
    for (std::uint64_t k = 0; k <= 1000; ++k) {
        double const q = static_cast<double>(k) / 1000.0;
        std::uint64_t expected = 0;
        std::uint64_t truth = 0;
        if (k == 0) {
            expected = truth = lo;
        } else if (k == 1000) {
            expected = truth = hi;
        } else {
            std::uint64_t const rank = (k * n + 999) / 1000; // ceil(k * n / 1000)
            ASSERT_EQ(histogram::nearest_rank(q, n), rank) << "k " << k;
            truth = samples[rank - 1];
            expected = reported(truth, lo, hi);
        }
        std::uint64_t const got = s.percentile(q);
        ASSERT_EQ(got, expected) << "q " << q << " (per mille " << k << ")";
        ASSERT_TRUE(within_bound(truth, got)) << "q " << q;
    }
    // Quantiles with more decimals: rank ceil(p * n / 1e9).
    for (std::uint64_t p : {1ULL, 123'456'789ULL, 500'000'001ULL, 999'999'999ULL}) {
        double const q = static_cast<double>(p) / 1e9;
        auto const rank =
            static_cast<std::uint64_t>((static_cast<u128>(p) * n + 999'999'999) / 1'000'000'000);
        ASSERT_EQ(histogram::nearest_rank(q, n), rank);
        ASSERT_EQ(s.percentile(q), reported(samples[rank - 1], lo, hi)) << "q " << q;
    }
    if (n <= 5000) {
        for (std::uint64_t rank = 1; rank <= n; ++rank) {
            ASSERT_EQ(s.value_at_rank(rank), reported(samples[rank - 1], lo, hi))
                << "rank " << rank;
        }
    }
}

std::vector<std::uint64_t> bucket_edges() {
    std::vector<std::uint64_t> v;
    for (std::size_t i = 0; i < histogram::bucket_count; i += 7) {
        v.push_back(histogram::bucket_lower_bound(i));
        v.push_back(histogram::bucket_upper_bound(i));
    }
    for (std::uint64_t x :
         std::initializer_list<std::uint64_t>{0, 1, 31, 32, 63, 64, 65, 66, 127, 128, u64_max,
                                              u64_max - 1, u64_max / 2, u64_max / 2 + 1}) {
        v.push_back(x);
    }
    return v;
}

TEST(MetricsHistogram, BucketsTileTheWholeRange) {
    EXPECT_EQ(histogram::bucket_lower_bound(0), 0U);
    for (std::size_t i = 0; i < histogram::bucket_count; ++i) {
        std::uint64_t const lo = histogram::bucket_lower_bound(i);
        std::uint64_t const hi = histogram::bucket_upper_bound(i);
        ASSERT_LE(lo, hi) << i;
        ASSERT_EQ(histogram::bucket_index(lo), i);
        ASSERT_EQ(histogram::bucket_index(hi), i);
        if (i + 1 < histogram::bucket_count) {
            ASSERT_EQ(histogram::bucket_lower_bound(i + 1), hi + 1) << i;
        }
        if (lo < 64) {
            ASSERT_EQ(lo, hi) << "values below 64 are exact";
        } else {
            ASSERT_LT(hi - lo, lo / 32) << "bucket " << i << " is wider than 1/32 of its bound";
        }
    }
    EXPECT_EQ(histogram::bucket_upper_bound(histogram::bucket_count - 1), u64_max);
}

TEST(MetricsHistogram, RelativeErrorBoundHoldsForEverySample) {
    std::mt19937_64 rng(signet::test::test_seed());
    for (int i = 0; i < 1'000'000; ++i) {
        std::uint64_t const v = rng() >> (rng() % 64); // log-uniform-ish over the whole range
        ASSERT_TRUE(within_bound(v, histogram::bucket_upper_bound(histogram::bucket_index(v))));
    }
    for (std::uint64_t v : bucket_edges()) {
        ASSERT_TRUE(within_bound(v, histogram::bucket_upper_bound(histogram::bucket_index(v))));
    }
}

TEST(MetricsHistogram, NearestRankIsExactInIntegers) {
    EXPECT_EQ(histogram::nearest_rank(0.5, 0), 0U);
    EXPECT_EQ(histogram::nearest_rank(0.0, 10), 0U);
    EXPECT_EQ(histogram::nearest_rank(-1.0, 10), 0U);
    EXPECT_EQ(histogram::nearest_rank(std::nan(""), 10), 0U);
    EXPECT_EQ(histogram::nearest_rank(1.0, 10), 10U);
    EXPECT_EQ(histogram::nearest_rank(2.0, 10), 10U);
    EXPECT_EQ(histogram::nearest_rank(1e-12, 10), 0U) << "below 1e-9 counts as 0";
    EXPECT_EQ(histogram::nearest_rank(0.9999999999, 10), 10U) << "rounds to 1";
    // Decimal quantiles whose doubles lie just above the decimal: 0.07 * 100 is
    // 7.000000000000001 in double arithmetic, whose ceiling would be 8.
    EXPECT_EQ(histogram::nearest_rank(0.07, 100), 7U);
    EXPECT_EQ(histogram::nearest_rank(0.14, 100), 14U);
    EXPECT_EQ(histogram::nearest_rank(0.5, 1000), 500U);
    EXPECT_EQ(histogram::nearest_rank(0.5, 1001), 501U);
    EXPECT_EQ(histogram::nearest_rank(0.99, 100), 99U);
    EXPECT_EQ(histogram::nearest_rank(0.999, 1000), 999U);
    EXPECT_EQ(histogram::nearest_rank(0.999, 1001), 1000U);
    EXPECT_EQ(histogram::nearest_rank(0.5, u64_max), std::uint64_t{1} << 63);
    // Against 128-bit arithmetic over the whole u64 range of n.
    std::mt19937_64 rng(signet::test::test_seed());
    for (int i = 0; i < 200'000; ++i) {
        std::uint64_t const p = 1 + rng() % 999'999'999;
        std::uint64_t const n = rng() >> (rng() % 64);
        auto const expected =
            static_cast<std::uint64_t>((static_cast<u128>(p) * n + 999'999'999) / 1'000'000'000);
        ASSERT_EQ(histogram::nearest_rank(static_cast<double>(p) / 1e9, n), expected)
            << "p " << p << " n " << n;
    }
}

TEST(MetricsHistogram, EmptySnapshot) {
    histogram h;
    auto const s = h.take();
    EXPECT_EQ(s.count, 0U);
    EXPECT_EQ(s.sum, 0U);
    EXPECT_EQ(s.min, 0U);
    EXPECT_EQ(s.max, 0U);
    EXPECT_EQ(s.percentile(0.0), 0U);
    EXPECT_EQ(s.percentile(0.5), 0U);
    EXPECT_EQ(s.percentile(1.0), 0U);
    EXPECT_EQ(s.value_at_rank(1), 0U);
    EXPECT_EQ(s, histogram::snapshot{});
    int calls = 0;
    s.for_each_cumulative([&](std::uint64_t, std::uint64_t) { ++calls; });
    EXPECT_EQ(calls, 0);
}

TEST(MetricsHistogram, SmallExactValues) {
    histogram h;
    for (std::uint64_t v = 1; v <= 100; ++v) {
        h.record(v);
    }
    auto const s = h.take();
    EXPECT_EQ(s.percentile(0.0), 1U);
    EXPECT_EQ(s.percentile(0.01), 1U);
    EXPECT_EQ(s.percentile(0.07), 7U);
    EXPECT_EQ(s.percentile(0.5), 50U);
    EXPECT_EQ(s.percentile(0.505), 51U);
    EXPECT_EQ(s.percentile(0.99), 99U);
    EXPECT_EQ(s.percentile(0.999), 100U);
    EXPECT_EQ(s.percentile(1.0), 100U);
    EXPECT_EQ(s.sum, 5050U);
}

TEST(MetricsHistogram, SingleSampleIsExactAtEveryQuantile) {
    for (std::uint64_t v : std::initializer_list<std::uint64_t>{0, 1, 64, 1'000'003, u64_max}) {
        histogram h;
        h.record(v);
        auto const s = h.take();
        for (double q : {0.0, 0.001, 0.5, 0.99, 1.0}) {
            EXPECT_EQ(s.percentile(q), v) << "q " << q;
        }
    }
}

TEST(MetricsHistogram, UniformSamples) {
    std::mt19937_64 rng(signet::test::test_seed());
    for (std::size_t n : {1U, 2U, 3U, 7U, 100U, 1000U, 1001U, 10'007U}) {
        std::vector<std::uint64_t> small;
        std::vector<std::uint64_t> wide;
        std::vector<std::uint64_t> full;
        for (std::size_t i = 0; i < n; ++i) {
            small.push_back(rng() % 200);
            wide.push_back(rng() % 1'000'001);
            full.push_back(rng());
        }
        check_against_reference(small, "uniform [0, 200), n " + std::to_string(n));
        check_against_reference(wide, "uniform [0, 1e6], n " + std::to_string(n));
        check_against_reference(full, "uniform u64, n " + std::to_string(n));
    }
}

TEST(MetricsHistogram, ExponentialAndLogUniformSamples) {
    std::mt19937_64 rng(signet::test::test_seed());
    std::exponential_distribution<double> exponential(1.0 / 20'000.0); // mean 20 µs in ns
    std::vector<std::uint64_t> exp_samples;
    std::vector<std::uint64_t> log_samples;
    std::vector<std::uint64_t> tail_samples; // mostly ~5 µs with a heavy tail up to seconds
    for (int i = 0; i < 20'000; ++i) {
        exp_samples.push_back(static_cast<std::uint64_t>(exponential(rng)));
        log_samples.push_back(rng() >> (rng() % 64));
        tail_samples.push_back(rng() % 100 < 99 ? 4'000 + rng() % 2'000
                                                : 1'000'000 + rng() % 1'000'000'000);
    }
    check_against_reference(exp_samples, "exponential, mean 20000");
    check_against_reference(log_samples, "log-uniform over u64");
    check_against_reference(tail_samples, "1% heavy tail");
}

TEST(MetricsHistogram, AdversarialSamples) {
    check_against_reference(bucket_edges(), "bucket edges, 0, 1, u64 max");
    check_against_reference(std::vector<std::uint64_t>(1000, 1'000'000), "all equal");
    check_against_reference(std::vector<std::uint64_t>(1000, 0), "all zero");
    check_against_reference(std::vector<std::uint64_t>(1000, u64_max), "all u64 max");
    check_against_reference({0, u64_max}, "0 and u64 max");
    check_against_reference({1, u64_max, u64_max, u64_max}, "1 and three u64 max");
    // Samples inside one wide bucket: the clamp to [min, max] keeps p100 and p0 exact.
    std::uint64_t const lo = histogram::bucket_lower_bound(1000);
    check_against_reference({lo + 3, lo + 5, lo + 9}, "inside one bucket");
    std::vector<std::uint64_t> ramps; // each bucket's lower bound once, upper bound twice
    for (std::size_t i = 0; i < histogram::bucket_count; ++i) {
        ramps.push_back(histogram::bucket_lower_bound(i));
        ramps.push_back(histogram::bucket_upper_bound(i));
        ramps.push_back(histogram::bucket_upper_bound(i));
    }
    check_against_reference(ramps, "every bucket's bounds");
}

TEST(MetricsHistogram, SumWrapsModulo2To64) {
    histogram h;
    h.record(u64_max);
    h.record(2);
    EXPECT_EQ(h.take().sum, 1U);
}

TEST(MetricsHistogram, MergeEqualsOneHistogramOfAllSamples) {
    std::mt19937_64 rng(signet::test::test_seed());
    histogram a;
    histogram b;
    histogram all;
    for (int i = 0; i < 50'000; ++i) {
        std::uint64_t const v = rng() >> (rng() % 64);
        (i % 3 == 0 ? a : b).record(v);
        all.record(v);
    }
    auto merged = a.take();
    merged += b.take();
    EXPECT_EQ(merged, all.take());

    histogram empty;
    auto from_empty = empty.take();
    from_empty += a.take();
    EXPECT_EQ(from_empty, a.take());
    auto plus_empty = a.take();
    plus_empty += empty.take();
    EXPECT_EQ(plus_empty, a.take());
}

TEST(MetricsHistogram, DifferenceHoldsTheIntervalsSamples) {
    std::mt19937_64 rng(signet::test::test_seed());
    histogram h;
    histogram interval_only;
    for (int i = 0; i < 10'000; ++i) {
        h.record(rng() % 1'000'000);
    }
    auto const earlier = h.take();
    std::vector<std::uint64_t> interval;
    for (int i = 0; i < 5'000; ++i) {
        std::uint64_t const v = 500 + rng() % 100'000;
        h.record(v);
        interval_only.record(v);
        interval.push_back(v);
    }
    auto const later = h.take();
    auto const d = later - earlier;
    auto const exact = interval_only.take();
    EXPECT_EQ(d.counts, exact.counts);
    EXPECT_EQ(d.count, exact.count);
    EXPECT_EQ(d.sum, exact.sum);
    // min and max are bounds within the extreme samples' buckets.
    EXPECT_LE(d.min, exact.min);
    EXPECT_GE(d.min, histogram::bucket_lower_bound(histogram::bucket_index(exact.min)));
    EXPECT_GE(d.max, exact.max);
    EXPECT_LE(d.max, histogram::bucket_upper_bound(histogram::bucket_index(exact.max)));
    // Percentiles of the difference keep the error bound against the interval's samples.
    std::sort(interval.begin(), interval.end());
    for (std::uint64_t k = 1; k < 1000; ++k) {
        double const q = static_cast<double>(k) / 1000.0;
        std::uint64_t const rank = (k * interval.size() + 999) / 1000;
        ASSERT_TRUE(within_bound(interval[rank - 1], d.percentile(q))) << "q " << q;
    }
    // earlier + (later - earlier) == later, min and max included.
    auto rebuilt = earlier;
    rebuilt += d;
    EXPECT_EQ(rebuilt, later);
    // Nothing recorded in between: an empty difference.
    auto const none = later - later;
    EXPECT_EQ(none.count, 0U);
    EXPECT_EQ(none.sum, 0U);
    EXPECT_EQ(none.min, 0U);
    EXPECT_EQ(none.max, 0U);
    EXPECT_EQ(none.percentile(0.99), 0U);
}

TEST(MetricsHistogram, CumulativeBucketsAtEveryNonEmptyBucket) {
    std::mt19937_64 rng(signet::test::test_seed());
    std::vector<std::uint64_t> samples = bucket_edges();
    histogram h;
    for (int i = 0; i < 20'000; ++i) {
        samples.push_back(rng() % 3 == 0 ? rng() % 100 : rng() >> (rng() % 64));
    }
    for (auto v : samples) {
        h.record(v);
    }
    std::sort(samples.begin(), samples.end());
    auto const s = h.take();
    std::uint64_t previous_le = 0;
    std::uint64_t previous_count = 0;
    std::size_t calls = 0;
    s.for_each_cumulative([&](std::uint64_t le, std::uint64_t cumulative) {
        if (calls++ != 0) {
            EXPECT_GT(le, previous_le);
            EXPECT_GT(cumulative, previous_count);
        }
        EXPECT_EQ(histogram::bucket_upper_bound(histogram::bucket_index(le)), le);
        auto const exact = static_cast<std::uint64_t>(
            std::upper_bound(samples.begin(), samples.end(), le) - samples.begin());
        EXPECT_EQ(cumulative, exact) << "le " << le;
        previous_le = le;
        previous_count = cumulative;
    });
    EXPECT_EQ(previous_count, s.count);
    std::size_t non_empty = 0;
    for (auto c : s.counts) {
        non_empty += c != 0 ? 1 : 0;
    }
    EXPECT_EQ(calls, non_empty);
}

TEST(MetricsHistogram, CumulativeBucketsAtChosenBounds) {
    std::mt19937_64 rng(signet::test::test_seed());
    std::vector<std::uint64_t> samples;
    histogram h;
    for (int i = 0; i < 20'000; ++i) {
        std::uint64_t const v = rng() % 2 == 0 ? rng() % 2'000'000 : rng() >> (rng() % 64);
        samples.push_back(v);
        h.record(v);
    }
    samples.push_back(u64_max);
    h.record(u64_max);
    std::sort(samples.begin(), samples.end());
    auto const s = h.take();
    auto const at_most = [&](std::uint64_t b) {
        return static_cast<std::uint64_t>(std::upper_bound(samples.begin(), samples.end(), b) -
                                          samples.begin());
    };
    std::vector<std::uint64_t> const bounds = {
        0,           1,      10, 63, 64, 100, 1'000, 10'000, 100'000, 1'000'000, 1'000'000'000,
        u64_max - 1, u64_max};
    std::size_t k = 0;
    s.for_each_cumulative(bounds, [&](std::uint64_t b, std::uint64_t cumulative) {
        ASSERT_EQ(b, bounds[k++]);
        // b': the largest bucket upper bound <= b.
        std::size_t const i = histogram::bucket_index(b);
        std::uint64_t const counted_to =
            histogram::bucket_upper_bound(i) == b ? b : histogram::bucket_lower_bound(i) - 1;
        EXPECT_EQ(cumulative, at_most(counted_to)) << "bound " << b;
        EXPECT_LE(cumulative, at_most(b));
        if (b >= 64) {
            EXPECT_LT(b - counted_to, b / 32) << "bound " << b;
        } else {
            EXPECT_EQ(cumulative, at_most(b)) << "bounds below 64 are exact";
        }
    });
    EXPECT_EQ(k, bounds.size());
    // Bounds snapped to bucket upper bounds are exact.
    std::vector<std::uint64_t> snapped;
    for (std::uint64_t b : {100ULL, 1'000ULL, 10'000ULL, 100'000ULL, 1'000'000ULL}) {
        snapped.push_back(histogram::bucket_upper_bound(histogram::bucket_index(b)));
    }
    s.for_each_cumulative(snapped, [&](std::uint64_t b, std::uint64_t cumulative) {
        EXPECT_EQ(cumulative, at_most(b)) << "bound " << b;
    });
    // An empty snapshot reports zeros at every bound.
    histogram empty;
    empty.take().for_each_cumulative(
        bounds, [](std::uint64_t, std::uint64_t cumulative) { EXPECT_EQ(cumulative, 0U); });
}

TEST(MetricsCounter, AddsAndWraps) {
    counter c;
    EXPECT_EQ(c.value(), 0U);
    c.add();
    c.add(41);
    EXPECT_EQ(c.value(), 42U);
    c.add(u64_max);
    EXPECT_EQ(c.value(), 41U) << "modulo 2^64";
}

TEST(MetricsGauge, SetsAndReads) {
    gauge g;
    EXPECT_EQ(g.value(), 0);
    g.set(-5);
    EXPECT_EQ(g.value(), -5);
    g.set(std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(g.value(), std::numeric_limits<std::int64_t>::min());
    g.set(7);
    EXPECT_EQ(g.value(), 7);
}

} // namespace
