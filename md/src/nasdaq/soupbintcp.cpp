#include <algorithm>
#include <cstring>

#include <signet/md/ascii_field.hpp>
#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/soupbintcp.hpp>

namespace signet::md::nasdaq::soupbintcp {

namespace {

// The largest payload a packet carries: the length field counts the type byte too.
constexpr std::size_t max_payload = 0xFFFF - 1;

template <std::size_t N>
alpha<N> read_alpha(std::byte const* p) noexcept {
    alpha<N> a;
    std::memcpy(a.chars.data(), p, N);
    return a;
}

template <std::size_t N>
void put_alpha(std::byte* p, alpha<N> const& a) noexcept {
    std::memcpy(p, a.chars.data(), N);
}

std::array<std::byte, login_request_length> login_request_payload(login_request const& r) {
    std::array<std::byte, login_request_length> b{};
    put_alpha(b.data(), r.username);
    put_alpha(b.data() + username_length, r.password);
    put_alpha(b.data() + username_length + password_length, r.session);
    // 20 digits hold any 64-bit value: never false.
    (void)write_ascii_number(b.data() + username_length + password_length + session_length,
                             sequence_length, r.sequence);
    return b;
}

std::array<std::byte, login_accepted_length> login_accepted_payload(login_accepted const& a) {
    std::array<std::byte, login_accepted_length> b{};
    put_alpha(b.data(), a.session);
    (void)write_ascii_number(b.data() + session_length, sequence_length, a.sequence);
    return b;
}

} // namespace

frame_result frame(std::span<std::byte const> bytes, std::size_t max_length) noexcept {
    if (bytes.size() < length_prefix) {
        return {};
    }
    std::size_t const length = load_be16(bytes.data());
    if (length == 0 || length > max_length) {
        return {frame_status::invalid, 0, {}};
    }
    if (bytes.size() < length_prefix + length) {
        return {};
    }
    return {frame_status::complete, length_prefix + length,
            packet{static_cast<char>(bytes[length_prefix]),
                   bytes.subspan(length_prefix + 1, length - 1)}};
}

std::optional<login_request> parse_login_request(packet const& p) noexcept {
    if (p.type != packet_type::login_request || p.payload.size() < login_request_length) {
        return std::nullopt;
    }
    std::byte const* const b = p.payload.data();
    std::optional<std::uint64_t> const sequence =
        read_ascii_number(b + username_length + password_length + session_length, sequence_length);
    if (!sequence) {
        return std::nullopt;
    }
    return login_request{
        read_alpha<username_length>(b), read_alpha<password_length>(b + username_length),
        read_alpha<session_length>(b + username_length + password_length), *sequence};
}

std::optional<login_accepted> parse_login_accepted(packet const& p) noexcept {
    if (p.type != packet_type::login_accepted || p.payload.size() < login_accepted_length) {
        return std::nullopt;
    }
    std::optional<std::uint64_t> const sequence =
        read_ascii_number(p.payload.data() + session_length, sequence_length);
    if (!sequence) {
        return std::nullopt;
    }
    return login_accepted{read_alpha<session_length>(p.payload.data()), *sequence};
}

std::optional<reject_reason> parse_login_rejected(packet const& p) noexcept {
    if (p.type != packet_type::login_rejected || p.payload.size() < login_rejected_length) {
        return std::nullopt;
    }
    auto const code = static_cast<char>(p.payload[0]);
    if (code != static_cast<char>(reject_reason::not_authorized) &&
        code != static_cast<char>(reject_reason::session_not_available)) {
        return std::nullopt;
    }
    return static_cast<reject_reason>(code);
}

std::size_t write_packet(std::span<std::byte> out, char type,
                         std::span<std::byte const> payload) noexcept {
    std::size_t const size = length_prefix + 1 + payload.size();
    if (payload.size() > max_payload || out.size() < size) {
        return 0;
    }
    store_be16(out.data(), static_cast<std::uint16_t>(1 + payload.size()));
    out[length_prefix] = static_cast<std::byte>(type);
    if (!payload.empty()) {
        std::memcpy(out.data() + length_prefix + 1, payload.data(), payload.size());
    }
    return size;
}

outbox::outbox(std::size_t capacity)
    : bytes_(capacity) {}

std::span<std::byte> outbox::room(std::size_t n) noexcept {
    if (bytes_.size() - end_ < n && begin_ != 0) {
        std::memmove(bytes_.data(), bytes_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    return std::span<std::byte>(bytes_).subspan(end_);
}

bool outbox::append(char type, std::span<std::byte const> payload) noexcept {
    std::size_t const written =
        write_packet(room(length_prefix + 1 + payload.size()), type, payload);
    end_ += written;
    return written != 0;
}

bool outbox::append_login_request(login_request const& request) noexcept {
    return append(packet_type::login_request, login_request_payload(request));
}

bool outbox::append_login_accepted(login_accepted const& accepted) noexcept {
    return append(packet_type::login_accepted, login_accepted_payload(accepted));
}

bool outbox::append_login_rejected(reject_reason reason) noexcept {
    std::byte const code = static_cast<std::byte>(reason);
    return append(packet_type::login_rejected, std::span<std::byte const>(&code, 1));
}

void outbox::sent(std::size_t n) noexcept {
    begin_ += std::min(n, end_ - begin_);
    if (begin_ == end_) {
        begin_ = end_ = 0;
    }
}

} // namespace signet::md::nasdaq::soupbintcp
