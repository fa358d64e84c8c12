#pragma once

/// Cboe Multicast PITCH (US equities 2.41, options 2.39): the Sequenced Unit Header, the message
/// set a book builder needs, zero-copy validation and decoding, and the encoders md_feed and the
/// tests build datagrams with (docs/pitch.md has the facts relied on, with their sources).
/// Little-endian throughout.
///
///   block    = Sequenced Unit Header (Length u16 counting itself, Count u8, Unit u8, Sequence
///              u32: the first message's; a heartbeat has Count 0 and the next sequence; 0:
///              unsequenced) + Count messages
///   message  = Length u8 (counting itself) + Type u8 + fields (a 4-byte Time Offset first,
///              except Time and the session messages)
///
/// Every read is bounded: validate_block() takes a block only when its Length is the datagram's,
/// its Count messages fit it exactly, and each known message is at least its layout's length
/// (a longer one is read by its layout and skipped by its own Length: the exchange may add
/// fields); unknown types are skipped by their Length and counted. A block that fails claims no
/// sequence (the receiver counts it malformed).
///
/// Prices: long prices are u64 of 1/10000; short prices u16 of 1/100, scaled here to 1/10000
/// so that every price a decoder returns has one unit (price_exponent -4).
///
/// Threading: none (values and views over the caller's bytes). Costs: a header check and one
/// pass over the messages' lengths per block; decode() reads the fields of one message. No
/// allocation, no exceptions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace signet::md::cboe {

inline constexpr std::size_t header_size = 8;
inline constexpr int price_exponent = -4;
/// Short prices (1/100) times this are long prices (1/10000).
inline constexpr std::int64_t short_price_scale = 100;

/// Message types (the Type byte).
namespace message_type {
// Session (GRP and Spin TCP; docs/pitch.md)
inline constexpr std::uint8_t login = 0x01;
inline constexpr std::uint8_t login_response = 0x02;
inline constexpr std::uint8_t gap_request = 0x03;
inline constexpr std::uint8_t gap_response = 0x04;
inline constexpr std::uint8_t spin_image_available = 0x80;
inline constexpr std::uint8_t spin_request = 0x81;
inline constexpr std::uint8_t spin_response = 0x82;
inline constexpr std::uint8_t spin_finished = 0x83;
// Market data
inline constexpr std::uint8_t time = 0x20;
inline constexpr std::uint8_t add_order_long = 0x21;
inline constexpr std::uint8_t add_order_short = 0x22;
inline constexpr std::uint8_t order_executed = 0x23;
inline constexpr std::uint8_t order_executed_at_price = 0x24;
inline constexpr std::uint8_t reduce_size_long = 0x25;
inline constexpr std::uint8_t reduce_size_short = 0x26;
inline constexpr std::uint8_t modify_order_long = 0x27;
inline constexpr std::uint8_t modify_order_short = 0x28;
inline constexpr std::uint8_t delete_order = 0x29;
inline constexpr std::uint8_t trade_long = 0x2A;
inline constexpr std::uint8_t trade_short = 0x2B;
inline constexpr std::uint8_t trade_break = 0x2C;
inline constexpr std::uint8_t end_of_session = 0x2D;
inline constexpr std::uint8_t symbol_mapping = 0x2E;
inline constexpr std::uint8_t add_order_expanded = 0x2F;
inline constexpr std::uint8_t trade_expanded = 0x30;
inline constexpr std::uint8_t trading_status = 0x31;
inline constexpr std::uint8_t auction_update = 0x95;
inline constexpr std::uint8_t auction_summary = 0x96;
inline constexpr std::uint8_t unit_clear = 0x97;
inline constexpr std::uint8_t retail_price_improvement = 0x98;
inline constexpr std::uint8_t time_reference = 0xB1;
inline constexpr std::uint8_t transaction_begin = 0xBC;
inline constexpr std::uint8_t transaction_end = 0xBD;
} // namespace message_type

/// The layout's length of a known type (the least a message of it may be); 0 for an unknown one.
[[nodiscard]] std::size_t layout_length(std::uint8_t type) noexcept;
/// The spec's name of a known type ("Add Order Long"); "" for an unknown one.
[[nodiscard]] std::string_view type_name(std::uint8_t type) noexcept;

/// Modify Order flags.
namespace modify_flag {
inline constexpr std::uint8_t display = 0x01;
inline constexpr std::uint8_t maintain_priority = 0x02;
} // namespace modify_flag

struct block_header {
    std::uint16_t length = 0; ///< the block's bytes, header included
    std::uint8_t count = 0;   ///< messages; 0: a heartbeat
    std::uint8_t unit = 0;
    std::uint32_t sequence = 0; ///< the first message's (a heartbeat: the next one); 0: none

    friend bool operator==(block_header const&, block_header const&) = default;
};

/// What validate_block() found besides the header.
struct block_check {
    block_header header;
    std::uint8_t unknown = 0; ///< messages of unknown types (skipped by their Length)
};

/// The header of `datagram` when the whole datagram is one well-formed block; nullopt otherwise.
[[nodiscard]] std::optional<block_check>
validate_block(std::span<std::byte const> datagram) noexcept;

/// Calls f(std::span<std::byte const> message) for each message of a block validate_block()
/// accepted (each message from its Length byte, Length bytes long).
template <typename F>
void for_each_message(std::span<std::byte const> block, F&& f) {
    std::size_t at = header_size;
    while (at < block.size()) {
        std::size_t const length = static_cast<std::uint8_t>(block[at]);
        f(block.subspan(at, length));
        at += length;
    }
}

/// Space-padded ASCII as on the wire (symbols: 6 characters in short and long forms, 8 in the
/// expanded ones and in Trading Status; here always 8, space padded).
using symbol_text = std::array<char, 8>;
/// `text` space padded to 8 (longer: cut).
[[nodiscard]] symbol_text make_symbol(std::string_view text) noexcept;
/// The symbol without its padding.
[[nodiscard]] std::string_view trimmed(symbol_text const& symbol) noexcept;

/// One decoded message: the fields its type has (the others stay zero). Prices in 1/10000.
struct message {
    std::uint8_t type = 0;
    std::uint32_t time_offset = 0; ///< ns since the unit's last Time (not on Time itself)
    std::uint32_t time = 0;        ///< Time, Time Reference: seconds since midnight (ET)
    std::uint32_t epoch = 0;       ///< Time (10-byte form), Time Reference: Unix seconds
    std::uint32_t trade_date = 0;  ///< Time Reference: YYYYMMDD
    std::uint64_t order_id = 0;
    std::uint64_t execution_id = 0;
    std::int64_t price = 0;
    std::uint32_t quantity = 0; ///< add, modify, trade: size; executed: executed; reduce: cancelled
    std::uint32_t remaining = 0;       ///< Order Executed at Price/Size: what stays open
    char side = 0;                     ///< 'B' or 'S' (add, trade)
    std::uint8_t flags = 0;            ///< Add Flags, Modify Flags
    symbol_text symbol{};              ///< add, trade, trading status, auction, symbol mapping
    std::array<char, 4> participant{}; ///< Add Order Expanded: the MPID (spaces: none)
    char customer = 0;                 ///< Add Order Expanded: customer indicator
    char status = 0;  ///< Trading Status: 'H', 'Q', 'S', 'T', 'A'; auctions: the auction type
    char reg_sho = 0; ///< Trading Status: '0' or '1'
    /// Session messages: Login's session sub id / username / password; responses' status.
    std::uint8_t unit = 0;      ///< Gap Request and Response
    std::uint32_t sequence = 0; ///< Gap Request/Response, spin messages
    std::uint32_t count = 0;    ///< Gap Request/Response: messages; Spin Response: orders
    std::array<char, 4> session_sub_id{};
    std::array<char, 4> username{};
    std::array<char, 10> password{};

    friend bool operator==(message const&, message const&) = default;
};

/// Decodes a known message of at least its layout's length (as for_each_message passes them);
/// nullopt for an unknown type or a message too short for its layout.
[[nodiscard]] std::optional<message> decode(std::span<std::byte const> bytes) noexcept;

/// The wire length encode() writes for `m` (its type's layout); 0 for a type it cannot write.
[[nodiscard]] std::size_t encoded_length(message const& m) noexcept;
/// Writes `m` in its type's layout into `out`; the bytes written, or 0 when `out` is too small,
/// the type unknown, or a value does not fit the form (a short form's quantity above 65535, a
/// short price that is not a whole cent or above 655.35).
std::size_t encode(message const& m, std::span<std::byte> out) noexcept;

/// Builds one block in a caller's buffer: begin(), add() messages, finish().
class block_writer {
public:
    explicit block_writer(std::span<std::byte> buffer) noexcept
        : buffer_(buffer) {}
    /// Starts a block of `unit` whose first message will carry `sequence`.
    void begin(std::uint8_t unit, std::uint32_t sequence) noexcept;
    /// Appends `m`; false (nothing written) when it does not fit, the block holds 255
    /// messages, or encode() refuses it.
    bool add(message const& m) noexcept;
    /// Whether `m` would fit.
    [[nodiscard]] bool fits(message const& m) const noexcept;
    /// Writes the header; the block's bytes (valid until the next begin()).
    std::span<std::byte const> finish() noexcept;
    [[nodiscard]] std::uint8_t count() const noexcept { return count_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

private:
    std::span<std::byte> buffer_;
    std::size_t size_ = header_size;
    std::uint8_t count_ = 0;
    std::uint8_t unit_ = 0;
    std::uint32_t sequence_ = 0;
};

} // namespace signet::md::cboe
