#pragma once

// pitch_session_line: one TCP session of a pitch feed's recovery (the Gap Request Proxy, or a
// unit's Spin server) run by the feed's parser contract — a net::tcp_client (connect, backoff,
// reconnect) and an md::cboe::session_client (login, heartbeats, framing), a fresh session per
// connection. The owner wants it up (want()), sends requests once it is logged in and gets
// every other message the server sends (service()'s callback). Each failure is counted by
// cause and logged once per cause; a refused login is logged as an error and not retried (the
// credentials are wrong).
//
// Threading: the feed's parser contract. Costs: per service() at most one recv() and one send().

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <signet/md/cboe/pitch_session.hpp>
#include <signet/net/tcp_client.hpp>
#include <signet/net/timer.hpp>

namespace signet::receiver::cboe {

struct pitch_session_counters {
    std::uint64_t logins = 0;
    std::uint64_t login_rejected = 0;
    std::uint64_t protocol_failures = 0; ///< login timeout, silent server, invalid blocks
    std::uint64_t disconnects = 0;       ///< lost connections (the tcp_client counts causes)
};

class pitch_session_line {
public:
    using clock = std::chrono::steady_clock;

    pitch_session_line(std::string name, md::cboe::session_options const& options,
                       std::unique_ptr<net::tcp_client> tcp, net::timer timer);

    /// The session is wanted (connects now if idle or backing off) or not (disconnects).
    void want(bool wanted, clock::time_point now);
    /// Drives the connection; on_message(md::cboe::message const&) for each message a
    /// logged-in session receives (not the login answer, not heartbeats).
    template <typename F>
    void service(clock::time_point now, F&& on_message);
    /// Sends `m` if logged in; false otherwise.
    bool send(md::cboe::message const& m, clock::time_point now);
    [[nodiscard]] bool ready() const noexcept {
        return session_ && session_->state() == md::cboe::session_state::logged_in;
    }
    [[nodiscard]] bool rejected() const noexcept { return rejected_; }
    /// Called after the connection or the session was lost (the owner drops what it waited for).
    [[nodiscard]] bool lost_since(std::uint64_t& seen) const noexcept {
        bool const lost = seen != losses_;
        seen = losses_;
        return lost;
    }
    [[nodiscard]] pitch_session_counters const& counters() const noexcept { return counters_; }
    [[nodiscard]] net::tcp_client_stats const& tcp_stats() const noexcept { return tcp_->stats(); }

private:
    static std::int64_t ns(clock::time_point t) noexcept {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    }
    void after(clock::time_point now); // failures, output, the timer

    std::string name_;
    md::cboe::session_options options_;
    std::unique_ptr<net::tcp_client> tcp_;
    net::timer timer_;
    std::optional<md::cboe::session_client> session_;
    bool wanted_ = false;
    bool rejected_ = false;
    bool was_ready_ = false;
    std::uint64_t losses_ = 0;
    std::uint8_t logged_causes_ = 0; // bit per session_failure / disconnect, logged once
    clock::time_point armed_for_ = clock::time_point::max();
    clock::time_point forced_at_{}; // the last connect want() started
    pitch_session_counters counters_{};
};

template <typename F>
void pitch_session_line::service(clock::time_point now, F&& on_message) {
    if (wanted_ && !rejected_ && tcp_->state() == net::tcp_state::idle) {
        tcp_->connect(now);
    }
    std::int64_t const now_ns = ns(now);
    net::tcp_event const event = tcp_->service(now, [&](std::span<std::byte const> bytes) {
        if (!session_) {
            return bytes.size();
        }
        return session_->on_bytes(bytes, now_ns, on_message);
    });
    if (event == net::tcp_event::connected) {
        session_.emplace(options_);
        session_->start(now_ns);
    } else if (event == net::tcp_event::disconnected) {
        session_.reset();
        ++counters_.disconnects;
        ++losses_;
        was_ready_ = false;
    }
    after(now);
}

} // namespace signet::receiver::cboe
