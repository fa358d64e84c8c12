#pragma once

/// soupbintcp::server: the server side of one SoupBinTCP connection, as a state machine over
/// bytes and time (no sockets), for the services md_feed runs (GLIMPSE snapshots).
///
///   start(now)          a client connected: wait for its login request
///   on_bytes(b, now, f) handles every complete packet of b (f(payload) for unsequenced
///                       data), returns the bytes used (keep the rest)
///   login()             set once a login request with the right credentials arrived
///                       (state login_received): the caller answers accept(sequence), or
///                       reject(session_not_available); wrong credentials are rejected here
///   send_sequenced(p)   queues sequenced data (after accept)
///   end_session()       queues End of Session; the connection is done once it is sent
///   on_time(now)        a server heartbeat after heartbeat_ns of sending nothing; closed
///                       after login_timeout_ns without a login or client_timeout_ns of
///                       receiving nothing
///
/// Threading: none. Costs: no allocation after construction (the outbox, whose size bounds
/// what can wait to be sent: send_sequenced() returns false when it is full), no exceptions.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <signet/md/nasdaq/soupbintcp.hpp>

namespace signet::md::nasdaq::soupbintcp {

struct server_options {
    std::string_view username{}; ///< a login must carry these; an empty username accepts any
    std::string_view password{};
    std::string_view session{}; ///< the session served; a login may name it or leave it blank
    std::int64_t heartbeat_ns = 1'000'000'000;
    std::int64_t login_timeout_ns = 5'000'000'000;
    std::int64_t client_timeout_ns = 15'000'000'000;
    std::size_t max_length = 1024; ///< the bound on a client packet's length field
    std::size_t outbox_bytes = std::size_t{1} << 20;
};

enum class server_state : std::uint8_t {
    awaiting_login,
    login_received, ///< credentials good: accept() or reject()
    serving,
    closed, ///< see close_reason(); drop the connection once output() is sent
};

enum class server_close : std::uint8_t {
    none,
    rejected,          ///< login rejected (the answer is in output())
    login_timeout,     ///< no login request in time
    client_silent,     ///< nothing received for client_timeout_ns
    logout,            ///< the client logged out
    end_of_session,    ///< end_session() was called
    invalid_frame,     ///< a length of 0 or above max_length
    unexpected_packet, ///< a malformed login, a second login, or a type clients do not send
};

class server {
public:
    explicit server(server_options const& options);

    void start(std::int64_t now_ns) noexcept;
    template <typename Unsequenced>
    std::size_t on_bytes(std::span<std::byte const> bytes, std::int64_t now_ns,
                         Unsequenced&& unsequenced);
    /// The login request, in state login_received.
    [[nodiscard]] std::optional<login_request> const& login() const noexcept { return login_; }
    /// Answers the login: the next sequenced message sent will carry `sequence`.
    void accept(std::uint64_t sequence, std::int64_t now_ns) noexcept;
    void reject(reject_reason reason) noexcept;
    [[nodiscard]] bool send_sequenced(std::span<std::byte const> payload) noexcept;
    void end_session() noexcept;
    void on_time(std::int64_t now_ns) noexcept;
    [[nodiscard]] std::int64_t next_deadline() const noexcept;

    [[nodiscard]] std::span<std::byte const> output() const noexcept { return out_.output(); }
    void sent(std::size_t n, std::int64_t now_ns) noexcept;

    [[nodiscard]] server_state state() const noexcept { return state_; }
    [[nodiscard]] server_close close_reason() const noexcept { return close_; }
    /// The sequence number the next sequenced message carries.
    [[nodiscard]] std::uint64_t next_sequence() const noexcept { return next_sequence_; }
    [[nodiscard]] std::uint64_t heartbeats_in() const noexcept { return heartbeats_in_; }
    [[nodiscard]] std::uint64_t heartbeats_out() const noexcept { return heartbeats_out_; }

private:
    /// False when the connection closed.
    bool handle(packet const& p) noexcept;
    void close(server_close why) noexcept;

    server_options options_;
    outbox out_;
    std::optional<login_request> login_;
    server_state state_ = server_state::awaiting_login;
    server_close close_ = server_close::none;
    std::uint64_t next_sequence_ = 1;
    std::uint64_t heartbeats_in_ = 0;
    std::uint64_t heartbeats_out_ = 0;
    std::int64_t started_ns_ = 0;
    std::int64_t last_received_ns_ = 0;
    std::int64_t last_sent_ns_ = 0;
};

template <typename Unsequenced>
std::size_t server::on_bytes(std::span<std::byte const> bytes, std::int64_t now_ns,
                             Unsequenced&& unsequenced) {
    if (state_ == server_state::closed) {
        return 0;
    }
    bool invalid = false;
    std::size_t const used =
        for_each_packet(bytes, options_.max_length, invalid, [&](packet const& p) {
            last_received_ns_ = now_ns;
            if (p.type == packet_type::unsequenced_data && state_ == server_state::serving) {
                unsequenced(p.payload);
                return true;
            }
            return handle(p); // false: the connection closed
        });
    if (invalid) {
        close(server_close::invalid_frame);
    }
    return used;
}

} // namespace signet::md::nasdaq::soupbintcp
