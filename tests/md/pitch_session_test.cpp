// md::cboe::session_client and session_server: the GRP and Spin sessions' login, heartbeats,
// timeouts and framing on both sides, over bytes and an injected clock (no sockets). The blocks are
// written out here from the spec's layouts (docs/pitch.md); the real GRP and Spin captures are read
// by pitch_realdata_test.cpp.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cboe/pitch_session.hpp>
#include <signet/md/cboe/pitch_session_server.hpp>

namespace {

namespace cb = signet::md::cboe;
namespace mt = cb::message_type;
using bytes = std::vector<std::byte>;

bytes hex(std::string_view text) {
    auto const nibble = [](char c) {
        return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    };
    bytes out;
    int high = -1;
    for (char const c : text) {
        if (c == ' ') {
            continue;
        }
        if (high < 0) {
            high = nibble(c);
        } else {
            out.push_back(static_cast<std::byte>(high << 4 | nibble(c)));
            high = -1;
        }
    }
    return out;
}

constexpr std::int64_t second = 1'000'000'000;

cb::session_client captured_client() {
    return cb::session_client({.credentials = cb::session_credentials::of("0001", "USER", "pw"),
                               .heartbeat_ns = second,
                               .login_timeout_ns = 5 * second,
                               .server_timeout_ns = 5 * second});
}

TEST(PitchSession, WritesItsLoginAndTakesTheAnswers) {
    cb::session_client c = captured_client();
    c.start(0);
    EXPECT_EQ(bytes(c.output().begin(), c.output().end()),
              hex("1e00010000000000 1601 30303031 55534552 2020 70772020202020202020"));
    c.sent(c.output().size(), 0);
    std::vector<cb::message> got;
    auto const take = [&](bytes const& b, std::int64_t now) {
        return c.on_bytes(b, now, [&](cb::message const& m) { got.push_back(m); });
    };
    bytes const accepted = hex("0b00010000000000 030241");
    EXPECT_EQ(take(accepted, 1), accepted.size());
    EXPECT_EQ(c.state(), cb::session_state::logged_in);
    EXPECT_TRUE(got.empty()); // the login answer is the session's own
    // A gap request goes out in its block; a heartbeat and the response come back.
    cb::message request;
    request.type = mt::gap_request;
    request.unit = 2;
    request.sequence = 77;
    request.count = 3;
    ASSERT_TRUE(c.send(request, 2));
    EXPECT_EQ(bytes(c.output().begin(), c.output().end()),
              hex("1100010000000000 0903024d0000000300"));
    c.sent(c.output().size(), 2);
    bytes stream = hex("0800000000000000 1200010000000000 0a04024d000000030041");
    EXPECT_EQ(take(stream, 3), stream.size());
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0].type, mt::gap_response);
    EXPECT_EQ(got[0].status, 'A');
    // A block of two messages: Time and Spin Finished.
    got.clear();
    bytes const finished = hex("1400020000000000 0620409c0000 0683f4010000");
    EXPECT_EQ(take(finished, 4), finished.size());
    ASSERT_EQ(got.size(), 2U);
    EXPECT_EQ(got[0].time, 40000U);
    EXPECT_EQ(got[1].type, mt::spin_finished);
    EXPECT_EQ(got[1].sequence, 500U);
}

TEST(PitchSession, APartialBlockWaitsForTheRest) {
    cb::session_client c = captured_client();
    c.start(0);
    bytes const accepted = hex("0b00010000000000 030241");
    EXPECT_EQ(c.on_bytes(std::span(accepted).first(5), 0, [](cb::message const&) {}), 0U);
    EXPECT_EQ(c.state(), cb::session_state::logging_in);
    EXPECT_EQ(c.on_bytes(accepted, 0, [](cb::message const&) {}), accepted.size());
    EXPECT_EQ(c.state(), cb::session_state::logged_in);
}

TEST(PitchSession, ARefusedLoginIsFinal) {
    cb::session_client c = captured_client();
    c.start(0);
    c.sent(c.output().size(), 0);
    bytes const refused = hex("0b00010000000000 03024e");
    (void)c.on_bytes(refused, 0, [](cb::message const&) {});
    EXPECT_EQ(c.state(), cb::session_state::failed);
    EXPECT_EQ(c.failure(), cb::session_failure::rejected);
    EXPECT_EQ(c.rejection(), 'N');
    c.start(1); // the credentials are wrong: no new login
    EXPECT_EQ(c.state(), cb::session_state::failed);
    EXPECT_TRUE(c.output().empty());
}

TEST(PitchSession, ASessionInUseIsTriedAgain) {
    // 'B': another connection holds the session (one the server has not seen close yet).
    cb::session_client c = captured_client();
    c.start(0);
    c.sent(c.output().size(), 0);
    (void)c.on_bytes(hex("0b00010000000000 030242"), 0, [](cb::message const&) {});
    EXPECT_EQ(c.failure(), cb::session_failure::rejected);
    EXPECT_EQ(c.rejection(), 'B');
    c.start(1); // on a new connection: the login again
    EXPECT_EQ(c.state(), cb::session_state::logging_in);
    EXPECT_EQ(bytes(c.output().begin(), c.output().end()),
              hex("1e00010000000000 1601 30303031 55534552 2020 70772020202020202020"));
}

TEST(PitchSession, HeartbeatsAndTimeoutsFollowTheClock) {
    cb::session_client c = captured_client();
    c.start(0);
    c.sent(c.output().size(), 0);
    c.on_time(5 * second + 1); // no answer to the login
    EXPECT_EQ(c.failure(), cb::session_failure::login_timeout);

    cb::session_client d = captured_client();
    d.start(0);
    d.sent(d.output().size(), 0);
    (void)d.on_bytes(hex("0b00010000000000 030241"), 0, [](cb::message const&) {});
    d.on_time(second - 1);
    EXPECT_TRUE(d.output().empty());
    d.on_time(second); // a second of sending nothing: a heartbeat
    EXPECT_EQ(bytes(d.output().begin(), d.output().end()), hex("0800000000000000"));
    d.sent(d.output().size(), second);
    (void)d.on_bytes(hex("0800000000000000"), 4 * second, [](cb::message const&) {});
    d.on_time(9 * second); // the server's heartbeat at 4 s: still within 5 s
    EXPECT_EQ(d.state(), cb::session_state::logged_in);
    d.on_time(9 * second + 1);
    EXPECT_EQ(d.failure(), cb::session_failure::server_silent);
}

TEST(PitchSession, ABlockThatLiesFailsTheSession) {
    for (std::string_view const lie : {
             "0400000000000000",        // a length below the header's
             "0b00020000000000 030241", // two messages claimed, one there
             "0b00010000000000 0a0241", // a message longer than its block
         }) {
        cb::session_client c = captured_client();
        c.start(0);
        (void)c.on_bytes(hex(lie), 0, [](cb::message const&) {});
        EXPECT_EQ(c.failure(), cb::session_failure::invalid_block) << lie;
    }
    cb::session_client c = captured_client();
    c.start(0);
    cb::message request;
    request.type = mt::gap_request;
    EXPECT_FALSE(c.send(request, 0)); // not logged in yet
    (void)c.on_bytes(hex("0e00010000000000 0680f4010000"), 0, [](cb::message const&) {});
    EXPECT_EQ(c.failure(), cb::session_failure::unexpected); // data before the login answer
}

cb::session_server server(std::string_view password = "pw") {
    return cb::session_server({.credentials = cb::session_credentials::of("0001", "USER", password),
                               .heartbeat_ns = second,
                               .client_timeout_ns = 15 * second});
}

/// A client's login block with these credentials.
bytes login_block(std::string_view password) {
    cb::session_client c({.credentials = cb::session_credentials::of("0001", "USER", password)});
    c.start(0);
    return bytes(c.output().begin(), c.output().end());
}

TEST(PitchSessionServer, AcceptsTheLoginAndHandsOverRequests) {
    cb::session_server s = server();
    s.start(0);
    bytes stream = login_block("pw");
    bytes const request = hex("1100010000000000 0903024d0000000300");
    stream.insert(stream.end(), request.begin(), request.end());
    std::vector<cb::message> got;
    EXPECT_EQ(s.on_bytes(stream, 1, [&](cb::message const& m) { got.push_back(m); }),
              stream.size());
    EXPECT_EQ(s.state(), cb::server_state::logged_in);
    EXPECT_EQ(bytes(s.output().begin(), s.output().end()), hex("0b00010000000000 030241"));
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0].type, mt::gap_request);
    EXPECT_EQ(got[0].sequence, 77U);
    s.sent(s.output().size(), 1);
    cb::message response = got[0];
    response.type = mt::gap_response;
    response.status = 'A';
    ASSERT_TRUE(s.send(response));
    EXPECT_EQ(bytes(s.output().begin(), s.output().end()),
              hex("1200010000000000 0a04024d000000030041"));
    s.sent(s.output().size(), 2);
    s.on_time(2 + second - 1);
    EXPECT_TRUE(s.output().empty());
    s.on_time(2 + second); // a second of sending nothing: a heartbeat
    EXPECT_EQ(bytes(s.output().begin(), s.output().end()), hex("0800000000000000"));
    s.sent(s.output().size(), 2 + second);
    s.on_time(1 + 15 * second); // the client's last block came at 1
    EXPECT_EQ(s.state(), cb::server_state::logged_in);
    s.on_time(2 + 15 * second);
    EXPECT_EQ(s.state(), cb::server_state::closed);
    EXPECT_EQ(s.close_reason(), cb::server_close::client_silent);
}

TEST(PitchSessionServer, RefusesOtherCredentialsAndClosesOnceTheRefusalIsSent) {
    cb::session_server s = server();
    s.start(0);
    bytes const login = login_block("guess");
    std::vector<cb::message> got;
    (void)s.on_bytes(login, 0, [&](cb::message const& m) { got.push_back(m); });
    EXPECT_EQ(s.state(), cb::server_state::closing);
    EXPECT_EQ(bytes(s.output().begin(), s.output().end()), hex("0b00010000000000 03024e"));
    EXPECT_FALSE(s.send(cb::message{}));
    s.sent(3, 0); // part of it
    EXPECT_EQ(s.state(), cb::server_state::closing);
    s.sent(s.output().size(), 0);
    EXPECT_EQ(s.state(), cb::server_state::closed);
    EXPECT_EQ(s.close_reason(), cb::server_close::refused);
    EXPECT_TRUE(got.empty());
    // Credentials of all spaces accept any login.
    cb::session_server any({});
    any.start(0);
    (void)any.on_bytes(login, 0, [](cb::message const&) {});
    EXPECT_EQ(any.state(), cb::server_state::logged_in);
}

TEST(PitchSessionServer, ClosesOnWhatIsNotASession) {
    cb::session_server first = server();
    first.start(0);
    (void)first.on_bytes(hex("1100010000000000 0903024d0000000300"), 0, [](cb::message const&) {});
    EXPECT_EQ(first.close_reason(), cb::server_close::not_a_login);
    cb::session_server lying = server();
    lying.start(0);
    (void)lying.on_bytes(hex("0500"), 0, [](cb::message const&) {});
    EXPECT_EQ(lying.close_reason(), cb::server_close::invalid_block);
    cb::session_server partial = server();
    partial.start(0);
    bytes const login = login_block("pw");
    EXPECT_EQ(partial.on_bytes(std::span(login).first(10), 0, [](cb::message const&) {}), 0U);
    EXPECT_EQ(partial.state(), cb::server_state::awaiting_login);
}

TEST(PitchSessionServer, ALoginIsDueWithinTheDeadlineWhateverTheClientSends) {
    // Heartbeats reset the silence timeout, never the login deadline (5 s from start()).
    cb::session_server waiting = server();
    cb::session_server logging_in = server();
    waiting.start(0);
    logging_in.start(0);
    bytes const heartbeat = hex("0800000000000000");
    for (std::int64_t now = 0; now <= 5 * second; now += second / 2) {
        EXPECT_EQ(waiting.on_bytes(heartbeat, now, [](cb::message const&) {}), heartbeat.size());
        waiting.on_time(now);
        EXPECT_EQ(waiting.state(), cb::server_state::awaiting_login) << now;
        if (now == 4 * second) {
            (void)logging_in.on_bytes(login_block("pw"), now, [](cb::message const&) {});
            logging_in.sent(logging_in.output().size(), now);
        }
        (void)logging_in.on_bytes(heartbeat, now, [](cb::message const&) {});
        logging_in.on_time(now);
    }
    waiting.on_time(5 * second + 1);
    EXPECT_EQ(waiting.state(), cb::server_state::closed);
    EXPECT_EQ(waiting.close_reason(), cb::server_close::login_timeout);
    EXPECT_TRUE(waiting.output().empty()); // nothing is said to it
    logging_in.on_time(5 * second + 1);
    EXPECT_EQ(logging_in.state(), cb::server_state::logged_in); // logged in at 4 s: in time
    EXPECT_EQ(logging_in.login(), cb::session_credentials::of("0001", "USER", "pw"));
}

TEST(PitchSessionServer, BytesThatAreNotASessionBlockCloseAtOnce) {
    // A session block has unit 0, sequence 0 and a client's length: known from its first 8
    // bytes (2 for the length), never after a timeout.
    for (std::string_view const garbage : {
             "ff7f",                   // 32767 bytes: longer than any client block
             "1000 0001 00000000",     // unit 1
             "1000 0000 07000000",     // sequence 7
             "0800000000000000 ff7f3", // a heartbeat, then garbage
         }) {
        cb::session_server s = server();
        s.start(0);
        (void)s.on_bytes(hex(garbage), 0, [](cb::message const&) {});
        EXPECT_EQ(s.state(), cb::server_state::closed) << garbage;
        EXPECT_EQ(s.close_reason(), cb::server_close::invalid_block) << garbage;
    }
    cb::session_server partial = server();
    partial.start(0);
    EXPECT_EQ(partial.on_bytes(hex("1e00 0100"), 0, [](cb::message const&) {}), 0U);
    EXPECT_EQ(partial.state(), cb::server_state::awaiting_login); // a login's start, so far
}

TEST(PitchSessionServer, RefusesALoginWhoseSessionIsInUseWithB) {
    cb::session_server s = server();
    s.start(0);
    std::vector<cb::message> asked;
    (void)s.on_bytes(
        login_block("pw"), 0, [](cb::message const&) {},
        [&](cb::message const& login) {
            asked.push_back(login);
            return true;
        });
    ASSERT_EQ(asked.size(), 1U);
    EXPECT_EQ(asked[0].type, mt::login);
    EXPECT_EQ(s.state(), cb::server_state::closing);
    EXPECT_EQ(bytes(s.output().begin(), s.output().end()), hex("0b00010000000000 030242"));
    s.sent(s.output().size(), 0);
    EXPECT_EQ(s.state(), cb::server_state::closed);
    EXPECT_EQ(s.close_reason(), cb::server_close::in_use);
    // Wrong credentials are 'N' whether or not the session is in use.
    cb::session_server wrong = server();
    wrong.start(0);
    (void)wrong.on_bytes(
        login_block("guess"), 0, [](cb::message const&) {},
        [](cb::message const&) { return true; });
    EXPECT_EQ(bytes(wrong.output().begin(), wrong.output().end()), hex("0b00010000000000 03024e"));
}

} // namespace
