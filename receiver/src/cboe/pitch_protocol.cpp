#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>

#include <signet/md/wire_text.hpp>
#include <signet/net/log.hpp>
#include <signet/receiver/cboe/pitch_protocol.hpp>

#include "../config_reader.hpp"
#include "../text.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace signet::receiver::cboe {

namespace {

namespace cb = md::cboe;

constexpr std::string_view keys[] = {"units"};

constexpr summary_field fields[] = {
    {"pitch", "a pitch feed's section (Cboe Multicast PITCH); its feed's messages are the "
              "PITCH messages of the units it follows, and sequence numbers (missing, "
              "late_start) count messages, each unit its own"},
    {"pitch.units",
     "per followed unit: unit, next_sequence, messages applied, stale (lost data: its symbols' "
     "books are wrong), lost_gaps, ended (End of Session), time (its last Time, seconds since "
     "midnight)"},
    {"pitch.book",
     "the book's counters: messages, adds, executions, reductions, modifies, deletes, trades, "
     "trade_breaks, status_updates, unit_clears, unknown_messages, unknown_orders, "
     "duplicate_orders, book_full, price_out_of_range, instruments_full"},
    {"pitch.instruments",
     "per symbol: unit, status (Trading Status), bid_price, bid_shares, ask_price, ask_shares "
     "(prices in 1/10000), volume, last_price, orders (live: [order id, side, shares, price] "
     "by id)"},
};

std::shared_ptr<protocol_settings const> parse(config_reader const& feed) {
    auto s = std::make_shared<pitch_settings>();
    toml::node const* const node = feed.table().get("units");
    if (node == nullptr) {
        return s; // unit 1
    }
    toml::array const* const list = node->as_array();
    auto const bad = [&](std::string const& why) {
        return config_error(feed.where() + ": key 'units': " + why);
    };
    if (list == nullptr || list->empty()) {
        throw bad("a list of unit numbers, e.g. units = [1, 2]");
    }
    s->units.clear();
    for (toml::node const& n : *list) {
        std::optional<std::int64_t> const u = n.value<std::int64_t>();
        if (!u || *u < 1 || *u > 255) {
            throw bad("each unit is a number from 1 to 255");
        }
        if (std::find(s->units.begin(), s->units.end(), *u) != s->units.end()) {
            throw bad("unit " + std::to_string(*u) + " is listed twice");
        }
        s->units.push_back(static_cast<std::uint8_t>(*u));
    }
    return s;
}

} // namespace

protocol_registration pitch_settings::registration() {
    return {"pitch", "Cboe Multicast PITCH: units on A/B, books by order per symbol",
            keys,    true,
            &parse,  fields};
}

std::unique_ptr<feed_protocol> pitch_settings::make(feed_config const& feed) const {
    return std::make_unique<pitch_protocol>(feed, *this);
}

pitch_protocol::pitch_protocol(feed_config const& feed, pitch_settings const& settings)
    : feed_(feed)
    , settings_(settings)
    , book_(md::cboe::pitch_book_options{.max_orders = feed.max_orders}) {
    if (settings_.units.empty()) {
        throw std::invalid_argument("pitch feed " + feed.name + ": no units to follow");
    }
    stream_of_.fill(not_followed);
    for (std::uint8_t const u : settings_.units) {
        stream_of_[u] = static_cast<std::uint16_t>(units_.size());
        units_.push_back({.unit = u});
    }
}

std::vector<line_spec> pitch_protocol::lines() const {
    return ab_lines(feed_);
}

std::optional<md::sequence_unit>
pitch_protocol::frame(std::span<std::byte const> datagram) const noexcept {
    std::optional<cb::block_check> const check = cb::validate_block(datagram);
    if (!check) {
        return std::nullopt;
    }
    cb::block_header const& h = check->header;
    md::sequence_unit unit{h.sequence, h.count, {}, false};
    // Unsequenced blocks (sequence 0: a gap channel's heartbeats) and units not followed are
    // of no stream of this feed: ignored, counted.
    std::uint16_t const stream = h.sequence == 0 ? not_followed : stream_of_[h.unit];
    unit.stream = stream == not_followed ? static_cast<std::uint32_t>(units_.size()) : stream;
    return unit;
}

void pitch_protocol::deliver(delivery const& d) {
    unit_state& u = units_[d.unit.stream];
    if (d.step.missing != 0) {
        ++u.lost_gaps; // nothing brings it back: the unit's symbols are wrong from here
        book_.set_stale(u.unit, true, d.unit.first, d.receive_ns);
    }
    u.next_sequence = d.next_sequence;
    if (d.step.fresh == 0) {
        return; // a heartbeat, or seen before
    }
    messages_ += d.step.fresh;
    book_.apply_block(d.datagram, d.step.skip, d.receive_ns);
}

void pitch_protocol::book_rows(std::vector<book_row>& out) const {
    for (std::uint32_t id = 0; id < book_.instrument_count(); ++id) {
        cb::pitch_instrument const& i = *book_.instrument(id);
        book_row row;
        std::string_view const name = cb::trimmed(i.symbol);
        std::copy(name.begin(), name.end(), row.symbol.begin());
        md::nasdaq::top_of_book const top = book_.top(id);
        row.bid_price = top.bid_price;
        row.bid_size = top.bid_shares;
        row.ask_price = top.ask_price;
        row.ask_size = top.ask_shares;
        row.orders = book_.order_count(id);
        row.price_exponent = cb::price_exponent;
        out.push_back(row);
    }
}

std::size_t pitch_protocol::book_levels(std::uint32_t instrument, char side,
                                        std::span<book_level> out) const {
    if (instrument >= book_.instrument_count()) {
        return 0;
    }
    auto const id = static_cast<std::uint16_t>(instrument);
    md::nasdaq::book_side const levels =
        side == 'B' ? book_.orders().bids(id) : book_.orders().asks(id);
    std::size_t const n = std::min(levels.size(), out.size());
    for (std::size_t i = 0; i < n; ++i) { // best last in a book_side
        md::nasdaq::itch_price_level const l = levels[levels.size() - 1 - i];
        out[i] = {.price = l.price, .size = l.shares, .orders = l.orders};
    }
    return n;
}

protocol_counters pitch_protocol::counters() const noexcept {
    protocol_counters c;
    c.messages = messages_;
    bool stale = false;
    for (unit_state const& u : units_) {
        stale = stale || book_.unit(u.unit).stale;
    }
    c.book = stale ? book_state::stale : book_state::complete;
    return c;
}

void pitch_protocol::publish() noexcept {
    // relaxed: single writer; readers take a snapshot.
    std::uint64_t stale = 0;
    for (unit_state const& u : units_) {
        stale += book_.unit(u.unit).stale ? 1U : 0U;
    }
    cb::pitch_book_stats const& s = book_.stats();
    live_instruments_.store(book_.instrument_count(), std::memory_order_relaxed);
    live_stale_units_.store(stale, std::memory_order_relaxed);
    live_orders_.store(book_.orders().size(), std::memory_order_relaxed);
    live_unknown_orders_.store(s.unknown_orders, std::memory_order_relaxed);
    if (s.unknown_messages != unknown_logged_) [[unlikely]] {
        if (unknown_logged_ == 0) {
            SPDLOG_LOGGER_WARN(net::logger(),
                               "feed {}: PITCH messages of a type this receiver does not know "
                               "were skipped by their length (counted: pitch.book."
                               "unknown_messages; logged once)",
                               feed_.name);
        }
        unknown_logged_ = s.unknown_messages;
    }
}

void pitch_protocol::stats_lines(std::string_view feed, feed_counters const& live,
                                 std::vector<std::string>& out) const {
    out.push_back(fmt::format("pitch {} | {} units ({} stale), {} instruments, {} live orders, "
                              "{} unknown order references",
                              feed, units_.size(),
                              live_stale_units_.load(std::memory_order_relaxed),
                              live_instruments_.load(std::memory_order_relaxed),
                              live_orders_.load(std::memory_order_relaxed),
                              live_unknown_orders_.load(std::memory_order_relaxed)));
    (void)live;
}

std::string pitch_protocol::live_state(feed_counters const& live) const {
    std::uint64_t const stale = live_stale_units_.load(std::memory_order_relaxed);
    (void)live;
    return stale == 0 ? "synchronized"
                      : fmt::format("STALE ({} of {} units)", stale, units_.size());
}

void pitch_protocol::metrics(metric_writer& out, std::string const& feed) const {
    metric_labels const labels{{"feed", feed}};
    out.gauge("signet_feed_pitch_stale_units", "Units that lost data (their books are wrong)",
              labels, static_cast<double>(live_stale_units_.load(std::memory_order_relaxed)));
    out.gauge("signet_feed_pitch_instruments", "Symbols seen", labels,
              static_cast<double>(live_instruments_.load(std::memory_order_relaxed)));
    out.gauge("signet_feed_pitch_live_orders", "Live orders in the books", labels,
              static_cast<double>(live_orders_.load(std::memory_order_relaxed)));
    out.counter("signet_feed_pitch_unknown_orders_total",
                "Executions, reduces, modifies or deletes of no live order", labels,
                static_cast<double>(live_unknown_orders_.load(std::memory_order_relaxed)));
}

void pitch_protocol::summary(nlohmann::ordered_json& out) const {
    using json = nlohmann::ordered_json;
    json units = json::array();
    for (unit_state const& u : units_) {
        cb::pitch_unit const& state = book_.unit(u.unit);
        units.push_back({{"unit", u.unit},
                         {"next_sequence", u.next_sequence},
                         {"messages", state.messages},
                         {"stale", state.stale},
                         {"lost_gaps", u.lost_gaps},
                         {"ended", state.ended},
                         {"time", state.time}});
    }
    cb::pitch_book_stats const& s = book_.stats();
    json book = {{"messages", s.messages},
                 {"adds", s.adds},
                 {"executions", s.executions},
                 {"reductions", s.reductions},
                 {"modifies", s.modifies},
                 {"deletes", s.deletes},
                 {"trades", s.trades},
                 {"trade_breaks", s.trade_breaks},
                 {"status_updates", s.status_updates},
                 {"unit_clears", s.unit_clears},
                 {"unknown_messages", s.unknown_messages},
                 {"unknown_orders", s.unknown_orders},
                 {"duplicate_orders", s.duplicate_orders},
                 {"book_full", s.book_full},
                 {"price_out_of_range", s.price_out_of_range},
                 {"instruments_full", s.instruments_full}};
    // Live orders by instrument, by id.
    std::vector<std::map<std::uint64_t, json>> orders(book_.instrument_count());
    book_.orders().order_store().for_each(
        [&](std::uint64_t id, md::nasdaq::detail::order_record const& o) {
            orders[o.locate][id] =
                json::array({id, std::string(1, static_cast<char>(o.side)), o.shares, o.price});
        });
    json instruments = json::object();
    for (std::uint32_t id = 0; id < book_.instrument_count(); ++id) {
        cb::pitch_instrument const& i = *book_.instrument(id);
        md::nasdaq::top_of_book const top = book_.top(id);
        json list = json::array();
        for (auto& [order_id, o] : orders[id]) {
            list.push_back(std::move(o));
        }
        instruments[std::string(cb::trimmed(i.symbol))] = {
            {"unit", i.unit},
            {"status", i.status == 0 ? std::string() : std::string(1, i.status)},
            {"bid_price", top.bid_price},
            {"bid_shares", top.bid_shares},
            {"ask_price", top.ask_price},
            {"ask_shares", top.ask_shares},
            {"volume", i.volume},
            {"last_price", i.last_price},
            {"orders", std::move(list)}};
    }
    out["units"] = std::move(units);
    out["book"] = std::move(book);
    out["instruments"] = std::move(instruments);
}

void pitch_protocol::summary_text(std::string& out, std::size_t books) const {
    cb::pitch_book_stats const& s = book_.stats();
    std::size_t stale = 0;
    for (unit_state const& u : units_) {
        stale += book_.unit(u.unit).stale ? 1U : 0U;
    }
    out += fmt::format("    pitch: {} units ({} stale), {} instruments, {} live orders, {} adds, "
                       "{} executions, {} unknown order references\n",
                       units_.size(), stale, book_.instrument_count(), book_.orders().size(),
                       s.adds, s.executions, s.unknown_orders);
    std::vector<book_row> rows;
    book_rows(rows);
    for (std::size_t r = 0; r < std::min(books, rows.size()); ++r) {
        out += format_book_line(rows[r]);
    }
}

} // namespace signet::receiver::cboe
