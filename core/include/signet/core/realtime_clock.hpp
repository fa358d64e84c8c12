#pragma once

/// realtime_clock: nanoseconds since the Unix epoch on CLOCK_REALTIME's scale (the scale of the
/// kernel's receive timestamps, SO_TIMESTAMPING), read from the CPU's time-stamp counter where
/// that is safe. It is the clock of hot-path timestamps: the receive side's stamp per batch and
/// the per-stage latency of a parser.
///
/// Threading: now_ns() from any thread at any time. Each thread keeps its own anchor
/// (thread_local): threads share nothing but the process-wide calibration, computed once on first
/// use (a function-local static: thread-safe) and only read afterwards.
///
/// When to use: timestamps compared with each other or with kernel stamps, a few per packet.
/// Not for deadlines (use std::chrono::steady_clock): the value follows CLOCK_REALTIME, steps
/// and all.
///
/// Why: on the 2-vCPU EPYC VM we measure on, clock_gettime(CLOCK_REALTIME) through the vDSO costs
/// 26 ns and rdtsc 11 ns (signet_micro_bench --benchmark_filter='clock|tsc|realtime'); the
/// vDSO scales the same counter, behind a seqlock and a check of the clock source.
///
/// Design:
///   1. The TSC is used when the CPU is x86-64 and CPUID reports an invariant TSC (leaf
///      0x80000007, EDX bit 8: a constant rate in every P- and C-state) and the calibration
///      (step 2) finds a rate between 0.1 and 10 GHz. Otherwise, or after
///      use_system_clock(true), every call reads std::chrono::system_clock (CLOCK_REALTIME).
///   2. Calibration, once per process on first use (~2 ms, mostly a sleep: net::runtime takes it
///      in its constructor, off the packet path): two (tsc, realtime) pairs taken 2 ms apart,
///      each bracketed by two rdtsc reads and the tightest of five kept. The nominal rate is ns
///      per tick in 32.32 fixed point.
///   3. Per thread, an anchor (tsc_a, ns_a, rate): now = ns_a + ((tsc - tsc_a) * rate >> 32).
///      The anchor is re-taken (one system clock read) once tsc - tsc_a reaches 1 ms of ticks,
///      so CLOCK_REALTIME's steps and slews are followed within 1 ms, and an error in the rate
///      accumulates over at most 1 ms.
///   4. At a re-anchor the running anchor predicts the new reading. A miss of more than 1 us
///      (plus 100 ppm of the time since the anchor) is a step of CLOCK_REALTIME, or a TSC that
///      jumped (a core whose TSC is offset): the thread's base pair restarts there. Otherwise,
///      once the base is 100 ms old, the rate becomes (ns - ns_b) / (tsc - tsc_b) since the base
///      pair b, if within 0.1% of the nominal rate. Each pair is off by about its bracket (tens
///      of ns), so over 100 ms the rate is within 1 ppm (1 ns per 1 ms anchor). The base moves
///      forward every 10 s, so the rate follows changes in CLOCK_REALTIME's slew (NTP, chrony).
///   Limits: not monotonic. At a re-anchor a thread's reading may step back by the error its
///   rate accumulated over the last anchor (nanoseconds once refined; up to tens of ns in a
///   thread's first 100 ms, on the nominal rate), or by a CLOCK_REALTIME step; clamp differences
///   at zero, as with any CLOCK_REALTIME readings. Two threads' readings agree to within their
///   anchors' errors; both follow CLOCK_REALTIME.
///
/// Costs: rdtsc, a thread_local anchor (one cache line, the thread's own), a multiply and a
/// branch; once a millisecond per thread, one clock_gettime more. No lock, no atomic
/// read-modify-write, no system call (the vDSO reads the clock in user space).

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace signet {

class realtime_clock {
public:
    enum class source : std::uint8_t {
        tsc,    ///< rdtsc, calibrated against CLOCK_REALTIME (design steps 2-4)
        system, ///< std::chrono::system_clock (clock_gettime(CLOCK_REALTIME))
    };

    /// Any thread. Nanoseconds since the Unix epoch, CLOCK_REALTIME's scale.
    [[nodiscard]] static std::uint64_t now_ns() noexcept;

    /// The source now_ns() reads on this machine (after use_system_clock: system).
    [[nodiscard]] static source active() noexcept;
    /// TSC ticks per second found by the calibration; 0 when the TSC is not usable.
    [[nodiscard]] static std::uint64_t tsc_hz() noexcept;
    /// Benchmarks and tests: read the system clock (true) or the TSC again (false). Each thread
    /// switches at its next re-anchor, within 1 ms of its own calls.
    static void use_system_clock(bool system) noexcept;
};

namespace detail {

/// One thread's anchor (design step 3) and rate base (step 4). Zero-initialized: the first
/// now_ns() on a thread re-anchors.
struct clock_anchor {
    std::uint64_t tsc = 0;  ///< the anchor's TSC reading
    std::uint64_t ns = 0;   ///< the anchor's CLOCK_REALTIME reading
    std::uint64_t rate = 0; ///< ns per tick, 32.32 fixed point
    std::uint64_t span = 0; ///< ticks until the next re-anchor; 0: system clock on every call
    std::uint64_t base_tsc = 0;
    std::uint64_t base_ns = 0;
};

inline constinit thread_local clock_anchor this_thread_clock{};

/// Slow path: re-anchors `a` (or reads the system clock) and returns the time.
std::uint64_t reanchor(clock_anchor& a) noexcept;
std::uint64_t system_ns() noexcept;

} // namespace detail

inline std::uint64_t realtime_clock::now_ns() noexcept {
#if defined(__x86_64__)
    detail::clock_anchor& a = detail::this_thread_clock;
    // elapsed < span <= 1e7 ticks (1 ms at 10 GHz) and rate < 2^36 (0.1 GHz): the product fits.
    std::uint64_t const elapsed = __rdtsc() - a.tsc;
    if (elapsed < a.span) [[likely]] {
        return a.ns + ((elapsed * a.rate) >> 32);
    }
    return detail::reanchor(a);
#else
    return detail::system_ns();
#endif
}

} // namespace signet
