#include <algorithm>
#include <stdexcept>
#include <string>

#include <signet/md/little_endian.hpp>
#include <signet/publisher/cme/mdp3_generator.hpp>

namespace signet::publisher::cme {

using md::store_le;

namespace {

constexpr std::uint16_t version = 13;
constexpr std::int64_t tick = 250'000'000;   // 0.25 in PRICE9
constexpr std::size_t orders_per_chunk = 40; // 53 + 40 x 29 bytes fit a 1400-byte packet

// Appends little-endian fields into a caller's buffer; the sizes here never exceed it.
class writer {
public:
    explicit writer(std::span<std::byte> out) noexcept
        : out_(out) {}
    template <typename T>
    writer& put(T value) noexcept {
        store_le(out_.data() + at_, value);
        at_ += sizeof(T);
        return *this;
    }
    writer& zeros(std::size_t n) noexcept {
        std::fill_n(out_.data() + at_, n, std::byte{0});
        at_ += n;
        return *this;
    }
    writer& text(std::string_view s, std::size_t width) noexcept {
        for (std::size_t i = 0; i < width; ++i) {
            out_[at_ + i] = static_cast<std::byte>(i < s.size() ? s[i] : '\0');
        }
        at_ += width;
        return *this;
    }
    [[nodiscard]] std::size_t at() const noexcept { return at_; }
    std::byte* data(std::size_t offset) noexcept { return out_.data() + offset; }

    /// A message from here: MsgSize (patched by end_message) and the SBE header.
    std::size_t begin_message(std::uint16_t block_length, std::uint16_t template_id) noexcept {
        std::size_t const start = at_;
        put<std::uint16_t>(0)
            .put(block_length)
            .put(template_id)
            .put(md::cme::schema_id)
            .put(version);
        return start;
    }
    void end_message(std::size_t start) noexcept {
        store_le(out_.data() + start, static_cast<std::uint16_t>(at_ - start));
    }
    /// A group dimension (3 or 8 bytes).
    writer& dimension(std::uint16_t block_length, std::size_t count, bool eight = false) noexcept {
        put(block_length);
        if (eight) {
            zeros(5);
        }
        return put(static_cast<std::uint8_t>(count));
    }

private:
    std::span<std::byte> out_;
    std::size_t at_ = 0;
};

} // namespace

mdp3_generator::mdp3_generator(mdp3_generator_options const& options)
    : options_(options)
    , random_(options.seed) {
    if (options.instruments == 0 || options.instruments > 200 || options.depth == 0 ||
        options.depth > md::cme::mdp3_price_book::max_depth || options.max_entries == 0 ||
        options.max_entries > 20 || options.max_orders == 0 || options.max_orders > 10'000) {
        throw std::invalid_argument("mdp3_generator: 1-200 instruments, depth 1-" +
                                    std::to_string(md::cme::mdp3_price_book::max_depth) +
                                    ", 1-20 entries per packet, 1-10000 orders");
    }
    for (std::size_t i = 0; i < options.instruments; ++i) {
        books_.emplace_back(options.depth);
        rpt_seq_.push_back(0);
        mid_.push_back(static_cast<std::int64_t>(18'000 + 400 * i)); // 4500.00 and up
        orders_.emplace_back();
        orders_.back().reserve(options.max_orders);
    }
}

md::cme::book_entry mdp3_generator::next_entry(std::size_t instrument) {
    md::cme::mdp3_price_book const& book = books_[instrument];
    md::cme::book_entry e;
    e.security_id = security_id(instrument);
    bool const bid = random_() % 2 == 0;
    e.type = bid ? md::cme::entry_type::bid : md::cme::entry_type::offer;
    auto const side = bid ? book.bids() : book.offers();
    e.size = static_cast<std::int32_t>(1 + random_() % 200);
    e.number_of_orders = static_cast<std::int32_t>(1 + random_() % 20);
    auto const roll = random_() % 10;
    if (side.empty() || (roll < 3 && side.size() < options_.depth)) {
        // A new level: a price between its neighbours' (ticks away from the mid), so that each
        // side stays sorted.
        std::size_t const level = random_() % (side.size() + 1);
        std::int64_t const better =
            level == 0 ? (bid ? mid_[instrument] : mid_[instrument]) : side[level - 1].price / tick;
        std::int64_t const worse =
            level < side.size() ? side[level].price / tick : better + (bid ? -50 : 50);
        std::int64_t const gap = bid ? better - worse : worse - better;
        if (gap < 2) {
            e.action = md::cme::update_action::change; // no room between: change instead
            if (side.empty()) {
                e.action = md::cme::update_action::new_level;
                e.price_level = 1;
                e.price = (mid_[instrument] + (bid ? -1 : 1)) * tick;
                return e;
            }
            e.price_level = static_cast<std::uint8_t>(1 + random_() % side.size());
            e.price = side[e.price_level - 1u].price;
            return e;
        }
        std::int64_t const step =
            1 + static_cast<std::int64_t>(random_() % static_cast<std::uint64_t>(gap - 1));
        e.action = md::cme::update_action::new_level;
        e.price_level = static_cast<std::uint8_t>(level + 1);
        e.price = (bid ? better - step : better + step) * tick;
        return e;
    }
    e.price_level = static_cast<std::uint8_t>(1 + random_() % side.size());
    e.price = side[e.price_level - 1u].price;
    e.action = roll < 8 ? md::cme::update_action::change : md::cme::update_action::remove;
    return e;
}

md::cme::order_book_entry mdp3_generator::next_order_entry(std::size_t instrument) {
    std::vector<live_order>& live = orders_[instrument];
    md::cme::order_book_entry e;
    e.security_id = security_id(instrument);
    auto const roll = random_() % 10;
    if (live.empty() || (roll < 4 && live.size() < options_.max_orders)) {
        bool const bid = random_() % 2 == 0;
        auto const away = static_cast<std::int64_t>(1 + random_() % 20);
        live.push_back({next_order_id_++,
                        {.priority = next_order_id_,
                         .price = (mid_[instrument] + (bid ? -away : away)) * tick,
                         .quantity = static_cast<std::int32_t>(1 + random_() % 50),
                         .side = bid ? md::cme::entry_type::bid : md::cme::entry_type::offer}});
        e.action = md::cme::update_action::new_level;
        e.order_id = live.back().id;
        e.priority = live.back().order.priority;
        e.price = live.back().order.price;
        e.display_qty = live.back().order.quantity;
        e.type = live.back().order.side;
        return e;
    }
    std::size_t const k = random_() % live.size();
    e.order_id = live[k].id;
    e.priority = live[k].order.priority;
    e.price = live[k].order.price;
    e.type = live[k].order.side;
    if (roll < 7) {
        e.action = md::cme::update_action::change; // the quantity moves
        live[k].order.quantity = static_cast<std::int32_t>(1 + random_() % 50);
        e.display_qty = live[k].order.quantity;
    } else {
        e.action = md::cme::update_action::remove;
        e.display_qty = live[k].order.quantity;
        live[k] = live.back();
        live.pop_back();
    }
    return e;
}

std::size_t mdp3_generator::next_incremental(std::span<std::byte> out) {
    if (out.size() < max_packet) {
        return 0;
    }
    writer w(out);
    ++sequence_;
    w.put(sequence_).put(options_.start_time_ns + std::uint64_t{sequence_} * 1000);
    std::uint64_t const transact = options_.start_time_ns + std::uint64_t{sequence_} * 1000 - 500;
    // Now and then a trade first (TradeSummary48: RptSeq moves, the book does not).
    if (random_() % 8 == 0) {
        std::size_t const i = random_() % books_.size();
        std::size_t const start =
            w.begin_message(11, md::cme::template_id::incremental_trade_summary);
        w.put(transact).put<std::uint8_t>(0).zeros(2);
        w.dimension(32, 1);
        w.put<std::int64_t>(mid_[i] * tick)
            .put<std::int32_t>(1 + static_cast<std::int32_t>(random_() % 10))
            .put(security_id(i))
            .put(++rpt_seq_[i])
            .put<std::int32_t>(2)
            .put<std::uint8_t>(1)
            .put<std::uint8_t>(0)
            .put<std::uint32_t>(static_cast<std::uint32_t>(trades_))
            .zeros(2);
        w.dimension(16, 0, true);
        w.end_message(start);
        ++trades_;
    }
    std::size_t const entries = 1 + random_() % options_.max_entries;
    std::size_t const start = w.begin_message(11, md::cme::template_id::incremental_book);
    w.put(transact).put<std::uint8_t>(md::cme::end_of_event).zeros(2);
    w.dimension(32, entries);
    for (std::size_t n = 0; n < entries; ++n) {
        std::size_t const i = random_() % books_.size();
        md::cme::book_entry e = next_entry(i);
        e.rpt_seq = ++rpt_seq_[i];
        (void)books_[i].apply(e); // fits by construction
        w.put(e.price)
            .put(e.size)
            .put(e.security_id)
            .put(e.rpt_seq)
            .put(e.number_of_orders)
            .put(e.price_level)
            .put(static_cast<std::uint8_t>(e.action))
            .put(static_cast<std::uint8_t>(e.type))
            .put(md::cme::null_int32)
            .zeros(1);
        ++book_entries_;
    }
    w.dimension(24, 0, true);
    w.end_message(start);
    // Every other packet: order updates (MDIncrementalRefreshOrderBook47).
    if (random_() % 2 == 0) {
        std::size_t const count = 1 + random_() % 3;
        std::size_t const orders =
            w.begin_message(11, md::cme::template_id::incremental_order_book);
        w.put(transact).put<std::uint8_t>(md::cme::end_of_event).zeros(2);
        w.dimension(40, count);
        for (std::size_t n = 0; n < count; ++n) {
            md::cme::order_book_entry const e = next_order_entry(random_() % books_.size());
            w.put(e.order_id)
                .put(e.priority)
                .put(e.price)
                .put(e.display_qty)
                .put(e.security_id)
                .put(static_cast<std::uint8_t>(e.action))
                .put(static_cast<std::uint8_t>(e.type))
                .zeros(6);
            ++order_entries_;
        }
        w.end_message(orders);
    }
    return w.at();
}

std::uint32_t mdp3_generator::order_chunks(std::size_t instrument) const noexcept {
    std::size_t const n = orders_[instrument].size();
    return static_cast<std::uint32_t>(
        std::max<std::size_t>(1, (n + orders_per_chunk - 1) / orders_per_chunk));
}

std::size_t mdp3_generator::order_snapshot(std::span<std::byte> out, std::size_t instrument,
                                           std::uint32_t chunk, std::uint32_t sequence) const {
    std::uint32_t const chunks = instrument < books_.size() ? order_chunks(instrument) : 0;
    if (out.size() < max_packet || chunk == 0 || chunk > chunks) {
        return 0;
    }
    std::vector<live_order> const& live = orders_[instrument];
    std::size_t const first = (chunk - 1) * orders_per_chunk;
    std::size_t const count =
        std::min(orders_per_chunk, live.size() - std::min(first, live.size()));
    writer w(out);
    w.put(sequence).put(options_.start_time_ns + std::uint64_t{sequence_} * 1000);
    std::size_t const start = w.begin_message(28, md::cme::template_id::snapshot_order_book);
    w.put(sequence_)
        .put(static_cast<std::uint32_t>(books_.size()))
        .put(security_id(instrument))
        .put(chunks)
        .put(chunk)
        .put(options_.start_time_ns);
    w.dimension(29, count);
    for (std::size_t k = first; k < first + count; ++k) {
        w.put(live[k].id)
            .put(live[k].order.priority)
            .put(live[k].order.price)
            .put(live[k].order.quantity)
            .put(static_cast<std::uint8_t>(live[k].order.side));
    }
    w.end_message(start);
    return w.at();
}

std::size_t mdp3_generator::definition(std::span<std::byte> out, std::size_t instrument,
                                       std::uint32_t sequence) const {
    if (out.size() < max_packet || instrument >= books_.size()) {
        return 0;
    }
    writer w(out);
    w.put(sequence).put(options_.start_time_ns);
    std::size_t const start =
        w.begin_message(224, md::cme::template_id::instrument_definition_future);
    std::size_t const root = w.at();
    w.zeros(224);
    writer r(std::span<std::byte>(w.data(root), 224));
    std::string const symbol = "SIG" + std::to_string(security_id(instrument));
    r.put<std::uint8_t>(0)
        .put(md::cme::null_uint32)
        .put<std::uint8_t>('A')
        .put(options_.start_time_ns)
        .put<std::uint8_t>(17)
        .put<std::int16_t>(310)
        .put<std::uint8_t>(1)
        .put<std::uint8_t>(2)
        .text("XCME", 4)
        .text("SG", 6)
        .text("SG", 6)
        .text(symbol, 20)
        .put(security_id(instrument))
        .text("FUT", 6)
        .text("FFICSX", 6)
        .put<std::uint16_t>(2026)
        .put<std::uint8_t>(12)
        .put<std::uint8_t>(255)
        .put<std::uint8_t>(255)
        .text("USD", 3)
        .text("USD", 3)
        .put<std::uint8_t>('F')
        .put<std::uint32_t>(1)
        .put<std::uint32_t>(5000)
        .put<std::int64_t>(tick)
        .put<std::int64_t>(1'000'000'000);
    w.dimension(9, 0);
    w.dimension(4, 1).text("GBX", 3).put(static_cast<std::int8_t>(options_.depth));
    w.dimension(4, 0);
    w.dimension(5, 0);
    w.end_message(start);
    return w.at();
}

std::size_t mdp3_generator::snapshot(std::span<std::byte> out, std::size_t instrument,
                                     std::uint32_t sequence) const {
    if (out.size() < max_packet || instrument >= books_.size()) {
        return 0;
    }
    md::cme::mdp3_price_book const& book = books_[instrument];
    writer w(out);
    w.put(sequence).put(options_.start_time_ns + std::uint64_t{sequence_} * 1000);
    std::size_t const start = w.begin_message(59, md::cme::template_id::snapshot_full_refresh);
    w.put(sequence_)
        .put(static_cast<std::uint32_t>(books_.size()))
        .put(security_id(instrument))
        .put(rpt_seq_[instrument])
        .put(options_.start_time_ns)
        .put(options_.start_time_ns)
        .put<std::uint16_t>(65535)
        .put<std::uint8_t>(17)
        .put(md::cme::null_price)
        .put(md::cme::null_price)
        .put(md::cme::null_price);
    w.dimension(22, book.bids().size() + book.offers().size());
    auto const side = [&](std::span<md::cme::mdp3_price_level const> levels, char type) {
        for (std::size_t l = 0; l < levels.size(); ++l) {
            w.put(levels[l].price)
                .put(levels[l].size)
                .put(levels[l].orders)
                .put(static_cast<std::int8_t>(l + 1))
                .put<std::uint16_t>(65535)
                .put<std::uint8_t>(255)
                .put<std::uint8_t>(0)
                .put(static_cast<std::uint8_t>(type));
        }
    };
    side(book.bids(), md::cme::entry_type::bid);
    side(book.offers(), md::cme::entry_type::offer);
    w.end_message(start);
    return w.at();
}

} // namespace signet::publisher::cme
