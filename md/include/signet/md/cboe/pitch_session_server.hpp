#pragma once

/// pitch_session_server: the server side of one Cboe GRP or Spin TCP session (pitch_session.hpp
/// has the framing and the client), as a state machine over bytes and time (no sockets): the
/// connection feeds it what it receives and the time, and sends what output() holds.
///
///   start(now)            a connection was accepted: the client's login is awaited
///   on_bytes(b, now, f[, in_use])  handles every complete block of b: the login (accepted when
///                         its credentials are the options' — or any, when those are all
///                         spaces — else refused with 'N'; refused with 'B' when in_use(login)
///                         says another session has them; the session closes once a refusal
///                         is sent); f(message const&) for every message after an accepted login
///                         (gap and spin requests); returns the bytes used (keep the rest)
///   send(m)               queues a message (a response, a spin's messages) once logged in
///   on_time(now)          a heartbeat after heartbeat_ns of sending nothing; the session
///                         closes after client_timeout_ns of receiving nothing, and when no
///                         login was accepted login_timeout_ns after start(), whatever came
///
/// A block that lies closes the session (invalid_block), as does one that is not a session
/// block — unit or sequence not 0, longer than max_block_bytes, known from its first 8 bytes:
/// random bytes close it at once — and a first message that is not a login. The outbox grows
/// with what is queued (a spin is the unit's whole book): the server runs on a recovery
/// service's thread, never on a publisher's or a receiver's hot path.
///
/// Threading: none. Costs: an allocation when the outbox outgrows its capacity.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <signet/md/cboe/pitch_session.hpp>

namespace signet::md::cboe {

struct session_server_options {
    session_credentials credentials{}; ///< all spaces: any login is accepted
    std::int64_t heartbeat_ns = 1'000'000'000;
    std::int64_t client_timeout_ns = 15'000'000'000;
    std::int64_t login_timeout_ns = 5'000'000'000; ///< from start(): logged in by then, or closed
    std::size_t max_block_bytes = 4096; ///< a client's blocks (logins, requests) are far shorter
};

enum class server_state : std::uint8_t {
    awaiting_login,
    logged_in,
    closing, ///< a refusal is queued: close once output() is sent
    closed,  ///< see close_reason()
};

enum class server_close : std::uint8_t {
    none,
    refused,       ///< the login's credentials were not the options'
    in_use,        ///< the login's credentials are another session's (refused with 'B')
    login_timeout, ///< no login accepted within login_timeout_ns of start()
    not_a_login,   ///< the first message was something else
    client_silent, ///< nothing received for client_timeout_ns
    invalid_block, ///< a block that lies, or is not a session block
};

class session_server {
public:
    explicit session_server(session_server_options const& options);

    void start(std::int64_t now) noexcept;
    template <typename F>
    std::size_t on_bytes(std::span<std::byte const> bytes, std::int64_t now, F&& f) {
        return on_bytes(bytes, now, f, [](message const&) { return false; });
    }
    /// in_use(message const& login) -> bool: another session is logged in with its credentials.
    template <typename F, typename InUse>
    std::size_t on_bytes(std::span<std::byte const> bytes, std::int64_t now, F&& f, InUse&& in_use);
    /// Queues `m` once logged in; false otherwise.
    bool send(message const& m);
    void on_time(std::int64_t now);
    [[nodiscard]] std::span<std::byte const> output() const noexcept {
        return {outbox_.data() + sent_, outbox_.size() - sent_};
    }
    /// `n` bytes of output() were sent at `now`.
    void sent(std::size_t n, std::int64_t now) noexcept;

    [[nodiscard]] server_state state() const noexcept { return state_; }
    [[nodiscard]] server_close close_reason() const noexcept { return close_; }
    /// The accepted login's credentials (all spaces before).
    [[nodiscard]] session_credentials const& login() const noexcept { return login_; }

private:
    void close(server_close why) noexcept {
        state_ = server_state::closed;
        close_ = why;
    }
    void login(message const& m, bool in_use);
    /// Whether `head`, the start of a block (whole or not), can be a client's session block.
    [[nodiscard]] bool session_block(std::span<std::byte const> head) const noexcept;

    session_server_options options_;
    std::vector<std::byte> outbox_;
    std::size_t sent_ = 0;
    server_state state_ = server_state::awaiting_login;
    server_close close_ = server_close::none;
    session_credentials login_{};
    std::int64_t started_ = 0;
    std::int64_t last_received_ = 0;
    std::int64_t last_sent_ = 0;
};

template <typename F, typename InUse>
std::size_t session_server::on_bytes(std::span<std::byte const> bytes, std::int64_t now, F&& f,
                                     InUse&& in_use) {
    if (state_ != server_state::awaiting_login && state_ != server_state::logged_in) {
        return bytes.size(); // nothing more is read from a session that is ending
    }
    bool invalid = false;
    bool foreign = false; // a block that is not a session block: nothing after it is read
    std::size_t const used =
        for_each_block(bytes, invalid, [&](block_header const&, std::span<std::byte const> block) {
            foreign = foreign || !session_block(block);
            if (foreign) {
                return;
            }
            last_received_ = now;
            for_each_message(block, [&](std::span<std::byte const> message_bytes) {
                std::optional<message> const m = decode(message_bytes);
                if (!m) {
                    return; // a type of no meaning here: skipped by its length
                }
                if (state_ == server_state::awaiting_login) {
                    login(*m, m->type == message_type::login && in_use(*m));
                } else if (state_ == server_state::logged_in) {
                    f(*m);
                }
            });
        });
    if (invalid || foreign || !session_block(bytes.subspan(used))) {
        close(server_close::invalid_block);
    }
    return used;
}

} // namespace signet::md::cboe
