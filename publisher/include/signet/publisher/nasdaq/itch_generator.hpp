#pragma once

/// itch_generator: a deterministic stream of realistic ITCH 5.0 messages for the md_feed app,
/// tests and benchmarks. The same options (seed included) give the same bytes.
///
/// Stream: system events 'O' (start of messages), 'S' (start of system hours), 'Q' (start of
/// market hours); one stock directory 'R' per symbol (locates 1..symbols); then the body: adds
/// (A, F) a few ticks around each symbol's mid price (which drifts within +-2 ticks, so the
/// book never crosses), executes (E, C), cancels (X), deletes (D) and replaces (U) of live
/// orders only, non-displayed trades (P) and now and then one of the other types; finally
/// system events 'M', 'E', 'C' (end of market hours, of system
/// hours, of messages). Timestamps are nanoseconds since midnight and strictly increase; order
/// references and match numbers count up from 1. Adds outnumber removals while fewer than
/// target_live_orders are live and the reverse above it, so the book stays near that size.
///
/// Threading: none (one thread per generator). Costs: next() writes one message straight into
/// the caller's buffer: a few mt19937_64 draws, no allocation (live orders live in a vector
/// reserved for max_live_orders at construction), no exceptions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include <signet/md/nasdaq/binary_file_reader.hpp> // the other message source of md_feed
#include <signet/md/nasdaq/itch50.hpp>

namespace signet::publisher::nasdaq {

/// A change of one price level by a generated message (on_book_change).
struct itch_book_change {
    std::uint64_t message = 0; ///< the message's number (1: the first generated)
    std::uint16_t locate = 0;
    char side = 'B';
    std::uint32_t price = 0;
    std::int64_t shares = 0; ///< added (negative: removed)
    std::int32_t orders = 0; ///< orders added to the level (negative: removed)
};

struct itch_generator_options {
    std::uint64_t seed = 1;
    /// Stocks, 1 to 65535. Up to 32 get real ticker names (AAPL, MSFT, ...); with more, all
    /// are named SYM00001, SYM00002, ...
    std::size_t symbols = 16;
    /// Body messages before the closing events; 0 = until close() is called.
    std::uint64_t messages = 0;
    std::size_t target_live_orders = 4096;
    std::size_t max_live_orders = 65536; ///< hard cap; at least 1
    /// Nanoseconds since midnight of the first message (default 09:30:00).
    std::uint64_t start_time = 34'200'000'000'000;
    /// Optional: told each level change of the book the stream describes, as the message
    /// making it is generated (md_feed --truth-out).
    std::function<void(itch_book_change const&)> on_book_change{};
};

class itch_generator {
public:
    /// Throws std::invalid_argument on bad options.
    explicit itch_generator(itch_generator_options options = {});

    /// Writes the next message into `out` and returns its length (at most
    /// md::nasdaq::itch50::max_message_length). Returns 0 without consuming anything if `out` is
    /// shorter than md::nasdaq::itch50::max_message_length, and 0 once finished().
    [[nodiscard]] std::size_t next(std::span<std::byte> out) noexcept;
    /// Ends the body where it is: after any opening and directory messages still due, the next
    /// messages are the closing system events.
    void close() noexcept;
    /// True once the last closing event was generated.
    [[nodiscard]] bool finished() const noexcept { return phase_ == phase::done; }

    /// Messages generated per type letter (index = the ASCII code).
    [[nodiscard]] std::array<std::uint64_t, 128> const& generated_by_type() const noexcept {
        return generated_;
    }
    [[nodiscard]] std::uint64_t generated(char type) const noexcept;
    [[nodiscard]] std::uint64_t generated() const noexcept { return total_; }
    /// Orders the generated stream leaves live so far.
    [[nodiscard]] std::size_t live_orders() const noexcept { return live_.size(); }
    [[nodiscard]] std::size_t symbols() const noexcept { return symbols_.size(); }
    /// Symbol of stock locate `index + 1`, trailing spaces trimmed.
    [[nodiscard]] std::string_view symbol(std::size_t index) const noexcept;

private:
    enum class phase : std::uint8_t { opening, directory, body, closing, done };
    struct live_order {
        std::uint64_t ref;
        std::uint32_t shares;
        std::uint32_t price;
        std::uint16_t locate;
        char side;
    };

    std::uint64_t uniform(std::uint64_t n) noexcept; // [0, n)
    bool chance(unsigned percent) noexcept;
    std::uint32_t quote_price(std::size_t stock, char side) noexcept;
    void remove_live(std::size_t index) noexcept;
    void book_change(live_order const& o, std::int64_t shares, std::int32_t orders) const;

    std::size_t write_header(std::byte* m, char type, std::uint16_t locate) noexcept;
    std::size_t system_event(std::byte* m, char code) noexcept;
    std::size_t stock_directory(std::byte* m, std::size_t stock) noexcept;
    std::size_t body_message(std::byte* m) noexcept;
    std::size_t add_order(std::byte* m) noexcept;
    std::size_t execute(std::byte* m, bool with_price) noexcept;
    std::size_t cancel(std::byte* m) noexcept;
    std::size_t remove(std::byte* m) noexcept;
    std::size_t replace(std::byte* m) noexcept;
    std::size_t trade(std::byte* m) noexcept;
    std::size_t other(std::byte* m) noexcept;
    void put_stock(std::byte* p, std::size_t stock) const noexcept;

    itch_generator_options options_;
    std::mt19937_64 rng_;
    std::vector<std::array<char, 8>> symbols_;
    std::vector<std::uint32_t> anchors_; // per stock, ITCH price units: the mid's band centre
    std::vector<std::uint32_t> mids_;
    std::vector<live_order> live_;
    std::array<std::uint64_t, 128> generated_{};
    std::uint64_t total_ = 0;
    std::uint64_t body_ = 0;
    std::uint64_t time_;
    std::uint64_t next_ref_ = 1;
    std::uint64_t next_match_ = 1;
    phase phase_ = phase::opening;
    bool close_requested_ = false;
    std::size_t step_ = 0; // position inside the opening, directory and closing phases
};

} // namespace signet::publisher::nasdaq
