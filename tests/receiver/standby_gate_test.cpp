// The standby gate (receiver/src/nats_standby.hpp) without NATS: a fake sender and an injected
// clock. What a member publishes as follower, at a takeover (right after the group's last
// position, ahead of its own history, or a resynchronization when its history does not
// continue it), at its deadline, after a failed send and after a loss.
#include <atomic>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "nats_standby.hpp"
#include "support/stress.hpp"

namespace {

using signet::receiver::group_position;
using signet::receiver::nats_position;
using signet::receiver::standby_gate;
namespace md = signet::md;

std::chrono::steady_clock::time_point fake_now{};
std::chrono::steady_clock::time_point now_of_test() {
    return fake_now;
}

struct sent_message {
    md::event_kind kind;
    std::uint64_t sequence;
    std::string symbol;
    nats_position position;
};

class fake_sender final : public signet::receiver::standby_sender {
public:
    bool send(std::size_t feed, md::event const& e, std::string_view symbol,
              nats_position const& p) noexcept override {
        (void)feed;
        if (refuse) {
            return false;
        }
        sent.push_back({e.kind, e.sequence, std::string(symbol), p});
        return true;
    }
    std::vector<sent_message> sent;
    bool refuse = false;
};

/// A feed whose sequence s (from 1) makes two events: a definition of instrument s % 4 at
/// index 0 and its bbo at index 1 (previous: s - 1).
class StandbyGate : public ::testing::Test {
protected:
    StandbyGate()
        : gate(1, 16, 8, sender, &now_of_test) {
        fake_now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
    }
    void record_sequence(std::uint64_t s, std::uint16_t flags = 0) {
        for (std::uint32_t index = 0; index < 2; ++index) {
            md::event e{};
            e.kind = index == 0 ? md::event_kind::instrument_definition : md::event_kind::bbo;
            e.instrument = static_cast<std::uint32_t>(s % 4);
            e.sequence = s;
            nats_position const p{.sequence = s,
                                  .index = index,
                                  .previous = s - 1,
                                  .flags = index == 0 ? flags : std::uint16_t{0}};
            gate.record(0, e, "SYM" + std::to_string(s % 4), p, fake_now);
        }
    }
    static group_position at(std::uint64_t s, std::uint32_t index) {
        return {.what = group_position::state::at,
                .position = {.sequence = s, .index = index, .previous = 0, .flags = 0}};
    }
    std::uint64_t take_over(group_position const& last) {
        return gate.take_over(0, last, fake_now, fake_now + std::chrono::milliseconds(500), true);
    }
    /// The positions sent, as (sequence, index).
    std::vector<std::pair<std::uint64_t, std::uint32_t>> positions() const {
        std::vector<std::pair<std::uint64_t, std::uint32_t>> out;
        for (sent_message const& m : sender.sent) {
            out.emplace_back(m.position.sequence, m.position.index);
        }
        return out;
    }
    using positions_t = std::vector<std::pair<std::uint64_t, std::uint32_t>>;

    fake_sender sender;
    standby_gate gate;
};

TEST_F(StandbyGate, FollowerPublishesNothing) {
    for (std::uint64_t s = 1; s <= 5; ++s) {
        record_sequence(s);
    }
    EXPECT_TRUE(sender.sent.empty());
    EXPECT_FALSE(gate.leading(0));
}

TEST_F(StandbyGate, TakeoverResumesRightAfterTheGroupsLastPosition) {
    for (std::uint64_t s = 1; s <= 5; ++s) {
        record_sequence(s);
    }
    EXPECT_EQ(take_over(at(3, 1)), 4u);
    EXPECT_EQ(positions(), (positions_t{{4, 0}, {4, 1}, {5, 0}, {5, 1}}));
    EXPECT_EQ(sender.sent[0].symbol, "SYM0"); // its subject's symbol, from the history
    record_sequence(6);                       // then live
    EXPECT_EQ(sender.sent.size(), 6u);
    signet::receiver::standby_feed_stats s;
    gate.fill(0, s);
    EXPECT_EQ(s.takeovers, 1u);
    EXPECT_EQ(s.resyncs, 0u);
}

TEST_F(StandbyGate, TakeoverWithinASequenceResumesAtItsNextIndex) {
    for (std::uint64_t s = 1; s <= 3; ++s) {
        record_sequence(s);
    }
    take_over(at(2, 0));
    EXPECT_EQ(positions(), (positions_t{{2, 1}, {3, 0}, {3, 1}}));
}

TEST_F(StandbyGate, AMemberBehindTheOldLeaderSkipsWhatItPublished) {
    record_sequence(1);
    EXPECT_EQ(take_over(at(3, 0)), 0u); // the old leader got further than this member
    record_sequence(2);
    record_sequence(3);
    record_sequence(4);
    EXPECT_EQ(positions(), (positions_t{{3, 1}, {4, 0}, {4, 1}}));
}

TEST_F(StandbyGate, AGroupThatNeverPublishedGetsTheWholeHistory) {
    record_sequence(1);
    record_sequence(2);
    take_over({});
    EXPECT_EQ(positions(), (positions_t{{1, 0}, {1, 1}, {2, 0}, {2, 1}}));
}

TEST_F(StandbyGate, AHistoryThatDoesNotReachBackResynchronizes) {
    for (std::uint64_t s = 1; s <= 20; ++s) { // 40 events, 16 kept
        record_sequence(s);
    }
    std::uint64_t const sent = take_over(at(3, 1));
    // Each instrument's definition and bbo, flagged, as of the newest event; then live.
    ASSERT_EQ(sent, 8u);
    for (sent_message const& m : sender.sent) {
        EXPECT_NE(m.position.flags & nats_position::resync, 0);
        EXPECT_EQ(m.position.sequence, 20u);
        EXPECT_EQ(m.position.index, 1u);
        EXPECT_EQ(m.sequence, 20u); // the event says so too: the state as of sequence 20
    }
    record_sequence(21);
    ASSERT_EQ(sender.sent.size(), 10u);
    EXPECT_EQ(sender.sent[8].position.flags, 0);
    EXPECT_EQ(sender.sent[8].position.previous, 20u); // the chain goes on from the resync
    signet::receiver::standby_feed_stats s;
    gate.fill(0, s);
    EXPECT_EQ(s.resyncs, 1u);
    EXPECT_EQ(s.resync_messages, 8u);
}

TEST_F(StandbyGate, AHistoryThatDivergesResynchronizes) {
    record_sequence(1);
    record_sequence(2);
    // This member made nothing of sequence 3 (say it started late): its 4 follows 2.
    md::event e{};
    e.kind = md::event_kind::bbo;
    e.instrument = 1;
    e.sequence = 4;
    gate.record(0, e, "SYM1", {.sequence = 4, .index = 0, .previous = 2, .flags = 0}, fake_now);
    take_over(at(3, 0)); // the group published 3
    ASSERT_FALSE(sender.sent.empty());
    for (sent_message const& m : sender.sent) {
        EXPECT_NE(m.position.flags & nats_position::resync, 0);
    }
}

TEST_F(StandbyGate, TheDeadlineStopsPublishingUntilARenew) {
    record_sequence(1);
    take_over({});
    ASSERT_EQ(sender.sent.size(), 2u);
    fake_now += std::chrono::milliseconds(600); // past the deadline (500 ms)
    record_sequence(2);
    EXPECT_EQ(sender.sent.size(), 2u);
    gate.renewed(0, fake_now + std::chrono::milliseconds(500));
    record_sequence(3); // the backlog goes out first, in order
    EXPECT_EQ(positions(), (positions_t{{1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0}, {3, 1}}));
}

TEST_F(StandbyGate, AFailedSendSuspendsUntilAResumeFromTheGroupsPosition) {
    record_sequence(1);
    take_over({});
    sender.refuse = true;
    record_sequence(2);
    EXPECT_TRUE(gate.suspended(0));
    sender.refuse = false;
    record_sequence(3);
    EXPECT_EQ(sender.sent.size(), 2u); // suspended: nothing
    EXPECT_EQ(gate.take_over(0, at(1, 1), fake_now, fake_now + std::chrono::seconds(1), false), 4u);
    EXPECT_FALSE(gate.suspended(0));
    EXPECT_EQ(positions(), (positions_t{{1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0}, {3, 1}}));
}

TEST_F(StandbyGate, ALossOnTheLeadersQueueResynchronizes) {
    record_sequence(1);
    take_over({});
    record_sequence(3, nats_position::after_loss); // its queue lost sequence 2
    ASSERT_GT(sender.sent.size(), 2u);
    EXPECT_NE(sender.sent[2].position.flags & nats_position::resync, 0);
}

TEST_F(StandbyGate, DemotedMemberPublishesNothing) {
    record_sequence(1);
    take_over({});
    gate.demote(0);
    record_sequence(2);
    EXPECT_EQ(sender.sent.size(), 2u);
    EXPECT_FALSE(gate.leading(0));
}

TEST(NatsPosition, BinaryHeaderRoundTrips) {
    md::event e{};
    e.kind = md::event_kind::trade;
    e.sequence = 77;
    std::array<char, nats_position::header + sizeof(md::event)> message{};
    nats_position const p{.sequence = 77, .index = 3, .previous = 75, .flags = 1};
    nats_position::write(e, p, message);
    auto const back = nats_position::read(message);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->sequence, 77u);
    EXPECT_EQ(back->index, 3u);
    EXPECT_EQ(back->previous, 75u);
    EXPECT_EQ(back->flags, 1);
    // A version 1 reader that honours the header size still reads the event.
    auto const event = signet::receiver::nats_layout::read(message);
    ASSERT_TRUE(event);
    EXPECT_EQ(event->sequence, 77u);
    // The old 8-byte header carries no position.
    std::array<char, signet::receiver::nats_layout::size> old{};
    signet::receiver::nats_layout::write(e, old);
    EXPECT_FALSE(nats_position::read(old));
}

TEST(NatsPosition, ChainRule) {
    nats_position const last{.sequence = 5, .index = 1, .previous = 4, .flags = 0};
    EXPECT_TRUE(standby_gate::continues(last, {.sequence = 5, .index = 2, .previous = 4}));
    EXPECT_TRUE(standby_gate::continues(last, {.sequence = 9, .index = 0, .previous = 5}));
    EXPECT_FALSE(standby_gate::continues(last, {.sequence = 9, .index = 0, .previous = 6}));
    EXPECT_FALSE(standby_gate::continues(last, {.sequence = 5, .index = 3, .previous = 4}));
    EXPECT_FALSE(standby_gate::continues(last, {.sequence = 5, .index = 1, .previous = 4}));
}

/// Records what the gate sends (called under the gate's mutex): the positions, and how many
/// came while the lease thread had the member demoted.
class chain_sender final : public signet::receiver::standby_sender {
public:
    bool send(std::size_t, md::event const&, std::string_view,
              nats_position const& p) noexcept override {
        // acquire: pairs with the lease thread's release stores around take_over()/demote().
        if (!allowed.load(std::memory_order_acquire)) {
            ++after_demote;
        }
        positions.push_back(p);
        return true;
    }
    std::atomic<bool> allowed{false};
    std::uint64_t after_demote = 0;       // under the gate's mutex
    std::vector<nats_position> positions; // under the gate's mutex
};

TEST(StandbyGateThreads, ThePublishingLeaseAndDisconnectThreadsKeepOneChain) {
    // As in a receiver: the publishing thread records the feed (sequence s: two events), the
    // lease thread takes over from the last position published, pumps and renews, demotes and
    // follows while the feed moves on, over and over, and a third thread suspends publishing now
    // and then (the disconnect callback). Whatever the interleaving, what was sent is one chain
    // (every message continues the one before; a resynchronization's flagged state, then on from
    // its position), nothing is sent after a demote returned, and a last takeover publishes through
    // the last event.
    signet::test::watchdog const guard(std::chrono::seconds(120), "standby gate threads");
    std::uint64_t const sequences = 20000 * signet::test::stress_scale();
    std::mt19937_64 random(signet::test::test_seed());
    chain_sender sender;
    standby_gate gate(1, 1024, 8, sender);
    std::atomic<bool> done{false};
    std::atomic<std::uint64_t> recorded{0}; // events recorded so far (relaxed: a count)
    signet::test::start_gate start;
    std::atomic<bool> leasing{false}; // the lease thread is in its loop
    std::thread publisher([&] {
        start.wait();
        // acquire: pairs with the lease thread's release store; not before it runs (under ASan
        // the whole feed was once recorded before the lease thread's first takeover).
        while (!leasing.load(std::memory_order_acquire)) {
            std::this_thread::yield();
        }
        for (std::uint64_t s = 1; s <= sequences; ++s) {
            for (std::uint32_t index = 0; index < 2; ++index) {
                md::event e{};
                e.kind = index == 0 ? md::event_kind::trade : md::event_kind::bbo;
                e.instrument = static_cast<std::uint32_t>(s % 4);
                e.sequence = s;
                gate.record(0, e, "SYM", {.sequence = s, .index = index, .previous = s - 1},
                            standby_gate::clock::now());
                recorded.fetch_add(1, std::memory_order_relaxed);
            }
        }
        done.store(true, std::memory_order_release); // pairs with the other threads' acquire
    });
    std::uint64_t takeovers = 0;
    std::uint32_t const pumps = static_cast<std::uint32_t>(random() % 64) + 1;
    auto const take_over = [&](std::chrono::milliseconds lease) {
        std::optional<nats_position> const last = gate.last_published(0);
        group_position const group =
            last ? group_position{.what = group_position::state::at, .position = *last}
                 : group_position{};
        sender.allowed.store(true, std::memory_order_release); // pairs with send()'s acquire
        auto const now = standby_gate::clock::now();
        (void)gate.take_over(0, group, now, now + lease, true);
    };
    std::thread lease([&] {
        start.wait();
        while (!done.load(std::memory_order_acquire)) {
            take_over(std::chrono::milliseconds(20));
            leasing.store(true, std::memory_order_release); // pairs with the publisher's acquire
            ++takeovers;
            for (std::uint32_t k = 0; k < pumps; ++k) {
                (void)gate.pump(0, 64);
                gate.renewed(0, standby_gate::clock::now() + std::chrono::milliseconds(20));
            }
            gate.demote(0);
            sender.allowed.store(false, std::memory_order_release); // pairs with send()
            // Follows while the feed moves on: whatever the gate sent meanwhile is counted.
            std::uint64_t const from = recorded.load(std::memory_order_relaxed);
            while (recorded.load(std::memory_order_relaxed) < from + 64 &&
                   !done.load(std::memory_order_acquire)) {
                std::this_thread::yield();
            }
        }
    });
    std::thread disconnect([&] {
        start.wait();
        for (std::uint64_t k = 0; !done.load(std::memory_order_acquire); ++k) {
            if (k % 4096 == 0) {
                gate.suspend();
            }
            std::this_thread::yield();
        }
    });
    start.open();
    publisher.join();
    lease.join();
    disconnect.join();
    take_over(std::chrono::hours(1)); // the rest, at once (within the catch-up budget)
    while (gate.pump(0, standby_gate::catch_up_budget) != 0) {
    }

    EXPECT_GT(takeovers, 0U);
    EXPECT_EQ(sender.after_demote, 0U) << "sent after a demote returned";
    ASSERT_FALSE(sender.positions.empty());
    std::optional<nats_position> last;
    std::size_t resync_messages = 0;
    for (std::size_t n = 0; n < sender.positions.size(); ++n) {
        nats_position const& p = sender.positions[n];
        if ((p.flags & nats_position::resync) != 0) {
            ++resync_messages;
            last = p;
            continue;
        }
        bool const ok = last ? standby_gate::continues(*last, p) : p.index == 0 && p.previous == 0;
        ASSERT_TRUE(ok) << "message " << n << " at (" << p.sequence << ", " << p.index
                        << ") after (" << (last ? last->sequence : 0) << ", "
                        << (last ? last->index : 0) << ")";
        last = p;
    }
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(last->sequence, sequences);
    EXPECT_EQ(last->index, 1U);
    std::printf("[ gate     ] %llu takeovers, %zu messages sent, %zu of them resynchronization\n",
                static_cast<unsigned long long>(takeovers), sender.positions.size(),
                resync_messages);
}

} // namespace
