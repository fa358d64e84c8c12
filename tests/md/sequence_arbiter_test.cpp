#include <array>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/input_probe.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/sequence_arbiter.hpp>

namespace {

using signet::md::sequence_arbiter;

// A fake session: tracks next expected and records what was delivered, in order.
struct fake_session {
    std::uint64_t next = 1;
    std::vector<std::uint64_t> delivered;
    std::uint64_t gaps = 0;
    void deliver(std::span<std::byte const> d) {
        std::uint64_t const seq = signet::md::nasdaq::moldudp64_sequence(d);
        delivered.push_back(seq);
        if (seq > next) {
            ++gaps;
        }
        if (seq >= next) {
            next = seq + 1; // one message per packet
        }
    }
};

std::vector<std::byte> packet(std::uint64_t sequence) {
    std::vector<std::byte> bytes(64);
    signet::md::nasdaq::moldudp64_packer packer(bytes, "TEST", sequence);
    std::array<std::byte, 4> message{};
    EXPECT_TRUE(packer.append(message));
    auto out = packer.finish();
    return {out.begin(), out.end()};
}

struct harness {
    explicit harness(std::size_t lines)
        : arbiter(lines, 8, 2048, 1000) {}
    void arrive(std::uint64_t seq, std::uint16_t line, std::uint64_t now) {
        auto p = packet(seq);
        arbiter.on_packet(
            p, signet::md::nasdaq::moldudp64_sequence(p), line, now,
            [&](auto d) { session.deliver(d); }, [&] { return session.next; });
    }
    sequence_arbiter arbiter;
    fake_session session;
};

TEST(SequenceArbiter, InOrderPassesStraightThrough) {
    harness h(1);
    for (std::uint64_t s = 1; s <= 5; ++s) {
        h.arrive(s, 0, s);
    }
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(h.arbiter.held(), 0U);
    EXPECT_EQ(h.arbiter.hold_latency().take().count, 0U); // nothing waited
}

TEST(SequenceArbiter, ReorderedPacketIsPutBackInOrder) {
    harness h(1);
    h.arrive(1, 0, 10);
    h.arrive(3, 0, 20); // held: 2 is missing
    EXPECT_EQ(h.arbiter.held(), 1U);
    h.arrive(2, 0, 30);
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 2, 3}));
    EXPECT_EQ(h.session.gaps, 0U);
    auto const held = h.arbiter.hold_latency().take(); // 3 waited from 20 until 2 came at 30
    EXPECT_EQ(held.count, 1U);
    EXPECT_EQ(held.sum, 10U);
}

TEST(SequenceArbiter, HeldPacketIsReleasedAfterTheHoldTime) {
    harness h(1);
    h.arrive(1, 0, 10);
    h.arrive(3, 0, 20);
    h.arrive(4, 0, 500); // still within 1000 ns of 3's arrival
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1}));
    h.arrive(5, 0, 2000); // 3 has waited too long: the gap is real
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 3, 4, 5}));
    EXPECT_EQ(h.session.gaps, 1U);
    // 3 and 4 waited until 2000 (1980 and 1500 ns); 5 went through the hold with no wait.
    auto const held = h.arbiter.hold_latency().take();
    EXPECT_EQ(held.count, 3U);
    EXPECT_EQ(held.sum, 3480U);
}

TEST(SequenceArbiter, OtherLineFillsTheGap) {
    harness h(2);
    h.arrive(1, 0, 1);
    h.arrive(1, 1, 2);
    h.arrive(3, 0, 3); // line A lost 2
    h.arrive(2, 1, 4); // line B has it
    h.arrive(3, 1, 5);
    EXPECT_EQ(h.session.gaps, 0U);
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 1, 2, 3, 3}));
}

TEST(SequenceArbiter, GapOnBothLinesIsReleasedAtOnce) {
    harness h(2);
    h.arrive(1, 0, 1);
    h.arrive(1, 1, 2);
    h.arrive(3, 0, 3);
    h.arrive(3, 1, 4); // both lines are past 2: lost everywhere, no need to wait
    EXPECT_EQ(h.session.gaps, 1U);
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 1, 3, 3}));
}

TEST(SequenceArbiter, FullHoldReleasesTheOldest) {
    harness h(1);
    h.arrive(1, 0, 1);
    for (std::uint64_t s = 3; s <= 11; ++s) { // 9 packets, the hold takes 8
        h.arrive(s, 0, 2);
    }
    EXPECT_EQ(h.session.gaps, 1U);
    EXPECT_EQ(h.session.delivered.size(), 10U);
    EXPECT_EQ(h.arbiter.held(), 0U);
}

TEST(SequenceArbiter, FlushReleasesEverything) {
    harness h(1);
    h.arrive(1, 0, 1);
    h.arrive(5, 0, 2);
    h.arrive(4, 0, 3);
    h.arbiter.flush([&](auto d) { h.session.deliver(d); }, [&] { return h.session.next; });
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 4, 5}));
    EXPECT_EQ(h.arbiter.held(), 0U);
    EXPECT_EQ(h.arbiter.hold_latency().take().count, 0U); // the end of the run is not a wait
}

TEST(SequenceArbiter, NextDeadlineIsWhenTheFirstHeldPacketsHoldRunsOut) {
    harness h(1); // hold_ns 1000
    EXPECT_EQ(h.arbiter.next_deadline(), 0U);
    h.arrive(1, 0, 1);
    h.arrive(3, 0, 10);
    h.arrive(4, 0, 20);
    ASSERT_EQ(h.arbiter.held(), 2U);
    EXPECT_EQ(h.arbiter.next_deadline(), 10U + 1000U + 1U);
    auto const tick = [&](std::uint64_t now) {
        h.arbiter.tick(
            now, [&](auto d) { h.session.deliver(d); }, [&] { return h.session.next; });
    };
    tick(h.arbiter.next_deadline() - 1);
    EXPECT_EQ(h.arbiter.held(), 2U); // not yet
    tick(h.arbiter.next_deadline());
    EXPECT_EQ(h.arbiter.held(), 0U); // 3 expired; 4 follows it in sequence
    EXPECT_EQ(h.session.gaps, 1U);
    EXPECT_EQ(h.arbiter.next_deadline(), 0U);
}

// ---- the input probe: scheduling delay is not loss ----

/// Says line `line` has input waiting while `waiting[line]` is set.
struct fake_probe final : signet::md::input_probe {
    std::array<bool, 2> waiting_on{};
    mutable int asked = 0;
    bool waiting(std::size_t line) const noexcept override {
        ++asked;
        return waiting_on.at(line);
    }
};

TEST(SequenceArbiter, AHoldWaitsForTheOtherLinesWaitingInputInsteadOfCallingAGap) {
    // Line A is past packet 2 (it lost it); line B's copy is still in B's socket on a loaded
    // machine while A's packets keep coming: the hold must not expire into a gap.
    harness h(2);
    fake_probe probe;
    h.arbiter.set_input_probe(&probe, 10'000);
    probe.waiting_on[1] = true;
    h.arrive(1, 0, 1);
    h.arrive(1, 1, 1);
    h.arrive(3, 0, 10);
    for (std::uint64_t s = 4; s <= 6; ++s) {
        h.arrive(s, 0, 10 + 1000 * s); // A's packets say 1 ms after another: hold 1000 ns
    }
    EXPECT_EQ(h.session.gaps, 0U);
    EXPECT_GT(probe.asked, 0);
    probe.waiting_on[1] = false;
    h.arrive(2, 1, 6100); // B's copy comes through: in sequence, nothing lost
    h.arrive(3, 1, 6200);
    EXPECT_EQ(h.session.gaps, 0U);
    // (B's copies of 1 and 3 come through too: the session drops them as duplicates.)
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 1, 2, 3, 4, 5, 6, 3}));
}

TEST(SequenceArbiter, WaitingInputDefersAHoldOnlySoLong) {
    harness h(2);
    fake_probe probe;
    h.arbiter.set_input_probe(&probe, 5'000);
    probe.waiting_on = {true, true}; // input forever waiting: a line that never catches up
    h.arrive(1, 0, 1);
    h.arrive(1, 1, 1);
    h.arrive(3, 0, 10);
    h.arbiter.tick(
        5'000, [&](auto d) { h.session.deliver(d); }, [&] { return h.session.next; });
    EXPECT_EQ(h.session.gaps, 0U); // the hold (1000) passed, the deferral (5000) has not
    h.arbiter.tick(
        10 + 1000 + 5'000 + 1, [&](auto d) { h.session.deliver(d); },
        [&] { return h.session.next; });
    EXPECT_EQ(h.session.gaps, 1U); // past both: the gap is real after all
}

TEST(SequenceArbiter, AnExpiredHoldWaitsWhileItsLineHasInputWaiting) {
    // One line: packet 3 arrived before 2 (reordered on the wire), and 2 sits in the socket
    // when the timer fires on a busy machine. By packet times nothing expired; by the wall
    // clock it did — unless input is waiting on the line.
    harness h(1);
    fake_probe probe;
    h.arbiter.set_input_probe(&probe, 10'000);
    h.arrive(1, 0, 1);
    h.arrive(3, 0, 10);
    probe.waiting_on[0] = true;
    h.arbiter.tick(
        2'000, [&](auto d) { h.session.deliver(d); }, [&] { return h.session.next; });
    EXPECT_EQ(h.session.gaps, 0U);
    h.arrive(2, 0, 2'100);
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 2, 3}));
    // Without waiting input, once the line moved on past the hold, it expires as before.
    h.arrive(5, 0, 2'200);
    probe.waiting_on[0] = false;
    h.arrive(6, 0, 3'300);
    EXPECT_EQ(h.session.gaps, 1U);
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 2, 3, 5, 6}));
}

TEST(SequenceArbiter, ATimerAloneCallsNoGapWhileTheLineHasNotMovedOn) {
    // One line (issue 37): the sender put 3 out before 2 and was descheduled in between (a
    // loaded machine). Nothing waits in any socket when the timer fires past the hold: by the
    // wall clock 3 expired, but nothing arrived after it, so 2 may not have been sent yet.
    harness h(1); // hold_ns 1000
    fake_probe probe;
    h.arbiter.set_input_probe(&probe, 10'000);
    auto const tick = [&](std::uint64_t now) {
        h.arbiter.tick(
            now, [&](auto d) { h.session.deliver(d); }, [&] { return h.session.next; });
    };
    h.arrive(1, 0, 1);
    h.arrive(3, 0, 10);
    EXPECT_EQ(h.arbiter.next_deadline(), 10U + 1'000U + 10'000U + 1U); // the timer's bound
    tick(5'000);
    EXPECT_EQ(h.session.gaps, 0U);
    h.arrive(2, 0, 5'100); // the sender runs again
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 2, 3}));
    EXPECT_EQ(h.session.gaps, 0U);
    // A real gap: the line moves on past the hold without 4, and the next arrival calls it.
    h.arrive(5, 0, 6'000);
    h.arrive(6, 0, 6'500);
    tick(7'500);
    EXPECT_EQ(h.session.gaps, 0U); // the line is 500 ns past 5 only
    h.arrive(7, 0, 7'100);
    EXPECT_EQ(h.session.gaps, 1U);
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 2, 3, 5, 6, 7}));
    // A line gone quiet after a gap: the timer calls it at hold_ns + max_defer_ns.
    h.arrive(9, 0, 8'000);
    tick(8'000 + 1'000 + 10'000);
    EXPECT_EQ(h.session.gaps, 1U);
    tick(h.arbiter.next_deadline());
    EXPECT_EQ(h.session.gaps, 2U);
    EXPECT_EQ(h.arbiter.held(), 0U);
}

TEST(SequenceArbiter, BothLinesPastAGapWaitForWaitingInputWhenTheWireReorders) {
    // Packets 2 and 3 swapped on both lines: A's 3 and B's 3 arrive while A's 2 still waits in
    // A's queue on a busy machine. Both lines are past 2, but one of them has input waiting:
    // no gap; once nothing waits, rule 2 releases at once as before.
    harness h(2);
    fake_probe probe;
    h.arbiter.set_input_probe(&probe, 10'000);
    h.arrive(1, 0, 1);
    h.arrive(1, 1, 2);
    probe.waiting_on[0] = true; // A's 2 is behind its 3
    h.arrive(3, 0, 3);
    h.arrive(3, 1, 4);
    EXPECT_EQ(h.session.gaps, 0U);
    probe.waiting_on[0] = false;
    h.arrive(2, 0, 5);
    EXPECT_EQ(h.session.gaps, 0U);
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 1, 2, 3, 3}));
    // A gap on both lines with nothing waiting: released at once (rule 2).
    h.arrive(5, 0, 6);
    h.arrive(5, 1, 7);
    EXPECT_EQ(h.session.gaps, 1U);
}

/// Keeps every gap it is asked for (true) and records the asks.
struct asking_recovery final : signet::md::gap_recovery {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> asked;
    bool open = false;
    bool want(std::uint64_t first, std::uint64_t end, std::uint64_t) noexcept override {
        if (!open) {
            asked.emplace_back(first, end);
        }
        open = true;
        return true;
    }
    void abandon(std::uint64_t) noexcept override { open = false; }
    [[nodiscard]] bool recovering() const noexcept override { return open; }
    [[nodiscard]] std::uint64_t next_deadline() const noexcept override { return 0; }
};

TEST(SequenceArbiter, ARecoveryIsAskedAtOnceWhileInputWaits) {
    // A receiver behind a backlog: input waits on both lines the whole time. Both lines are
    // past 2, so the recovery is asked at once — waiting first would fill the hold with the
    // backlog and give the gap up unasked. The input that comes next does not fill it; the
    // recovered packet does, and everything held follows in order.
    harness h(2);
    fake_probe probe;
    asking_recovery recovery;
    h.arbiter.set_input_probe(&probe, 10'000);
    h.arbiter.set_recovery(&recovery);
    probe.waiting_on = {true, true};
    h.arrive(1, 0, 1);
    h.arrive(1, 1, 2);
    h.arrive(3, 0, 3);
    h.arrive(3, 1, 4);
    EXPECT_EQ(recovery.asked, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{2, 3}}));
    for (std::uint64_t s = 4; s <= 6; ++s) {
        h.arrive(s, 0, 5 + s);
    }
    EXPECT_EQ(h.session.gaps, 0U);
    h.arrive(2, 0, 20); // the answer
    EXPECT_EQ(h.session.gaps, 0U);
    EXPECT_EQ(h.session.delivered, (std::vector<std::uint64_t>{1, 1, 2, 3, 3, 4, 5, 6}));
}

TEST(SequenceArbiter, BothLinesPastAGapWaitTheReorderAllowanceFirst) {
    // A sender that reorders 2 and 3 on both lines may send 2 late on both (a busy machine):
    // once the lines were seen to reorder, rule 2 waits its allowance (100 ns here), then
    // releases. Before any reordering it releases at once.
    sequence_arbiter arbiter(2, 8, 2048, 1000, 100);
    fake_session session;
    auto arrive = [&](std::uint64_t seq, std::uint16_t line, std::uint64_t now) {
        auto p = packet(seq);
        arbiter.on_packet(
            p, signet::md::nasdaq::moldudp64_sequence(p), line, now,
            [&](auto d) { session.deliver(d); }, [&] { return session.next; });
    };
    arrive(1, 0, 1);
    arrive(1, 1, 2);
    arrive(3, 0, 3);
    arrive(3, 1, 4); // no reordering seen: both past 2, released at once
    EXPECT_EQ(session.gaps, 1U);
    arrive(2, 0, 5); // late after all: the wire reorders (a duplicate now)
    session.gaps = 0;
    arrive(5, 0, 10);
    arrive(5, 1, 20); // both past 4: released at 10 + 100 rather than now
    EXPECT_EQ(session.gaps, 0U);
    EXPECT_EQ(arbiter.next_deadline(), 10U + 100U + 1U);
    arrive(4, 0, 60); // the late one, within the allowance
    EXPECT_EQ(session.gaps, 0U);
    arrive(7, 0, 200);
    arrive(7, 1, 210);
    EXPECT_EQ(arbiter.next_deadline(), 200U + 100U + 1U);
    arbiter.tick(
        301, [&](auto d) { session.deliver(d); }, [&] { return session.next; });
    EXPECT_EQ(session.gaps, 1U); // 6 was lost on both lines
    EXPECT_EQ(session.delivered, (std::vector<std::uint64_t>{1, 1, 3, 3, 2, 4, 5, 5, 7, 7}));
}

TEST(SequenceArbiter, AFarPacketWaitsBehindWhatIsHeldAndMovesNothing) {
    // A packet the session will not believe (far) goes at once when nothing is held; while
    // packets wait for a gap it waits behind them, whatever its own sequence, and goes right
    // after them: the session judges the held ones first. It is not a line's position (rule 2
    // sees neither line past 3) and never a range for the recovery.
    harness h(2);
    asking_recovery recovery;
    h.arbiter.set_recovery(&recovery);
    auto const far = [&](std::uint64_t seq, std::uint16_t line, std::uint64_t now) {
        auto p = packet(seq);
        h.arbiter.on_packet(
            p, sequence_arbiter::far, line, now, [&](auto d) { h.session.deliver(d); },
            [&] { return h.session.next; });
    };
    using sequences = std::vector<std::uint64_t>;
    far(900, 0, 1); // nothing held: at once (the session ignores it or not; here it takes it)
    EXPECT_EQ(h.session.delivered, (sequences{900}));
    h.session = {};
    h.arrive(1, 0, 2);
    h.arrive(3, 0, 3); // held: 2 is missing
    far(1'000'000, 0, 4);
    far(1'000'000, 1, 5);
    far(5, 1, 6); // behind as well, in arrival order
    EXPECT_EQ(h.session.delivered, (sequences{1}));
    EXPECT_EQ(h.arbiter.held(), 4U);
    EXPECT_TRUE(recovery.asked.empty());
    EXPECT_EQ(h.arbiter.next_deadline(), 3U + 1000U + 1U); // 3's hold: line 1 is not past it
    h.arrive(2, 1, 7);
    EXPECT_EQ(h.session.delivered, (sequences{1, 2, 3, 1'000'000, 1'000'000, 5}));
    EXPECT_EQ(h.arbiter.held(), 0U);
    EXPECT_EQ(h.session.gaps, 1U); // the session's own count: 1'000'000 after 3
    EXPECT_TRUE(recovery.asked.empty());
}

} // namespace
