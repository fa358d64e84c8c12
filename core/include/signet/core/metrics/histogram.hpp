#pragma once

/// metrics::histogram: a log-linear histogram of 64-bit values (latencies in ns, sizes in bytes)
/// that one writer records into with no lock and no read-modify-write, and that any thread reads
/// as a snapshot. Percentiles follow one exact rule and have a stated error bound.
///
/// Threading: record() is writer-side. Calls must not overlap, and a writer that moves to another
/// thread must be ordered after the previous one by happens-before (the runs of one work contract
/// are; so are a mutex and a join). take() runs on any thread at any time, also during record().
/// Not for concurrent writers: two overlapping record() calls can lose samples. Give each writer
/// its own histogram and add their snapshots (snapshot::operator+=).
///
/// Buckets: the whole u64 range, with no clamp. Each value below 64 has its own bucket, so those
/// values are exact. Above 64, each power of two [2^e, 2^(e+1)) (e = 6..63) is split into 32
/// equal sub-buckets of width 2^(e-5). That makes 1920 buckets (see bucket_index(),
/// bucket_lower_bound() and bucket_upper_bound()). A bucket is narrower than 1/32 of its lower
/// bound. So its upper bound r, reported for any value v in it, satisfies v <= r < v + v/32: it
/// over-reports by less than 3.125%, never under-reports, and r == v below 64.
///
/// Percentiles: snapshot::percentile(q) uses the "nearest rank" rule. Sort the n samples in
/// ascending order and take the one at 1-based rank ceil(q*n). The result is the upper bound of
/// the bucket that holds that rank, clamped to [min, max] of the samples. q <= 0 gives min,
/// q >= 1 gives max, and n == 0 gives 0. q is rounded to a multiple of 1e-9, and the rank is
/// computed from it in integers (nearest_rank()). So q = 0.07 of 100 samples is rank 7, although
/// the double 0.07 is slightly more than 7/100. For the sample v at that rank, the result r again
/// satisfies v <= r < v + v/32 (r == v below 64). q = 0 and q = 1 are exact.
///
/// Design:
///   1. record(v): if v is below min or above max, store it there. Add v to sum. Loads and these
///      stores are relaxed, because only the writer stores them. Then store the count of v's
///      bucket + 1 with release.
///   2. take(): load every bucket count with acquire, then sum, min and max. An acquire load that
///      reads a count pairs with the release store that wrote it. That store follows the writer's
///      stores to min, max and sum for this sample and every earlier one. So a snapshot's min,
///      max and sum cover every sample its counts hold. They may also cover samples recorded
///      during take(), so min and max are narrowed to the first and last non-empty buckets.
///   3. A snapshot's count is the sum of its bucket counts. This keeps percentiles consistent with
///      the counts. A later snapshot never holds fewer counts than an earlier one, per bucket or
///      in total, because there is one writer and reads of one location are coherent. Snapshots
///      taken on different threads need the usual happens-before to be "later".
///   Invariant: nothing here locks or does a read-modify-write. A reader never delays the
///   writer, except that a read can cost the writer one cache-line transfer.
///
/// Costs: record() is a bit_width, a shift, four loads, and two to four stores on two cache lines
/// (the min/max/sum line and the bucket's). A release store is a plain store on x86-64 and stlr
/// on AArch64; there is no fence. take() loads 1920 words, which takes a few microseconds. Memory:
/// 15 KiB per histogram and per snapshot. Take snapshots once per interval, not per sample.
///
/// Prometheus: snapshot::for_each_cumulative() yields (le, cumulative count) pairs. It can yield
/// one at every non-empty bucket (exact), or one at each of a chosen set of bounds. With those
/// and sum and count, an exporter writes name_bucket{le="..."}, then le="+Inf" (count), then
/// name_sum and name_count.

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

namespace signet::metrics {

class histogram {
public:
    /// log2 of the sub-buckets per power of two; the relative error bound is 2^-sub_bits = 1/32.
    static constexpr unsigned sub_bits = 5;
    static constexpr std::size_t bucket_count = std::size_t{64 - sub_bits + 1} << sub_bits;

    struct snapshot;

    histogram() noexcept = default;
    histogram(histogram const&) = delete;
    histogram& operator=(histogram const&) = delete;
    histogram(histogram&&) = delete;
    histogram& operator=(histogram&&) = delete;

    /// Writer-side (one writer at a time, see above). Wait-free and allocation-free.
    void record(std::uint64_t value) noexcept;
    /// Any thread, also during record(). Returns counts, count, sum, min and max (Design, step 2).
    [[nodiscard]] snapshot take() const noexcept;

    /// The bucket that holds `value`.
    [[nodiscard]] static constexpr std::size_t bucket_index(std::uint64_t value) noexcept;
    /// The smallest and largest values in bucket `index` (< bucket_count).
    [[nodiscard]] static constexpr std::uint64_t bucket_lower_bound(std::size_t index) noexcept;
    [[nodiscard]] static constexpr std::uint64_t bucket_upper_bound(std::size_t index) noexcept;
    /// The 1-based nearest rank of quantile q among n samples: ceil(p * n / 1e9) with
    /// p = round(q * 1e9). It is 0 if p == 0 (or q is NaN) or n == 0, and n if p >= 1e9.
    [[nodiscard]] static constexpr std::uint64_t nearest_rank(double q, std::uint64_t n) noexcept;

private:
    // Sets min and max to the first and last non-empty buckets' bounds when they lie outside
    // them. With no samples, sets both to 0.
    static void narrow_extremes(snapshot& s) noexcept;

    static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                  "metrics need lock-free 64-bit atomics");
    // No alignas: one writer and rare readers. The owner decides what shares these lines.
    std::atomic<std::uint64_t> min_{std::numeric_limits<std::uint64_t>::max()};
    std::atomic<std::uint64_t> max_{0};
    std::atomic<std::uint64_t> sum_{0};
    std::array<std::atomic<std::uint64_t>, bucket_count> counts_{};
};

/// A plain value, copied out of a histogram by take(), or built with += and -.
struct histogram::snapshot {
    /// Samples per bucket, and their number (the sum of counts).
    std::array<std::uint64_t, bucket_count> counts{};
    std::uint64_t count = 0;
    /// The sum of the samples, modulo 2^64.
    std::uint64_t sum = 0;
    /// The smallest and largest samples; 0 if count == 0. Bounds in a difference (operator-).
    std::uint64_t min = 0;
    std::uint64_t max = 0;

    /// The nearest-rank percentile, 0 <= q <= 1 (see the header comment). Returns 0 if empty.
    [[nodiscard]] std::uint64_t percentile(double q) const noexcept;
    /// The bucket upper bound for 1-based `rank` (clamped to [1, count]), clamped to [min, max].
    /// Returns 0 if empty.
    [[nodiscard]] std::uint64_t value_at_rank(std::uint64_t rank) const noexcept;

    /// Adds the samples of `other`, e.g. another writer's histogram: counts, count, sum, min, max.
    snapshot& operator+=(snapshot const& other) noexcept;
    /// The samples recorded between `earlier` and this snapshot, e.g. for a rate or a percentile
    /// per interval. `earlier` must be an earlier snapshot of the same histogram. The result's
    /// min and max are bounds, not exact: the running min and max narrowed to the difference's
    /// first and last non-empty buckets. Percentiles keep the error bound above.
    [[nodiscard]] snapshot operator-(snapshot const& earlier) const noexcept;

    /// Calls f(le, cumulative) for every non-empty bucket, in ascending order. le is the bucket's
    /// upper bound, and cumulative counts the samples <= le (exact). The last call has
    /// cumulative == count.
    template <std::invocable<std::uint64_t, std::uint64_t> F>
    void for_each_cumulative(F&& f) const;
    /// Calls f(b, cumulative) for each bound b, with `bounds` ascending. cumulative counts the
    /// samples in buckets whose upper bound is <= b: every sample <= b', where b' is the largest
    /// bucket upper bound <= b. This is exact if b < 64 or b is a bucket upper bound, such as
    /// bucket_upper_bound(bucket_index(x)). Otherwise b - b' < b/32, and a sample in (b', b] is
    /// counted at the next bound, or only in +Inf.
    template <std::invocable<std::uint64_t, std::uint64_t> F>
    void for_each_cumulative(std::span<std::uint64_t const> bounds, F&& f) const;

    friend bool operator==(snapshot const&, snapshot const&) = default;
};

// ---- histogram -------------------------------------------------------------------------------

constexpr std::size_t histogram::bucket_index(std::uint64_t value) noexcept {
    // The low bits that value's bucket ignores: none below 2^(sub_bits + 1). Above that, a power of
    // two 2^e has 2^sub_bits buckets, so shift = e - sub_bits, and value >> shift lies in
    // [2^sub_bits, 2^(sub_bits + 1)). That gives 2^sub_bits indices per shift, after the 64
    // exact ones.
    constexpr std::uint64_t exact = (std::uint64_t{2} << sub_bits) - 1;
    auto const shift = static_cast<unsigned>(std::bit_width(value | exact)) - (sub_bits + 1);
    return (std::size_t{shift} << sub_bits) + static_cast<std::size_t>(value >> shift);
}

constexpr std::uint64_t histogram::bucket_lower_bound(std::size_t index) noexcept {
    assert(index < bucket_count && "bucket_lower_bound: index must be below bucket_count");
    if (index < (std::size_t{2} << sub_bits)) {
        return index;
    }
    // The inverse of bucket_index(): index = shift * 2^sub_bits + (value >> shift).
    auto const shift = static_cast<unsigned>(index >> sub_bits) - 1;
    return std::uint64_t{index - (std::size_t{shift} << sub_bits)} << shift;
}

constexpr std::uint64_t histogram::bucket_upper_bound(std::size_t index) noexcept {
    if (index < (std::size_t{2} << sub_bits)) {
        return index;
    }
    auto const shift = static_cast<unsigned>(index >> sub_bits) - 1;
    // No overflow: the last bucket is [63 * 2^58, 2^64 - 1].
    return bucket_lower_bound(index) + ((std::uint64_t{1} << shift) - 1);
}

constexpr std::uint64_t histogram::nearest_rank(double q, std::uint64_t n) noexcept {
    constexpr std::uint64_t scale = 1'000'000'000;
    if (n == 0 || !(q > 0.0)) {
        return 0;
    }
    if (q >= 1.0) {
        return n;
    }
    // p = round(q * 1e9). This is exact for any q that has at most 9 decimals: the product errs
    // by about 1e-7, far below the 0.5 that rounding absorbs.
    auto const p = static_cast<std::uint64_t>(q * static_cast<double>(scale) + 0.5);
    if (p == 0) {
        return 0;
    }
    if (p >= scale) {
        return n;
    }
    // ceil(p * n / 1e9) without overflow: with n = a * 1e9 + b, p * a < 2^64 and p * b < 1e18.
    std::uint64_t const a = n / scale;
    std::uint64_t const b = n % scale;
    return p * a + (p * b + scale - 1) / scale;
}

inline void histogram::record(std::uint64_t value) noexcept {
    // The loads are relaxed because only the writer stores min_, max_, sum_ and the counts, so
    // each load reads the writer's own last store. The stores to min_, max_ and sum_ are relaxed
    // because the count's release store below publishes them.
    if (value < min_.load(std::memory_order_relaxed)) {
        min_.store(value, std::memory_order_relaxed);
    }
    if (value > max_.load(std::memory_order_relaxed)) {
        max_.store(value, std::memory_order_relaxed);
    }
    sum_.store(sum_.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
    auto& bucket = counts_[bucket_index(value)];
    // release: pairs with the acquire load of this count in take(). A snapshot that counts this
    // sample then also sees the stores above, and those of every earlier sample.
    bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

inline histogram::snapshot histogram::take() const noexcept {
    snapshot s;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        // acquire: pairs with the release store in record() that wrote this count.
        s.counts[i] = counts_[i].load(std::memory_order_acquire);
        s.count += s.counts[i];
    }
    if (s.count == 0) {
        return s;
    }
    // relaxed: the acquire loads above already made every counted sample's stores visible. Later
    // samples may show up here too, and narrow_extremes() bounds min and max by the counts.
    s.sum = sum_.load(std::memory_order_relaxed);
    s.min = min_.load(std::memory_order_relaxed);
    s.max = max_.load(std::memory_order_relaxed);
    narrow_extremes(s);
    return s;
}

inline void histogram::narrow_extremes(snapshot& s) noexcept {
    if (s.count == 0) {
        s.min = 0;
        s.max = 0;
        return;
    }
    std::size_t first = 0;
    while (s.counts[first] == 0) {
        ++first;
    }
    std::size_t last = bucket_count - 1;
    while (s.counts[last] == 0) {
        --last;
    }
    s.min = std::max(s.min, bucket_lower_bound(first));
    s.max = std::min(s.max, bucket_upper_bound(last));
}

// ---- snapshot --------------------------------------------------------------------------------

inline std::uint64_t histogram::snapshot::percentile(double q) const noexcept {
    if (count == 0) {
        return 0;
    }
    std::uint64_t const rank = nearest_rank(q, count);
    return rank == 0 ? min : value_at_rank(rank);
}

inline std::uint64_t histogram::snapshot::value_at_rank(std::uint64_t rank) const noexcept {
    if (count == 0) {
        return 0;
    }
    rank = std::clamp<std::uint64_t>(rank, 1, count);
    std::uint64_t seen = 0;
    std::size_t i = 0;
    for (; i + 1 < bucket_count; ++i) {
        seen += counts[i];
        if (seen >= rank) {
            break;
        }
    }
    // The sample at `rank` lies in bucket i and in [min, max], so the result stays in bucket i.
    return std::min(std::max(bucket_upper_bound(i), min), max);
}

inline histogram::snapshot& histogram::snapshot::operator+=(snapshot const& other) noexcept {
    if (other.count == 0) {
        return *this;
    }
    min = count == 0 ? other.min : std::min(min, other.min);
    max = count == 0 ? other.max : std::max(max, other.max);
    for (std::size_t i = 0; i < bucket_count; ++i) {
        counts[i] += other.counts[i];
    }
    count += other.count;
    sum += other.sum;
    return *this;
}

inline histogram::snapshot histogram::snapshot::operator-(snapshot const& earlier) const noexcept {
    snapshot d;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        assert(earlier.counts[i] <= counts[i] &&
               "snapshot - earlier: earlier must be an earlier snapshot of the same histogram");
        d.counts[i] = counts[i] - earlier.counts[i];
        d.count += d.counts[i];
    }
    d.sum = sum - earlier.sum; // modulo 2^64, like the sums themselves
    // The running extremes bound every sample of the interval. Narrowing them to the
    // difference's buckets keeps percentiles within the bucket that holds the rank.
    d.min = min;
    d.max = max;
    narrow_extremes(d);
    return d;
}

template <std::invocable<std::uint64_t, std::uint64_t> F>
void histogram::snapshot::for_each_cumulative(F&& f) const {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        if (counts[i] != 0) {
            cumulative += counts[i];
            f(bucket_upper_bound(i), cumulative);
        }
    }
}

template <std::invocable<std::uint64_t, std::uint64_t> F>
void histogram::snapshot::for_each_cumulative(std::span<std::uint64_t const> bounds, F&& f) const {
    std::size_t i = 0;
    std::uint64_t cumulative = 0;
    for (std::size_t k = 0; k < bounds.size(); ++k) {
        assert((k == 0 || bounds[k - 1] < bounds[k]) &&
               "for_each_cumulative: bounds must be strictly ascending");
        while (i < bucket_count && bucket_upper_bound(i) <= bounds[k]) {
            cumulative += counts[i];
            ++i;
        }
        f(bounds[k], cumulative);
    }
}

} // namespace signet::metrics
