#include <algorithm>
#include <array>
#include <tuple>

#include <spdlog/spdlog.h>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/moldudp64_request.hpp>
#include <signet/md/nasdaq/soupbintcp.hpp>
#include <signet/md/wire_text.hpp>
#include <signet/net/log.hpp>
#include <signet/receiver/nasdaq/itch_book_levels.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>

#include "../config_reader.hpp"
#include "../text.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace signet::receiver::nasdaq {

namespace {

constexpr std::string_view keys[] = {"parser",
                                     "session",
                                     "rerequest",
                                     "rerequest_timeout_ms",
                                     "rerequest_max_messages",
                                     "rerequest_max_in_flight",
                                     "rerequest_tries",
                                     "glimpse",
                                     "glimpse_username",
                                     "glimpse_password",
                                     "glimpse_buffer_messages"};

constexpr renamed_key renamed[] = {
    {"snapshot", "glimpse", "the GLIMPSE snapshot server; \"snapshot\" is MDP 3.0's loop"},
    {"snapshot_username", "glimpse_username", "the GLIMPSE server's login"},
    {"snapshot_password", "glimpse_password", "the GLIMPSE server's login"},
    {"snapshot_buffer_messages", "glimpse_buffer_messages",
     "live messages buffered while a GLIMPSE snapshot loads"},
};

constexpr summary_field fields[] = {
    {"moldudp64", "a moldudp64 feed's section (ITCH 5.0 over MoldUDP64); its feed's messages are "
                  "the ITCH messages delivered, and sequence numbers (missing, late_start) count "
                  "messages"},
    {"moldudp64.session", "the MoldUDP64 session the feed followed (space padded)"},
    {"moldudp64.parser", "itch50 (order books) or count"},
    {"moldudp64.itch",
     "with parser itch50: messages_by_type (delivered ITCH messages per type letter), "
     "malformed_messages (too short for their type), unknown_messages (unknown type, skipped "
     "by length), books (per stock with live orders: bid_price, bid_shares, ask_price, "
     "ask_shares in 1/10000 dollar, orders), live_orders, unknown_order_refs (executes, "
     "cancels, deletes, replaces of orders never added: a gap lost the add), "
     "duplicate_order_refs, book_full_drops (adds dropped at [book] max_orders), "
     "book_max_orders"},
    {"moldudp64.recovery",
     "with rerequest: state, gaps, gaps_recovered, gaps_lost, recovered_messages, "
     "lost_messages, rerequests_sent, rerequest_timeouts, request_send_errors, recovering_s, "
     "latency_ns (gap requested -> filled: p50, p99, max)"},
    {"moldudp64.glimpse",
     "with glimpse (late join): state, requests, attempts, completed, orders_loaded, "
     "snapshot_messages, buffered_messages, replayed_messages, buffer_evictions, "
     "buffer_restarts, connect_failures, disconnects, login_rejected, protocol_failures, "
     "too_old (snapshots that resumed before the buffered messages), future (snapshots refused: "
     "they resumed beyond the live stream by more than max_sequence_jump), covered_messages "
     "(live messages skipped because the loaded snapshot held them), aborted, last_sync_ms, "
     "total_sync_ms"},
    {"moldudp64.record", "with --record: path, messages, bytes, drops, write_errors"},
};

std::shared_ptr<protocol_settings const> parse(config_reader const& feed) {
    auto s = std::make_shared<moldudp64_settings>();
    s->parser =
        feed.get_enum("parser", moldudp64_parser::itch50,
                      {{"itch50", moldudp64_parser::itch50}, {"count", moldudp64_parser::count}});
    s->session = feed.get_string("session");
    if (s->session.size() > md::nasdaq::moldudp64_session_size ||
        !std::all_of(s->session.begin(), s->session.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e; })) {
        feed.fail("session", "expected a MoldUDP64 session id: at most 10 printable ASCII "
                             "characters");
    }
    s->rerequest = feed.get_server("rerequest", "the re-request server");
    s->rerequest_timeout_ms =
        feed.get_size("rerequest_timeout_ms", s->rerequest_timeout_ms, 1, 60'000);
    s->rerequest_max_messages = feed.get_size("rerequest_max_messages", s->rerequest_max_messages,
                                              1, md::nasdaq::moldudp64_max_messages);
    s->rerequest_max_in_flight = feed.get_size(
        "rerequest_max_in_flight", s->rerequest_max_in_flight, 1, md::request_recovery::max_chunks);
    s->rerequest_tries =
        static_cast<unsigned>(feed.get_size("rerequest_tries", s->rerequest_tries, 1, 100));
    s->glimpse = feed.get_server("glimpse", "the GLIMPSE snapshot server");
    s->glimpse_username = feed.get_string("glimpse_username");
    s->glimpse_password = feed.get_string("glimpse_password");
    for (auto [key, value, limit] : {std::tuple{"glimpse_username", &s->glimpse_username,
                                                md::nasdaq::soupbintcp::username_length},
                                     std::tuple{"glimpse_password", &s->glimpse_password,
                                                md::nasdaq::soupbintcp::password_length}}) {
        if (value->size() > limit || !std::all_of(value->begin(), value->end(),
                                                  [](char c) { return c > 0x20 && c <= 0x7e; })) {
            feed.fail(key, "expected at most " + std::to_string(limit) +
                               " printable ASCII characters without spaces (SoupBinTCP login)");
        }
        if (!value->empty() && !s->glimpse) {
            feed.fail(key, "needs glimpse = \"ip:port\"");
        }
    }
    s->glimpse_buffer_messages = feed.get_size(
        "glimpse_buffer_messages", s->glimpse_buffer_messages, 1024, std::size_t{1} << 26);
    if (s->glimpse && s->parser != moldudp64_parser::itch50) {
        feed.fail("glimpse", "needs parser \"itch50\" (it loads books)");
    }
    return s;
}

/// "<first 8 bytes of the symbol>" as a book row's symbol.
book_row row_of(md::nasdaq::stock_view const& stock) {
    book_row row;
    std::copy_n(stock.symbol.begin(), std::min(stock.symbol.size(), row.symbol.size()),
                row.symbol.begin());
    row.bid_price = stock.top.bid_price;
    row.bid_size = stock.top.bid_shares;
    row.ask_price = stock.top.ask_price;
    row.ask_size = stock.top.ask_shares;
    row.orders = stock.orders;
    row.price_exponent = -4; // ITCH prices: 1/10000 dollar
    return row;
}

} // namespace

protocol_registration moldudp64_settings::registration() {
    return {"moldudp64", "ITCH 5.0 over MoldUDP64 (Nasdaq): re-requests, GLIMPSE late join",
            keys,        true,
            &parse,      fields,
            renamed};
}

std::unique_ptr<feed_protocol> moldudp64_settings::make(feed_config const& feed) const {
    return std::make_unique<moldudp64_protocol>(feed, *this);
}

moldudp64_protocol::moldudp64_protocol(feed_config const& feed, moldudp64_settings const& settings)
    : feed_(feed)
    , settings_(settings) {
    if (settings_.parser == moldudp64_parser::itch50) {
        if (settings_.glimpse) {
            // Late join: the book comes from a snapshot and the live messages wait in the
            // sync's buffer until then (the first one is requested in setup()).
            sync_.emplace(md::nasdaq::itch_snapshot_sync_options{
                .book = {.max_orders = feed.max_orders},
                .buffer_messages = settings_.glimpse_buffer_messages,
                .buffer_bytes =
                    settings_.glimpse_buffer_messages * md::nasdaq::itch50::max_message_length,
                // A snapshot may run ahead of the stream by what a jump may: no farther.
                .max_ahead = feed.max_sequence_jump});
            sync_->start_buffering();
        } else {
            parser_.emplace(md::nasdaq::itch_order_book_options{.max_orders = feed.max_orders});
        }
    }
    if (settings_.rerequest) {
        recovery_.emplace(md::request_recovery_options{
            .timeout_ns = settings_.rerequest_timeout_ms * 1'000'000,
            .max_messages = static_cast<std::uint16_t>(settings_.rerequest_max_messages),
            .max_in_flight = settings_.rerequest_max_in_flight,
            .max_tries = settings_.rerequest_tries});
    }
}

moldudp64_protocol::~moldudp64_protocol() = default;

std::vector<line_spec> moldudp64_protocol::lines() const {
    std::vector<line_spec> lines = ab_lines(feed_);
    if (settings_.rerequest) {
        // The request line: sends the requests and receives the answers (ephemeral port).
        net::udp_socket_options r;
        r.bind = *net::udp_endpoint::try_parse_address(
            settings_.rerequest->is_v6() ? "::" : "0.0.0.0", 0);
        r.receive_buffer = feed_.rcvbuf;
        r.timestamps = feed_.timestamps;
        lines.push_back({"request", r, line_role::answers, 0});
    }
    return lines;
}

md::sequence_tracker_options moldudp64_protocol::sequencing() const {
    md::sequence_tracker_options options;
    // The first packet's sequence is adopted: a receiver started after the stream began counts
    // what it missed as late_start, not as a gap (a snapshot covers it; without GLIMPSE the
    // book lacks the orders added before and says so: stale).
    options.first_sequence = md::sequence_tracker::late_join;
    if (!settings_.session.empty()) {
        md::stream_key key{};
        auto const id = md::nasdaq::make_moldudp64_session_id(settings_.session);
        std::copy(id.begin(), id.end(), key.begin());
        options.key = key;
    }
    return options;
}

void moldudp64_protocol::setup(feed_setup& setup) {
    if (settings_.rerequest) {
        request_socket_ = &setup.line_socket("request");
    }
    if (settings_.glimpse) {
        std::string const name = "feed " + feed_.name + " glimpse";
        glimpse_ = std::make_unique<glimpse_client>(
            glimpse_client_options{.username = settings_.glimpse_username,
                                   .password = settings_.glimpse_password,
                                   .name = name},
            setup.tcp_client({.peer = *settings_.glimpse, .name = name}), setup.parser_timer(),
            *sync_);
        glimpse_->request(glimpse_client::clock::now()); // the feed starts unsynchronized
    }
    if (!setup.record_path().empty() && settings_.parser == moldudp64_parser::itch50) {
        recording_ = std::make_unique<md::nasdaq::binary_file_writer>(setup.record_path());
        recording_->attach(setup.group());
        SPDLOG_LOGGER_INFO(net::logger(), "feed {}: recording delivered messages to {}", feed_.name,
                           recording_->path());
    }
}

md::gap_recovery* moldudp64_protocol::recovery(std::size_t /*stream: one*/) noexcept {
    return recovery_ ? &*recovery_ : nullptr;
}

void moldudp64_protocol::set_event_sink(md::event_sink* sink, md::event_mask kinds) {
    sink_ = sink;
    kinds_ = kinds;
    if (sync_) {
        sync_->set_event_sink(sink, kinds);
    } else if (parser_) {
        parser_->set_event_sink(sink, kinds);
    }
}

std::string moldudp64_protocol::describe() const {
    std::string text;
    if (settings_.rerequest) {
        text += "re-requests to " + settings_.rerequest->to_string();
    }
    if (settings_.glimpse) {
        text += (text.empty() ? "" : "; ") + std::string("GLIMPSE snapshots from ") +
                settings_.glimpse->to_string() + " (late join)";
    }
    return text;
}

void moldudp64_protocol::deliver(delivery const& d) {
    now_ = d.now_ns;
    session_ = d.unit.key;
    messages_ += d.step.fresh;
    if (!started_) {
        started_ = true;
        started_late_ = d.unit.first > 1;
        if (started_late_ && !sync_) {
            stale(d); // the orders added before it are not in the book
        }
    }
    if (sync_) {
        sync_->stream_position(d.next_sequence); // heartbeats too: a snapshot is checked on it
    }
    if (d.step.missing != 0) {
        if (glimpse_) {
            glimpse_->request(glimpse_client::clock::now()); // the book is wrong until a snapshot
        } else {
            ++lost_gaps_;
            stale(d);
        }
    }
    if (d.step.fresh != 0) {
        // moldudp64_frame() validated every block: these reads stay inside the datagram.
        std::byte const* const data = d.datagram.data();
        std::size_t offset = md::nasdaq::moldudp64_header_size;
        for (std::uint64_t i = 0; i < d.unit.count; ++i) {
            std::size_t const length = md::load_be16(data + offset);
            offset += 2;
            if (i >= d.step.skip) {
                auto const message = d.datagram.subspan(offset, length);
                record(message);
                if (sync_) {
                    sync_->on_live(d.unit.first + i, message, d.receive_ns);
                } else if (parser_) {
                    // Flushed in service(): before anything reads.
                    parser_->push(message,
                                  {.sequence = d.unit.first + i, .receive_ns = d.receive_ns});
                }
            }
            offset += length;
        }
    }
    if (recovery_) {
        if (std::uint64_t const took = recovery_->progress(d.next_sequence, d.now_ns); took != 0) {
            recovery_latency_.record(took);
        }
    }
}

void moldudp64_protocol::stale(delivery const& d) {
    if (sink_ != nullptr && parser_ && kinds_.has(md::event_kind::instrument_stale)) {
        parser_->flush(); // what came before the loss goes first
        sink_->on_event(md::marker_event(md::event_kind::instrument_stale, md::all_instruments,
                                         {.sequence = d.unit.first, .receive_ns = d.receive_ns}));
    }
}

void moldudp64_protocol::record(std::span<std::byte const> message) {
    if (!recording_) {
        return;
    }
    recording_->append(message);
    if (record_since_ == 0) {
        record_since_ = now_;
    }
}

bool moldudp64_protocol::send_request(std::uint64_t first, std::uint16_t count) noexcept {
    if (request_socket_ == nullptr || session_[0] == '\0') {
        return false; // no session yet: nothing to name in a request
    }
    md::nasdaq::moldudp64_request request;
    std::copy_n(session_.begin(), request.session.size(), request.session.begin());
    request.sequence = first;
    request.count = count;
    std::array<std::byte, md::nasdaq::moldudp64_request_size> datagram{};
    md::nasdaq::write_moldudp64_request(request, datagram);
    if (request_socket_->send_to(datagram, *settings_.rerequest)) {
        ++request_send_errors_;
        return false;
    }
    return true;
}

void moldudp64_protocol::poll_recovery(std::uint64_t now_ns) {
    recovery_->poll(now_ns, [this](std::uint64_t first, std::uint16_t count) {
        return send_request(first, count);
    });
}

void moldudp64_protocol::service(std::uint64_t now_ns) {
    if (parser_) {
        parser_->flush(); // the messages the pipeline holds: the book is complete from here on
    }
    if (glimpse_) {
        glimpse_->service(glimpse_client::clock::now()); // at most one chunk of a snapshot
    }
    if (recording_ && record_since_ != 0 && now_ns >= record_since_ + record_flush_ns) {
        recording_->flush();
        record_since_ = 0;
    }
}

std::uint64_t moldudp64_protocol::next_deadline(std::uint64_t now_ns) const noexcept {
    std::uint64_t due = 0;
    if (recovery_ && recovery_->recovering()) {
        // A chunk not sent yet (the socket refused it) has no deadline: retry after a timeout.
        std::uint64_t const timeout = recovery_->next_deadline();
        due = timeout != 0 ? timeout : now_ns + settings_.rerequest_timeout_ms * 1'000'000;
    }
    if (record_since_ != 0) {
        std::uint64_t const flush = record_since_ + record_flush_ns;
        due = due == 0 ? flush : std::min(due, flush);
    }
    return due;
}

md::nasdaq::itch_order_book const* moldudp64_protocol::book() const noexcept {
    if (sync_) {
        return &sync_->parser().book();
    }
    return parser_ ? &parser_->book() : nullptr;
}

md::nasdaq::itch50_stats const* moldudp64_protocol::itch_stats() const noexcept {
    if (sync_) {
        return &sync_->parser().stats();
    }
    return parser_ ? &parser_->stats() : nullptr;
}

void moldudp64_protocol::book_rows(std::vector<book_row>& out) const {
    if (auto const* b = book()) {
        b->for_each_stock([&](md::nasdaq::stock_view const& stock) {
            if (stock.orders != 0) {
                out.push_back(row_of(stock));
            }
        });
    }
}

std::size_t moldudp64_protocol::book_levels(std::uint32_t instrument, char side,
                                            std::span<book_level> out) const {
    auto const* b = book();
    if (b == nullptr || instrument > 0xFFFF) {
        return 0;
    }
    return itch_book_levels(*b, static_cast<std::uint16_t>(instrument), side, out);
}

protocol_counters moldudp64_protocol::counters() const noexcept {
    protocol_counters c;
    c.messages = messages_;
    if (recovery_) {
        c.recovered = recovery_->stats().recovered_messages;
        c.lost = recovery_->stats().lost_messages;
    }
    bool const syncing = sync_ && sync_->phase() != md::nasdaq::sync_phase::live;
    c.recovering = (recovery_ && recovery_->recovering()) || syncing;
    if (settings_.parser == moldudp64_parser::count) {
        c.book = book_state::none;
    } else if (c.recovering) {
        c.book = book_state::recovering;
    } else if (auto const* s = itch_stats(); lost_gaps_ != 0 || (started_late_ && !sync_) ||
                                             s->unknown_order_refs != 0 ||
                                             s->book_full_drops != 0) {
        // A gap lost the orders' adds, the stream began before this receiver did, or the book
        // overflowed.
        c.book = book_state::stale;
    } else {
        c.book = book_state::complete;
    }
    return c;
}

void moldudp64_protocol::publish() noexcept {
    md::nasdaq::itch50_stats const* const itch = itch_stats();
    if (itch != nullptr && itch->book_full_drops != 0 && !book_full_logged_) {
        book_full_logged_ = true; // once per feed: never per packet
        try {
            SPDLOG_WARN("feed {}: the order book holds {} live orders ([book] max_orders): "
                        "further adds are dropped and counted (book_full_drops)",
                        feed_.name, feed_.max_orders);
        } catch (...) { // NOLINT(bugprone-empty-catch): a lost log line must not stop the feed
        }
    }
}

void moldudp64_protocol::finish() {
    if (parser_) {
        parser_->flush();
    }
    if (recording_) {
        recording_->flush();
        recording_->finish();
        record_since_ = 0;
    }
}

void moldudp64_protocol::stats_lines(std::string_view feed, feed_counters const& live,
                                     std::vector<std::string>& out) const {
    if (settings_.rerequest) {
        out.push_back(recovery_line(feed, live)); // rerequest: recovery_ is there
    }
    if (glimpse_) {
        glimpse_live const g = glimpse_->live();
        out.push_back(fmt::format("glimpse {} | {}: {} loaded ({} orders), {} msgs buffered, {} "
                                  "failures, last synchronized in {:.1f} ms",
                                  feed, to_string(g.phase), g.completed, g.orders_loaded,
                                  g.buffered_messages, g.failures,
                                  static_cast<double>(g.last_sync_us) / 1e3));
    }
}

std::string moldudp64_protocol::live_state(feed_counters const& live) const {
    std::string state;
    if (settings_.rerequest) {
        state = live.recovering ? "RECOVERING" : "synchronized";
    }
    if (glimpse_) {
        glimpse_live const g = glimpse_->live();
        state += std::string(state.empty() ? "" : "  ") + "glimpse " + to_string(g.phase) + " (" +
                 std::to_string(g.completed) + " loaded, " + std::to_string(g.failures) +
                 " failures)";
    }
    return state;
}

void moldudp64_protocol::metrics(metric_writer& out, std::string const& feed) const {
    if (!glimpse_) {
        return;
    }
    glimpse_live const g = glimpse_->live();
    metric_labels const labels{{"feed", feed}};
    out.counter("signet_feed_glimpse_snapshots_total",
                "GLIMPSE snapshots applied (the feed synchronized)", labels,
                static_cast<double>(g.completed));
    out.counter("signet_feed_glimpse_orders_loaded_total", "Orders loaded from applied snapshots",
                labels, static_cast<double>(g.orders_loaded));
    out.counter("signet_feed_glimpse_buffered_messages_total",
                "Live messages buffered while the feed was not synchronized", labels,
                static_cast<double>(g.buffered_messages));
    out.counter("signet_feed_glimpse_failures_total",
                "Snapshot attempts that failed (connect, disconnect, rejected login, protocol, "
                "too old)",
                labels, static_cast<double>(g.failures));
    out.gauge("signet_feed_glimpse_synchronized",
              "1 when the book is synchronized, 0 while buffering or loading a snapshot", labels,
              g.phase == glimpse_phase::live ? 1.0 : 0.0);
    out.gauge("signet_feed_glimpse_last_sync_seconds",
              "Time from needing a snapshot to synchronized, the last time", labels,
              static_cast<double>(g.last_sync_us) / 1e6);
}

void moldudp64_protocol::summary(nlohmann::ordered_json& out) const {
    using json = nlohmann::ordered_json;
    std::string_view session(session_.data(), md::nasdaq::moldudp64_session_size);
    out["session"] = md::wire_text(session_[0] == '\0' ? std::string_view() : session);
    out["parser"] = settings_.parser == moldudp64_parser::itch50 ? "itch50" : "count";
    if (auto const* itch = itch_stats()) {
        json by_type = json::object();
        for (std::size_t c = 0; c < itch->messages_by_type.size(); ++c) {
            if (itch->messages_by_type[c] != 0) {
                by_type[md::wire_text(std::string(1, static_cast<char>(c)))] =
                    itch->messages_by_type[c];
            }
        }
        json books = json::object();
        book()->for_each_stock([&](md::nasdaq::stock_view const& s) {
            books[md::wire_text(s.symbol)] = {{"bid_price", std::uint64_t{s.top.bid_price}},
                                              {"bid_shares", s.top.bid_shares},
                                              {"ask_price", std::uint64_t{s.top.ask_price}},
                                              {"ask_shares", s.top.ask_shares},
                                              {"orders", std::uint64_t{s.orders}}};
        });
        out["itch"] = {{"messages_by_type", std::move(by_type)},
                       {"malformed_messages", itch->malformed_messages},
                       {"unknown_messages", itch->unknown_messages},
                       {"books", std::move(books)},
                       {"live_orders", book()->size()},
                       {"unknown_order_refs", itch->unknown_order_refs},
                       {"duplicate_order_refs", itch->duplicate_order_refs},
                       {"book_full_drops", itch->book_full_drops},
                       {"book_max_orders", feed_.max_orders}};
    }
    if (recovery_) {
        auto const& r = recovery_->stats();
        auto const took = recovery_latency_.take();
        out["recovery"] = {
            {"state", md::to_string(recovery_->state())},
            {"gaps", r.gaps},
            {"gaps_recovered", r.gaps_recovered},
            {"gaps_lost", r.gaps_lost},
            {"recovered_messages", r.recovered_messages},
            {"lost_messages", r.lost_messages},
            {"rerequests_sent", r.rerequests_sent},
            {"rerequest_timeouts", r.rerequest_timeouts},
            {"request_send_errors", request_send_errors_},
            {"recovering_s", static_cast<double>(r.recovering_ns) / 1e9},
            {"latency_ns",
             {{"p50", took.percentile(0.50)}, {"p99", took.percentile(0.99)}, {"max", took.max}}}};
    }
    if (glimpse_) {
        glimpse_counters const c = glimpse_->counters();
        out["glimpse"] = {{"state", to_string(glimpse_->phase())},
                          {"requests", c.requests},
                          {"attempts", c.attempts},
                          {"completed", c.completed},
                          {"orders_loaded", c.orders_loaded},
                          {"snapshot_messages", c.snapshot_messages},
                          {"buffered_messages", c.buffered_messages},
                          {"replayed_messages", c.replayed_messages},
                          {"buffer_evictions", c.buffer_evictions},
                          {"buffer_restarts", c.buffer_restarts},
                          {"connect_failures", c.connect_failures},
                          {"disconnects", c.disconnects},
                          {"login_rejected", c.login_rejected},
                          {"protocol_failures", c.protocol_failures},
                          {"too_old", c.too_old},
                          {"future", c.future},
                          {"covered_messages", c.covered_messages},
                          {"aborted", c.aborted},
                          {"last_sync_ms", static_cast<double>(c.last_sync_us) / 1e3},
                          {"total_sync_ms", static_cast<double>(c.total_sync_us) / 1e3}};
    }
    if (recording_) {
        auto const r = recording_->snapshot();
        out["record"] = {{"path", recording_->path()},
                         {"messages", r.messages},
                         {"bytes", r.bytes},
                         {"drops", r.drops},
                         {"write_errors", r.write_errors}};
    }
}

void moldudp64_protocol::summary_text(std::string& out, std::size_t books) const {
    if (recovery_) {
        auto const& r = recovery_->stats();
        out += fmt::format("    recovery: {} gaps, {} recovered ({} messages), {} lost ({} "
                           "messages), {} re-requests sent\n",
                           r.gaps, r.gaps_recovered, r.recovered_messages, r.gaps_lost,
                           r.lost_messages, r.rerequests_sent);
    }
    if (glimpse_) {
        glimpse_counters const c = glimpse_->counters();
        out += fmt::format("    glimpse: {}, {} loaded ({} orders, {} buffered messages "
                           "replayed), last in {:.1f} ms; {} failures ({} connect, {} "
                           "disconnects, {} rejected, {} protocol, {} too old)\n",
                           to_string(glimpse_->phase()), c.completed, c.orders_loaded,
                           c.replayed_messages, static_cast<double>(c.last_sync_us) / 1e3,
                           c.failures(), c.connect_failures, c.disconnects, c.login_rejected,
                           c.protocol_failures, c.too_old);
    }
    if (auto const* itch = itch_stats()) {
        out += fmt::format("    order book: {} live orders, {} unknown order refs, {} duplicate "
                           "order refs, {} adds dropped at max_orders {}\n",
                           book()->size(), itch->unknown_order_refs, itch->duplicate_order_refs,
                           itch->book_full_drops, feed_.max_orders);
        std::size_t shown = 0;
        book()->for_each_stock([&](md::nasdaq::stock_view const& stock) {
            if (shown++ < books) {
                out += format_book_line(row_of(stock));
            }
        });
    }
}

} // namespace signet::receiver::nasdaq
