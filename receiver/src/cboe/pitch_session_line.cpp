#include "pitch_session_line.hpp"

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>

namespace signet::receiver::cboe {

namespace {

char const* describe(md::cboe::session_failure f) noexcept {
    switch (f) {
    case md::cboe::session_failure::rejected:
        return "login refused";
    case md::cboe::session_failure::login_timeout:
        return "no answer to the login";
    case md::cboe::session_failure::server_silent:
        return "the server went silent";
    case md::cboe::session_failure::invalid_block:
        return "a block that lies about its length or messages";
    case md::cboe::session_failure::unexpected:
        return "a message before the login was answered";
    case md::cboe::session_failure::none:
        break;
    }
    return "?";
}

} // namespace

pitch_session_line::pitch_session_line(std::string name, md::cboe::session_options const& options,
                                       std::unique_ptr<net::tcp_client> tcp, net::timer timer)
    : name_(std::move(name))
    , options_(options)
    , tcp_(std::move(tcp))
    , timer_(timer) {}

void pitch_session_line::want(bool wanted, clock::time_point now) {
    wanted_ = wanted;
    if (!wanted && tcp_->state() != net::tcp_state::idle) {
        tcp_->disconnect(now, false);
        session_.reset();
        was_ready_ = false;
    }
    // Idle, or waiting out a backoff: connect now (the owner needs the session now), at most
    // one such early connect per 100 ms (a server that stays down is not hammered).
    if (wanted && !rejected_ &&
        (tcp_->state() == net::tcp_state::idle ||
         (tcp_->state() == net::tcp_state::backoff &&
          now - forced_at_ >= std::chrono::milliseconds(100)))) {
        forced_at_ = now;
        tcp_->connect(now);
    }
}

bool pitch_session_line::send(md::cboe::message const& m, clock::time_point now) {
    if (!ready() || !session_->send(m, ns(now))) {
        return false;
    }
    after(now);
    return true;
}

void pitch_session_line::after(clock::time_point now) {
    std::int64_t const now_ns = ns(now);
    if (session_) {
        session_->on_time(now_ns);
        if (ready() && !was_ready_) {
            was_ready_ = true;
            ++counters_.logins;
            tcp_->reset_backoff();
        }
        if (session_->state() == md::cboe::session_state::failed) {
            md::cboe::session_failure const why = session_->failure();
            auto const bit = static_cast<std::uint8_t>(1U << static_cast<unsigned>(why));
            if (why == md::cboe::session_failure::rejected && session_->rejection() == 'B') {
                // Session in use: a connection of these credentials the server has not seen
                // close yet (a restart) holds it: retried after the backoff.
                ++counters_.login_rejected;
                if ((logged_causes_ & bit) == 0) {
                    SPDLOG_LOGGER_WARN(net::logger(),
                                       "{}: login refused (status 'B': session in use); "
                                       "retrying (logged once)",
                                       name_);
                }
            } else if (why == md::cboe::session_failure::rejected) {
                ++counters_.login_rejected;
                rejected_ = true;
                SPDLOG_LOGGER_ERROR(net::logger(),
                                    "{}: login refused (status '{}'): check the login key; not "
                                    "retried",
                                    name_, session_->rejection());
            } else {
                ++counters_.protocol_failures;
                if ((logged_causes_ & bit) == 0) {
                    SPDLOG_LOGGER_WARN(net::logger(),
                                       "{}: {}; reconnecting (logged once per cause)", name_,
                                       describe(why));
                }
            }
            logged_causes_ |= bit;
            session_.reset();
            ++losses_;
            was_ready_ = false;
            tcp_->disconnect(now, !rejected_ && wanted_);
        }
    }
    if (session_) {
        for (auto out = session_->output(); !out.empty(); out = session_->output()) {
            std::size_t const n = tcp_->send(out, now);
            session_->sent(n, now_ns);
            if (n == 0) {
                break;
            }
        }
    }
    // Wake for the connection's deadlines and, while connected, the heartbeats and timeouts.
    clock::time_point deadline = tcp_->next_deadline();
    if (session_) {
        deadline = std::min(deadline, now + std::chrono::milliseconds(250));
    }
    // Armed for that or earlier, and not passed: nothing to do (no re-arming per run of the
    // parser contract; an earlier wake-up only looks again).
    if (deadline != clock::time_point::max() && (deadline < armed_for_ || armed_for_ <= now)) {
        timer_.arm_at(deadline);
        armed_for_ = deadline;
    } else if (deadline == clock::time_point::max()) {
        armed_for_ = deadline;
    }
}

} // namespace signet::receiver::cboe
