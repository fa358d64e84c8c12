#pragma once

/// MoldUDP64 re-request: a 20-byte datagram — session (10 bytes ASCII, space padded), the first
/// sequence number wanted (u64 big-endian), the message count wanted (u16 big-endian) — sent
/// unicast to the feed's re-request server, which answers with normal downstream packets
/// (moldudp64.hpp) sent back to the requesting socket. Header only; no OS dependencies.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>

namespace signet::md::nasdaq {

inline constexpr std::size_t moldudp64_request_size = 20;

struct moldudp64_request {
    moldudp64_session_id session{};
    std::uint64_t sequence = 0; ///< first message wanted
    std::uint16_t count = 0;    ///< messages wanted

    friend bool operator==(moldudp64_request const&, moldudp64_request const&) = default;
};

/// A request datagram; nullopt unless exactly 20 bytes (the values are not judged here).
[[nodiscard]] inline std::optional<moldudp64_request>
parse_moldudp64_request(std::span<std::byte const> datagram) noexcept {
    if (datagram.size() != moldudp64_request_size) {
        return std::nullopt;
    }
    moldudp64_request request;
    std::memcpy(request.session.data(), datagram.data(), moldudp64_session_size);
    request.sequence = load_be64(datagram.data() + moldudp64_session_size);
    request.count = load_be16(datagram.data() + moldudp64_session_size + 8);
    return request;
}

/// Writes the 20-byte datagram of `request`.
inline void write_moldudp64_request(moldudp64_request const& request,
                                    std::span<std::byte, moldudp64_request_size> out) noexcept {
    std::memcpy(out.data(), request.session.data(), moldudp64_session_size);
    store_be64(out.data() + moldudp64_session_size, request.sequence);
    store_be16(out.data() + moldudp64_session_size + 8, request.count);
}

} // namespace signet::md::nasdaq
