#pragma once

/// md::event: the market events every protocol emits, one vocabulary for all of them — what a
/// user's code acts on (signet::receiver subscriptions deliver them), whatever the exchange.
///
/// A record is 64 bytes, trivially copyable: a header (kind, side, flags, the feed-local
/// instrument id, the feed's sequence, the kernel receive time and the exchange time), then one
/// payload by kind. Prices are fixed-point integers of 10^price_exponent, the exponent stated
/// once per instrument by its instrument_definition (ITCH: -4; MDP 3.0: -9); quantities are the
/// protocol's units (shares, contracts).
///
///   instrument_definition  an instrument appeared: its id, symbol, price exponent, tick
///   trading_status         its trading state changed (or was restated)
///   order_add              market by order: a new order (its place is the back of its level)
///   order_modify           an order's price or quantity changed in place (keeps its place
///                          unless the protocol says otherwise: MDP 3.0 sends the priority)
///   order_delete           an order left the book (cancelled in full, or replaced: flag)
///   order_execute          an order traded (partly or in full: `remaining`)
///   level_update           market by price: a level's new totals (size 0: the level is gone),
///                          with its depth (0 = best) after the change
///   bbo                    the best bid or offer changed (either side: both are given)
///   trade                  a trade printed
///   book_clear             the instrument's book is empty from here (before a rebuild)
///   snapshot_begin/_end    the events between rebuild the instrument's book from a snapshot
///                          (or, with instrument = all_instruments, every instrument's)
///   instrument_stale       data was lost: the book is wrong until instrument_recovered
///   instrument_recovered   the book is right again (after its rebuild)
///   events_lost            a subscriber fell behind: `count` events were dropped; re-read
///                          the book (signet::receiver; never emitted by a protocol)
///
/// Recovery is never a silent jump: a consumer sees stale -> snapshot_begin, book_clear, the
/// rebuilt book (order_add or level_update events, flag `from_snapshot`), bbo, snapshot_end ->
/// recovered -> live events.
///
/// Threading: values. Costs: none (a copy is 64 bytes).

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>

namespace signet::md {

enum class event_kind : std::uint8_t {
    instrument_definition,
    trading_status,
    order_add,
    order_modify,
    order_delete,
    order_execute,
    level_update,
    bbo,
    trade,
    book_clear,
    snapshot_begin,
    snapshot_end,
    instrument_stale,
    instrument_recovered,
    events_lost,
};
inline constexpr std::size_t event_kinds = 15;

[[nodiscard]] std::string_view to_string(event_kind kind) noexcept;
/// The kind named by to_string()'s text; nullopt for any other text.
[[nodiscard]] std::optional<event_kind> parse_event_kind(std::string_view text) noexcept;

/// A set of event kinds, for subscriptions.
class event_mask {
public:
    constexpr event_mask() noexcept = default;
    static constexpr event_mask all() noexcept { return event_mask{(1u << event_kinds) - 1}; }
    static constexpr event_mask of(std::initializer_list<event_kind> kinds) noexcept {
        event_mask m;
        for (event_kind k : kinds) {
            m.bits_ |= 1u << static_cast<unsigned>(k);
        }
        return m;
    }
    [[nodiscard]] constexpr bool has(event_kind k) const noexcept {
        return (bits_ >> static_cast<unsigned>(k) & 1u) != 0;
    }
    [[nodiscard]] constexpr bool empty() const noexcept { return bits_ == 0; }
    [[nodiscard]] constexpr std::uint32_t bits() const noexcept { return bits_; }
    friend constexpr event_mask operator|(event_mask a, event_mask b) noexcept {
        return event_mask{a.bits_ | b.bits_};
    }

private:
    constexpr explicit event_mask(std::uint32_t bits) noexcept
        : bits_(bits) {}
    std::uint32_t bits_ = 0;
};

/// The kinds of a comma-separated list of to_string() names ("bbo,trade"); nullopt when one is
/// not a kind (or the list is empty). `bad` gets the first name that is not.
[[nodiscard]] std::optional<event_mask> parse_event_kinds(std::string_view list,
                                                          std::string_view* bad = nullptr) noexcept;

/// Normalized trading states (trading_status events; the raw code is kept beside).
enum class trading_state : std::uint8_t {
    unknown,
    pre_open,
    open,   ///< trading
    paused, ///< a short pause or an auction call (quotes may continue)
    halted,
    closed,
    quote_only, ///< quotation only (no trading)
};

[[nodiscard]] std::string_view to_string(trading_state state) noexcept;

/// Header flags.
namespace event_flag {
inline constexpr std::uint16_t from_snapshot = 1; ///< part of a book rebuilt from a snapshot
inline constexpr std::uint16_t replace = 2;       ///< order_delete/order_add of a replace
} // namespace event_flag

/// The instrument id of an event about every instrument of the feed.
inline constexpr std::uint32_t all_instruments = 0xFFFFFFFF;

struct event_definition {
    std::array<char, 20> symbol; ///< NUL padded
    std::int8_t price_exponent;  ///< prices of this instrument are integers of 10^exponent
    std::array<std::uint8_t, 3> reserved;
    std::int64_t tick; ///< the smallest price step (in price units; 0: not given)
};
struct event_status {
    trading_state state;
    std::array<char, 7> code; ///< the protocol's own code (ITCH: 'H', 'T', ...; MDP 3.0: "17")
    std::array<char, 8> reason;
    std::array<std::byte, 16> reserved;
};
struct event_order {
    std::uint64_t id;
    std::int64_t price;
    std::uint32_t quantity;   ///< open quantity after the event (order_add: displayed quantity)
    std::array<char, 4> mpid; ///< attribution (ITCH 'F'), else spaces or NULs
    std::uint64_t priority;   ///< the protocol's queue priority (MDP 3.0), else 0
};
struct event_execute {
    std::uint64_t id;
    std::int64_t price;      ///< the execution price
    std::uint32_t executed;  ///< this execution's quantity
    std::uint32_t remaining; ///< the order's open quantity after it
    std::uint64_t match;     ///< the exchange's match number / trade id
};
struct event_level {
    std::int64_t price;
    std::uint64_t size;   ///< total quantity (0: the level is gone)
    std::uint32_t orders; ///< orders at the level (0 when the protocol does not say)
    std::uint16_t depth;  ///< 0 = best, after the change (the level's old depth when it left)
    std::array<std::byte, 10> reserved;
};
struct event_bbo {
    std::int64_t bid_price; ///< 0 with bid_size 0: no bid
    std::uint64_t bid_size;
    std::int64_t ask_price;
    std::uint64_t ask_size;
};
struct event_trade {
    std::int64_t price;
    std::uint64_t quantity;
    std::uint64_t match;    ///< match number / trade id (0: not given)
    std::uint64_t order_id; ///< the resting order, where the protocol says (else 0)
};
struct event_lost {
    std::uint64_t count;
    std::array<std::byte, 24> reserved;
};

struct event {
    event_kind kind;
    char side;                 ///< 'B' bid / buy, 'S' offer / sell, 0: none (trade: aggressor)
    std::uint16_t flags;       ///< event_flag bits
    std::uint32_t instrument;  ///< feed-local id (ITCH: stock locate; MDP 3.0: channel index)
    std::uint64_t sequence;    ///< the feed's sequence of the message that caused it
    std::uint64_t receive_ns;  ///< kernel receive time of its packet (CLOCK_REALTIME; 0: none)
    std::uint64_t exchange_ns; ///< the exchange's time (ITCH: ns since midnight; MDP 3.0: epoch)
    union {
        event_definition definition;
        event_status status;
        event_order order;
        event_execute execute;
        event_level level;
        event_bbo bbo;
        event_trade trade;
        event_lost lost;
    };
};
static_assert(sizeof(event) == 64, "md::event: one cache line");
static_assert(std::is_trivially_copyable_v<event>);

/// Where a protocol's events go. on_event() runs on the emitting thread (the feed's parser
/// contract) and must not block; the event is valid during the call only.
class event_sink {
public:
    virtual void on_event(event const& e) noexcept = 0;

protected:
    ~event_sink() = default;
};

/// What every event of a packet shares, set by whoever hands the packet to the protocol.
struct event_context {
    std::uint64_t sequence = 0;
    std::uint64_t receive_ns = 0;
};

/// An event with no payload (book_clear, snapshot_begin/_end, instrument_stale/_recovered).
[[nodiscard]] inline event marker_event(event_kind kind, std::uint32_t instrument,
                                        event_context const& context,
                                        std::uint16_t flags = 0) noexcept {
    event e{};
    e.kind = kind;
    e.flags = flags;
    e.instrument = instrument;
    e.sequence = context.sequence;
    e.receive_ns = context.receive_ns;
    return e;
}

} // namespace signet::md
