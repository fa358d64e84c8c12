#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <signet/core/realtime_clock.hpp>

namespace signet {
namespace detail {
namespace {

struct calibration {
    bool usable = false;
    std::uint64_t rate = 0; ///< nominal ns per tick, 32.32 fixed point
    std::uint64_t span = 0; ///< ticks per anchor (1 ms)
    std::uint64_t hz = 0;
};

/// relaxed: a preference read at re-anchors; nothing is published through it.
std::atomic<bool> system_clock_forced{false};

__extension__ using uint128 = unsigned __int128; // exact 32.32 fixed-point division

constexpr std::uint64_t anchor_ns = 1'000'000;
/// 0.1% of the nominal rate (design step 4).
constexpr std::uint64_t rate_tolerance_divisor = 1000;
/// Design step 4: the base span over which a thread's rate is measured.
constexpr std::uint64_t min_base_ns = 100'000'000;
constexpr std::uint64_t max_base_ns = 10'000'000'000;
/// Design step 4: a re-anchor that misses the running anchor's prediction by more than this
/// (plus 100 ppm of the time since that anchor) is a step of CLOCK_REALTIME or of the TSC.
constexpr std::uint64_t step_ns = 1'000;

#if defined(__x86_64__)
struct pair {
    std::uint64_t tsc = 0;
    std::uint64_t ns = 0;
    std::uint64_t bracket = ~std::uint64_t{0}; ///< ticks between the two rdtsc around the read
};

/// One (tsc, realtime) pair, the TSC taken halfway between the reads around the clock's.
pair read_pair() noexcept {
    std::uint64_t const before = __rdtsc();
    std::uint64_t const ns = system_ns();
    std::uint64_t const after = __rdtsc();
    return {before + (after - before) / 2, ns, after - before};
}

pair tightest_pair(int tries) noexcept {
    pair best;
    for (int i = 0; i < tries; ++i) {
        pair const p = read_pair();
        if (p.bracket < best.bracket) {
            best = p;
        }
    }
    return best;
}

bool invariant_tsc() noexcept {
    unsigned eax = 0;
    unsigned ebx = 0;
    unsigned ecx = 0;
    unsigned edx = 0;
    if (__get_cpuid(0x80000000U, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007U) {
        return false;
    }
    __get_cpuid(0x80000007U, &eax, &ebx, &ecx, &edx);
    return (edx & (1U << 8)) != 0;
}

std::uint64_t rate_between(pair const& from, pair const& to) noexcept {
    if (to.tsc <= from.tsc || to.ns <= from.ns) {
        return 0;
    }
    auto const ns = static_cast<uint128>(to.ns - from.ns) << 32;
    return static_cast<std::uint64_t>(ns / (to.tsc - from.tsc));
}
#endif

calibration calibrate() noexcept {
    calibration c;
#if defined(__x86_64__)
    if (!invariant_tsc()) {
        return c;
    }
    pair const first = tightest_pair(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pair const second = tightest_pair(5);
    std::uint64_t const rate = rate_between(first, second);
    if (rate == 0) {
        return c;
    }
    std::uint64_t const hz =
        static_cast<std::uint64_t>((static_cast<uint128>(1'000'000'000) << 32) / rate);
    if (hz < 100'000'000 || hz > 10'000'000'000) {
        return c;
    }
    c.usable = true;
    c.rate = rate;
    c.hz = hz;
    c.span = hz / (1'000'000'000 / anchor_ns);
#endif
    return c;
}

/// Design step 2: calibrated on first use, once per process (a function-local static: the
/// initialization is thread-safe, and after it every thread only reads).
calibration const& clock_calibration() noexcept {
    static calibration const c = calibrate();
    return c;
}

#if defined(__x86_64__)
/// The time the anchor predicts at `tsc`.
std::uint64_t predict(clock_anchor const& a, std::uint64_t tsc) noexcept {
    return a.ns + static_cast<std::uint64_t>((static_cast<uint128>(tsc - a.tsc) * a.rate) >> 32);
}
#endif

} // namespace

std::uint64_t system_ns() noexcept {
    auto const since_epoch = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count());
}

std::uint64_t reanchor(clock_anchor& a) noexcept {
#if defined(__x86_64__)
    calibration const& c = clock_calibration();
    if (!c.usable || system_clock_forced.load(std::memory_order_relaxed)) {
        a.span = 0;
        return system_ns();
    }
    pair const now = tightest_pair(2);
    bool continuous = false; // the running anchor predicts `now` (no step since it was taken)
    if (a.span != 0 && now.tsc > a.tsc && now.ns > a.ns) {
        std::uint64_t const predicted = predict(a, now.tsc);
        std::uint64_t const miss = predicted > now.ns ? predicted - now.ns : now.ns - predicted;
        continuous = miss <= step_ns + (now.ns - a.ns) / 10'000;
    }
    std::uint64_t const tolerance = c.rate / rate_tolerance_divisor;
    if (!continuous) {
        // First anchor on this thread, a re-anchor after the system clock was forced, or a
        // step of CLOCK_REALTIME or of the TSC: a new base (the rate, if refined, stays).
        a.base_tsc = now.tsc;
        a.base_ns = now.ns;
        if (a.rate == 0) {
            a.rate = c.rate;
        }
    } else if (now.ns - a.base_ns >= min_base_ns) {
        pair const base{a.base_tsc, a.base_ns, 0};
        std::uint64_t const refined = rate_between(base, now);
        if (refined != 0 && refined + tolerance >= c.rate && refined <= c.rate + tolerance) {
            a.rate = refined;
        }
        if (now.ns - a.base_ns >= max_base_ns) {
            a.base_tsc = now.tsc; // follow changes of the slew: measure over the last 10 s
            a.base_ns = now.ns;
        }
    }
    a.tsc = now.tsc;
    a.ns = now.ns;
    a.span = c.span;
    return now.ns;
#else
    (void)a;
    return system_ns();
#endif
}

} // namespace detail

realtime_clock::source realtime_clock::active() noexcept {
    bool const forced = detail::system_clock_forced.load(std::memory_order_relaxed); // see above
    return detail::clock_calibration().usable && !forced ? source::tsc : source::system;
}

std::uint64_t realtime_clock::tsc_hz() noexcept {
    return detail::clock_calibration().hz;
}

void realtime_clock::use_system_clock(bool system) noexcept {
    detail::system_clock_forced.store(system, std::memory_order_relaxed); // see its declaration
}

} // namespace signet
