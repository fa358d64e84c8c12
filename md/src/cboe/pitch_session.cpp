#include <algorithm>

#include <signet/md/cboe/pitch_session.hpp>
#include <signet/md/little_endian.hpp>

namespace signet::md::cboe {

namespace {

constexpr std::size_t outbox_bytes = 4096;

template <std::size_t N>
std::array<char, N> padded(std::string_view text) noexcept {
    std::array<char, N> out;
    out.fill(' ');
    std::copy_n(text.begin(), std::min(text.size(), N), out.begin());
    return out;
}

} // namespace

session_credentials session_credentials::of(std::string_view session_sub_id,
                                            std::string_view username,
                                            std::string_view password) noexcept {
    return {padded<4>(session_sub_id), padded<4>(username), padded<10>(password)};
}

bool append_session_block(std::vector<std::byte>& out, message const& m) {
    std::size_t const length = encoded_length(m);
    if (length == 0) {
        return false;
    }
    std::size_t const at = out.size();
    out.resize(at + header_size + length);
    block_writer w{std::span<std::byte>(out).subspan(at)};
    w.begin(0, 0);
    if (!w.add(m)) {
        out.resize(at);
        return false;
    }
    (void)w.finish();
    return true;
}

void append_heartbeat(std::vector<std::byte>& out) {
    std::size_t const at = out.size();
    out.resize(at + header_size);
    block_writer w{std::span<std::byte>(out).subspan(at)};
    w.begin(0, 0);
    (void)w.finish();
}

session_client::session_client(session_options const& options)
    : options_(options) {
    outbox_.reserve(outbox_bytes);
}

void session_client::start(std::int64_t now) noexcept {
    if (state_ == session_state::failed && failure_ == session_failure::rejected &&
        rejection_ != 'B') {
        return; // the credentials are wrong: for good ('B', session in use, may pass)
    }
    outbox_.clear();
    sent_ = 0;
    failure_ = session_failure::none;
    state_ = session_state::logging_in;
    started_ = now;
    last_received_ = now;
    last_sent_ = now;
    message login;
    login.type = message_type::login;
    login.session_sub_id = options_.credentials.session_sub_id;
    login.username = options_.credentials.username;
    login.password = options_.credentials.password;
    (void)queue(login);
}

bool session_client::queue(message const& m) noexcept {
    if (outbox_.size() + header_size + encoded_length(m) > outbox_.capacity()) {
        if (sent_ == 0) {
            return false; // full of what the socket has not taken
        }
        outbox_.erase(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(sent_));
        sent_ = 0;
        if (outbox_.size() + header_size + encoded_length(m) > outbox_.capacity()) {
            return false;
        }
    }
    return append_session_block(outbox_, m); // within capacity: no allocation
}

bool session_client::send(message const& m, std::int64_t now) noexcept {
    (void)now;
    return state_ == session_state::logged_in && queue(m);
}

void session_client::on_time(std::int64_t now) noexcept {
    if (state_ == session_state::logging_in && now - started_ > options_.login_timeout_ns) {
        fail(session_failure::login_timeout);
        return;
    }
    if (state_ == session_state::logged_in) {
        if (now - last_received_ > options_.server_timeout_ns) {
            fail(session_failure::server_silent);
            return;
        }
        if (now - last_sent_ >= options_.heartbeat_ns && output().empty() &&
            outbox_.size() + header_size <= outbox_.capacity()) {
            outbox_.clear();
            sent_ = 0;
            append_heartbeat(outbox_);
            last_sent_ = now; // counted as sent when queued: one heartbeat per interval
        }
    }
}

void session_client::sent(std::size_t n, std::int64_t now) noexcept {
    sent_ = std::min(sent_ + n, outbox_.size());
    if (n != 0) {
        last_sent_ = now;
    }
    if (sent_ == outbox_.size()) {
        outbox_.clear();
        sent_ = 0;
    }
}

} // namespace signet::md::cboe
