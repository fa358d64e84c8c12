#pragma once

/// pitch_generator: a deterministic Cboe Multicast PITCH market for tests, benchmarks and
/// md_feed — symbols spread over units (symbol i on unit 1 + i % units), each with live orders
/// that the messages add (long, short and expanded forms, some attributed), execute (at their
/// price, or at a price and a stated remainder), reduce, modify (same id), delete, and trades
/// of non-displayed orders, as Cboe's US equities feed sends them:
///
///   next(unit, m)        the next message of `unit` (every one fits the book it changes)
///   snapshot(unit, f)    f(message) for each message a Spin of `unit` carries now: an Add
///                        Order per live order of its symbols, in each symbol's time priority
///
/// Order ids are day-unique across units (one counter), as Cboe's are. Prices: whole cents
/// mostly (the short form fits), a sub-penny price now and then (the long form).
///
/// Threading: none. Costs: per message a few random draws; orders live in per-symbol vectors
/// reserved at construction (max_orders each): nothing allocates after it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <signet/md/cboe/pitch.hpp>

namespace signet::publisher::cboe {

/// A change of one price level by a generated message (on_book_change).
struct pitch_book_change {
    std::uint64_t message = 0; ///< the message's number (messages() once it is generated)
    std::size_t symbol = 0;    ///< the symbol's index
    char side = 'B';
    std::int64_t price = 0;    ///< 1/10000
    std::int64_t quantity = 0; ///< added (negative: removed)
    std::int32_t orders = 0;   ///< orders added to the level (negative: removed)
};

struct pitch_generator_options {
    std::uint64_t seed = 1;
    std::size_t units = 2;       ///< 1 to 64 (numbered from 1)
    std::size_t symbols = 8;     ///< 1 to 4096, spread over the units
    std::size_t max_orders = 40; ///< live orders per symbol, 2 to 10000
    std::uint64_t first_order_id = 0x03689EEAE9741000;
    /// Optional: told each level change of the books as the message making it is generated
    /// (md_feed --truth-out).
    std::function<void(pitch_book_change const&)> on_book_change{};
};

class pitch_generator {
public:
    struct order {
        std::uint64_t id = 0;
        char side = 'B';
        std::uint32_t quantity = 0;
        std::int64_t price = 0;  ///< 1/10000
        bool attributed = false; ///< sent as Add Order Expanded with a participant id
    };

    /// Throws std::invalid_argument on bad options.
    explicit pitch_generator(pitch_generator_options const& options = {});

    /// The next message of `unit` (1 to units()) into `m` (its time offset left 0).
    void next(std::uint8_t unit, md::cboe::message& m);
    /// Calls f(message const&) for the Add Order of each live order of `unit`'s symbols.
    template <typename F>
    void snapshot(std::uint8_t unit, F&& f) const {
        for (std::size_t s = unit - 1U; s < symbols_.size(); s += options_.units) {
            for (order const& o : symbols_[s].orders) {
                f(add_message(symbols_[s], o));
            }
        }
    }
    [[nodiscard]] std::size_t units() const noexcept { return options_.units; }
    [[nodiscard]] std::size_t symbols() const noexcept { return symbols_.size(); }
    /// Live orders of `unit`'s symbols.
    [[nodiscard]] std::size_t orders(std::uint8_t unit) const noexcept;
    [[nodiscard]] std::uint64_t messages() const noexcept { return messages_; }
    /// Symbol `index`'s name, trailing spaces trimmed; its unit is 1 + index % units().
    [[nodiscard]] std::string_view symbol(std::size_t index) const noexcept;

private:
    struct symbol_state {
        md::cboe::symbol_text symbol{};
        std::int64_t base_price = 0;
        std::vector<order> orders; // time priority: oldest first
    };
    [[nodiscard]] static md::cboe::message add_message(symbol_state const& s, order const& o);
    [[nodiscard]] std::int64_t price_near(symbol_state const& s, char side);
    void book_change(std::size_t symbol, order const& o, std::int64_t quantity,
                     std::int32_t orders) const;

    pitch_generator_options options_;
    std::mt19937_64 random_;
    std::vector<symbol_state> symbols_;
    std::vector<std::size_t> next_symbol_; // per unit: round robin over its symbols
    std::uint64_t next_order_id_;
    std::uint64_t next_execution_id_ = 0x2235E0B800;
    std::uint64_t messages_ = 0;
};

} // namespace signet::publisher::cboe
