#pragma once

/// Nasdaq TotalView-ITCH 5.0: message lengths, field offsets and readers, and itch50_parser,
/// which decodes messages (already framed, e.g. by MoldUDP64) into an order_book.
///
/// Every message starts with an 11-byte header: type (1 ASCII letter), stock locate (u16),
/// tracking number (u16), timestamp (u48, nanoseconds since midnight). All integers are
/// big-endian; prices are u32 with 4 implied decimals.
///
/// itch50_parser threading: none; one parser per feed, never called concurrently. Per message:
/// a table lookup, a bounds check, then the book operation (see itch_order_book.hpp for its costs).
///
/// Events (md/events.hpp), with an event_sink set: per message what it did — R: the
/// instrument's definition (id = stock locate, prices of 10^-4); H: its trading status; A/F:
/// order_add; E/C: order_execute and a trade (C: when printable); X: order_modify (or
/// order_delete when nothing is left); D: order_delete; U: order_delete and order_add (flag
/// replace; the add carries no MPID: the book keeps none); P, Q: a trade. After each book
/// change the level's level_update (with its depth) and, when the stock's best bid or offer
/// moved, a bbo. Each carries the message's sequence and receive time (event_context) and its
/// timestamp. Without a sink nothing of this runs (one predictable branch per message).
/// Bad input is counted, never read past: a message shorter than its type's length is
/// malformed; an unknown type is skipped (its length came from the framing); a message longer
/// than its type's length is decoded (later revisions may append fields).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <signet/md/big_endian.hpp>
#include <signet/md/events.hpp>
#include <signet/md/nasdaq/itch_order_book.hpp>

namespace signet::md::nasdaq {

namespace itch50 {

inline constexpr std::size_t header_length = 11;
/// The longest ITCH 5.0 message (I, NOII).
inline constexpr std::size_t max_message_length = 50;

/// The 23 message types of ITCH 5.0.
inline constexpr std::array<char, 23> message_types = {'S', 'R', 'H', 'Y', 'L', 'V', 'W', 'K',
                                                       'J', 'h', 'A', 'F', 'E', 'C', 'X', 'D',
                                                       'U', 'P', 'Q', 'B', 'I', 'N', 'O'};

namespace detail {
inline constexpr std::array<std::uint8_t, 128> length_table = [] {
    std::array<std::uint8_t, 128> t{};
    t['S'] = 12; // system event
    t['R'] = 39; // stock directory
    t['H'] = 25; // stock trading action
    t['Y'] = 20; // Reg SHO restriction
    t['L'] = 26; // market participant position
    t['V'] = 35; // MWCB decline level
    t['W'] = 12; // MWCB status
    t['K'] = 28; // IPO quoting period update
    t['J'] = 35; // LULD auction collar
    t['h'] = 21; // operational halt
    t['A'] = 36; // add order, no MPID
    t['F'] = 40; // add order with MPID
    t['E'] = 31; // order executed
    t['C'] = 36; // order executed with price
    t['X'] = 23; // order cancel
    t['D'] = 19; // order delete
    t['U'] = 35; // order replace
    t['P'] = 44; // trade (non-cross)
    t['Q'] = 40; // cross trade
    t['B'] = 19; // broken trade
    t['I'] = 50; // net order imbalance indicator
    t['N'] = 20; // retail price improvement indicator
    t['O'] = 48; // direct listing with capital raise price discovery
    return t;
}();
} // namespace detail

/// The spec length of a message type (type byte included), 0 if the type is unknown.
constexpr std::size_t message_length(char type) noexcept {
    auto const index = static_cast<unsigned char>(type);
    return index < detail::length_table.size() ? detail::length_table[index] : 0;
}

/// Field offsets from the start of the message (the type byte is offset 0).
namespace field {
inline constexpr std::size_t type = 0;
inline constexpr std::size_t stock_locate = 1;    // u16
inline constexpr std::size_t tracking_number = 3; // u16
inline constexpr std::size_t timestamp = 5;       // u48
// S
inline constexpr std::size_t event_code = 11; // char
// R, H, Y, L, K, J, h, I, N, O
inline constexpr std::size_t stock = 11; // char[8] (Q: 19, P: 24, A/F: 24)
// A, F (and P: same layout up to the price)
inline constexpr std::size_t order_ref = 11;   // u64
inline constexpr std::size_t side = 19;        // 'B' / 'S'
inline constexpr std::size_t shares = 20;      // u32
inline constexpr std::size_t order_stock = 24; // char[8]
inline constexpr std::size_t price = 32;       // u32
inline constexpr std::size_t attribution = 36; // char[4], F only
inline constexpr std::size_t trade_match = 36; // u64, P only (after the price; 36 + 8 = 44)
// E, C (order_ref at 11)
inline constexpr std::size_t executed_shares = 19; // u32
inline constexpr std::size_t match_number = 23;    // u64
inline constexpr std::size_t printable = 31;       // 'Y' / 'N', C only
inline constexpr std::size_t execution_price = 32; // u32, C only
// X (order_ref at 11)
inline constexpr std::size_t cancelled_shares = 19; // u32
// U
inline constexpr std::size_t original_ref = 11; // u64
inline constexpr std::size_t new_ref = 19;      // u64
inline constexpr std::size_t new_shares = 27;   // u32
inline constexpr std::size_t new_price = 31;    // u32
// H (stock at 11)
inline constexpr std::size_t trading_state = 19;  // 'H' halted, 'P' paused, 'Q' quotation, 'T'
inline constexpr std::size_t trading_reason = 21; // char[4]
// Q
inline constexpr std::size_t cross_shares = 11; // u64
inline constexpr std::size_t cross_price = 27;  // u32
inline constexpr std::size_t cross_match = 31;  // u64
} // namespace field

/// Header readers. The caller guarantees message.size() >= header_length.
inline char message_type(std::span<std::byte const> message) noexcept {
    return static_cast<char>(message[0]);
}
inline std::uint16_t stock_locate(std::span<std::byte const> message) noexcept {
    return load_be16(message.data() + field::stock_locate);
}
inline std::uint16_t tracking_number(std::span<std::byte const> message) noexcept {
    return load_be16(message.data() + field::tracking_number);
}
inline std::uint64_t timestamp(std::span<std::byte const> message) noexcept {
    return load_be48(message.data() + field::timestamp);
}

} // namespace itch50

struct itch50_stats {
    /// Decoded messages per type letter (index = the ASCII code).
    std::array<std::uint64_t, 128> messages_by_type{};
    std::uint64_t messages = 0;             ///< decoded messages, all types
    std::uint64_t malformed_messages = 0;   ///< shorter than the type's length, empty, bad side
    std::uint64_t unknown_messages = 0;     ///< unknown type letter: skipped
    std::uint64_t unknown_order_refs = 0;   ///< E/C/X/D/U naming no live order
    std::uint64_t duplicate_order_refs = 0; ///< A/F/U adding a reference that is already live
    std::uint64_t book_full_drops = 0;      ///< adds dropped because the order table was full

    [[nodiscard]] std::uint64_t count(char type) const noexcept {
        auto const index = static_cast<unsigned char>(type);
        return index < messages_by_type.size() ? messages_by_type[index] : 0;
    }
};

class itch50_parser {
public:
    explicit itch50_parser(itch_order_book_options options = {});

    /// Decodes one message and applies it to the book. Never reads outside `message`.
    /// `context` is what its events carry (the feed's sequence, the receive time).
    void on_message(std::span<std::byte const> message, event_context const& context = {});
    /// As on_message() for each, in order, with the book's cache hints issued a few messages
    /// ahead, so that the memory latency of one message's order or level overlaps the work of
    /// the messages before it. The same result as one on_message() per message.
    void on_messages(std::span<std::span<std::byte const> const> messages);
    /// The same pipelining for messages that arrive one at a time (a MoldUDP64 session's
    /// deliveries, packet after packet): push() copies the message into a ring of 64-byte
    /// slots, prefetches for it, and applies the oldest once more than prefetch_far are
    /// held; flush() applies what is held. Until flush(), stats() and book() lag by up to
    /// prefetch_far messages. A message longer than a slot flushes the ring and is applied in
    /// place, so the order is always kept. No allocation.
    void push(std::span<std::byte const> message, event_context const& context = {});
    void flush();
    /// Events of `kinds` go to `sink` from here on (nullptr: none); a kind nobody wants costs
    /// nothing to make (level_update: the book keeps each level's place in its side for its
    /// depth; numbering them all once when it is first wanted, O(levels)). Allocates the
    /// per-stock best bid and offer last reported (2 MiB) the first time.
    void set_event_sink(event_sink* sink, event_mask kinds = event_mask::all());
    /// The whole book as events, flagged `flags` (from_snapshot for a rebuilt book): per listed
    /// stock its definition, every live order as order_add, every level as level_update (best
    /// first) and its bbo. Requires a sink.
    void emit_book(std::uint16_t flags, event_context const& context);
    /// Messages pushed and not yet applied.
    [[nodiscard]] std::size_t pending() const noexcept { return held_; }
    static constexpr std::size_t slot_size = 64;
    /// The moldudp64_session deliver signature: session.on_packet(datagram, parser).
    void operator()(std::uint64_t /*sequence*/, std::span<std::byte const> message) {
        on_message(message);
    }

    [[nodiscard]] itch50_stats const& stats() const noexcept { return stats_; }
    [[nodiscard]] itch_order_book const& book() const noexcept { return book_; }

    /// Cache hints for a message to be applied soon (they never change anything): the order
    /// record or stock state it needs, issued prefetch_far messages ahead; then its level or
    /// the best end of its side, issued prefetch_near messages ahead (once the first arrived).
    static constexpr std::size_t prefetch_far = 12;
    static constexpr std::size_t prefetch_near = 6;
    void prefetch_far_ahead(std::span<std::byte const> message) const noexcept;
    void prefetch_near_ahead(std::span<std::byte const> message) const noexcept;

private:
    static constexpr std::size_t slots = 16; // a power of two above prefetch_far
    static_assert(slots > prefetch_far && (slots & (slots - 1)) == 0);

    void count(book_result result) noexcept;
    // on_messages() with or without a sink: each loop inlines its one apply().
    template <bool Events>
    void apply_each(std::span<std::span<std::byte const> const> messages);
    // Defined (and inlined into their callers) in itch50.cpp: a call per message less.
    template <bool Events>
    [[gnu::always_inline]] void apply(std::span<std::byte const> message,
                                      event_context const& context);
    // on_message() with a sink: apply<true> out of line, so that the path without one stays
    // as lean as it is alone (inlining both costs it registers).
    [[gnu::noinline]] void apply_with_events(std::span<std::byte const> message,
                                             event_context const& context);
    // What every event of one message shares: its header, made into an event only for one
    // that goes out.
    struct event_header {
        std::uint32_t instrument;
        std::uint16_t flags;
        event_context context;
        std::byte const* message; // the timestamp's
        [[nodiscard]] event make() const noexcept {
            event e{};
            e.flags = flags;
            e.instrument = instrument;
            e.sequence = context.sequence;
            e.receive_ns = context.receive_ns;
            e.exchange_ns = load_be48(message + itch50::field::timestamp);
            return e;
        }
    };
    // Events of one book change: a level_update per level the book changed, then a bbo when
    // one of them moved its side's best (reported_top_ follows).
    [[gnu::always_inline]] void emit_changes(event_header const& header);
    void emit_bbo(event const& base, std::uint16_t locate);
    void send(event const& e) noexcept {
        if (wanted_.has(e.kind)) {
            sink_->on_event(e);
        }
    }
    [[nodiscard]] std::span<std::byte const> held(std::size_t age) const noexcept {
        std::size_t const i = (oldest_ + age) & (slots - 1);
        return {ring_[i].data(), ring_sizes_[i]};
    }
    void apply_oldest();

    itch_order_book book_;
    itch50_stats stats_{};
    std::array<std::array<std::byte, slot_size>, slots> ring_{}; // push(): messages held
    std::array<std::uint8_t, slots> ring_sizes_{};
    std::array<event_context, slots> ring_contexts_{};
    event_sink* sink_ = nullptr;
    event_mask wanted_ = event_mask::all();
    std::vector<top_of_book> reported_top_; // per locate: the bbo last emitted
    std::size_t oldest_ = 0;
    std::size_t held_ = 0;
};

} // namespace signet::md::nasdaq
