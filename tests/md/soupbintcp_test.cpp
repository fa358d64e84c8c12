// SoupBinTCP 3.0: the codec (framing, the login packets) and a client and a server talking to
// each other in memory, on a clock the test moves: logins, data, heartbeats, timeouts,
// rejections, reconnection, and bad input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/soupbintcp.hpp>
#include <signet/md/nasdaq/soupbintcp_client.hpp>
#include <signet/md/nasdaq/soupbintcp_server.hpp>

namespace {

using namespace signet::md::nasdaq::soupbintcp;
using bytes = std::vector<std::byte>;

constexpr std::int64_t ms = 1'000'000;

bytes text(std::string const& s) {
    bytes b;
    for (char c : s) {
        b.push_back(static_cast<std::byte>(c));
    }
    return b;
}

bytes packet_bytes(char type, std::string const& payload) {
    bytes out(payload.size() + 3);
    EXPECT_EQ(write_packet(out, type, text(payload)), out.size());
    return out;
}

// What a TCP connection does: bytes from one side arrive at the other, here all at once or
// `chunk` bytes at a time; a receiver keeps what it did not use.
struct pipe {
    bytes pending;
    template <typename Receive>
    void deliver(std::span<std::byte const> sent, std::size_t chunk, Receive&& receive) {
        for (std::size_t at = 0; at < sent.size(); at += chunk) {
            std::size_t const n = std::min(chunk, sent.size() - at);
            pending.insert(pending.end(), sent.begin() + static_cast<std::ptrdiff_t>(at),
                           sent.begin() + static_cast<std::ptrdiff_t>(at + n));
            std::size_t const used = receive(std::span<std::byte const>(pending));
            pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(used));
        }
    }
};

struct conversation {
    explicit conversation(client_options c = {.username = "user", .password = "secret"},
                          server_options s = {.username = "user",
                                              .password = "secret",
                                              .session = "SESSION1"})
        : cl(c)
        , sv(s) {}

    void connect() {
        to_client.pending.clear();
        to_server.pending.clear();
        sv.start(now);
        EXPECT_TRUE(cl.start(now));
    }
    // Moves what each side has to send to the other, `chunk` bytes at a time.
    void pump(std::size_t chunk = 1 << 20) {
        for (int round = 0; round < 4; ++round) {
            bytes const c(cl.output().begin(), cl.output().end());
            cl.sent(c.size(), now);
            to_server.deliver(c, chunk, [&](std::span<std::byte const> b) {
                return sv.on_bytes(b, now, [&](std::span<std::byte const> p) {
                    unsequenced.emplace_back(reinterpret_cast<char const*>(p.data()), p.size());
                });
            });
            bytes const s(sv.output().begin(), sv.output().end());
            sv.sent(s.size(), now);
            to_client.deliver(s, chunk, [&](std::span<std::byte const> b) {
                return cl.on_bytes(b, now, [&](std::uint64_t seq, std::span<std::byte const> p) {
                    delivered.emplace_back(
                        seq, std::string(reinterpret_cast<char const*>(p.data()), p.size()));
                });
            });
        }
    }
    void login(std::uint64_t from = 1) {
        connect();
        pump();
        ASSERT_EQ(sv.state(), server_state::login_received);
        sv.accept(from, now);
        pump();
        ASSERT_EQ(cl.state(), client_state::logged_in);
    }

    client cl;
    server sv;
    pipe to_client;
    pipe to_server;
    std::int64_t now = 1'000 * ms;
    std::vector<std::pair<std::uint64_t, std::string>> delivered;
    std::vector<std::string> unsequenced;
};

TEST(SoupBinTcpCodec, FramesCompletePartialAndInvalidPackets) {
    bytes const p = packet_bytes(packet_type::sequenced_data, "hello");
    frame_result const whole = frame(p, 100);
    ASSERT_EQ(whole.status, frame_status::complete);
    EXPECT_EQ(whole.size, p.size());
    EXPECT_EQ(whole.p.type, 'S');
    EXPECT_EQ(whole.p.payload.size(), 5U);
    for (std::size_t n = 0; n < p.size(); ++n) {
        EXPECT_EQ(frame(std::span<std::byte const>(p.data(), n), 100).status, frame_status::partial)
            << n << " bytes";
    }
    bytes const zero = {std::byte{0}, std::byte{0}};
    EXPECT_EQ(frame(zero, 100).status, frame_status::invalid) << "a length must count the type";
    bytes const lying = {std::byte{0xFF}, std::byte{0xFF}, std::byte{'S'}};
    EXPECT_EQ(frame(lying, 100).status, frame_status::invalid) << "above the bound";
    EXPECT_EQ(frame(lying, 0xFFFF).status, frame_status::partial) << "within the bound";
}

TEST(SoupBinTcpCodec, LoginRequestFieldsArePaddedAndParsed) {
    outbox out(256);
    ASSERT_TRUE(out.append_login_request({make_alpha<username_length>("bob"),
                                          make_alpha<password_length>("pw"),
                                          make_alpha<session_length>(""), 42}));
    frame_result const f = frame(out.output(), 1024);
    ASSERT_EQ(f.status, frame_status::complete);
    EXPECT_EQ(f.size, length_prefix + 1 + login_request_length);
    std::string const wire(reinterpret_cast<char const*>(f.p.payload.data()), f.p.payload.size());
    // Alpha fields padded on the right, the number on the left: 6 + 10 + 10 + 20 bytes.
    EXPECT_EQ(wire, "bob   " + std::string("pw        ") + std::string(10, ' ') +
                        std::string(18, ' ') + "42");
    std::optional<login_request> const r = parse_login_request(f.p);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->username.text(), "bob");
    EXPECT_EQ(r->password.text(), "pw");
    EXPECT_EQ(r->session.text(), "");
    EXPECT_EQ(r->sequence, 42U);
}

TEST(SoupBinTcpCodec, BadNumbersAndShortPayloadsDoNotParse) {
    std::string const fields = "bob   pw        SESSION1  ";
    auto const request = [&](std::string const& number) {
        bytes const b = packet_bytes(packet_type::login_request, fields + number);
        return parse_login_request(frame(b, 1024).p);
    };
    EXPECT_EQ(request(std::string(20, ' '))->sequence, 0U) << "blank is 0";
    EXPECT_FALSE(request("                 1 2").has_value()) << "a space after a digit";
    EXPECT_FALSE(request("                12x4").has_value());
    EXPECT_FALSE(request("99999999999999999999").has_value()) << "above 2^64 - 1";
    EXPECT_EQ(request("18446744073709551615")->sequence, 18446744073709551615ULL);
    bytes const short_accept = packet_bytes(packet_type::login_accepted, "SESSION1");
    EXPECT_FALSE(parse_login_accepted(frame(short_accept, 1024).p).has_value());
    bytes const bad_reason = packet_bytes(packet_type::login_rejected, "X");
    EXPECT_FALSE(parse_login_rejected(frame(bad_reason, 1024).p).has_value());
}

TEST(SoupBinTcpSession, LoginThenSequencedDataInOrderAcrossSplitReads) {
    conversation c;
    c.login(1);
    EXPECT_EQ(c.cl.session(), "SESSION1");
    ASSERT_TRUE(c.sv.login().has_value());
    EXPECT_EQ(c.sv.login()->sequence, 1U);
    for (std::string m : {"one", "two", "three"}) {
        ASSERT_TRUE(c.sv.send_sequenced(text(m)));
    }
    c.pump(1); // one byte at a time: every packet arrives whole, once
    ASSERT_EQ(c.delivered.size(), 3U);
    EXPECT_EQ(c.delivered[0], (std::pair<std::uint64_t, std::string>{1, "one"}));
    EXPECT_EQ(c.delivered[2], (std::pair<std::uint64_t, std::string>{3, "three"}));
    EXPECT_EQ(c.cl.next_sequence(), 4U);
    ASSERT_TRUE(c.cl.send_unsequenced(text("order")));
    c.pump(3);
    EXPECT_EQ(c.unsequenced, std::vector<std::string>{"order"});
    c.sv.end_session();
    c.pump();
    EXPECT_EQ(c.cl.state(), client_state::ended);
    EXPECT_EQ(c.sv.close_reason(), server_close::end_of_session);
    EXPECT_FALSE(c.cl.start(c.now)) << "a session that ended is not joined again";
}

TEST(SoupBinTcpSession, HeartbeatsFlowAfterSilenceAndTimeoutsEndDeadLinks) {
    conversation c;
    c.login();
    c.now += 1'000 * ms; // a second of silence both ways
    c.cl.on_time(c.now);
    c.sv.on_time(c.now);
    c.pump();
    EXPECT_EQ(c.cl.counters().heartbeats_out, 1U);
    EXPECT_EQ(c.sv.heartbeats_in(), 1U);
    EXPECT_EQ(c.sv.heartbeats_out(), 1U);
    EXPECT_EQ(c.cl.counters().heartbeats_in, 1U);
    EXPECT_EQ(c.cl.state(), client_state::logged_in);
    EXPECT_GT(c.cl.next_deadline(), c.now);
    // The server goes quiet (a peer that stalls): the client gives up after server_timeout_ns.
    c.now += 5'000 * ms;
    c.cl.on_time(c.now);
    EXPECT_EQ(c.cl.state(), client_state::failed);
    EXPECT_EQ(c.cl.failure(), client_failure::server_silent);
    // And a silent client is dropped by the server.
    c.now += 15'000 * ms;
    c.sv.on_time(c.now);
    EXPECT_EQ(c.sv.close_reason(), server_close::client_silent);
}

TEST(SoupBinTcpSession, ReconnectResumesFromTheNextSequence) {
    conversation c;
    c.login();
    ASSERT_TRUE(c.sv.send_sequenced(text("a")));
    ASSERT_TRUE(c.sv.send_sequenced(text("b")));
    c.pump();
    c.cl.disconnected();
    EXPECT_EQ(c.cl.state(), client_state::idle);
    c.connect();
    c.pump();
    ASSERT_EQ(c.sv.state(), server_state::login_received);
    EXPECT_EQ(c.sv.login()->sequence, 3U) << "the next message wanted";
    EXPECT_EQ(c.sv.login()->session.text(), "SESSION1") << "the session accepted before";
    c.sv.accept(3, c.now);
    ASSERT_TRUE(c.sv.send_sequenced(text("c")));
    c.pump();
    ASSERT_EQ(c.delivered.size(), 3U);
    EXPECT_EQ(c.delivered[2].first, 3U);
    EXPECT_EQ(c.cl.counters().logins, 2U);
}

TEST(SoupBinTcpSession, RejectionsAreFinalAndSayWhy) {
    conversation wrong_password({.username = "user", .password = "guess"});
    wrong_password.connect();
    wrong_password.pump();
    EXPECT_EQ(wrong_password.cl.failure(), client_failure::not_authorized);
    EXPECT_EQ(wrong_password.sv.close_reason(), server_close::rejected);
    EXPECT_FALSE(wrong_password.cl.start(wrong_password.now));

    conversation other_session({.username = "user", .password = "secret", .session = "OTHER"});
    other_session.connect();
    other_session.pump();
    EXPECT_EQ(other_session.cl.failure(), client_failure::session_not_available);
}

TEST(SoupBinTcpSession, NoAnswerToTheLoginTimesOut) {
    client cl({.username = "user", .login_timeout_ns = 500 * ms});
    ASSERT_TRUE(cl.start(0));
    EXPECT_EQ(cl.next_deadline(), 500 * ms);
    cl.on_time(499 * ms);
    EXPECT_EQ(cl.state(), client_state::logging_in);
    cl.on_time(500 * ms);
    EXPECT_EQ(cl.failure(), client_failure::login_timeout);
    EXPECT_TRUE(cl.start(600 * ms)) << "a timeout is not final: a new connection may log in";

    server sv({.login_timeout_ns = 500 * ms});
    sv.start(0);
    sv.on_time(500 * ms);
    EXPECT_EQ(sv.close_reason(), server_close::login_timeout);
}

TEST(SoupBinTcpSession, LyingLengthsAndStrayPacketsCloseTheConnection) {
    {
        client cl({.max_length = 1000});
        ASSERT_TRUE(cl.start(0));
        bytes const lying = {std::byte{0x10}, std::byte{0x00}, std::byte{'S'}};
        EXPECT_EQ(cl.on_bytes(lying, 0, [](auto, auto) { FAIL(); }), 0U);
        EXPECT_EQ(cl.failure(), client_failure::invalid_frame);
    }
    {
        client cl({});
        ASSERT_TRUE(cl.start(0));
        bytes const early = packet_bytes(packet_type::sequenced_data, "x");
        (void)cl.on_bytes(early, 0, [](auto, auto) { FAIL() << "data before the login"; });
        EXPECT_EQ(cl.failure(), client_failure::unexpected_packet);
    }
    {
        server sv({});
        sv.start(0);
        bytes const from_a_server = packet_bytes(packet_type::sequenced_data, "x");
        (void)sv.on_bytes(from_a_server, 0, [](auto) { FAIL(); });
        EXPECT_EQ(sv.close_reason(), server_close::unexpected_packet);
    }
}

TEST(SoupBinTcpSession, AFullOutboxRefusesDataUntilSent) {
    conversation c({}, {.session = "S", .outbox_bytes = 64});
    c.login();
    std::string const big(40, 'x');
    EXPECT_TRUE(c.sv.send_sequenced(text(big)));
    EXPECT_FALSE(c.sv.send_sequenced(text(big))) << "no room: the caller waits for the socket";
    c.pump();
    EXPECT_TRUE(c.sv.send_sequenced(text(big)));
    c.pump();
    EXPECT_EQ(c.delivered.size(), 2U);
}

} // namespace
