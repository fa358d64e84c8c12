#pragma once

/// soupbintcp::client: the client side of one SoupBinTCP connection, as a state machine over
/// bytes and time (no sockets): the TCP line feeds it what it receives and the time, and sends
/// what output() holds.
///
///   start(now)          connected: queues the login request (session, next sequence)
///   on_bytes(b, now, f) handles every complete packet of b, calls f(sequence, payload) for each
///                       sequenced data packet, returns the bytes used (keep the rest: a
///                       partial packet, and append what arrives next)
///   on_time(now)        a client heartbeat after heartbeat_ns of sending nothing; the
///                       connection fails after login_timeout_ns without an answer to the login,
///                       or server_timeout_ns of receiving nothing once logged in
///
/// After a failure or a lost connection, start() on a new connection logs in again with the
/// session the server accepted and the next sequence number: nothing is delivered twice and
/// nothing is skipped. End of session (Z) and a rejected login end it for good (state ended or
/// failed; start() is refused).
///
/// Threading: none (one connection, the line's contract). Costs: no allocation after
/// construction (the outbox), no exceptions, no logging: failures are states and counters.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <signet/md/nasdaq/soupbintcp.hpp>

namespace signet::md::nasdaq::soupbintcp {

struct client_options {
    std::string_view username{};
    std::string_view password{};
    std::string_view session{};       ///< empty: the server's current session
    std::uint64_t first_sequence = 1; ///< the first sequenced message wanted
    std::int64_t heartbeat_ns = 1'000'000'000;
    std::int64_t login_timeout_ns = 5'000'000'000;
    std::int64_t server_timeout_ns = 5'000'000'000; ///< silence that means a dead link
    std::size_t max_length = 65535;                 ///< the bound on a packet's length field
    std::size_t outbox_bytes = 4096;
};

enum class client_state : std::uint8_t {
    idle,       ///< not started, or the connection was lost (start() again)
    logging_in, ///< login request queued or sent
    logged_in,  ///< sequenced data flows
    ended,      ///< end of session received, or logged out
    failed,     ///< see failure(); rejected: for good, else start() again on a new connection
};

enum class client_failure : std::uint8_t {
    none,
    not_authorized,        ///< login rejected: bad username or password (for good)
    session_not_available, ///< login rejected: no such session (for good)
    login_timeout,         ///< no answer to the login in time
    server_silent,         ///< nothing received for server_timeout_ns
    invalid_frame,         ///< a length of 0 or above max_length
    malformed_packet,      ///< a login answer whose fields do not parse
    unexpected_packet,     ///< sequenced data before the login was accepted, or a packet type
                           ///< a server does not send
};

struct client_counters {
    std::uint64_t sequenced = 0;     ///< sequenced data packets delivered
    std::uint64_t heartbeats_in = 0; ///< server heartbeats
    std::uint64_t heartbeats_out = 0;
    std::uint64_t debug = 0; ///< debug packets (ignored)
    std::uint64_t logins = 0;
};

class client {
public:
    explicit client(client_options const& options);

    /// A new connection is up. False (nothing queued) in state ended, or failed by a rejection.
    bool start(std::int64_t now_ns) noexcept;
    /// The connection is gone: idle, to start() again (ended and failed states stay).
    void disconnected() noexcept;
    template <typename Deliver>
    std::size_t on_bytes(std::span<std::byte const> bytes, std::int64_t now_ns, Deliver&& deliver);
    void on_time(std::int64_t now_ns) noexcept;
    /// When on_time() has something to do next; 0 when nothing is pending.
    [[nodiscard]] std::int64_t next_deadline() const noexcept;
    /// Queues a logout request; the state becomes ended.
    void logout() noexcept;
    /// Queues unsequenced data (logged in only); false if it does not fit or not logged in.
    [[nodiscard]] bool send_unsequenced(std::span<std::byte const> payload) noexcept;

    [[nodiscard]] std::span<std::byte const> output() const noexcept { return out_.output(); }
    void sent(std::size_t n, std::int64_t now_ns) noexcept;

    [[nodiscard]] client_state state() const noexcept { return state_; }
    [[nodiscard]] client_failure failure() const noexcept { return failure_; }
    /// The session the server accepted (empty before the first login).
    [[nodiscard]] std::string_view session() const noexcept { return session_.text(); }
    /// The sequence number of the next sequenced message.
    [[nodiscard]] std::uint64_t next_sequence() const noexcept { return next_sequence_; }
    [[nodiscard]] client_counters const& counters() const noexcept { return counters_; }

private:
    enum class handled : std::uint8_t { done, deliver, stop };
    handled handle(packet const& p) noexcept;
    void fail(client_failure why) noexcept;

    client_options options_;
    outbox out_;
    alpha<username_length> username_;
    alpha<password_length> password_;
    alpha<session_length> session_;
    std::uint64_t next_sequence_;
    client_state state_ = client_state::idle;
    client_failure failure_ = client_failure::none;
    client_counters counters_{};
    std::int64_t login_sent_ns_ = 0;
    std::int64_t last_received_ns_ = 0;
    std::int64_t last_sent_ns_ = 0;
};

template <typename Deliver>
std::size_t client::on_bytes(std::span<std::byte const> bytes, std::int64_t now_ns,
                             Deliver&& deliver) {
    if (state_ != client_state::logging_in && state_ != client_state::logged_in) {
        return 0;
    }
    bool invalid = false;
    std::size_t const used =
        for_each_packet(bytes, options_.max_length, invalid, [&](packet const& p) {
            last_received_ns_ = now_ns;
            handled const h = handle(p); // stop: the state left logging_in / logged_in
            if (h == handled::deliver) {
                deliver(next_sequence_ - 1, p.payload);
            }
            return h != handled::stop;
        });
    if (invalid) {
        fail(client_failure::invalid_frame);
    }
    return used;
}

} // namespace signet::md::nasdaq::soupbintcp
