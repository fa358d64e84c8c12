// feed_parser over the Cboe PITCH protocol, no TCP: a unit first seen mid-stream without a Spin
// server counts what came before as late_start (as ITCH and MDP 3.0 do), not as a gap, and its
// symbols are stale.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cboe/pitch.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/cboe/pitch_protocol.hpp>
#include <signet/receiver/feed_parser.hpp>

namespace {

namespace cb = signet::md::cboe;
using signet::receiver::book_state;
using signet::receiver::feed_config;
using signet::receiver::feed_parser;
using signet::receiver::cboe::pitch_settings;
using bytes = std::vector<std::byte>;

class no_lines final : public signet::receiver::feed_setup {
public:
    signet::net::udp_socket const& line_socket(std::string_view) const override {
        throw std::logic_error("no lines in this test");
    }
    std::unique_ptr<signet::net::tcp_client>
    tcp_client(signet::net::tcp_client_options const&) override {
        throw std::logic_error("no TCP in this test");
    }
    signet::net::timer parser_timer() override { return {}; }
    signet::blocking_work_contract_group& group() override { return group_; }
    std::string const& record_path() const override { return no_path_; }

private:
    signet::blocking_work_contract_group group_{64};
    std::string no_path_;
};

/// A block of `unit` from `sequence`: one Add Order Long per id.
bytes block(std::uint8_t unit, std::uint32_t sequence, std::vector<std::uint64_t> const& ids) {
    bytes buffer(1400);
    cb::block_writer w(buffer);
    w.begin(unit, sequence);
    for (std::uint64_t const id : ids) {
        cb::message m;
        m.type = cb::message_type::add_order_long;
        m.order_id = id;
        m.side = 'B';
        m.quantity = 100;
        m.price = 10'0000;
        m.symbol = cb::make_symbol("ZA");
        m.flags = 1;
        EXPECT_TRUE(w.add(m));
    }
    auto const b = w.finish();
    return bytes(b.begin(), b.end());
}

void push(feed_parser& parser, bytes const& datagram) {
    signet::net::packet p;
    p.data = datagram.data();
    p.size = static_cast<std::uint32_t>(datagram.size());
    p.user_rx_ns = 1;
    parser(p);
    parser.on_batch();
}

std::unique_ptr<feed_parser> make_parser(feed_config config, no_lines& setup) {
    config.protocol = std::make_shared<pitch_settings>();
    auto parser = std::make_unique<feed_parser>(config, config.protocol->make(config));
    parser->protocol().setup(setup);
    return parser;
}

TEST(PitchProtocol, AUnitFirstSeenMidStreamWithoutSpinIsALateStartAndStale) {
    feed_config config;
    config.name = "late";
    no_lines setup;
    auto const parser = make_parser(config, setup);
    push(*parser, block(1, 1000, {11, 12}));
    push(*parser, block(1, 1002, {13}));
    EXPECT_EQ(parser->live().late_start, 999U);
    EXPECT_EQ(parser->live().gaps, 0U);
    EXPECT_EQ(parser->live().missing, 0U);
    EXPECT_EQ(parser->live().messages, 3U);
    EXPECT_EQ(parser->live().book, book_state::stale) << "the book misses the earlier adds";
}

TEST(PitchProtocol, AUnitFromItsFirstSequenceHasNoLateStart) {
    feed_config config;
    config.name = "from start";
    no_lines setup;
    auto const parser = make_parser(config, setup);
    push(*parser, block(1, 1, {11}));
    push(*parser, block(1, 2, {12}));
    EXPECT_EQ(parser->live().late_start, 0U);
    EXPECT_EQ(parser->live().gaps, 0U);
    EXPECT_EQ(parser->live().book, book_state::complete);
    push(*parser, block(1, 4, {14})); // 3 lost: a gap, stale (no GRP)
    parser->finish();                 // the hold released
    EXPECT_EQ(parser->live().gaps, 1U);
    EXPECT_EQ(parser->live().missing, 1U);
    EXPECT_EQ(parser->live().book, book_state::stale);
}

} // namespace
