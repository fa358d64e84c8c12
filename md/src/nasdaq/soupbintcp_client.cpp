#include <algorithm>

#include <signet/md/nasdaq/soupbintcp_client.hpp>

namespace signet::md::nasdaq::soupbintcp {

namespace {

std::int64_t earliest(std::int64_t a, std::int64_t b) noexcept {
    return a == 0 ? b : b == 0 ? a : std::min(a, b);
}

} // namespace

client::client(client_options const& options)
    : options_(options)
    , out_(options.outbox_bytes)
    , username_(make_alpha<username_length>(options.username))
    , password_(make_alpha<password_length>(options.password))
    , session_(make_alpha<session_length>(options.session))
    , next_sequence_(options.first_sequence) {}

bool client::start(std::int64_t now_ns) noexcept {
    bool const rejected = failure_ == client_failure::not_authorized ||
                          failure_ == client_failure::session_not_available;
    if (state_ == client_state::ended || rejected) {
        return false;
    }
    out_.clear(); // what the last connection did not send is void
    if (!out_.append_login_request({username_, password_, session_, next_sequence_})) {
        return false; // an outbox smaller than a login request: a configuration error
    }
    state_ = client_state::logging_in;
    failure_ = client_failure::none;
    login_sent_ns_ = last_sent_ns_ = last_received_ns_ = now_ns;
    ++counters_.logins;
    return true;
}

void client::disconnected() noexcept {
    if (state_ == client_state::logging_in || state_ == client_state::logged_in) {
        state_ = client_state::idle;
    }
    out_.clear();
}

void client::fail(client_failure why) noexcept {
    state_ = client_state::failed;
    failure_ = why;
}

client::handled client::handle(packet const& p) noexcept {
    switch (p.type) {
    case packet_type::login_accepted: {
        std::optional<login_accepted> const accepted = parse_login_accepted(p);
        if (state_ != client_state::logging_in) {
            fail(client_failure::unexpected_packet);
            return handled::stop;
        }
        if (!accepted) {
            fail(client_failure::malformed_packet);
            return handled::stop;
        }
        session_ = accepted->session;
        // The server says which message comes next; a server that starts later than asked
        // leaves a gap the caller sees in the sequence numbers it is given.
        next_sequence_ = accepted->sequence;
        state_ = client_state::logged_in;
        return handled::done;
    }
    case packet_type::login_rejected: {
        std::optional<reject_reason> const reason = parse_login_rejected(p);
        if (!reason) {
            fail(client_failure::malformed_packet);
        } else {
            fail(*reason == reject_reason::not_authorized ? client_failure::not_authorized
                                                          : client_failure::session_not_available);
        }
        return handled::stop;
    }
    case packet_type::sequenced_data:
        if (state_ != client_state::logged_in) {
            fail(client_failure::unexpected_packet);
            return handled::stop;
        }
        ++next_sequence_;
        ++counters_.sequenced;
        return handled::deliver;
    case packet_type::server_heartbeat:
        ++counters_.heartbeats_in;
        return handled::done;
    case packet_type::debug:
        ++counters_.debug;
        return handled::done;
    case packet_type::end_of_session:
        state_ = client_state::ended;
        return handled::stop;
    default:
        fail(client_failure::unexpected_packet);
        return handled::stop;
    }
}

void client::on_time(std::int64_t now_ns) noexcept {
    if (state_ == client_state::logging_in) {
        if (now_ns - login_sent_ns_ >= options_.login_timeout_ns) {
            fail(client_failure::login_timeout);
        }
        return;
    }
    if (state_ != client_state::logged_in) {
        return;
    }
    if (now_ns - last_received_ns_ >= options_.server_timeout_ns) {
        fail(client_failure::server_silent);
        return;
    }
    if (now_ns - last_sent_ns_ >= options_.heartbeat_ns && out_.empty() &&
        out_.append(packet_type::client_heartbeat, {})) {
        last_sent_ns_ = now_ns;
        ++counters_.heartbeats_out;
    }
}

std::int64_t client::next_deadline() const noexcept {
    if (state_ == client_state::logging_in) {
        return login_sent_ns_ + options_.login_timeout_ns;
    }
    if (state_ != client_state::logged_in) {
        return 0;
    }
    return earliest(last_received_ns_ + options_.server_timeout_ns,
                    last_sent_ns_ + options_.heartbeat_ns);
}

void client::logout() noexcept {
    if (state_ == client_state::logging_in || state_ == client_state::logged_in) {
        (void)out_.append(packet_type::logout_request, {});
        state_ = client_state::ended;
    }
}

bool client::send_unsequenced(std::span<std::byte const> payload) noexcept {
    return state_ == client_state::logged_in && out_.append(packet_type::unsequenced_data, payload);
}

void client::sent(std::size_t n, std::int64_t now_ns) noexcept {
    out_.sent(n);
    if (n != 0) {
        last_sent_ns_ = now_ns;
    }
}

} // namespace signet::md::nasdaq::soupbintcp
