#pragma once

/// mdp3_generator: a deterministic CME MDP 3.0 channel for tests, benchmarks and md_feed — a
/// few futures instruments whose market-by-price books move by new / change / delete entries
/// (MDIncrementalRefreshBook46, several entries a packet) and trades
/// (MDIncrementalRefreshTradeSummary48), with what a channel's other feeds carry:
///
///   definition(out, i)        MDInstrumentDefinitionFuture54 of instrument i (one packet)
///   next_incremental(out)     the next incremental packet (MsgSeqNum 1, 2, ...)
///   snapshot(out, i, seq)     SnapshotFullRefresh52 of instrument i as of the last incremental
///                             packet (LastMsgSeqNumProcessed, RptSeq), packet MsgSeqNum `seq`
///                             of its loop (1 starts a loop)
///   order_snapshot(out, i, c, seq)  chunk c (1 to order_chunks(i)) of instrument i's
///                             SnapshotFullRefreshOrderBook53: its live orders (market by order)
///
/// Orders (market by order) move independently of the levels: MDIncrementalRefreshOrderBook47
/// entries add, update and delete orders of each instrument (up to max_orders live each).
///
/// Every entry fits the book it updates (the generator keeps the books: book(i)), so a
/// receiver that saw every packet holds the same books. Layouts: schema id 1, version 13
/// (docs/mdp3.md). Threading: none. Costs: no allocation after construction; out must hold
/// max_packet bytes.

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include <signet/md/cme/mdp3_order_book.hpp>
#include <signet/md/cme/mdp3_price_book.hpp>

namespace signet::publisher::cme {

struct mdp3_generator_options {
    std::uint64_t seed = 1;
    std::size_t instruments = 4; ///< 1 to 200
    std::size_t depth = 10;      ///< book depth, 1 to price_book::max_depth
    std::size_t max_entries = 4; ///< book entries per incremental packet, 1 to 20
    std::size_t max_orders = 60; ///< live orders per instrument (market by order), 1 to 10000
    std::int32_t first_security_id = 1000;
    std::uint64_t start_time_ns = 1'764'000'000'000'000'000; ///< SendingTime of packet 1
};

class mdp3_generator {
public:
    static constexpr std::size_t max_packet = 1400;

    /// Throws std::invalid_argument on bad options.
    explicit mdp3_generator(mdp3_generator_options const& options = {});

    [[nodiscard]] std::size_t definition(std::span<std::byte> out, std::size_t instrument,
                                         std::uint32_t sequence) const;
    [[nodiscard]] std::size_t next_incremental(std::span<std::byte> out);
    [[nodiscard]] std::size_t snapshot(std::span<std::byte> out, std::size_t instrument,
                                       std::uint32_t sequence) const;

    [[nodiscard]] std::size_t order_snapshot(std::span<std::byte> out, std::size_t instrument,
                                             std::uint32_t chunk, std::uint32_t sequence) const;
    [[nodiscard]] std::uint32_t order_chunks(std::size_t instrument) const noexcept;

    [[nodiscard]] std::size_t instruments() const noexcept { return books_.size(); }
    [[nodiscard]] std::int32_t security_id(std::size_t instrument) const noexcept {
        return options_.first_security_id + static_cast<std::int32_t>(instrument);
    }
    [[nodiscard]] md::cme::mdp3_price_book const& book(std::size_t instrument) const noexcept {
        return books_[instrument];
    }
    [[nodiscard]] std::uint32_t rpt_seq(std::size_t instrument) const noexcept {
        return rpt_seq_[instrument];
    }
    /// The MsgSeqNum of the last incremental packet (0 before the first).
    [[nodiscard]] std::uint32_t sequence() const noexcept { return sequence_; }
    /// Book entries and trades generated so far.
    [[nodiscard]] std::uint64_t book_entries() const noexcept { return book_entries_; }
    [[nodiscard]] std::uint64_t trades() const noexcept { return trades_; }
    [[nodiscard]] std::uint64_t order_entries() const noexcept { return order_entries_; }
    /// Instrument i's live orders (order id, order).
    struct live_order {
        std::uint64_t id = 0;
        md::cme::mdp3_order order{};
    };
    [[nodiscard]] std::vector<live_order> const& orders(std::size_t instrument) const noexcept {
        return orders_[instrument];
    }

private:
    md::cme::book_entry next_entry(std::size_t instrument);
    md::cme::order_book_entry next_order_entry(std::size_t instrument);

    mdp3_generator_options options_;
    std::mt19937_64 random_;
    std::vector<md::cme::mdp3_price_book> books_;
    std::vector<std::uint32_t> rpt_seq_;
    std::vector<std::int64_t> mid_; // per instrument, in ticks
    std::uint32_t sequence_ = 0;
    std::uint64_t book_entries_ = 0;
    std::uint64_t trades_ = 0;
    std::vector<std::vector<live_order>> orders_;
    std::uint64_t next_order_id_ = 1;
    std::uint64_t order_entries_ = 0;
};

} // namespace signet::publisher::cme
