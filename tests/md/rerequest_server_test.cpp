// rerequest_server: every outcome of handle() (malformed, wrong session, sequence 0, count 0,
// rate limited, too many requesters, evicted, not yet sent, oversized, answered), clamping and
// partial answers, the answer packets (valid MoldUDP64, in order, within max_payload, the stored
// bytes), the requester table's bound under a flood of sources, and no allocation in handle().
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/message_store.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/nasdaq/rerequest_server.hpp>

#include "md/md_test_support.hpp"
#include "support/allocation_counter.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using test::bytes;
using test::view;

constexpr std::uint64_t ms = 1'000'000;
constexpr std::uint64_t second = 1'000'000'000;

bytes message(std::uint64_t sequence, std::size_t length) {
    bytes b(length);
    for (std::size_t i = 0; i < length; ++i) {
        b[i] = static_cast<std::byte>(sequence * 7 + i);
    }
    return b;
}

/// A request datagram, built byte by byte (the layout of a MoldUDP64 header).
bytes request(std::uint64_t sequence, std::uint16_t count, std::string_view session = "SESSION1") {
    return test::mold_header(session, sequence, count);
}

/// A store holding sequences [first, last] of `length` bytes each.
void fill(message_store& store, std::uint64_t first, std::uint64_t last, std::size_t length = 30) {
    for (std::uint64_t s = first; s <= last; ++s) {
        ASSERT_TRUE(store.append(s, view(message(s, length))));
    }
}

struct decoded {
    std::vector<std::uint64_t> sequences;
    std::vector<bytes> messages;
};

/// Checks every packet (session, contiguous sequences, size) and returns the messages.
decoded decode(rerequest_answer const& answer, std::size_t max_payload = 1400,
               std::string_view session = "SESSION1  ") {
    decoded out;
    std::uint64_t next = answer.first_sequence;
    for (std::span<std::byte const> const packet : answer.packets) {
        EXPECT_LE(packet.size(), max_payload);
        auto const header = moldudp64_peek_header(packet);
        EXPECT_TRUE(header.has_value());
        if (!header) {
            continue;
        }
        EXPECT_EQ(std::string_view(header->session.data(), header->session.size()), session);
        EXPECT_EQ(header->sequence, next);
        EXPECT_GT(header->count, 0U);
        moldudp64_session mold(header->sequence);
        packet_result const result =
            mold.on_packet(packet, [&](std::uint64_t sequence, std::span<std::byte const> m) {
                out.sequences.push_back(sequence);
                out.messages.emplace_back(m.begin(), m.end());
            });
        EXPECT_EQ(result.kind, packet_kind::data);
        EXPECT_EQ(result.delivered, header->count);
        next += header->count;
    }
    EXPECT_EQ(out.sequences.size(), answer.messages);
    return out;
}

void expect_messages(decoded const& d, std::uint64_t first, std::uint64_t count,
                     std::size_t length = 30) {
    ASSERT_EQ(d.sequences.size(), count);
    for (std::uint64_t i = 0; i < count; ++i) {
        EXPECT_EQ(d.sequences[i], first + i);
        EXPECT_EQ(d.messages[i], message(first + i, length)) << first + i;
    }
}

std::uint64_t outcome_sum(rerequest_stats const& s) {
    return s.answered + s.malformed + s.wrong_session + s.zero_sequence + s.zero_count +
           s.rate_limited + s.too_many_requesters + s.evicted + s.not_yet_sent + s.oversized;
}

rerequest_server_options options(std::uint32_t max_messages = 1000, double rate = 100) {
    return {.session = "SESSION1",
            .max_messages_per_answer = max_messages,
            .requests_per_second = rate};
}

TEST(RerequestServer, ConstructorRejectsOptionsOutOfRange) {
    message_store store(8, 256);
    auto with = [](auto change) {
        rerequest_server_options o{.session = "S"};
        change(o);
        return o;
    };
    EXPECT_THROW(rerequest_server(store, with([](auto& o) { o.max_messages_per_answer = 0; })),
                 std::invalid_argument);
    EXPECT_THROW(rerequest_server(store, with([](auto& o) { o.max_messages_per_answer = 65536; })),
                 std::invalid_argument);
    EXPECT_THROW(rerequest_server(store, with([](auto& o) { o.max_payload = 21; })),
                 std::invalid_argument);
    EXPECT_THROW(rerequest_server(store, with([](auto& o) { o.max_payload = 65508; })),
                 std::invalid_argument);
    EXPECT_THROW(rerequest_server(store, with([](auto& o) { o.requests_per_second = 0; })),
                 std::invalid_argument);
    EXPECT_THROW(rerequest_server(store, with([](auto& o) { o.requests_per_second = 2e9; })),
                 std::invalid_argument);
    EXPECT_THROW(rerequest_server(store, with([](auto& o) { o.burst = 1'000'001; })),
                 std::invalid_argument);
    EXPECT_THROW(rerequest_server(store, with([](auto& o) { o.max_requesters = 0; })),
                 std::invalid_argument);
    rerequest_server const ok(store, with([](auto& o) { o.max_payload = 22; }));
    EXPECT_EQ(std::string_view(ok.session().data(), 10), "S         ");
}

TEST(RerequestServer, IgnoresMalformedRequests) {
    message_store store(64, 4096);
    fill(store, 1, 10);
    rerequest_server server(store, options());
    bytes r = request(1, 1);
    for (std::size_t size : {0U, 1U, 19U, 21U, 1400U}) {
        r.resize(size);
        rerequest_answer const a = server.handle(view(r), 1, 0);
        EXPECT_EQ(a.outcome, rerequest_outcome::malformed) << size;
        EXPECT_TRUE(a.packets.empty());
    }
    EXPECT_EQ(server.stats().malformed, 5U);
    EXPECT_EQ(server.stats().requests, 5U);
    EXPECT_EQ(server.requesters(), 0U); // ignored before the rate limit: no budget spent
}

TEST(RerequestServer, IgnoresAnotherSessionSequenceZeroAndCountZero) {
    message_store store(64, 4096);
    fill(store, 1, 10);
    rerequest_server server(store, options());
    EXPECT_EQ(server.handle(view(request(1, 1, "OTHER")), 1, 0).outcome,
              rerequest_outcome::wrong_session);
    EXPECT_EQ(server.handle(view(request(1, 1, "SESSION1X")), 1, 0).outcome,
              rerequest_outcome::wrong_session);
    EXPECT_EQ(server.handle(view(request(0, 5)), 1, 0).outcome, rerequest_outcome::zero_sequence);
    EXPECT_EQ(server.handle(view(request(3, 0)), 1, 0).outcome, rerequest_outcome::zero_count);
    rerequest_stats const& s = server.stats();
    EXPECT_EQ(s.wrong_session, 2U);
    EXPECT_EQ(s.zero_sequence, 1U);
    EXPECT_EQ(s.zero_count, 1U);
    EXPECT_EQ(s.answered, 0U);
    EXPECT_EQ(server.requesters(), 0U);
    // The session can change (md_feed learns it from a capture's first packet).
    server.set_session("OTHER");
    EXPECT_EQ(server.handle(view(request(1, 1, "OTHER")), 1, 0).outcome,
              rerequest_outcome::answered);
}

TEST(RerequestServer, IgnoresWhatTheStoreDoesNotHold) {
    message_store store(10, 4096);
    rerequest_server server(store, options());
    EXPECT_EQ(server.handle(view(request(1, 1)), 1, 0).outcome, rerequest_outcome::not_yet_sent);
    fill(store, 1, 25); // holds 16..25
    EXPECT_EQ(server.handle(view(request(26, 1)), 1, 0).outcome, rerequest_outcome::not_yet_sent);
    EXPECT_EQ(server.handle(view(request(~0ULL, 1)), 1, 0).outcome,
              rerequest_outcome::not_yet_sent);
    EXPECT_EQ(server.handle(view(request(15, 5)), 1, 0).outcome, rerequest_outcome::evicted);
    EXPECT_EQ(server.handle(view(request(1, 100)), 1, 0).outcome, rerequest_outcome::evicted);
    EXPECT_EQ(server.handle(view(request(16, 1)), 1, 0).outcome, rerequest_outcome::answered);
    EXPECT_EQ(server.stats().not_yet_sent, 3U);
    EXPECT_EQ(server.stats().evicted, 2U);
    EXPECT_EQ(server.stats().answered, 1U);
}

TEST(RerequestServer, AnswersWithTheStoredMessagesInOnePacket) {
    message_store store(64, 4096);
    fill(store, 1, 40);
    rerequest_server server(store, options());
    rerequest_answer const a = server.handle(view(request(5, 3)), 42, 0);
    ASSERT_TRUE(a.answered());
    EXPECT_EQ(a.first_sequence, 5U);
    EXPECT_EQ(a.messages, 3U);
    EXPECT_FALSE(a.clamped);
    EXPECT_FALSE(a.partial);
    ASSERT_EQ(a.packets.size(), 1U);
    EXPECT_EQ(a.packets[0].size(), 20U + 3 * 32);
    expect_messages(decode(a), 5, 3);
    EXPECT_EQ(server.stats().messages_resent, 3U);
    EXPECT_EQ(server.stats().packets_resent, 1U);
}

TEST(RerequestServer, SplitsLargeAnswersIntoPacketsWithinMaxPayload) {
    message_store store(2000, 200'000);
    fill(store, 1, 1500, 47);
    rerequest_server server(store, options());
    rerequest_answer const a = server.handle(view(request(100, 1000)), 1, 0);
    ASSERT_TRUE(a.answered());
    EXPECT_EQ(a.messages, 1000U);
    // 1400-byte packets: (1400 - 20) / 49 = 28 messages each, so 36 packets.
    EXPECT_EQ(a.packets.size(), 36U);
    expect_messages(decode(a), 100, 1000, 47);
    EXPECT_FALSE(a.clamped);
    EXPECT_FALSE(a.partial);
    // Smaller packets.
    rerequest_server_options o = options();
    o.max_payload = 200;
    rerequest_server small(store, o);
    rerequest_answer const b = small.handle(view(request(1, 30)), 1, 0);
    ASSERT_TRUE(b.answered());
    EXPECT_EQ(b.packets.size(), 10U); // 3 messages of 49 bytes per 200-byte packet
    expect_messages(decode(b, 200), 1, 30, 47);
}

TEST(RerequestServer, ClampsHugeCountsToTheAnswerLimit) {
    message_store store(5000, 500'000);
    fill(store, 1, 4000);
    rerequest_server server(store, options(10));
    rerequest_answer const a = server.handle(view(request(7, 65535)), 1, 0);
    ASSERT_TRUE(a.answered());
    EXPECT_TRUE(a.clamped);
    EXPECT_FALSE(a.partial);
    expect_messages(decode(a), 7, 10);
    EXPECT_EQ(server.stats().clamped, 1U);
    // The largest limit and count: 65535 messages.
    rerequest_server full(store, options(65535));
    rerequest_answer const b = full.handle(view(request(1, 65535)), 1, 0);
    ASSERT_TRUE(b.answered());
    EXPECT_FALSE(b.clamped);
    EXPECT_TRUE(b.partial); // the store holds 4000
    expect_messages(decode(b), 1, 4000);
}

TEST(RerequestServer, AnswersUpToTheNewestMessageAsPartial) {
    message_store store(64, 4096);
    fill(store, 1, 20);
    rerequest_server server(store, options());
    rerequest_answer const a = server.handle(view(request(18, 10)), 1, 0);
    ASSERT_TRUE(a.answered());
    EXPECT_TRUE(a.partial);
    EXPECT_FALSE(a.clamped);
    expect_messages(decode(a), 18, 3);
    EXPECT_EQ(server.stats().partial, 1U);
}

TEST(RerequestServer, MessagesLongerThanAPacketAreNotSent) {
    rerequest_server_options o = options();
    o.max_payload = 64; // an empty packet takes messages of up to 42 bytes
    message_store store(16, 4096);
    ASSERT_TRUE(store.append(1, view(message(1, 30))));
    ASSERT_TRUE(store.append(2, view(message(2, 42))));
    ASSERT_TRUE(store.append(3, view(message(3, 43))));
    ASSERT_TRUE(store.append(4, view(message(4, 10))));
    rerequest_server server(store, o);
    rerequest_answer const first = server.handle(view(request(3, 2)), 1, 0);
    EXPECT_EQ(first.outcome, rerequest_outcome::oversized);
    EXPECT_TRUE(first.packets.empty());
    rerequest_answer const cut = server.handle(view(request(1, 4)), 1, 0);
    ASSERT_TRUE(cut.answered());
    EXPECT_TRUE(cut.partial); // stops before the 43-byte message
    EXPECT_EQ(cut.packets.size(), 2U);
    decoded const d = decode(cut, 64);
    ASSERT_EQ(d.sequences.size(), 2U);
    EXPECT_EQ(d.messages[0], message(1, 30));
    EXPECT_EQ(d.messages[1], message(2, 42));
    EXPECT_EQ(server.stats().oversized, 1U);
    EXPECT_EQ(server.stats().partial, 1U);
}

TEST(RerequestServer, RateLimitsEachRequesterWithATokenBucket) {
    message_store store(64, 4096);
    fill(store, 1, 10);
    rerequest_server server(store, options(1000, 10)); // 10/s, burst 10
    bytes const r = request(1, 1);
    std::uint64_t const t0 = 5 * second;
    for (int i = 0; i < 10; ++i) {
        EXPECT_TRUE(server.handle(view(r), 1, t0).answered()) << i;
    }
    EXPECT_EQ(server.handle(view(r), 1, t0).outcome, rerequest_outcome::rate_limited);
    EXPECT_EQ(server.handle(view(r), 1, t0 + 99 * ms).outcome, rerequest_outcome::rate_limited);
    // Another requester has its own bucket.
    EXPECT_TRUE(server.handle(view(r), 2, t0).answered());
    // One token every 100 ms.
    EXPECT_TRUE(server.handle(view(r), 1, t0 + 100 * ms).answered());
    EXPECT_EQ(server.handle(view(r), 1, t0 + 150 * ms).outcome, rerequest_outcome::rate_limited);
    EXPECT_TRUE(server.handle(view(r), 1, t0 + 200 * ms).answered());
    // A full second idle refills the whole burst, no more.
    int answered = 0;
    for (int i = 0; i < 20; ++i) {
        answered += server.handle(view(r), 1, t0 + 2 * second).answered() ? 1 : 0;
    }
    EXPECT_EQ(answered, 10);
    // Ignored-before-the-limit requests do not spend tokens; limited ones are counted.
    EXPECT_EQ(server.handle(view(request(1, 0)), 1, t0 + 2 * second).outcome,
              rerequest_outcome::zero_count);
    EXPECT_EQ(server.stats().rate_limited, 13U);
    EXPECT_EQ(server.stats().requests, outcome_sum(server.stats()));
}

TEST(RerequestServer, ExplicitBurstAndFractionalRates) {
    message_store store(64, 4096);
    fill(store, 1, 10);
    rerequest_server_options o = options(1000, 0.5); // one every 2 s
    o.burst = 1;
    rerequest_server server(store, o);
    bytes const r = request(1, 1);
    EXPECT_TRUE(server.handle(view(r), 9, 0).answered());
    EXPECT_EQ(server.handle(view(r), 9, 1 * second).outcome, rerequest_outcome::rate_limited);
    EXPECT_EQ(server.handle(view(r), 9, 2 * second - 1).outcome, rerequest_outcome::rate_limited);
    EXPECT_TRUE(server.handle(view(r), 9, 2 * second).answered());
    // A clock that goes back neither crashes nor grants more.
    EXPECT_EQ(server.handle(view(r), 9, 0).outcome, rerequest_outcome::rate_limited);
    // The end of time saturates instead of wrapping around to a full bucket.
    EXPECT_TRUE(server.handle(view(r), 9, ~0ULL - 1).answered());
    EXPECT_NE(server.handle(view(r), 9, ~0ULL - 1).outcome, rerequest_outcome::answered);
}

TEST(RerequestServer, RequesterTableIsBoundedAndKeepsActiveRequesters) {
    message_store store(64, 4096);
    fill(store, 1, 10);
    rerequest_server_options o = options(1000, 10); // 10/s, burst 10
    o.max_requesters = 8;                           // one probe window: the whole table
    rerequest_server server(store, o);
    bytes const r = request(1, 1);
    // Requester 1 spends its burst and is being limited.
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(server.handle(view(r), 1, 0).answered());
    }
    ASSERT_EQ(server.handle(view(r), 1, 0).outcome, rerequest_outcome::rate_limited);
    // A flood of spoofed sources: 7 get a slot (and a burst); the rest are refused.
    std::uint64_t flood_answered = 0;
    for (std::uint64_t key = 100; key < 100'100; ++key) {
        flood_answered += server.handle(view(r), key, 0).answered() ? 1U : 0U;
    }
    EXPECT_EQ(flood_answered, 7U);
    EXPECT_EQ(server.requesters(), 8U);
    EXPECT_EQ(server.stats().too_many_requesters, 100'000U - 7);
    // 50 ms later the one-request sources are not refilled yet (100 ms per token): still refused.
    EXPECT_EQ(server.handle(view(r), 5, 50 * ms).outcome, rerequest_outcome::too_many_requesters);
    // At 100 ms they are, and their slots go to new requesters; requester 1 (9 tokens behind)
    // keeps its slot and its debt: the flood did not reset its bucket.
    EXPECT_TRUE(server.handle(view(r), 5, 100 * ms).answered());
    EXPECT_TRUE(server.handle(view(r), 1, 100 * ms).answered());
    EXPECT_EQ(server.handle(view(r), 1, 100 * ms).outcome, rerequest_outcome::rate_limited);
    EXPECT_EQ(server.requesters(), 8U);
    EXPECT_EQ(server.stats().requests, outcome_sum(server.stats()));
}

TEST(RerequestServer, FloodOfSourcesOnALargeTableStaysWithinItsBound) {
    message_store store(64, 4096);
    fill(store, 1, 10);
    rerequest_server_options o = options(1000, 2); // burst 2
    o.max_requesters = 1000;                       // rounded up to 1024
    rerequest_server server(store, o);
    bytes const r = request(1, 1);
    std::uint64_t answered = 0;
    for (std::uint64_t key = 0; key < 1'000'000; ++key) {
        answered += server.handle(view(r), key * 0x9E3779B97F4A7C15ULL, key / 1000).answered();
    }
    EXPECT_LE(server.requesters(), 1024U);
    EXPECT_LE(answered, 1024U * 2); // max_requesters * (rate * 1 ms + burst)
    EXPECT_GT(answered, 0U);
}

TEST(RerequestServer, HandleDoesNotAllocate) {
    message_store store(5000, 500'000);
    fill(store, 1, 5000);
    rerequest_server server(store, options(1000, 1e6));
    bytes const big = request(1, 65535);
    bytes const small = request(4990, 5);
    bytes const bad = request(0, 1);
    std::size_t answered = 0;
    std::size_t const allocations = signet::test::allocations_in([&] {
        for (std::uint64_t i = 0; i < 2000; ++i) {
            answered += server.handle(view(big), i % 300, i * ms).messages;
            answered += server.handle(view(small), i, i * ms).messages;
            answered += server.handle(view(bad), i, i * ms).messages;
        }
    });
    EXPECT_EQ(allocations, 0U);
    EXPECT_EQ(answered, 2000U * 1005);
}

} // namespace
