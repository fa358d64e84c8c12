// realtime_clock: readings agree with CLOCK_REALTIME (the system clock) across re-anchors, on
// every thread, from the TSC and from the system clock alike.

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include <time.h>

#include <gtest/gtest.h>

#include <signet/core/realtime_clock.hpp>

namespace {

using signet::realtime_clock;

/// A reading bracketed by two system clock readings. A TSC reading may fall outside the bracket
/// by its anchor's error (a few ns here; a preemption only widens the bracket). 50 us covers that
/// with a wide margin and still catches a wrong scale, off by milliseconds within 30 ms.
constexpr std::int64_t slack_ns = 50'000;

struct bracketed {
    std::int64_t before;
    std::int64_t reading;
    std::int64_t after;
};

bracketed read_bracketed() {
    auto const system = [] {
        timespec ts{};
        clock_gettime(CLOCK_REALTIME, &ts);
        return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
    };
    std::int64_t const before = system();
    auto const reading = static_cast<std::int64_t>(realtime_clock::now_ns());
    return {before, reading, system()};
}

/// Reads for `duration_ns` (several anchors), checking each reading against the system clock.
void expect_agreement_for(std::int64_t duration_ns) {
    bracketed const first = read_bracketed();
    std::int64_t worst = 0;
    std::size_t reads = 0;
    for (bracketed b = first; b.after - first.before < duration_ns; b = read_bracketed()) {
        worst = std::max({worst, b.before - b.reading, b.reading - b.after});
        ++reads;
    }
    EXPECT_LT(worst, slack_ns) << "worst distance outside the bracket, over " << reads << " reads";
    EXPECT_GT(reads, 100U);
}

TEST(RealtimeClock, AgreesWithTheSystemClockAcrossAnchors) {
    expect_agreement_for(30'000'000); // 30 anchors of 1 ms
}

TEST(RealtimeClock, UsesTheTscWhereItIsInvariant) {
#if defined(__x86_64__)
    if (realtime_clock::tsc_hz() == 0) {
        GTEST_SKIP() << "no invariant TSC here: the system clock is read";
    }
    EXPECT_GE(realtime_clock::tsc_hz(), 100'000'000U);
    EXPECT_LE(realtime_clock::tsc_hz(), 10'000'000'000U);
    EXPECT_EQ(realtime_clock::active(), realtime_clock::source::tsc);
#else
    EXPECT_EQ(realtime_clock::active(), realtime_clock::source::system);
#endif
}

TEST(RealtimeClock, SystemClockCanBeForcedAndReleased) {
    realtime_clock::use_system_clock(true);
    EXPECT_EQ(realtime_clock::active(), realtime_clock::source::system);
    expect_agreement_for(5'000'000);
    realtime_clock::use_system_clock(false);
    if (realtime_clock::tsc_hz() != 0) {
        EXPECT_EQ(realtime_clock::active(), realtime_clock::source::tsc);
    }
    expect_agreement_for(5'000'000);
}

TEST(RealtimeClock, EveryThreadAgrees) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([] { expect_agreement_for(10'000'000); });
    }
    for (auto& t : threads) {
        t.join();
    }
}

TEST(RealtimeClock, IntervalsMatchTheSystemClock) {
    // A 20 ms interval measured by both: a rate error of 0.1% would be 20 us.
    bracketed const start = read_bracketed();
    bracketed end = read_bracketed();
    while (end.after - start.before < 20'000'000) {
        end = read_bracketed();
    }
    std::int64_t const by_clock = end.reading - start.reading;
    EXPECT_GE(by_clock, end.before - start.after - slack_ns);
    EXPECT_LE(by_clock, end.after - start.before + slack_ns);
}

} // namespace
