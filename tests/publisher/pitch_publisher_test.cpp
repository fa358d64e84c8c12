// pitch_publisher on the simulated clock: where on_tail falls in what the lines got (md_feed's
// "the messages are sent" line, which a test waits on before it starts a receiver that must see
// heartbeats alone).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cboe/pitch.hpp>
#include <signet/publisher/cboe/pitch_generator.hpp>
#include <signet/publisher/cboe/pitch_publisher.hpp>

#include "publisher_test_support.hpp"

namespace {

using namespace signet;
using publisher::test::fake_clock;
using publisher::test::recording_lines;
using publisher::test::sent_datagram;

struct block_seen {
    md::cboe::block_header header;
    bool end_of_session = false;
};

block_seen read_block(sent_datagram const& d) {
    std::optional<md::cboe::block_check> const check = md::cboe::validate_block(d.data);
    EXPECT_TRUE(check.has_value()) << "a datagram that is not one well-formed block";
    block_seen seen{check ? check->header : md::cboe::block_header{}, false};
    if (check) {
        md::cboe::for_each_message(d.data, [&](std::span<std::byte const> m) {
            seen.end_of_session = seen.end_of_session || static_cast<std::uint8_t>(m[1]) ==
                                                             md::cboe::message_type::end_of_session;
        });
    }
    return seen;
}

TEST(PitchPublisher, OnTailComesOnceAfterTheLastMessageAndEveryEndOfSession) {
    fake_clock clock;
    recording_lines lines(clock, 2);
    publisher::cboe::pitch_generator generator({.seed = 3, .units = 2});
    std::size_t tails = 0;
    std::size_t sent_at_tail = 0;
    publisher::cboe::pitch_publisher_options options;
    options.rate = 10'000;
    options.messages = 500;
    options.heartbeat_interval = std::chrono::milliseconds(100);
    options.tail = std::chrono::seconds(1);
    options.on_tail = [&] {
        ++tails;
        sent_at_tail = lines.sent().size();
    };
    publisher::cboe::pitch_publisher pub(options, generator, lines, clock);
    ASSERT_TRUE(pub.run().ok());
    ASSERT_EQ(tails, 1U);
    std::vector<sent_datagram> const& sent = lines.sent();
    ASSERT_LT(sent_at_tail, sent.size()) << "no heartbeat after on_tail";
    std::size_t ends = 0;
    std::size_t last_with_messages = 0;
    for (std::size_t i = 0; i < sent.size(); ++i) {
        block_seen const b = read_block(sent[i]);
        if (b.header.count != 0) {
            last_with_messages = i;
        }
        ends += b.end_of_session ? 1 : 0;
        if (i >= sent_at_tail) { // the tail: heartbeats alone, on both lines
            EXPECT_EQ(b.header.count, 0) << "datagram " << i << " after on_tail carries messages";
        }
    }
    EXPECT_LT(last_with_messages, sent_at_tail);
    EXPECT_EQ(ends, 2U * 2U) << "each unit's End of Session, on both lines";
    EXPECT_EQ(pub.counts().generated, 500U);
}

TEST(PitchPublisher, AStoppedRunNeverCallsOnTail) {
    fake_clock clock;
    recording_lines lines(clock, 1);
    publisher::cboe::pitch_generator generator({.seed = 4});
    std::size_t tails = 0;
    publisher::cboe::pitch_publisher_options options;
    options.messages = 0; // until stop()
    options.on_tail = [&] {
        ++tails;
    };
    publisher::cboe::pitch_publisher pub(options, generator, lines, clock);
    pub.stop();
    ASSERT_TRUE(pub.run().ok());
    EXPECT_EQ(tails, 0U);
}

} // namespace
