#pragma once

/// pitch_session: the TCP sessions of Cboe's PITCH recovery — the Gap Request Proxy (GRP) and the
/// Spin server — as byte framing and a client state machine over bytes and time (no sockets).
/// Both speak the same way (docs/pitch.md): every TCP block is a Sequenced Unit Header with unit
/// 0 and sequence 0 followed by its messages; a client logs in first (Login: SessionSubId,
/// Username, Password) and the server answers Login Response ('A' accepted; 'N' not
/// authorized, 'B' session in use, 'S' invalid session: it then closes); each side sends a
/// heartbeat (an empty block) after a second of silence.
///
///   session_client::start(now)        connected: queues the login
///   session_client::on_bytes(b, now, f)  handles every complete block of b: the login answer,
///                                     heartbeats; f(message const&) for every other message
///                                     once logged in (gap responses, spin messages); returns
///                                     the bytes used (keep the rest)
///   session_client::send(m, now)      queues a message (a gap or spin request) once logged in
///   session_client::on_time(now)      a heartbeat after heartbeat_ns of sending nothing; fails
///                                     after login_timeout_ns without a login answer or
///                                     server_timeout_ns of silence
///
/// A block that lies (a length below 8, a message that does not fit, a count that does not
/// hold) fails the session: the framing cannot be trusted past it.
///
/// Threading: none. Costs: the outbox is allocated at construction; no allocation, exception
/// or logging after it: failures are states.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <signet/md/cboe/pitch.hpp>

namespace signet::md::cboe {

/// A session's login: SessionSubId (4), Username (4), Password (10), space padded.
struct session_credentials {
    std::array<char, 4> session_sub_id{' ', ' ', ' ', ' '};
    std::array<char, 4> username{' ', ' ', ' ', ' '};
    std::array<char, 10> password{' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

    /// From text (cut to each field's length, space padded).
    static session_credentials of(std::string_view session_sub_id, std::string_view username,
                                  std::string_view password) noexcept;
    friend bool operator==(session_credentials const&, session_credentials const&) = default;
};

/// Appends one block (unit 0, sequence 0) carrying `m` to `out`; false when encode() refuses m.
bool append_session_block(std::vector<std::byte>& out, message const& m);
/// Appends a heartbeat block (no messages).
void append_heartbeat(std::vector<std::byte>& out);

/// Walks the complete blocks at the start of `bytes`: f(block_header const&, std::span<std::byte
/// const> block) for each; stops at a partial block. Returns the bytes of the blocks walked;
/// sets `invalid` (and stops) at a block that does not validate.
template <typename F>
std::size_t for_each_block(std::span<std::byte const> bytes, bool& invalid, F&& f) {
    std::size_t used = 0;
    invalid = false;
    while (bytes.size() - used >= 2) {
        std::size_t const length =
            static_cast<std::size_t>(bytes[used]) | static_cast<std::size_t>(bytes[used + 1]) << 8;
        if (length < header_size) {
            invalid = true; // a lie, known as soon as the length is there
            break;
        }
        if (bytes.size() - used < length) {
            break; // the rest of the block is still on its way
        }
        std::span<std::byte const> const block = bytes.subspan(used, length);
        std::optional<block_check> const check = validate_block(block);
        if (!check) {
            invalid = true;
            break;
        }
        f(check->header, block);
        used += length;
    }
    return used;
}

struct session_options {
    session_credentials credentials{};
    std::int64_t heartbeat_ns = 1'000'000'000;
    std::int64_t login_timeout_ns = 5'000'000'000;
    std::int64_t server_timeout_ns = 5'000'000'000;
};

enum class session_state : std::uint8_t {
    idle,       ///< not started, or the connection was lost (start() again)
    logging_in, ///< the login is queued or sent
    logged_in,
    failed, ///< see failure(); rejected: for good (but 'B'), else start() again on a new connection
};

enum class session_failure : std::uint8_t {
    none,
    rejected,      ///< Login Response other than 'A' (rejection() says which): for good, but
                   ///< 'B' (session in use: another connection of these credentials)
    login_timeout, ///< no answer to the login in time
    server_silent, ///< nothing received for server_timeout_ns
    invalid_block, ///< a block that lies about its length or messages
    unexpected,    ///< a message before the login was answered
};

class session_client {
public:
    explicit session_client(session_options const& options);

    void start(std::int64_t now) noexcept;
    template <typename F>
    std::size_t on_bytes(std::span<std::byte const> bytes, std::int64_t now, F&& f);
    /// Queues `m` once logged in; false otherwise (or when the outbox is full).
    bool send(message const& m, std::int64_t now) noexcept;
    void on_time(std::int64_t now) noexcept;
    /// What to send, and how much of it the socket took.
    [[nodiscard]] std::span<std::byte const> output() const noexcept {
        return {outbox_.data() + sent_, outbox_.size() - sent_};
    }
    void sent(std::size_t n, std::int64_t now) noexcept;

    [[nodiscard]] session_state state() const noexcept { return state_; }
    [[nodiscard]] session_failure failure() const noexcept { return failure_; }
    /// The Login Response status of a rejection ('N', 'B', 'S', ...).
    [[nodiscard]] char rejection() const noexcept { return rejection_; }

private:
    void fail(session_failure why) noexcept {
        state_ = session_state::failed;
        failure_ = why;
    }
    bool queue(message const& m) noexcept;
    void handle(message const& m, std::int64_t now, auto& f);

    session_options options_;
    std::vector<std::byte> outbox_;
    std::size_t sent_ = 0;
    session_state state_ = session_state::idle;
    session_failure failure_ = session_failure::none;
    char rejection_ = 0;
    std::int64_t started_ = 0;
    std::int64_t last_received_ = 0;
    std::int64_t last_sent_ = 0;
};

template <typename F>
std::size_t session_client::on_bytes(std::span<std::byte const> bytes, std::int64_t now, F&& f) {
    if (state_ != session_state::logging_in && state_ != session_state::logged_in) {
        return bytes.size(); // nothing more is read from a failed session
    }
    bool invalid = false;
    std::size_t const used =
        for_each_block(bytes, invalid, [&](block_header const&, std::span<std::byte const> block) {
            last_received_ = now;
            for_each_message(block, [&](std::span<std::byte const> bytes_of) {
                if (state_ == session_state::failed) {
                    return;
                }
                if (std::optional<message> const m = decode(bytes_of)) {
                    handle(*m, now, f);
                }
            });
        });
    if (invalid) {
        fail(session_failure::invalid_block);
    }
    return used;
}

void session_client::handle(message const& m, std::int64_t now, auto& f) {
    if (state_ == session_state::logging_in) {
        if (m.type != message_type::login_response) {
            fail(session_failure::unexpected);
            return;
        }
        if (m.status != 'A') {
            rejection_ = m.status;
            fail(session_failure::rejected);
            return;
        }
        state_ = session_state::logged_in;
        last_received_ = now;
        return;
    }
    f(m);
}

} // namespace signet::md::cboe
