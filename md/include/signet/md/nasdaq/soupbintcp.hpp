#pragma once

/// SoupBinTCP 3.0 (Nasdaq): the packet codec, no sockets. Facts relied on: docs/soupbintcp.md.
///
/// A packet is a 2-byte big-endian length (of what follows it: the type byte and the payload),
/// a 1-byte type and the payload. frame() finds the first packet in received bytes (complete,
/// partial: wait for more, or invalid: a length of 0 or above the caller's bound);
/// write_packet() and outbox write packets; the parsers read the fixed layouts of the login
/// packets. Numeric fields are ASCII, right-aligned and padded on the left with spaces; alpha
/// fields are left-aligned and padded on the right with spaces.
///
/// outbox queues the packets a session sends (soupbintcp_client.hpp, soupbintcp_server.hpp).
///
/// Threading: none. Costs: no allocation (outbox: one at construction), no exceptions. Bad
/// input is a return value (invalid frame, nullopt, 0 bytes written, false), never a read
/// outside the given span.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <signet/md/ascii_field.hpp>

namespace signet::md::nasdaq::soupbintcp {

inline constexpr std::size_t length_prefix = 2;

/// Packet types (the byte after the length).
namespace packet_type {
inline constexpr char debug = '+'; ///< either direction: free text
// Server to client.
inline constexpr char login_accepted = 'A';
inline constexpr char login_rejected = 'J';
inline constexpr char sequenced_data = 'S';
inline constexpr char server_heartbeat = 'H';
inline constexpr char end_of_session = 'Z';
// Client to server.
inline constexpr char login_request = 'L';
inline constexpr char unsequenced_data = 'U';
inline constexpr char client_heartbeat = 'R';
inline constexpr char logout_request = 'O';
} // namespace packet_type

inline constexpr std::size_t username_length = 6;
inline constexpr std::size_t password_length = 10;
inline constexpr std::size_t session_length = 10;
inline constexpr std::size_t sequence_length = 20;
/// Payload lengths of the fixed packets (the type byte not included).
inline constexpr std::size_t login_request_length =
    username_length + password_length + session_length + sequence_length;              // 46
inline constexpr std::size_t login_accepted_length = session_length + sequence_length; // 30
inline constexpr std::size_t login_rejected_length = 1;

/// The login rejected packet's reason code.
enum class reject_reason : char {
    not_authorized = 'A',        ///< bad username or password
    session_not_available = 'S', ///< the requested session is not available
};

struct packet {
    char type = 0;
    std::span<std::byte const> payload;
};

enum class frame_status : std::uint8_t {
    complete, ///< `packet` and `size` (its bytes, the length prefix included) are set
    partial,  ///< the bytes end inside the packet: read more, keep these
    invalid,  ///< a length of 0 (no type byte) or above the bound: the stream is unusable
};

struct frame_result {
    frame_status status = frame_status::partial;
    std::size_t size = 0;
    packet p{};
};

/// The first packet of `bytes`. `max_length` bounds the length field (type + payload): the
/// protocol sets no maximum, so the receiver must.
[[nodiscard]] frame_result frame(std::span<std::byte const> bytes, std::size_t max_length) noexcept;

/// Hands each complete packet at the front of `bytes` to on_packet(packet const&), which
/// returns false to stop; returns the bytes of the packets handed over (the caller keeps the
/// rest). `invalid` is set when a length field stopped it (see frame()).
template <typename OnPacket>
std::size_t for_each_packet(std::span<std::byte const> bytes, std::size_t max_length, bool& invalid,
                            OnPacket&& on_packet) {
    std::size_t used = 0;
    invalid = false;
    for (;;) {
        frame_result const f = frame(bytes.subspan(used), max_length);
        if (f.status != frame_status::complete) {
            invalid = f.status == frame_status::invalid;
            return used;
        }
        used += f.size;
        if (!on_packet(f.p)) {
            return used;
        }
    }
}

using md::alpha; // fixed-width alpha fields: ascii_field.hpp
using md::make_alpha;

struct login_request {
    alpha<username_length> username;
    alpha<password_length> password;
    alpha<session_length> session; ///< all spaces: the current session
    std::uint64_t sequence = 0;    ///< the next sequenced message wanted (1: from the start)
};

struct login_accepted {
    alpha<session_length> session;
    std::uint64_t sequence = 0; ///< the sequence number of the next sequenced message sent
};

/// nullopt when the payload is short or the sequence field is not a number (spaces, then
/// digits) that fits 64 bits. A longer payload is accepted (later revisions append fields).
[[nodiscard]] std::optional<login_request> parse_login_request(packet const& p) noexcept;
[[nodiscard]] std::optional<login_accepted> parse_login_accepted(packet const& p) noexcept;
[[nodiscard]] std::optional<reject_reason> parse_login_rejected(packet const& p) noexcept;

/// One packet at the start of `out`; returns its size (length prefix included), or 0 (nothing
/// written) when `out` is too small or the payload is longer than a packet carries (65534).
[[nodiscard]] std::size_t write_packet(std::span<std::byte> out, char type,
                                       std::span<std::byte const> payload) noexcept;

/// The bytes a session has to send, in a buffer of fixed capacity (allocated once): writers
/// append whole packets or nothing; the socket layer sends from output() and reports sent().
class outbox {
public:
    explicit outbox(std::size_t capacity);

    /// One packet; false (nothing queued) when it does not fit in the free space.
    [[nodiscard]] bool append(char type, std::span<std::byte const> payload) noexcept;
    [[nodiscard]] bool append_login_request(login_request const& request) noexcept;
    [[nodiscard]] bool append_login_accepted(login_accepted const& accepted) noexcept;
    [[nodiscard]] bool append_login_rejected(reject_reason reason) noexcept;

    [[nodiscard]] std::span<std::byte const> output() const noexcept {
        return {bytes_.data() + begin_, end_ - begin_};
    }
    /// The first n bytes of output() went out.
    void sent(std::size_t n) noexcept;
    [[nodiscard]] bool empty() const noexcept { return begin_ == end_; }
    void clear() noexcept { begin_ = end_ = 0; }

private:
    /// Room for n more bytes at the end (moves what is pending to the front if that helps).
    [[nodiscard]] std::span<std::byte> room(std::size_t n) noexcept;

    std::vector<std::byte> bytes_;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

} // namespace signet::md::nasdaq::soupbintcp
