// feed_parser over the Cboe PITCH protocol: a unit first seen mid-stream without a Spin server
// counts what came before as late_start (as ITCH and MDP 3.0 do), not as a gap, and its symbols
// are stale (no TCP). With a Spin server (a session_server on the test's thread over loopback
// TCP, the parser run by hand): a late join's events never go back in sequence and carry the
// sequence of the book they show (docs/pitch.md, "Spin server").
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/core/work_contract_group.hpp>
#include <signet/md/cboe/pitch.hpp>
#include <signet/md/cboe/pitch_session_server.hpp>
#include <signet/md/events.hpp>
#include <signet/net/detail/readiness_set.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/tcp_client.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/cboe/pitch_protocol.hpp>
#include <signet/receiver/feed_parser.hpp>

#include "support/tcp_peer.hpp"

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

/// The runtime as the protocol sees it at setup, with real TCP clients whose readiness the
/// test dispatches by hand (no runtime, no worker: the test's thread runs the parser).
class tcp_setup final : public signet::receiver::feed_setup {
public:
    signet::net::udp_socket const& line_socket(std::string_view) const override {
        throw std::logic_error("no lines in this test");
    }
    std::unique_ptr<signet::net::tcp_client>
    tcp_client(signet::net::tcp_client_options const& options) override {
        return std::make_unique<signet::net::tcp_client>(options, readiness_, contract_);
    }
    signet::net::timer parser_timer() override { return {}; }
    signet::blocking_work_contract_group& group() override { return group_; }
    std::string const& record_path() const override { return no_path_; }
    signet::net::detail::readiness_set& readiness() noexcept { return readiness_; }

private:
    signet::blocking_work_contract_group group_{64};
    signet::work_contract contract_ = group_.create_contract([] {}); // never run: dispatch marks
    signet::net::detail::readiness_set readiness_;
    std::string no_path_;
};

/// An Add Order Long of "ZA" (bid, 100 at $10 + id cents).
cb::message add_order(std::uint64_t id) {
    cb::message m;
    m.type = cb::message_type::add_order_long;
    m.order_id = id;
    m.side = 'B';
    m.quantity = 100;
    m.price = 10'0000 + static_cast<std::int64_t>(id) * 100;
    m.symbol = cb::make_symbol("ZA");
    m.flags = 1;
    return m;
}

/// A block of `unit` from `sequence`: one Add Order Long per id.
bytes block(std::uint8_t unit, std::uint32_t sequence, std::vector<std::uint64_t> const& ids) {
    bytes buffer(1400);
    cb::block_writer w(buffer);
    w.begin(unit, sequence);
    for (std::uint64_t const id : ids) {
        EXPECT_TRUE(w.add(add_order(id)));
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

/// Every event of the feed, in order.
class recorded_events final : public signet::md::event_sink {
public:
    void on_event(signet::md::event const& e) noexcept override { all.push_back(e); }
    std::vector<signet::md::event> all;
};

/// A Spin server of unit 1 on the test's thread: one accepted connection, its session, and
/// the parser run alongside (each pump() dispatches the client's readiness, runs the parser
/// once, and moves the server's bytes), until a condition holds.
class SpinJoin : public ::testing::Test {
protected:
    void SetUp() override {
        feed_config config;
        config.name = "spin";
        auto settings = std::make_shared<pitch_settings>();
        settings->spin = {
            signet::net::udp_endpoint::parse("127.0.0.1:" + std::to_string(listener_.port()))};
        config.protocol = settings;
        parser_ = std::make_unique<feed_parser>(config, settings->make(config));
        parser_->protocol().set_event_sink(&events_, signet::md::event_mask::all());
        parser_->protocol().setup(setup_); // buffering: the spin session connects now
        connection_ = listener_.accept();
        ASSERT_TRUE(connection_.is_open());
        server_.start(now());
        ASSERT_TRUE(pump([&] { return server_.state() == cb::server_state::logged_in; }));
    }

    static std::int64_t now() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }

    /// Runs both sides until `done()` (true) or 10 s (false).
    bool pump(std::function<bool()> const& done) {
        auto const limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < limit) {
            (void)setup_.readiness().dispatch();
            parser_->on_idle();
            std::array<std::byte, 4096> buffer{};
            ssize_t const n = ::recv(connection_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
            if (n > 0) {
                received_.insert(received_.end(), buffer.begin(), buffer.begin() + n);
                std::size_t const used = server_.on_bytes(
                    received_, now(), [&](cb::message const& m) { requests_.push_back(m); });
                received_.erase(received_.begin(), received_.begin() + static_cast<long>(used));
            }
            server_.on_time(now());
            if (std::span<std::byte const> const out = server_.output(); !out.empty()) {
                EXPECT_TRUE(signet::test::send_all(connection_.get(), out));
                server_.sent(out.size(), now());
            }
            if (done()) {
                return true;
            }
            // Wait for either side's bytes (not a synchronization: a bound on the spin).
            std::array<pollfd, 2> fds{pollfd{connection_.get(), POLLIN, 0},
                                      pollfd{setup_.readiness().fd(), POLLIN, 0}};
            (void)::poll(fds.data(), fds.size(), 5);
        }
        return done();
    }

    /// Serves a spin of unit 1 as of `sequence` holding orders 1..`sequence` (one add each),
    /// once the receiver asks for it, and runs until the unit is live.
    void spin(std::uint32_t sequence) {
        cb::message image;
        image.type = cb::message_type::spin_image_available;
        image.sequence = sequence;
        ASSERT_TRUE(server_.send(image));
        ASSERT_TRUE(pump([&] {
            return !requests_.empty() && requests_.back().type == cb::message_type::spin_request;
        }));
        cb::message response;
        response.type = cb::message_type::spin_response;
        response.sequence = sequence;
        response.count = sequence;
        response.status = 'A';
        ASSERT_TRUE(server_.send(response));
        for (std::uint64_t id = 1; id <= sequence; ++id) {
            ASSERT_TRUE(server_.send(add_order(id)));
        }
        cb::message finished;
        finished.type = cb::message_type::spin_finished;
        finished.sequence = sequence;
        ASSERT_TRUE(server_.send(finished));
        ASSERT_TRUE(pump([&] { return parser_->live().book == book_state::complete; }))
            << "the unit never went live";
    }

    /// The sequences never go back, and each event says which book it shows: the spin's
    /// events (from snapshot_begin to snapshot_end) that of the spin's next sequence, each
    /// replayed or live order its own, instrument_recovered the unit's next sequence. So a
    /// consumer's book at each event is the exchange's as of its sequence (minus one for the
    /// spin's and the recovery), orders 1..N for the sequence N.
    void expect_sequences_of_the_books_shown() {
        ASSERT_FALSE(events_.all.empty());
        std::uint64_t last = 0;
        std::map<std::uint64_t, bool> orders; // the consumer's book: live order ids
        bool loading = false;
        bool recovered = false;
        for (signet::md::event const& e : events_.all) {
            EXPECT_GE(e.sequence, last) << "kind " << static_cast<int>(e.kind) << " went back";
            last = std::max(last, e.sequence);
            switch (e.kind) {
            case signet::md::event_kind::snapshot_begin:
                loading = true;
                break;
            case signet::md::event_kind::book_clear:
                orders.clear();
                break;
            case signet::md::event_kind::order_add:
                orders[e.order.id] = true;
                // A late join knows no symbol at snapshot_begin: the spin's adds are flagged.
                if ((e.flags & signet::md::event_flag::from_snapshot) == 0) {
                    // live or replayed: the book as of its own sequence
                    EXPECT_EQ(orders.size(), e.sequence) << "order " << e.order.id;
                }
                break;
            case signet::md::event_kind::snapshot_end:
                loading = false;
                EXPECT_EQ(orders.size() + 1, e.sequence) << "snapshot_end: the spin's next";
                break;
            case signet::md::event_kind::instrument_recovered:
                recovered = true;
                EXPECT_FALSE(loading) << "recovered inside the spin";
                EXPECT_EQ(orders.size() + 1, e.sequence) << "recovered: the unit's next";
                break;
            default:
                break;
            }
        }
        EXPECT_TRUE(recovered);
    }

    signet::test::tcp_listener listener_;
    tcp_setup setup_;
    recorded_events events_;
    std::unique_ptr<feed_parser> parser_;
    signet::net::unique_fd connection_;
    cb::session_server server_{cb::session_server_options{}};
    bytes received_;
    std::vector<cb::message> requests_;
};

TEST_F(SpinJoin, ASpinBehindTheBufferKeepsTheSequenceGoingForwardThroughItsReplay) {
    // Joined at 10: orders 10..19 buffered; the spin holds 1..12, 13..19 are replayed over it.
    for (std::uint32_t s = 10; s < 20; s += 2) {
        push(*parser_, block(1, s, {s, s + 1U}));
    }
    spin(12);
    push(*parser_, block(1, 20, {20})); // live
    expect_sequences_of_the_books_shown();
    EXPECT_EQ(parser_->protocol().counters().book, book_state::complete);
}

TEST_F(SpinJoin, ASpinAheadOfTheBufferIsRecoveredAtItsOwnNextSequence) {
    // Joined at 10, buffered 10..11; the spin holds 1..15 (the server was ahead): live 12..15
    // are covered, 16 is the first live order.
    push(*parser_, block(1, 10, {10, 11}));
    spin(15);
    push(*parser_, block(1, 12, {12, 13, 14, 15})); // covered by the spin
    push(*parser_, block(1, 16, {16}));
    expect_sequences_of_the_books_shown();
}

} // namespace
