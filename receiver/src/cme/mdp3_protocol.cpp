#include <algorithm>

#include <spdlog/spdlog.h>

#include <signet/md/wire_text.hpp>
#include <signet/net/log.hpp>
#include <signet/receiver/cme/mdp3_protocol.hpp>

#include "../config_reader.hpp"
#include "../text.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace signet::receiver::cme {

namespace {

constexpr std::string_view keys[] = {"parser", "snapshot_bind", "definitions_bind",
                                     "snapshot_group", "definitions_group"};

constexpr summary_field fields[] = {
    {"mdp3", "a mdp3 feed's section (CME MDP 3.0); its feed's messages are the SBE messages of "
             "the new incremental packets, and sequence numbers (missing, late_start) count "
             "packets (one MsgSeqNum each)"},
    {"mdp3.instruments",
     "per symbol: security_id, rpt_seq, stale, trading_status, bids and offers as [price "
     "mantissa, size, orders] best first, orders_stale, orders (market by order) as [order id, "
     "side, price mantissa, quantity, priority] by id, statistics (volume, settlement_price, "
     "cleared_volume, open_interest, fixing_price, high_limit_price, low_limit_price, "
     "max_price_variation, open_price, session_high_trade, session_low_trade, "
     "session_high_bid, session_low_offer: null until sent; prices are mantissas of 10^-9)"},
    {"mdp3.channel",
     "the channel's counters: incremental_packets and incremental_messages applied, "
     "malformed_packets (any line), malformed_messages, unknown_messages, "
     "unknown_instrument_entries, book_entries, trade_entries, statistics_entries, "
     "order_entries, order_snapshots_applied, order_budget_full (by-order entries or snapshot "
     "orders past [book] max_orders: the instrument recovers from the loop), rpt_seq_gaps, "
     "loop_revealed_gaps (MsgSeqNum gaps only the snapshot loop showed: the last packets, lost "
     "on both lines, no later packet to show them; in the feed's gaps and missing too), "
     "inconsistent_updates, recoveries "
     "(begun, completed, total and last ms), snapshots applied, confirmed, too old and ahead (of a "
     "packet not applied yet: kept and applied once it is, or skipped when larger than its "
     "slot or another of the instrument is kept), "
     "replayed_entries, held_evicted, snapshot_silences, channel_resets, definitions, "
     "recovering"},
    {"mdp3.snapshot_group",
     "with snapshot_group: group, joined (at the end), joins and leaves (the group is joined "
     "only while the channel recovers) and errors (joins or leaves the kernel refused, logged "
     "once, retried after 1 s)"},
};

std::shared_ptr<protocol_settings const> parse(config_reader const& feed) {
    auto s = std::make_shared<mdp3_settings>();
    // "mbp" is the only value: the channel builds books by price and, where sent, by order.
    (void)feed.get_enum("parser", 0, {{"mbp", 0}});
    for (auto [key, value] : {std::pair{"snapshot_bind", &s->snapshot_bind},
                              std::pair{"definitions_bind", &s->definitions_bind}}) {
        auto const endpoint = feed.get_endpoint(key, false);
        if (!endpoint) {
            throw config_error(feed.where() + ": key '" + key + "': mdp3 feed '" +
                               feed.get_string("name") + "' needs " + key + " = \"ip:port\"");
        }
        *value = *endpoint;
    }
    for (auto [key, value] : {std::pair{"snapshot_group", &s->snapshot_group},
                              std::pair{"definitions_group", &s->definitions_group}}) {
        *value = feed.get_endpoint(key, true);
        if (*value && !(*value)->is_multicast()) {
            feed.fail(key, (*value)->to_string() + " is not a multicast address");
        }
    }
    return s;
}

/// Null as JSON null, else the value.
template <typename T>
nlohmann::ordered_json or_null(T value, T null) {
    return value == null ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(value);
}

} // namespace

protocol_registration mdp3_settings::registration() {
    return {"mdp3",
            "CME MDP 3.0: incremental A/B, snapshot-loop recovery, definitions, books by price "
            "and by order",
            keys,
            true,
            &parse,
            fields};
}

std::unique_ptr<feed_protocol> mdp3_settings::make(feed_config const& feed) const {
    return std::make_unique<mdp3_protocol>(feed, *this);
}

mdp3_protocol::mdp3_protocol(feed_config const& feed, mdp3_settings const& settings)
    : feed_(feed)
    , settings_(settings)
    , channel_(md::cme::mdp3_channel_options{.max_sequence_jump = feed.max_sequence_jump,
                                             .max_orders = feed.max_orders}) {}

std::vector<line_spec> mdp3_protocol::lines() const {
    std::vector<line_spec> lines = ab_lines(feed_);
    for (auto const& [name, bind, group, tag] :
         {std::tuple{"snapshot", settings_.snapshot_bind, settings_.snapshot_group, snapshot_line},
          std::tuple{"definitions", settings_.definitions_bind, settings_.definitions_group,
                     definitions_line}}) {
        net::udp_socket_options socket = line_a_socket(feed_);
        socket.bind = bind;
        socket.group = group;
        socket.source = std::nullopt; // `source` is line A's (and B's) sender
        socket.reuse_address = group.has_value();
        lines.push_back({name, socket, line_role::side, tag});
    }
    return lines;
}

void mdp3_protocol::setup(feed_setup& setup) {
    if (settings_.snapshot_group) {
        snapshot_membership_.socket = &setup.line_socket("snapshot");
        follow_snapshot_loop(0); // not recovering yet: leave until a gap or a late start
    }
}

void mdp3_protocol::follow_snapshot_loop(std::uint64_t now_ns) noexcept {
    membership& m = snapshot_membership_;
    bool const wanted = channel_.recovering();
    if (m.socket == nullptr || m.joined == wanted || now_ns < m.retry_at_ns) {
        return;
    }
    if (auto const ec = m.socket->set_group_membership(wanted); ec) [[unlikely]] {
        ++m.errors;
        m.retry_at_ns = now_ns + 1'000'000'000;
        if (!m.error_logged) {
            m.error_logged = true;
            SPDLOG_LOGGER_ERROR(net::logger(),
                                "feed {}: could not {} the snapshot loop's group {}: {} (retried "
                                "every second; counted: mdp3.snapshot_group.errors)",
                                feed_.name, wanted ? "join" : "leave",
                                settings_.snapshot_group->to_string(), ec.message());
        }
        return;
    }
    m.joined = wanted;
    ++(wanted ? m.joins : m.leaves);
}

md::sequence_tracker_options mdp3_protocol::sequencing() const {
    // Any MsgSeqNum may come first: a first packet other than 1 is a late start, which the
    // channel recovers from the snapshot loop.
    return {.first_sequence = md::sequence_tracker::late_join};
}

std::optional<md::sequence_unit>
mdp3_protocol::frame(std::span<std::byte const> datagram) const noexcept {
    auto const header = md::cme::validate_packet(datagram);
    if (!header) {
        return std::nullopt;
    }
    return md::sequence_unit{header->sequence, 1, {}, false}; // one sequence number a packet
}

void mdp3_protocol::deliver(delivery const& d) {
    channel_.on_sequenced(d.datagram, d.unit.first, d.step, d.now_ns, d.receive_ns);
}

void mdp3_protocol::on_side_packet(std::uint16_t tag, net::packet const& p, std::uint64_t now_ns) {
    if (p.truncated) {
        return; // bytes are missing: the loop repeats it
    }
    if (tag == snapshot_line) {
        channel_.on_snapshot(p.payload(), now_ns);
    } else {
        channel_.on_definition(p.payload(), now_ns);
    }
}

void mdp3_protocol::service(std::uint64_t now_ns) {
    channel_.on_time(now_ns);
    follow_snapshot_loop(now_ns);
    if (!budget_logged_ && channel_.stats().order_budget_full != 0) [[unlikely]] {
        budget_logged_ = true;
        SPDLOG_LOGGER_WARN(net::logger(),
                           "feed {}: the by-order books reached [book] max_orders ({} order "
                           "slots): an instrument past it is recovered from the snapshot loop "
                           "(counted: order_budget_full)",
                           feed_.name, feed_.max_orders);
    }
}

std::uint64_t mdp3_protocol::next_deadline(std::uint64_t now_ns) const noexcept {
    (void)now_ns;
    return channel_.next_deadline(); // packets the snapshot loop showed, declared lost then
}

std::optional<md::sequence_unit> mdp3_protocol::inferred_heartbeat() const noexcept {
    // Past the packets the snapshot loop showed lost (mdp3_channel::on_time), the channel's
    // next MsgSeqNum is ahead of the shared sequencing's: the gap is counted there.
    return md::sequence_unit{.first = channel_.next_sequence(), .count = 0};
}

void mdp3_protocol::book_rows(std::vector<book_row>& out) const {
    channel_.for_each_instrument([&](md::cme::mdp3_instrument const& i) {
        book_row row;
        std::copy(i.symbol.begin(), i.symbol.end(), row.symbol.begin());
        auto const bids = i.book.bids();
        auto const offers = i.book.offers();
        if (!bids.empty()) {
            row.bid_price = bids.front().price;
            row.bid_size = static_cast<std::uint64_t>(std::max(bids.front().size, 0));
        }
        if (!offers.empty()) {
            row.ask_price = offers.front().price;
            row.ask_size = static_cast<std::uint64_t>(std::max(offers.front().size, 0));
        }
        row.orders = static_cast<std::uint32_t>(i.orders.size());
        row.price_exponent = md::cme::price_exponent;
        out.push_back(row);
    });
}

std::size_t mdp3_protocol::book_levels(std::uint32_t instrument, char side,
                                       std::span<book_level> out) const {
    md::cme::mdp3_instrument const* const i = channel_.at(instrument);
    if (i == nullptr) {
        return 0;
    }
    auto const levels = side == 'B' ? i->book.bids() : i->book.offers();
    std::size_t const n = std::min(levels.size(), out.size());
    for (std::size_t k = 0; k < n; ++k) { // best first
        out[k] = {.price = levels[k].price,
                  .size = static_cast<std::uint64_t>(std::max(levels[k].size, 0)),
                  .orders = static_cast<std::uint32_t>(std::max(levels[k].orders, 0))};
    }
    return n;
}

protocol_counters mdp3_protocol::counters() const noexcept {
    protocol_counters c;
    c.messages = channel_.stats().incremental_messages;
    c.recovering = channel_.recovering();
    bool stale = false;
    channel_.for_each_instrument(
        [&](md::cme::mdp3_instrument const& i) { stale = stale || i.stale || i.orders_stale; });
    c.book = c.recovering ? book_state::recovering
             : stale      ? book_state::stale
                          : book_state::complete;
    return c;
}

void mdp3_protocol::publish() noexcept {
    // relaxed: single writer; readers take a snapshot.
    auto const& s = channel_.stats();
    std::uint64_t stale = 0;
    channel_.for_each_instrument(
        [&](md::cme::mdp3_instrument const& i) { stale += i.stale || i.orders_stale ? 1 : 0; });
    live_instruments_.store(channel_.instrument_count(), std::memory_order_relaxed);
    live_stale_.store(stale, std::memory_order_relaxed);
    live_recoveries_.store(s.recoveries, std::memory_order_relaxed);
    live_completed_.store(s.recoveries_completed, std::memory_order_relaxed);
    live_rpt_seq_gaps_.store(s.rpt_seq_gaps, std::memory_order_relaxed);
    live_last_recovery_us_.store(s.last_recovery_ns / 1000, std::memory_order_relaxed);
}

void mdp3_protocol::stats_lines(std::string_view feed, feed_counters const& live,
                                std::vector<std::string>& out) const {
    out.push_back(fmt::format(
        "mdp3 {} | {}: {} instruments ({} stale), {} recoveries ({} completed, last in {:.1f} "
        "ms), {} RptSeq gaps",
        feed, live.recovering ? "recovering" : "synchronized",
        live_instruments_.load(std::memory_order_relaxed),
        live_stale_.load(std::memory_order_relaxed),
        live_recoveries_.load(std::memory_order_relaxed),
        live_completed_.load(std::memory_order_relaxed),
        static_cast<double>(live_last_recovery_us_.load(std::memory_order_relaxed)) / 1e3,
        live_rpt_seq_gaps_.load(std::memory_order_relaxed)));
}

std::string mdp3_protocol::live_state(feed_counters const& live) const {
    return fmt::format("{} ({} of {} instruments stale)",
                       live.recovering ? "RECOVERING" : "synchronized",
                       live_stale_.load(std::memory_order_relaxed),
                       live_instruments_.load(std::memory_order_relaxed));
}

void mdp3_protocol::metrics(metric_writer& out, std::string const& feed) const {
    metric_labels const labels{{"feed", feed}};
    out.counter("signet_feed_mdp3_recoveries_total", "Times the channel went to the snapshot loop",
                labels, static_cast<double>(live_recoveries_.load(std::memory_order_relaxed)));
    out.counter("signet_feed_mdp3_recoveries_completed_total",
                "Recoveries that ended with every instrument live", labels,
                static_cast<double>(live_completed_.load(std::memory_order_relaxed)));
    out.counter("signet_feed_mdp3_rpt_seq_gaps_total", "RptSeq gaps (an instrument lost data)",
                labels, static_cast<double>(live_rpt_seq_gaps_.load(std::memory_order_relaxed)));
    out.gauge("signet_feed_mdp3_instruments", "Instruments defined", labels,
              static_cast<double>(live_instruments_.load(std::memory_order_relaxed)));
    out.gauge("signet_feed_mdp3_stale_instruments",
              "Instruments whose book waits for the snapshot loop", labels,
              static_cast<double>(live_stale_.load(std::memory_order_relaxed)));
}

void mdp3_protocol::summary(nlohmann::ordered_json& out) const {
    using json = nlohmann::ordered_json;
    namespace m3 = md::cme;
    auto const levels = [](std::span<m3::mdp3_price_level const> side) {
        json list = json::array();
        for (auto const& l : side) {
            list.push_back({l.price, l.size, l.orders});
        }
        return list;
    };
    auto const orders = [](m3::mdp3_order_book const& book) {
        json list = json::array();
        for (auto const& [id, o] : book.sorted()) {
            list.push_back({id, std::string(1, o.side), o.price, o.quantity, o.priority});
        }
        return list;
    };
    json instruments = json::object();
    channel_.for_each_instrument([&](m3::mdp3_instrument const& i) {
        m3::mdp3_statistics const& st = i.statistics;
        instruments[md::wire_text(m3::text(i.symbol))] = {
            {"security_id", i.security_id},
            {"rpt_seq", i.rpt_seq},
            {"stale", i.stale},
            {"trading_status", i.trading_status},
            {"bids", levels(i.book.bids())},
            {"offers", levels(i.book.offers())},
            {"orders_stale", i.orders_stale},
            {"orders", orders(i.orders)},
            {"statistics",
             {{"volume", or_null(st.volume, m3::null_int32)},
              {"settlement_price", or_null(st.settlement_price, m3::null_price)},
              {"cleared_volume", or_null(st.cleared_volume, m3::null_int32)},
              {"open_interest", or_null(st.open_interest, m3::null_int32)},
              {"fixing_price", or_null(st.fixing_price, m3::null_price)},
              {"high_limit_price", or_null(st.high_limit_price, m3::null_price)},
              {"low_limit_price", or_null(st.low_limit_price, m3::null_price)},
              {"max_price_variation", or_null(st.max_price_variation, m3::null_price)},
              {"open_price", or_null(st.open_price, m3::null_price)},
              {"session_high_trade", or_null(st.session_high_trade, m3::null_price)},
              {"session_low_trade", or_null(st.session_low_trade, m3::null_price)},
              {"session_high_bid", or_null(st.session_high_bid, m3::null_price)},
              {"session_low_offer", or_null(st.session_low_offer, m3::null_price)}}}};
    });
    m3::mdp3_channel_stats const& c = channel_.stats();
    out["instruments"] = std::move(instruments);
    out["channel"] = {{"incremental_packets", c.incremental_packets},
                      {"incremental_messages", c.incremental_messages},
                      {"malformed_packets", c.malformed_packets},
                      {"malformed_messages", c.malformed_messages},
                      {"unknown_messages", c.unknown_messages},
                      {"unknown_instrument_entries", c.unknown_instrument_entries},
                      {"book_entries", c.book_entries},
                      {"trade_entries", c.trade_entries},
                      {"statistics_entries", c.statistics_entries},
                      {"order_entries", c.order_entries},
                      {"order_snapshots_applied", c.order_snapshots_applied},
                      {"order_budget_full", c.order_budget_full},
                      {"rpt_seq_gaps", c.rpt_seq_gaps},
                      {"loop_revealed_gaps", c.loop_revealed_gaps},
                      {"inconsistent_updates", c.inconsistent_updates},
                      {"recoveries", c.recoveries},
                      {"recoveries_completed", c.recoveries_completed},
                      {"recovery_ms", static_cast<double>(c.recovery_ns) / 1e6},
                      {"last_recovery_ms", static_cast<double>(c.last_recovery_ns) / 1e6},
                      {"snapshots_applied", c.snapshots_applied},
                      {"snapshots_confirmed", c.snapshots_confirmed},
                      {"snapshots_too_old", c.snapshots_too_old},
                      {"snapshots_ahead", c.snapshots_ahead},
                      {"replayed_entries", c.replayed_entries},
                      {"held_evicted", c.held_evicted},
                      {"snapshot_silences", c.snapshot_silences},
                      {"channel_resets", c.channel_resets},
                      {"definitions", c.definitions},
                      {"recovering", channel_.recovering()}};
    if (settings_.snapshot_group) {
        membership const& m = snapshot_membership_;
        out["snapshot_group"] = {{"group", settings_.snapshot_group->to_string()},
                                 {"joined", m.joined},
                                 {"joins", m.joins},
                                 {"leaves", m.leaves},
                                 {"errors", m.errors}};
    }
}

void mdp3_protocol::summary_text(std::string& out, std::size_t books) const {
    auto const& c = channel_.stats();
    out += fmt::format("    mdp3 channel: {} instruments, {} book entries, {} order entries, {} "
                       "RptSeq gaps, {} recoveries ({} completed, last in {:.1f} ms), {} "
                       "snapshots applied{}\n",
                       channel_.instrument_count(), c.book_entries, c.order_entries, c.rpt_seq_gaps,
                       c.recoveries, c.recoveries_completed,
                       static_cast<double>(c.last_recovery_ns) / 1e6, c.snapshots_applied,
                       channel_.recovering() ? ", recovering" : "");
    std::vector<book_row> rows;
    book_rows(rows);
    for (std::size_t r = 0; r < std::min(books, rows.size()); ++r) {
        out += format_book_line(rows[r]);
    }
}

} // namespace signet::receiver::cme
