#include <algorithm>

#include <signet/md/nasdaq/soupbintcp_server.hpp>

namespace signet::md::nasdaq::soupbintcp {

server::server(server_options const& options)
    : options_(options)
    , out_(options.outbox_bytes) {}

void server::start(std::int64_t now_ns) noexcept {
    out_.clear();
    login_.reset();
    state_ = server_state::awaiting_login;
    close_ = server_close::none;
    started_ns_ = last_received_ns_ = last_sent_ns_ = now_ns;
}

void server::close(server_close why) noexcept {
    state_ = server_state::closed;
    close_ = why;
}

bool server::handle(packet const& p) noexcept {
    switch (p.type) {
    case packet_type::login_request: {
        std::optional<login_request> const request = parse_login_request(p);
        if (state_ != server_state::awaiting_login || !request) {
            close(server_close::unexpected_packet);
            return false;
        }
        bool const authorized =
            options_.username.empty() || (request->username.text() == options_.username &&
                                          request->password.text() == options_.password);
        if (!authorized) {
            reject(reject_reason::not_authorized);
            return false;
        }
        std::string_view const session = request->session.text();
        if (!session.empty() && session != make_alpha<session_length>(options_.session).text()) {
            reject(reject_reason::session_not_available);
            return false;
        }
        login_ = request;
        state_ = server_state::login_received;
        return true;
    }
    case packet_type::client_heartbeat:
        ++heartbeats_in_;
        return true;
    case packet_type::debug:
        return true;
    case packet_type::logout_request:
        close(server_close::logout);
        return false;
    default: // unsequenced data before the login, or a type only servers send
        close(server_close::unexpected_packet);
        return false;
    }
}

void server::accept(std::uint64_t sequence, std::int64_t now_ns) noexcept {
    if (state_ != server_state::login_received) {
        return;
    }
    if (!out_.append_login_accepted({make_alpha<session_length>(options_.session), sequence})) {
        close(server_close::unexpected_packet); // an outbox smaller than one answer
        return;
    }
    next_sequence_ = sequence;
    state_ = server_state::serving;
    last_sent_ns_ = now_ns;
}

void server::reject(reject_reason reason) noexcept {
    if (state_ == server_state::awaiting_login || state_ == server_state::login_received) {
        (void)out_.append_login_rejected(reason);
        close(server_close::rejected);
    }
}

bool server::send_sequenced(std::span<std::byte const> payload) noexcept {
    if (state_ != server_state::serving || !out_.append(packet_type::sequenced_data, payload)) {
        return false;
    }
    ++next_sequence_;
    return true;
}

void server::end_session() noexcept {
    if (state_ == server_state::serving) {
        (void)out_.append(packet_type::end_of_session, {});
        close(server_close::end_of_session);
    }
}

void server::on_time(std::int64_t now_ns) noexcept {
    switch (state_) {
    case server_state::awaiting_login:
    case server_state::login_received:
        if (now_ns - started_ns_ >= options_.login_timeout_ns) {
            close(server_close::login_timeout);
        }
        return;
    case server_state::serving:
        if (now_ns - last_received_ns_ >= options_.client_timeout_ns) {
            close(server_close::client_silent);
            return;
        }
        if (now_ns - last_sent_ns_ >= options_.heartbeat_ns && out_.empty() &&
            out_.append(packet_type::server_heartbeat, {})) {
            last_sent_ns_ = now_ns;
            ++heartbeats_out_;
        }
        return;
    case server_state::closed:
        return;
    }
}

std::int64_t server::next_deadline() const noexcept {
    switch (state_) {
    case server_state::awaiting_login:
    case server_state::login_received:
        return started_ns_ + options_.login_timeout_ns;
    case server_state::serving:
        return std::min(last_received_ns_ + options_.client_timeout_ns,
                        last_sent_ns_ + options_.heartbeat_ns);
    case server_state::closed:
        break;
    }
    return 0;
}

void server::sent(std::size_t n, std::int64_t now_ns) noexcept {
    out_.sent(n);
    if (n != 0) {
        last_sent_ns_ = now_ns;
    }
}

} // namespace signet::md::nasdaq::soupbintcp
