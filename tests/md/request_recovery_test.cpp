// The gap-request client's state machine (MoldUDP64 re-requests, Cboe GRP): every transition,
// with an injected clock.
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/request_recovery.hpp>

namespace {

using namespace signet::md;

using request = std::pair<std::uint64_t, std::uint16_t>;

struct wire {
    std::vector<request> sent;
    bool up = true;
    bool operator()(std::uint64_t first, std::uint16_t count) {
        if (up) {
            sent.emplace_back(first, count);
        }
        return up;
    }
};

constexpr std::uint64_t ms = 1'000'000;

request_recovery make(std::uint16_t max_messages = 100, std::size_t in_flight = 2) {
    return request_recovery({.timeout_ns = 10 * ms,
                             .max_messages = max_messages,
                             .max_in_flight = in_flight,
                             .max_tries = 3});
}

TEST(RequestRecovery, AGapIsRequestedInChunksAndRecovered) {
    auto r = make();
    std::vector<recovery_state> states;
    r.on_state_change([&](recovery_state s) { states.push_back(s); });
    wire w;
    EXPECT_TRUE(r.want(100, 350, 1 * ms));
    EXPECT_EQ(r.state(), recovery_state::recovering);
    r.poll(1 * ms, w);
    EXPECT_EQ(w.sent, (std::vector<request>{{100, 100}, {200, 100}})); // two in flight
    EXPECT_EQ(r.progress(200, 2 * ms), 0U);                            // first chunk answered
    r.poll(2 * ms, w);
    EXPECT_EQ(w.sent.back(), (request{300, 50})); // the third chunk takes its slot
    EXPECT_EQ(r.progress(350, 4 * ms), 3 * ms);   // latency: want -> filled
    EXPECT_EQ(r.state(), recovery_state::synchronized);
    EXPECT_EQ(r.stats().recovered_messages, 250U);
    EXPECT_EQ(r.stats().rerequests_sent, 3U);
    EXPECT_EQ(r.stats().gaps_recovered, 1U);
    EXPECT_EQ(r.stats().lost_messages, 0U);
    EXPECT_EQ(states, (std::vector{recovery_state::recovering, recovery_state::synchronized}));
    r.poll(5 * ms, w);
    EXPECT_EQ(w.sent.size(), 3U); // nothing open: nothing sent
}

TEST(RequestRecovery, TimeoutsResendThenTheGapIsLost) {
    auto r = make();
    wire w;
    ASSERT_TRUE(r.want(10, 20, 0));
    r.poll(0, w);
    EXPECT_EQ(r.next_deadline(), 10 * ms);
    r.poll(9 * ms, w);
    EXPECT_EQ(w.sent.size(), 1U); // not due yet
    r.poll(10 * ms, w);
    r.poll(20 * ms, w);
    EXPECT_EQ(w.sent.size(), 3U); // the first try and two retries
    EXPECT_EQ(r.stats().rerequest_timeouts, 2U);
    r.progress(15, 25 * ms); // half arrived
    r.poll(30 * ms, w);      // the third retry timed out: max_tries reached
    EXPECT_EQ(r.state(), recovery_state::lost);
    EXPECT_FALSE(r.want(15, 20, 31 * ms)); // given up: the owner releases what it holds
    EXPECT_EQ(r.stats().gaps_lost, 1U);
    EXPECT_EQ(r.stats().recovered_messages, 5U);
    EXPECT_EQ(r.stats().lost_messages, 5U);
}

TEST(RequestRecovery, LostReturnsToSynchronizedOnProgress) {
    auto r = make();
    wire w;
    ASSERT_TRUE(r.want(1, 5, 0));
    r.abandon(1 * ms);
    EXPECT_EQ(r.state(), recovery_state::lost);
    EXPECT_EQ(r.stats().lost_messages, 4U);
    r.progress(3, 2 * ms);
    EXPECT_EQ(r.state(), recovery_state::lost); // not past the lost gap yet
    r.progress(6, 2 * ms);
    EXPECT_EQ(r.state(), recovery_state::synchronized);
    EXPECT_TRUE(r.want(10, 12, 3 * ms)); // the next gap is recovered again
}

TEST(RequestRecovery, TheSameGapSeenWiderExtendsIt) {
    auto r = make(1000);
    wire w;
    ASSERT_TRUE(r.want(50, 60, 0));
    ASSERT_TRUE(r.want(50, 80, 1 * ms));
    r.poll(1 * ms, w);
    EXPECT_EQ(w.sent, (std::vector<request>{{50, 30}}));
    EXPECT_EQ(r.stats().gaps, 1U);
}

TEST(RequestRecovery, ARefusingSocketIsRetriedWithoutCountingTries) {
    auto r = make();
    wire w;
    w.up = false;
    ASSERT_TRUE(r.want(1, 2, 0));
    r.poll(0, w);
    r.poll(100 * ms, w);
    EXPECT_EQ(r.stats().rerequests_sent, 0U);
    EXPECT_EQ(r.state(), recovery_state::recovering);
    w.up = true;
    r.poll(101 * ms, w);
    EXPECT_EQ(w.sent, (std::vector<request>{{1, 1}}));
}

TEST(RequestRecovery, StreamOvertakingTheGapCompletesIt) {
    auto r = make();
    wire w;
    ASSERT_TRUE(r.want(7, 9, 0));
    r.poll(0, w);
    EXPECT_GT(r.progress(100, 1 * ms), 0U);
    EXPECT_EQ(r.state(), recovery_state::synchronized);
}

TEST(RequestRecovery, BadOptionsAreRejected) {
    EXPECT_THROW(request_recovery({.max_messages = 0}), std::invalid_argument);
    EXPECT_THROW(request_recovery({.max_in_flight = 17}), std::invalid_argument);
    EXPECT_THROW(request_recovery({.max_tries = 0}), std::invalid_argument);
    EXPECT_FALSE(make().want(5, 5, 0)); // an empty gap is nothing to recover
}

} // namespace
