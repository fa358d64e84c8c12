#pragma once

/// pitch_book: the books of a Cboe PITCH feed — every symbol of every unit, by order, with each
/// unit's state — built from decoded messages (pitch.hpp) that the caller delivers in sequence
/// per unit.
///
/// The orders and price levels are a nasdaq::itch_order_book: Cboe's order book is what ITCH's
/// is (day-unique 64-bit order ids, a side, a size and a limit price per order; executions,
/// partial cancels and deletes by id) and its aggregated levels are what a book consumer reads;
/// PITCH's symbols are mapped to the dense ids (the book's "locates") here, on first sight, in
/// a fixed table. What differs is applied on top: Modify Order keeps the order id (a replace
/// onto the same id), Order Executed at Price/Size states the remaining size, short forms scale
/// their prices, and Unit Clear (and a unit's snapshot) empties one unit's symbols only (a walk
/// over the live orders: rare, at startup and on fail-over). Prices above the book's 32-bit
/// range (1/10000 of a dollar: above $429,496.7295) are refused and counted.
///
/// Units: a symbol belongs to the unit that first carried it. A unit that lost data (stale())
/// makes its symbols' books wrong until it is rebuilt (clear_unit() and a snapshot); the other
/// units' books stay right.
///
/// Events (set_event_sink; md/events.hpp): instrument_definition on a symbol's first message,
/// order_add, order_modify, order_delete, order_execute, level_update, bbo (when an instrument's
/// best bid or offer changed), trade (executions and trades of non-displayed orders),
/// trading_status, book_clear (a unit cleared), instrument_stale / instrument_recovered (for
/// each symbol of the unit). Instrument ids are the dense ids; prices of 10^-4.
///
/// Threading: none (one writer: the feed's parser contract). Costs: per message a decode and
/// the order book's (docs/benchmarks.md); nothing allocates after construction except the order
/// book's level growth past its reserves; no exceptions after construction but std::bad_alloc
/// from there.

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include <signet/md/cboe/pitch.hpp>
#include <signet/md/detail/fixed_hash_map.hpp>
#include <signet/md/events.hpp>
#include <signet/md/nasdaq/itch_order_book.hpp>

namespace signet::md::cboe {

struct pitch_book_options {
    std::size_t max_orders = std::size_t{1} << 20; ///< live orders, every unit's
    std::size_t max_instruments = 16384;           ///< symbols (at most 65536)
    /// The order book's directly indexed pages and level nodes reserved up front
    /// (itch_order_book_options: index_pages, level_pool_reserve).
    std::size_t index_pages = 2048;
    std::size_t level_pool_reserve = std::size_t{1} << 16;
};

struct pitch_book_stats {
    std::uint64_t messages = 0; ///< applied (every type)
    std::uint64_t adds = 0;
    std::uint64_t executions = 0;
    std::uint64_t reductions = 0;
    std::uint64_t modifies = 0;
    std::uint64_t deletes = 0;
    std::uint64_t trades = 0; ///< Trade messages (non-displayed orders)
    std::uint64_t trade_breaks = 0;
    std::uint64_t status_updates = 0;
    std::uint64_t unit_clears = 0;
    std::uint64_t unknown_messages = 0; ///< types this book does not know (skipped)
    std::uint64_t unknown_orders = 0;   ///< an execution, reduce, modify or delete of no live order
    std::uint64_t duplicate_orders = 0; ///< an add of a live order id (not added)
    std::uint64_t book_full = 0;        ///< adds refused at max_orders
    std::uint64_t price_out_of_range = 0; ///< adds or modifies with a price above the book's range
    std::uint64_t instruments_full = 0;   ///< messages of a new symbol past max_instruments
};

struct pitch_instrument {
    symbol_text symbol{};
    std::uint8_t unit = 0;
    char status = 0;             ///< the last Trading Status ('T', 'H', 'Q', 'S', 'A'); 0: none yet
    std::uint64_t volume = 0;    ///< shares executed and traded
    std::int64_t last_price = 0; ///< of the last execution or trade (1/10000)
};

struct pitch_unit {
    std::uint32_t time = 0;     ///< the last Time: seconds since midnight
    std::uint64_t messages = 0; ///< applied
    bool seen = false;          ///< a message of it was applied
    bool stale = false;         ///< lost data: its symbols' books are wrong until rebuilt
    bool ended = false;         ///< End of Session
};

class pitch_book {
public:
    static constexpr std::size_t units = 256;

    /// Throws std::invalid_argument for max_instruments above 65536.
    explicit pitch_book(pitch_book_options const& options = {});

    void set_event_sink(event_sink* sink, event_mask kinds = event_mask::all());

    /// Applies message `m` of unit `unit` whose sequence is `sequence`; `receive_ns` stamps its
    /// events, `flags` (event_flag) too (from_snapshot: a Spin's messages).
    void apply(std::uint8_t unit, std::uint64_t sequence, message const& m,
               std::uint64_t receive_ns, std::uint16_t flags = 0);
    /// snapshot_begin (`begin`) or snapshot_end for each symbol of `unit`: the events between
    /// rebuild its books from a Spin.
    void snapshot_bounds(std::uint8_t unit, bool begin, std::uint64_t sequence);
    /// Every message of a validated block from the `skip`-th on (the ones before were applied).
    void apply_block(std::span<std::byte const> block, std::uint64_t skip,
                     std::uint64_t receive_ns);
    /// Empties every symbol of `unit` (Unit Clear, a snapshot about to load): book_clear.
    void clear_unit(std::uint8_t unit, std::uint64_t sequence, std::uint64_t receive_ns);
    /// The unit lost data (or regained it): instrument_stale / instrument_recovered for each of
    /// its symbols when the state changes.
    void set_stale(std::uint8_t unit, bool stale, std::uint64_t sequence, std::uint64_t receive_ns);

    [[nodiscard]] pitch_unit const& unit(std::uint8_t u) const noexcept { return units_[u]; }
    [[nodiscard]] pitch_book_stats const& stats() const noexcept { return stats_; }
    [[nodiscard]] std::size_t instrument_count() const noexcept { return instruments_.size(); }
    /// nullptr for an id no symbol has.
    [[nodiscard]] pitch_instrument const* instrument(std::uint32_t id) const noexcept {
        return id < instruments_.size() ? &instruments_[id] : nullptr;
    }
    /// The id of `symbol`, if seen.
    [[nodiscard]] std::optional<std::uint32_t> find(symbol_text const& symbol) const noexcept;
    [[nodiscard]] nasdaq::itch_order_book const& orders() const noexcept { return book_; }
    [[nodiscard]] std::uint32_t order_count(std::uint32_t id) const noexcept {
        return book_.order_count(static_cast<std::uint16_t>(id));
    }
    [[nodiscard]] nasdaq::top_of_book top(std::uint32_t id) const noexcept {
        return book_.top(static_cast<std::uint16_t>(id));
    }

private:
    static std::uint64_t key(symbol_text const& s) noexcept;
    /// The id of `symbol`, added (with its instrument_definition) on first sight; nullopt past
    /// max_instruments.
    std::optional<std::uint32_t> use(symbol_text const& symbol, std::uint8_t unit, event& base);
    void add(std::uint8_t unit, message const& m, event& base);
    void emit_changes(event const& base, std::uint32_t id);
    /// An order event (add aside) of order `o`, at `price` with `quantity` left.
    void send_order(event const& base, event_kind kind, nasdaq::order const& o, std::int64_t price,
                    std::uint32_t quantity) noexcept;
    void send(event const& e) noexcept {
        if (sink_ != nullptr && wanted_.has(e.kind)) {
            sink_->on_event(e);
        }
    }

    nasdaq::itch_order_book book_;
    detail::fixed_hash_map<std::uint64_t, std::uint32_t> ids_;
    std::vector<pitch_instrument> instruments_; // reserved: never reallocates
    std::vector<nasdaq::top_of_book> reported_; // per instrument: the bbo last emitted
    std::array<pitch_unit, units> units_{};
    std::vector<std::uint64_t> clearing_; // clear_unit()'s order ids, reserved
    std::size_t max_instruments_;
    pitch_book_stats stats_{};
    event_sink* sink_ = nullptr;
    event_mask wanted_{};
};

} // namespace signet::md::cboe
