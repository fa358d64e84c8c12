#include <algorithm>

#include <signet/md/cboe/pitch_session_server.hpp>
#include <signet/md/little_endian.hpp>

namespace signet::md::cboe {

session_server::session_server(session_server_options const& options)
    : options_(options) {
    outbox_.reserve(4096);
}

void session_server::start(std::int64_t now) noexcept {
    state_ = server_state::awaiting_login;
    close_ = server_close::none;
    outbox_.clear();
    sent_ = 0;
    login_ = {};
    started_ = now;
    last_received_ = now;
    last_sent_ = now;
}

bool session_server::session_block(std::span<std::byte const> head) const noexcept {
    if (head.size() >= 2 && load_le<std::uint16_t>(head.data()) > options_.max_block_bytes) {
        return false;
    }
    return head.size() < header_size ||
           (head[3] == std::byte{0} && load_le<std::uint32_t>(head.data() + 4) == 0);
}

void session_server::login(message const& m, bool in_use) {
    if (m.type != message_type::login) {
        close(server_close::not_a_login);
        return;
    }
    bool const any = options_.credentials == session_credentials{};
    bool const ok = any || (m.session_sub_id == options_.credentials.session_sub_id &&
                            m.username == options_.credentials.username &&
                            m.password == options_.credentials.password);
    message response;
    response.type = message_type::login_response;
    response.status = !ok ? 'N' : in_use ? 'B' : 'A';
    (void)append_session_block(outbox_, response);
    if (response.status == 'A') {
        state_ = server_state::logged_in;
        login_ = {m.session_sub_id, m.username, m.password};
    } else {
        state_ = server_state::closing;
        close_ = ok ? server_close::in_use : server_close::refused;
    }
}

bool session_server::send(message const& m) {
    return state_ == server_state::logged_in && append_session_block(outbox_, m);
}

void session_server::on_time(std::int64_t now) {
    if (state_ == server_state::closed || state_ == server_state::closing) {
        return;
    }
    if (state_ == server_state::awaiting_login && now - started_ > options_.login_timeout_ns) {
        close(server_close::login_timeout); // whatever it sends: heartbeats do not hold a slot
        return;
    }
    if (now - last_received_ > options_.client_timeout_ns) {
        close(server_close::client_silent);
        return;
    }
    if (state_ == server_state::logged_in && output().empty() &&
        now - last_sent_ >= options_.heartbeat_ns) {
        outbox_.clear();
        sent_ = 0;
        append_heartbeat(outbox_);
        last_sent_ = now; // one heartbeat per interval, counted when queued
    }
}

void session_server::sent(std::size_t n, std::int64_t now) noexcept {
    sent_ = std::min(sent_ + n, outbox_.size());
    if (n != 0) {
        last_sent_ = now;
    }
    if (sent_ == outbox_.size()) {
        outbox_.clear();
        sent_ = 0;
        if (state_ == server_state::closing) {
            state_ = server_state::closed; // the refusal went out
        }
    }
}

} // namespace signet::md::cboe
