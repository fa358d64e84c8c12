#pragma once

// latency_histogram: log-linear buckets (16 per power of two, ~6% resolution) over nanoseconds.
// One writer (the feed's parser contract) records; any thread may take a snapshot. Recording is
// a few instructions and two relaxed stores; nothing allocates.

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace signet::apps {

class latency_histogram {
public:
    static constexpr unsigned sub_bits = 4;
    static constexpr unsigned max_exponent = 47; // ~1.4e14 ns: anything larger is clamped
    static constexpr std::size_t bucket_count = (max_exponent - sub_bits + 2) << sub_bits;

    struct snapshot {
        std::array<std::uint64_t, bucket_count> counts{};
        std::uint64_t max = 0;

        [[nodiscard]] std::uint64_t total() const noexcept;
        /// The value below which fraction q (0..1) of the samples lie (a bucket's upper bound);
        /// 0 when empty.
        [[nodiscard]] std::uint64_t percentile(double q) const noexcept;
        snapshot& operator+=(snapshot const& other) noexcept;
        snapshot operator-(snapshot const& earlier) const noexcept;
    };

    /// Writer only.
    void record(std::uint64_t ns) noexcept {
        auto& bucket = counts_[index(ns)];
        // relaxed: single writer; readers take a snapshot and order nothing on it.
        bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        if (ns > max_.load(std::memory_order_relaxed)) {
            max_.store(ns, std::memory_order_relaxed);
        }
    }

    /// Any thread.
    [[nodiscard]] snapshot take() const noexcept {
        snapshot s;
        for (std::size_t i = 0; i < bucket_count; ++i) {
            s.counts[i] = counts_[i].load(std::memory_order_relaxed); // relaxed: a snapshot
        }
        s.max = max_.load(std::memory_order_relaxed);
        return s;
    }

    static std::size_t index(std::uint64_t ns) noexcept {
        if (ns < (1U << sub_bits)) {
            return static_cast<std::size_t>(ns);
        }
        unsigned exponent = 63U - static_cast<unsigned>(std::countl_zero(ns));
        if (exponent > max_exponent) {
            return bucket_count - 1;
        }
        auto const sub =
            static_cast<std::size_t>((ns >> (exponent - sub_bits)) & ((1U << sub_bits) - 1));
        return (static_cast<std::size_t>(exponent - sub_bits + 1) << sub_bits) + sub;
    }
    /// The largest value that falls in bucket `i`.
    static std::uint64_t upper_bound(std::size_t i) noexcept {
        if (i < (1U << sub_bits)) {
            return i;
        }
        unsigned const exponent = static_cast<unsigned>(i >> sub_bits) + sub_bits - 1;
        std::uint64_t const sub = i & ((1U << sub_bits) - 1);
        std::uint64_t const low = ((std::uint64_t{1} << sub_bits) + sub) << (exponent - sub_bits);
        return low + (std::uint64_t{1} << (exponent - sub_bits)) - 1;
    }

private:
    std::array<std::atomic<std::uint64_t>, bucket_count> counts_{};
    std::atomic<std::uint64_t> max_{0};
};

inline std::uint64_t latency_histogram::snapshot::total() const noexcept {
    std::uint64_t n = 0;
    for (auto c : counts) {
        n += c;
    }
    return n;
}

inline std::uint64_t latency_histogram::snapshot::percentile(double q) const noexcept {
    std::uint64_t const n = total();
    if (n == 0) {
        return 0;
    }
    auto rank = static_cast<std::uint64_t>(q * static_cast<double>(n));
    if (rank >= n) {
        rank = n - 1;
    }
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        seen += counts[i];
        if (seen > rank) {
            return std::min(upper_bound(i), max == 0 ? upper_bound(i) : max);
        }
    }
    return max;
}

inline latency_histogram::snapshot&
latency_histogram::snapshot::operator+=(snapshot const& other) noexcept {
    for (std::size_t i = 0; i < bucket_count; ++i) {
        counts[i] += other.counts[i];
    }
    max = std::max(max, other.max);
    return *this;
}

inline latency_histogram::snapshot
latency_histogram::snapshot::operator-(snapshot const& earlier) const noexcept {
    snapshot d;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        d.counts[i] = counts[i] - earlier.counts[i];
    }
    d.max = max; // the running maximum (not per interval)
    return d;
}

} // namespace signet::apps
