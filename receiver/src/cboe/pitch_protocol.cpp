#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>

#include <signet/core/realtime_clock.hpp>
#include <signet/md/wire_text.hpp>
#include <signet/net/log.hpp>
#include <signet/receiver/cboe/pitch_protocol.hpp>
#include <signet/receiver/nasdaq/itch_book_levels.hpp>

#include "../config_reader.hpp"
#include "../text.hpp"
#include "pitch_session_line.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace signet::receiver::cboe {

namespace {

namespace cb = md::cboe;

constexpr std::string_view keys[] = {"units",
                                     "grp",
                                     "gap_bind",
                                     "login",
                                     "grp_timeout_ms",
                                     "grp_tries",
                                     "grp_max_messages",
                                     "spin",
                                     "spin_buffer_messages"};

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
    {"pitch.grp",
     "with grp: the Gap Request Proxy's counters: requests (sent, retries included), "
     "responses, accepted, rejected by status (O out of range, D/M/S allocation exhausted, C "
     "count limit, I invalid unit, U unavailable, other), gaps, recovered and lost (gaps and "
     "messages), logins, login_rejected, session failures, disconnects, send_failures"},
    {"pitch.spin",
     "with spin: the late join's counters: requests, completed, refused, too_old, future "
     "(refused: beyond the stream by more than max_sequence_jump), aborted (lost mid-spin), "
     "orders_loaded, buffered_messages, replayed_messages, covered_messages (live messages the "
     "loaded spin held), buffer_restarts, last_sync_ms; and each unit's phase in pitch.units"},
    {"pitch.instruments",
     "per symbol: unit, status (Trading Status), bid_price, bid_shares, ask_price, ask_shares "
     "(prices in 1/10000), volume, last_price, orders (live: [order id, side, shares, price] "
     "by id)"},
};

std::shared_ptr<protocol_settings const> parse(config_reader const& feed) {
    auto s = std::make_shared<pitch_settings>();
    s->grp = feed.get_endpoint("grp", false);
    s->gap_bind = feed.get_endpoint("gap_bind", false);
    if (s->grp.has_value() != s->gap_bind.has_value()) {
        throw config_error(feed.where() + ": key 'gap_bind': grp and gap_bind go together (the "
                                          "proxy's answers arrive on the gap line)");
    }
    std::string const login = feed.has("login") ? feed.get_string("login") : std::string();
    if (!login.empty()) {
        std::size_t const a = login.find(':');
        std::size_t const b = a == std::string::npos ? a : login.find(':', a + 1);
        if (b == std::string::npos || a > 4 || b - a - 1 > 4 || login.size() - b - 1 > 10) {
            throw config_error(feed.where() + ": key 'login': \"SESSIONSUBID:USERNAME:PASSWORD\" "
                                              "(at most 4, 4 and 10 characters)");
        }
        s->login = md::cboe::session_credentials::of(
            login.substr(0, a), login.substr(a + 1, b - a - 1), login.substr(b + 1));
    }
    s->grp_timeout_ms = feed.get_size("grp_timeout_ms", 200, 1, 60'000);
    s->grp_tries = static_cast<unsigned>(feed.get_size("grp_tries", 3, 1, 100));
    s->grp_max_messages = feed.get_size("grp_max_messages", 1000, 1, 65'534);
    s->spin_buffer_messages =
        feed.get_size("spin_buffer_messages", std::size_t{1} << 18, 1024, std::size_t{1} << 26);
    if (toml::node const* const node = feed.table().get("units")) {
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
    }
    if (toml::node const* const node = feed.table().get("spin")) {
        toml::array const* const list = node->as_array();
        auto const bad = [&] {
            return config_error(feed.where() + ": key 'spin': a list of \"ip:port\", one Spin "
                                               "server per unit of 'units', in its order");
        };
        if (list == nullptr || list->size() != s->units.size()) {
            throw bad();
        }
        for (toml::node const& n : *list) {
            std::optional<std::string> const text = n.value<std::string>();
            std::optional<net::udp_endpoint> const e =
                text ? net::udp_endpoint::try_parse(*text) : std::nullopt;
            if (!e) {
                throw bad();
            }
            s->spin.push_back(*e);
        }
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
    units_.reserve(settings_.units.size());
    for (std::uint8_t const u : settings_.units) {
        stream_of_[u] = static_cast<std::uint16_t>(units_.size());
        unit_state& state = units_.emplace_back();
        state.unit = u;
        if (!settings_.spin.empty()) {
            std::size_t const n = settings_.spin_buffer_messages;
            state.buffer = std::make_unique<md::message_store>(n, n * 48 + 256);
            state.sync = unit_state::phase::buffering;
        }
        if (settings_.grp) {
            state.recovery.emplace(md::request_recovery_options{
                .timeout_ns = settings_.grp_timeout_ms * 1'000'000,
                .max_messages = static_cast<std::uint16_t>(settings_.grp_max_messages),
                .max_in_flight = 4,
                .max_tries = settings_.grp_tries});
        }
    }
}

pitch_protocol::~pitch_protocol() = default;

std::vector<line_spec> pitch_protocol::lines() const {
    std::vector<line_spec> lines = ab_lines(feed_);
    if (settings_.gap_bind) {
        // The gap line: the proxy's answers, sequenced like A and B, not a line of their
        // arbitration.
        net::udp_socket_options socket = line_a_socket(feed_);
        socket.bind = *settings_.gap_bind;
        socket.group = std::nullopt;
        socket.source = std::nullopt;
        socket.reuse_address = false;
        lines.push_back({"gap", socket, line_role::answers, 0});
    }
    return lines;
}

md::sequence_tracker_options pitch_protocol::sequencing() const {
    // Late join: a unit's first datagram sets where its stream is; what came before is
    // late_start, not a gap (a spin covers it; without one the unit is stale: deliver()). A
    // stream seen from sequence 1 needs nothing.
    return {.first_sequence = md::sequence_tracker::late_join};
}

void pitch_protocol::setup(feed_setup& setup) {
    for (std::size_t i = 0; i < settings_.spin.size(); ++i) {
        unit_state& u = units_[i];
        std::string const name =
            "feed " + feed_.name + " spin server of unit " + std::to_string(u.unit);
        u.spin = std::make_unique<pitch_session_line>(
            name, md::cboe::session_options{.credentials = settings_.login},
            setup.tcp_client({.peer = settings_.spin[i], .name = name}), setup.parser_timer());
        start_buffering(u, realtime_clock::now_ns());
    }
    if (settings_.grp) {
        std::string const name = "feed " + feed_.name + " gap request proxy";
        grp_ = std::make_unique<pitch_session_line>(
            name, md::cboe::session_options{.credentials = settings_.login},
            setup.tcp_client({.peer = *settings_.grp, .name = name}), setup.parser_timer());
        grp_->want(true, pitch_session_line::clock::now()); // up before the first gap
    }
}

md::gap_recovery* pitch_protocol::recovery(std::size_t stream) noexcept {
    return stream < units_.size() && units_[stream].recovery ? &*units_[stream].recovery : nullptr;
}

std::string pitch_protocol::describe() const {
    std::string units;
    for (std::uint8_t const u : settings_.units) {
        units += (units.empty() ? "" : ",") + std::to_string(u);
    }
    std::string out = "units " + units;
    if (settings_.grp) {
        out += ", gap requests to " + settings_.grp->to_string();
    }
    if (!settings_.spin.empty()) {
        out += ", spins from " + settings_.spin.front().to_string() +
               (settings_.spin.size() > 1 ? " and the others" : "");
    }
    return out;
}

bool pitch_protocol::send_gap_request(std::uint8_t unit, std::uint64_t first, std::uint16_t count) {
    md::cboe::message request;
    request.type = md::cboe::message_type::gap_request;
    request.unit = unit;
    request.sequence = static_cast<std::uint32_t>(first);
    request.count = count;
    if (first > 0xFFFFFFFF || !grp_->send(request, pitch_session_line::clock::now())) {
        ++grp_send_failures_; // not logged in yet, or the outbox is full: retried
        return false;
    }
    return true;
}

void pitch_protocol::poll_recovery(std::uint64_t now_ns) {
    for (unit_state& u : units_) {
        if (!u.recovery || !u.recovery->recovering()) {
            u.waiting_since = 0;
            continue;
        }
        if (!grp_->ready()) {
            // No session to ask: wait for it a moment, then give the gap up (it stales its
            // unit) rather than hold the unit's stream.
            if (u.waiting_since == 0) {
                u.waiting_since = now_ns;
                // A gap needs the proxy now: do not wait out a connect backoff (the receiver
                // may have started before the proxy did).
                grp_->want(true, pitch_session_line::clock::now());
            }
            if (grp_->rejected() || now_ns - u.waiting_since > grp_wait_ns) {
                u.recovery->abandon(now_ns);
            }
            continue;
        }
        u.waiting_since = 0;
        u.recovery->poll(now_ns, [&](std::uint64_t first, std::uint16_t count) {
            return send_gap_request(u.unit, first, count);
        });
    }
}

void pitch_protocol::on_session_message(md::cboe::message const& m, std::uint64_t now_ns) {
    if (m.type != md::cboe::message_type::gap_response) {
        return;
    }
    ++grp_counters_.responses;
    if (m.status == 'A') {
        ++grp_counters_.accepted; // the messages follow on the gap line
        return;
    }
    constexpr std::string_view statuses = "ODMSCIU";
    std::size_t const i = std::min(statuses.find(m.status), statuses.size());
    ++grp_counters_.rejected[i];
    if (!std::exchange(reject_logged_, true)) {
        SPDLOG_LOGGER_WARN(net::logger(),
                           "feed {}: the gap request proxy refused a request (unit {}, sequence "
                           "{}, count {}: status '{}'); the gap is lost and stales its unit "
                           "(counted by status in pitch.grp; logged once)",
                           feed_.name, m.unit, m.sequence, m.count, m.status);
    }
    if (std::uint16_t const stream = stream_of_[m.unit]; stream != not_followed) {
        if (units_[stream].recovery && units_[stream].recovery->recovering()) {
            units_[stream].recovery->abandon(now_ns);
        }
    }
}

void pitch_protocol::service(std::uint64_t now_ns) {
    for (unit_state& u : units_) {
        if (!u.spin) {
            continue;
        }
        u.spin->service(pitch_session_line::clock::now(),
                        [&](md::cboe::message const& m) { on_spin_message(u, m, now_ns); });
        if (std::exchange(u.spin_done, false) && u.sync == unit_state::phase::live) {
            u.spin->want(false, pitch_session_line::clock::now()); // until the next lost gap
        }
        if (u.spin->lost_since(u.lost_seen) && u.sync != unit_state::phase::live) {
            // Lost mid-spin (or before the answer): nothing half-loaded goes live; again.
            spin_counters_.aborted += u.sync == unit_state::phase::loading ? 1 : 0;
            u.sync = unit_state::phase::buffering;
            u.requested = false;
        }
    }
    if (grp_) {
        grp_->service(pitch_session_line::clock::now(),
                      [&](md::cboe::message const& m) { on_session_message(m, now_ns); });
    }
}

std::uint64_t pitch_protocol::next_deadline(std::uint64_t now_ns) const noexcept {
    std::uint64_t due = 0;
    for (unit_state const& u : units_) {
        if (u.recovery && u.recovery->recovering()) {
            // A chunk not sent yet (no session) has no deadline: look again after a timeout.
            std::uint64_t const at = u.recovery->next_deadline() != 0
                                         ? u.recovery->next_deadline()
                                         : now_ns + settings_.grp_timeout_ms * 1'000'000;
            due = due == 0 ? at : std::min(due, at);
        }
    }
    return due;
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
    bool const first = !std::exchange(u.started, true);
    u.next_sequence = d.next_sequence;
    if (u.recovery) {
        (void)u.recovery->progress(d.next_sequence, d.now_ns);
    }
    messages_ += d.step.fresh;
    if (first && d.unit.first > 1 && !u.spin) {
        // Joined mid-stream with no spin: the orders added before are not in the book, and
        // nothing brings them (late_start counts them; the GRP is for gaps, not for this).
        book_.set_stale(u.unit, true, d.unit.first, d.receive_ns);
    }
    if (u.sync != unit_state::phase::live) {
        if (first && d.unit.first <= 1 && d.step.missing == 0 &&
            u.sync == unit_state::phase::buffering && !u.requested) {
            go_live(u, d.now_ns); // the stream from its start: nothing to spin
        } else {
            if (d.step.missing != 0) {
                ++u.lost_gaps; // the buffer starts over past the gap (counted in buffer())
            }
            buffer(u, d);
            return;
        }
    }
    if (d.step.missing != 0) {
        ++u.lost_gaps; // nothing brings it back: the unit's symbols are wrong from here
        book_.set_stale(u.unit, true, d.unit.first, d.receive_ns);
        if (u.spin) {
            start_buffering(u, d.now_ns); // a spin rebuilds the unit
            buffer(u, d);
            return;
        }
    }
    if (d.step.fresh == 0) {
        return; // a heartbeat, or seen before
    }
    std::uint64_t skip = d.step.skip;
    if (u.skip_below > d.unit.first + skip) { // the loaded spin holds these already
        std::uint64_t const covered =
            std::min<std::uint64_t>(u.skip_below - d.unit.first, d.unit.count) - skip;
        spin_counters_.covered_messages += covered;
        skip += covered;
    }
    book_.apply_block(d.datagram, skip, d.receive_ns);
}

void pitch_protocol::start_buffering(unit_state& u, std::uint64_t now_ns) {
    u.sync = unit_state::phase::buffering;
    u.requested = false;
    u.buffer->clear();
    u.requested_ns = now_ns;
    u.spin->want(true, pitch_session_line::clock::now());
}

void pitch_protocol::buffer(unit_state& u, delivery const& d) {
    std::uint64_t sequence = d.unit.first;
    std::uint64_t index = 0;
    md::cboe::for_each_message(d.datagram, [&](std::span<std::byte const> message) {
        if (index++ >= d.step.skip) {
            if (!u.buffer->append(sequence, message)) {
                // Not the next one (a gap in the live stream): the buffer starts over here,
                // and the spin must reach this far.
                ++spin_counters_.buffer_restarts;
                u.buffer->clear();
                (void)u.buffer->append(sequence, message);
            }
            ++spin_counters_.buffered_messages;
        }
        ++sequence;
    });
}

std::uint64_t pitch_protocol::held_from(unit_state const& u) noexcept {
    // Buffered messages from their first; none buffered: the stream's next message, which
    // will be the buffer's first.
    return u.buffer->empty() ? u.next_sequence : u.buffer->first_sequence();
}

void pitch_protocol::go_live(unit_state& u, std::uint64_t now_ns) {
    u.sync = unit_state::phase::live;
    u.requested = false;
    u.buffer->clear();
    u.spin_done = true; // service() closes the session (this may run inside its callback)
    // The unit's next sequence: the book is the exchange's as of the one before (a loaded spin
    // may reach past the stream: its own next, skip_below).
    std::uint64_t const next = std::max(u.next_sequence, u.skip_below);
    book_.set_stale(u.unit, false, next, 0);
    spin_counters_.last_sync_us = now_ns > u.requested_ns ? (now_ns - u.requested_ns) / 1000 : 0;
    // Once a spin (not per packet), as the MoldUDP64 late join says its snapshot.
    SPDLOG_LOGGER_INFO(net::logger(),
                       "feed {}: unit {} synchronized from a spin (live from sequence {})",
                       feed_.name, u.unit, next);
}

void pitch_protocol::on_spin_message(unit_state& u, md::cboe::message const& m,
                                     std::uint64_t now_ns) {
    namespace mt = md::cboe::message_type;
    md::message_store const& buffered = *u.buffer;
    switch (m.type) {
    case mt::spin_image_available:
        // An image that reaches what is held of the live stream (no hole between them), once
        // the stream has shown where it is — by a message or by a heartbeat alone (a quiet
        // unit joined late sends nothing else).
        if (u.sync == unit_state::phase::buffering && !u.requested && u.started &&
            m.sequence + 1 >= held_from(u)) {
            md::cboe::message request;
            request.type = mt::spin_request;
            request.sequence = m.sequence;
            if (u.spin->send(request, pitch_session_line::clock::now())) {
                u.requested = true;
                ++spin_counters_.requests;
            }
        }
        break;
    case mt::spin_response:
        if (!u.requested || u.sync != unit_state::phase::buffering) {
            break;
        }
        if (m.status != 'A') {
            ++spin_counters_.refused;
            u.requested = false; // asked again at the next image
            break;
        }
        u.sync = unit_state::phase::loading;
        u.spin_sequence = m.sequence;
        // The spin's events, snapshot_begin to snapshot_end, carry its next sequence: the book
        // they show is the exchange's as of the one before (as a GLIMPSE snapshot's carry the
        // End of Snapshot's next). Never below what the unit sent before: the image reaches
        // the buffer, and a gap's instrument_stale carried the buffer's first sequence at most.
        book_.set_stale(u.unit, true, std::uint64_t{m.sequence} + 1, 0);
        book_.snapshot_bounds(u.unit, true, std::uint64_t{m.sequence} + 1);
        book_.clear_unit(u.unit, std::uint64_t{m.sequence} + 1, 0);
        break;
    case mt::spin_finished: {
        if (u.sync != unit_state::phase::loading) {
            break;
        }
        std::uint64_t const s = u.spin_sequence;
        std::uint64_t const next = std::max(buffered.next_sequence(), u.next_sequence);
        if (s + 1 < held_from(u)) {
            ++spin_counters_.too_old; // the buffer moved on (a gap, an overflow): again
            u.sync = unit_state::phase::buffering;
            u.requested = false;
            break;
        }
        if (s >= next + feed_.max_sequence_jump) {
            ++spin_counters_.future;
            if (!std::exchange(future_logged_, true)) {
                SPDLOG_LOGGER_WARN(net::logger(),
                                   "feed {}: a spin of unit {} claims sequence {}, beyond the "
                                   "live stream (next {}) by more than max_sequence_jump: "
                                   "refused, asking again (a server of another day or unit? "
                                   "counted as future; logged once)",
                                   feed_.name, u.unit, s, next);
            }
            u.sync = unit_state::phase::buffering;
            u.requested = false;
            break;
        }
        if (!buffered.empty() && buffered.first_sequence() <= s) {
            // Buffered messages the spin already holds: dropped, and counted as the live
            // messages it held are (below, in deliver()).
            spin_counters_.covered_messages +=
                std::min(s + 1, buffered.next_sequence()) - buffered.first_sequence();
        }
        // The spin is whole here, before the replay: the replayed messages carry their own
        // sequences, from s + 1 on, so the sequence never goes back.
        book_.snapshot_bounds(u.unit, false, s + 1);
        for (std::uint64_t seq = s + 1; seq < next; ++seq) {
            if (std::optional<std::span<std::byte const>> const bytes = buffered.find(seq)) {
                if (std::optional<md::cboe::message> const message = md::cboe::decode(*bytes)) {
                    book_.apply(u.unit, seq, *message, 0);
                }
                ++spin_counters_.replayed_messages;
            }
        }
        u.skip_below = std::max(s + 1, next);
        ++spin_counters_.completed;
        go_live(u, now_ns);
        break;
    }
    default:
        if (u.sync == unit_state::phase::loading) {
            book_.apply(u.unit, u.spin_sequence + 1, m, 0, md::event_flag::from_snapshot);
            bool const add = m.type == mt::add_order_long || m.type == mt::add_order_short ||
                             m.type == mt::add_order_expanded;
            spin_counters_.orders_loaded += add ? 1 : 0;
        }
        break;
    }
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
    return nasdaq::itch_book_levels(book_.orders(), static_cast<std::uint16_t>(instrument), side,
                                    out);
}

protocol_counters pitch_protocol::counters() const noexcept {
    protocol_counters c;
    c.messages = messages_;
    bool stale = false;
    for (unit_state const& u : units_) {
        // A stale unit a spin is rebuilding is recovering; one nothing will rebuild is stale.
        stale = stale || (book_.unit(u.unit).stale && u.sync == unit_state::phase::live);
        c.recovering = c.recovering || u.sync != unit_state::phase::live;
        if (u.recovery) {
            c.recovered += u.recovery->stats().recovered_messages;
            c.lost += u.recovery->stats().lost_messages;
            c.recovering = c.recovering || u.recovery->recovering();
        }
    }
    c.book = stale          ? book_state::stale
             : c.recovering ? book_state::recovering
                            : book_state::complete;
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
    if (settings_.grp) {
        out.push_back(recovery_line(feed, live));
    }
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
                         {"time", state.time},
                         {"phase", u.sync == unit_state::phase::live        ? "live"
                                   : u.sync == unit_state::phase::buffering ? "buffering"
                                                                            : "loading"}});
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
    if (grp_) {
        std::uint64_t requests = 0, gaps = 0, recovered_gaps = 0, lost_gaps = 0, recovered = 0,
                      lost = 0;
        for (unit_state const& u : units_) {
            md::request_recovery_stats const& r = u.recovery->stats();
            requests += r.rerequests_sent;
            gaps += r.gaps;
            recovered_gaps += r.gaps_recovered;
            lost_gaps += r.gaps_lost;
            recovered += r.recovered_messages;
            lost += r.lost_messages;
        }
        auto const& g = grp_counters_;
        pitch_session_counters const& sc = grp_->counters();
        out["grp"] = {{"requests", requests},
                      {"responses", g.responses},
                      {"accepted", g.accepted},
                      {"rejected",
                       {{"O", g.rejected[0]},
                        {"D", g.rejected[1]},
                        {"M", g.rejected[2]},
                        {"S", g.rejected[3]},
                        {"C", g.rejected[4]},
                        {"I", g.rejected[5]},
                        {"U", g.rejected[6]},
                        {"other", g.rejected[7]}}},
                      {"gaps", gaps},
                      {"gaps_recovered", recovered_gaps},
                      {"gaps_lost", lost_gaps},
                      {"recovered_messages", recovered},
                      {"lost_messages", lost},
                      {"logins", sc.logins},
                      {"login_rejected", sc.login_rejected},
                      {"session_failures", sc.protocol_failures},
                      {"disconnects", sc.disconnects},
                      {"send_failures", grp_send_failures_}};
    }
    if (!settings_.spin.empty()) {
        spin_counters const& c = spin_counters_;
        out["spin"] = {{"requests", c.requests},
                       {"completed", c.completed},
                       {"refused", c.refused},
                       {"too_old", c.too_old},
                       {"future", c.future},
                       {"aborted", c.aborted},
                       {"orders_loaded", c.orders_loaded},
                       {"buffered_messages", c.buffered_messages},
                       {"replayed_messages", c.replayed_messages},
                       {"covered_messages", c.covered_messages},
                       {"buffer_restarts", c.buffer_restarts},
                       {"last_sync_ms", static_cast<double>(c.last_sync_us) / 1e3}};
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
