#include <cstdio>
#include <functional>

#include <signet/md/wire_text.hpp>
#include <signet/receiver/summary.hpp>

#include "text.hpp"
#include <nlohmann/json.hpp>

namespace signet::receiver {

namespace {

using json = nlohmann::ordered_json;

/// What a per-feed field reads.
struct feed_view {
    feed_parser const& parser;
    net::feed_stats net;
    md::nasdaq::moldudp64_stats session;
    md::nasdaq::itch50_stats const* itch;
    md::nasdaq::binary_file_writer const* recording;
};

/// Percentiles, and the exact cumulative buckets (upper bound ns, samples at or below) that
/// scripts/plot-latency draws as a CDF.
json distribution(metrics::histogram::snapshot const& h) {
    json buckets = json::array();
    h.for_each_cumulative([&](std::uint64_t le, std::uint64_t cumulative) {
        buckets.push_back({le, cumulative});
    });
    return json{{"p50", h.percentile(0.50)},
                {"p99", h.percentile(0.99)},
                {"p999", h.percentile(0.999)},
                {"max", h.max},
                {"count", h.count},
                {"buckets", std::move(buckets)}};
}

std::uint64_t itch_count(feed_view const& f, std::uint64_t md::nasdaq::itch50_stats::*member) {
    return f.itch != nullptr ? f.itch->*member : 0;
}

/// A per-feed field: its documentation and its value (null: the field is left out).
struct feed_field {
    summary_field doc;
    std::function<json(feed_view const&)> value;
};

// The per-feed fields, in output order. External tools read these names: add, never rename.
std::vector<feed_field> const& feed_fields() {
    static std::vector<feed_field> const fields{
        {{"name", "the feed's name ([[feed]] name)"},
         [](feed_view const& f) {
             return json(f.parser.config().name);
         }},
        {{"packets", "datagrams received on all lines (A, B, re-request answers)"},
         [](feed_view const& f) {
             return json(f.net.packets);
         }},
        {{"bytes", "payload bytes of those"},
         [](feed_view const& f) {
             return json(f.net.bytes);
         }},
        {{"messages", "messages delivered in sequence (MoldUDP64)"},
         [](feed_view const& f) {
             return json(f.session.messages);
         }},
        {{"messages_by_type", "delivered ITCH messages per type letter"},
         [](feed_view const& f) {
             json by_type = json::object();
             if (f.itch != nullptr) {
                 for (std::size_t c = 0; c < f.itch->messages_by_type.size(); ++c) {
                     if (f.itch->messages_by_type[c] != 0) {
                         by_type[md::wire_text(std::string(1, static_cast<char>(c)))] =
                             f.itch->messages_by_type[c];
                     }
                 }
             }
             return by_type;
         }},
        {{"gaps", "sequence gaps finally lost (with re-requests: those not recovered)"},
         [](feed_view const& f) {
             return json(f.session.gaps);
         }},
        {{"missing_messages", "messages lost in those gaps"},
         [](feed_view const& f) {
             return json(f.session.missing_messages);
         }},
        {{"duplicate_packets", "data packets delivered before (line B's copies, resends)"},
         [](feed_view const& f) {
             return json(f.session.duplicate_packets);
         }},
        {{"malformed_packets", "packets that are not valid MoldUDP64 (counted, not delivered)"},
         [](feed_view const& f) {
             return json(f.session.malformed_packets);
         }},
        {{"foreign_session_packets", "ignored: another MoldUDP64 session"},
         [](feed_view const& f) {
             return json(f.session.foreign_session_packets);
         }},
        {{"implausible_packets", "ignored: a sequence more than max_sequence_jump away"},
         [](feed_view const& f) {
             return json(f.session.implausible_packets);
         }},
        {{"resyncs", "times the session's anchor moved (moldudp64.hpp, step 2)"},
         [](feed_view const& f) {
             return json(f.session.resyncs);
         }},
        {{"malformed_messages", "ITCH messages too short for their type"},
         [](feed_view const& f) {
             return json(itch_count(f, &md::nasdaq::itch50_stats::malformed_messages));
         }},
        {{"unknown_messages", "ITCH messages of an unknown type (skipped by length)"},
         [](feed_view const& f) {
             return json(itch_count(f, &md::nasdaq::itch50_stats::unknown_messages));
         }},
        {{"heartbeats", "MoldUDP64 heartbeats"},
         [](feed_view const& f) {
             return json(f.session.heartbeats);
         }},
        {{"end_of_session", "an end-of-session packet arrived"},
         [](feed_view const& f) {
             return json(f.session.end_of_session);
         }},
        {{"next_sequence", "the sequence the next new message must carry"},
         [](feed_view const& f) {
             return json(f.session.next_sequence);
         }},
        {{"queue_drops", "datagrams dropped because the line queue was full (on_full = drop)"},
         [](feed_view const& f) {
             return json(f.net.dropped);
         }},
        {{"kernel_drops", "datagrams the kernel dropped (socket buffer full; af_xdp: also its "
                          "rings full)"},
         [](feed_view const& f) {
             return json(f.net.kernel_drops);
         }},
        {{"truncated", "datagrams longer than buffer_size (cut, counted as malformed)"},
         [](feed_view const& f) {
             return json(f.net.truncated);
         }},
        {{"rearms", "io_uring multishot receives re-armed (ring_buffers ran dry)"},
         [](feed_view const& f) {
             return json(f.net.rearms);
         }},
        {{"hardware_timestamps", "packets stamped by the NIC (the rest: by the kernel)"},
         [](feed_view const& f) {
             return json(f.net.hardware_timestamps);
         }},
        {{"malformed_frames", "af_xdp: frames whose Ethernet/IPv4/UDP headers failed the checks "
                              "(dropped)"},
         [](feed_view const& f) {
             return json(f.net.malformed);
         }},
        {{"books", "per stock with an order book: bid_price, bid_shares, ask_price, ask_shares "
                   "(prices in 1/10000 dollar) and live orders"},
         [](feed_view const& f) {
             json books = json::object();
             if (auto const* book = f.parser.book()) {
                 book->for_each_stock([&](md::nasdaq::stock_view const& s) {
                     books[md::wire_text(s.symbol)] = {
                         {"bid_price", std::uint64_t{s.top.bid_price}},
                         {"bid_shares", s.top.bid_shares},
                         {"ask_price", std::uint64_t{s.top.ask_price}},
                         {"ask_shares", s.top.ask_shares},
                         {"orders", std::uint64_t{s.orders}}};
                 });
             }
             return books;
         }},
        {{"live_orders", "orders live in the book (all stocks)"},
         [](feed_view const& f) -> json {
             auto const* book = f.parser.book();
             return book != nullptr ? json(book->size()) : json(nullptr);
         }},
        {{"unknown_order_refs", "executes, cancels, deletes, replaces of orders never added (a "
                                "gap lost the add): 0 means the books are complete"},
         [](feed_view const& f) {
             return json(itch_count(f, &md::nasdaq::itch50_stats::unknown_order_refs));
         }},
        {{"duplicate_order_refs", "adds of an order reference that was live already"},
         [](feed_view const& f) {
             return json(itch_count(f, &md::nasdaq::itch50_stats::duplicate_order_refs));
         }},
        {{"book_full_drops", "adds dropped because the book held [book] max_orders orders"},
         [](feed_view const& f) {
             return json(itch_count(f, &md::nasdaq::itch50_stats::book_full_drops));
         }},
        {{"book_max_orders", "[book] max_orders"},
         [](feed_view const& f) {
             return json(f.parser.config().max_orders);
         }},
        {{"stage_latency_ns", "per stage (receive, queue, parse, total, sequence): p50, p99, "
                              "p999, max, count and cumulative buckets [upper bound ns, samples]"},
         [](feed_view const& f) {
             auto const& stages = f.parser.stages();
             return json{{"receive", distribution(stages.receive().take())},
                         {"queue", distribution(stages.queue().take())},
                         {"parse", distribution(stages.parse().take())},
                         {"total", distribution(stages.total().take())},
                         {"sequence", distribution(f.parser.sequence_latency().take())}};
         }},
        {{"recovery", "with rerequest: state, gaps, gaps_recovered, gaps_lost, "
                      "recovered_messages, lost_messages, rerequests_sent, rerequest_timeouts, "
                      "rerequest_answers, request_send_errors, recovering_s, latency_ns"},
         [](feed_view const& f) -> json {
             auto const* r = f.parser.recovery_stats();
             if (r == nullptr) {
                 return nullptr;
             }
             auto const took = f.parser.recovery_latency().take();
             return {{"state", md::nasdaq::to_string(f.parser.recovery_state())},
                     {"gaps", r->gaps},
                     {"gaps_recovered", r->gaps_recovered},
                     {"gaps_lost", r->gaps_lost},
                     {"recovered_messages", r->recovered_messages},
                     {"lost_messages", r->lost_messages},
                     {"rerequests_sent", r->rerequests_sent},
                     {"rerequest_timeouts", r->rerequest_timeouts},
                     {"rerequest_answers", f.parser.rerequest_answers()},
                     {"request_send_errors", f.parser.request_send_errors()},
                     {"recovering_s", static_cast<double>(r->recovering_ns) / 1e9},
                     {"latency_ns",
                      {{"p50", took.percentile(0.50)},
                       {"p99", took.percentile(0.99)},
                       {"max", took.max}}}};
         }},
        {{"snapshot", "with snapshot (late join): state, requests, attempts, completed, "
                      "orders_loaded, snapshot_messages, buffered_messages, replayed_messages, "
                      "buffer_evictions, buffer_restarts, connect_failures, disconnects, "
                      "login_rejected, protocol_failures, too_old, aborted, last_sync_ms, "
                      "total_sync_ms"},
         [](feed_view const& f) -> json {
             auto const* client = f.parser.snapshot();
             if (client == nullptr) {
                 return nullptr;
             }
             snapshot_counters const c = client->counters();
             return {{"state", to_string(client->phase())},
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
                     {"aborted", c.aborted},
                     {"last_sync_ms", static_cast<double>(c.last_sync_us) / 1e3},
                     {"total_sync_ms", static_cast<double>(c.total_sync_us) / 1e3}};
         }},
        {{"mdp3",
          "with protocol mdp3: instruments (per symbol: security_id, rpt_seq, stale, "
          "trading_status, bids and offers as [price mantissa, size, orders] best first, "
          "orders_stale, orders (market by order) as [order id, side, price mantissa, "
          "quantity, priority] by id) and the channel's counters (packets, "
          "duplicate_packets, gaps, malformed, unknown messages and instrument entries, "
          "book_entries, order_entries, order_snapshots_applied, rpt_seq_gaps, "
          "inconsistent_updates, recoveries (begun, completed, total and last ms), snapshots "
          "applied, confirmed and too old, replayed_entries, held_evicted, "
          "snapshot_silences, channel_resets, definitions, recovering)"},
         [](feed_view const& f) -> json {
             auto const* channel = f.parser.mdp3();
             if (channel == nullptr) {
                 return nullptr;
             }
             auto const levels = [](std::span<md::cme::mdp3_price_level const> side) {
                 json out = json::array();
                 for (auto const& l : side) {
                     out.push_back({l.price, l.size, l.orders});
                 }
                 return out;
             };
             auto const orders = [](md::cme::mdp3_order_book const& book) {
                 json out = json::array();
                 for (auto const& [id, o] : book.sorted()) {
                     out.push_back({id, std::string(1, o.side), o.price, o.quantity, o.priority});
                 }
                 return out;
             };
             json instruments = json::object();
             channel->for_each_instrument([&](md::cme::mdp3_instrument const& i) {
                 instruments[md::wire_text(md::cme::text(i.symbol))] = {
                     {"security_id", i.security_id},
                     {"rpt_seq", i.rpt_seq},
                     {"stale", i.stale},
                     {"trading_status", i.trading_status},
                     {"bids", levels(i.book.bids())},
                     {"offers", levels(i.book.offers())},
                     {"orders_stale", i.orders_stale},
                     {"orders", orders(i.orders)}};
             });
             md::cme::mdp3_channel_stats const& c = channel->stats();
             return {{"instruments", instruments},
                     {"channel",
                      {{"packets", c.packets},
                       {"duplicate_packets", c.duplicate_packets},
                       {"gaps", c.gaps},
                       {"malformed_packets", c.malformed_packets},
                       {"malformed_messages", c.malformed_messages},
                       {"unknown_messages", c.unknown_messages},
                       {"unknown_instrument_entries", c.unknown_instrument_entries},
                       {"book_entries", c.book_entries},
                       {"order_entries", c.order_entries},
                       {"order_snapshots_applied", c.order_snapshots_applied},
                       {"rpt_seq_gaps", c.rpt_seq_gaps},
                       {"inconsistent_updates", c.inconsistent_updates},
                       {"recoveries", c.recoveries},
                       {"recoveries_completed", c.recoveries_completed},
                       {"recovery_ms", static_cast<double>(c.recovery_ns) / 1e6},
                       {"last_recovery_ms", static_cast<double>(c.last_recovery_ns) / 1e6},
                       {"snapshots_applied", c.snapshots_applied},
                       {"snapshots_confirmed", c.snapshots_confirmed},
                       {"snapshots_too_old", c.snapshots_too_old},
                       {"replayed_entries", c.replayed_entries},
                       {"held_evicted", c.held_evicted},
                       {"snapshot_silences", c.snapshot_silences},
                       {"channel_resets", c.channel_resets},
                       {"definitions", c.definitions},
                       {"recovering", channel->recovering()}}}};
         }},
        {{"record", "with --record: path, messages, bytes, drops, write_errors"},
         [](feed_view const& f) -> json {
             if (f.recording == nullptr) {
                 return nullptr;
             }
             auto const r = f.recording->snapshot();
             return {{"path", f.recording->path()},
                     {"messages", r.messages},
                     {"bytes", r.bytes},
                     {"drops", r.drops},
                     {"write_errors", r.write_errors}};
         }},
    };
    return fields;
}

metrics::histogram::snapshot total_latency(itch_receiver const& receiver) {
    metrics::histogram::snapshot latency;
    for (std::size_t i = 0; i < receiver.feed_count(); ++i) {
        latency += receiver.parser(i).stages().total().take();
    }
    return latency;
}

feed_view view(itch_receiver const& receiver, std::size_t i) {
    feed_parser const& parser = receiver.parser(i);
    return {parser, receiver.net_stats(i), parser.session_stats(), parser.itch_stats(),
            receiver.recording(i)};
}

} // namespace

std::span<summary_field const> summary_fields() noexcept {
    static std::vector<summary_field> const all = [] {
        std::vector<summary_field> list{
            {"elapsed_s", "seconds from start() to stop()", false},
            {"latency_ns", "all feeds: kernel receive stamp -> parsed, p50, p99, p999, max", false},
            {"feeds", "one object per feed, with the fields below", false}};
        for (auto const& f : feed_fields()) {
            list.push_back(f.doc);
        }
        return list;
    }();
    return all;
}

std::string summary_json(itch_receiver const& receiver) {
    auto const latency = total_latency(receiver);
    json j;
    j["elapsed_s"] = receiver.elapsed_s();
    j["latency_ns"] = {{"p50", latency.percentile(0.50)},
                       {"p99", latency.percentile(0.99)},
                       {"p999", latency.percentile(0.999)},
                       {"max", latency.max}};
    j["feeds"] = json::array();
    for (std::size_t i = 0; i < receiver.feed_count(); ++i) {
        feed_view const f = view(receiver, i);
        json feed;
        for (auto const& field : feed_fields()) {
            if (json value = field.value(f); !value.is_null()) {
                feed[std::string(field.doc.name)] = std::move(value);
            }
        }
        j["feeds"].push_back(std::move(feed));
    }
    // ASCII output: wire bytes went in as wire_text; a stray invalid byte becomes U+FFFD
    // instead of an exception.
    return j.dump(-1, ' ', true, json::error_handler_t::replace);
}

std::string summary_text(itch_receiver const& receiver, std::size_t books) {
    std::string out;
    char line[512];
    std::snprintf(line, sizeof(line), "md_receiver summary after %.1f s (backend %s)\n",
                  receiver.elapsed_s(),
                  std::string(net::to_string(receiver.runtime().backend())).c_str());
    out += line;
    for (std::size_t i = 0; i < receiver.feed_count(); ++i) {
        feed_view const f = view(receiver, i);
        auto const& s = f.session;
        std::snprintf(
            line, sizeof(line),
            "  feed %s: %llu packets, %llu messages, %llu gaps (%llu missing), %llu "
            "duplicates, %llu malformed, %llu ignored (%llu resyncs), %llu queue drops, "
            "%llu kernel drops%s\n",
            f.parser.config().name.c_str(), static_cast<unsigned long long>(f.net.packets),
            static_cast<unsigned long long>(s.messages), static_cast<unsigned long long>(s.gaps),
            static_cast<unsigned long long>(s.missing_messages),
            static_cast<unsigned long long>(s.duplicate_packets),
            static_cast<unsigned long long>(s.malformed_packets),
            static_cast<unsigned long long>(s.foreign_session_packets + s.implausible_packets),
            static_cast<unsigned long long>(s.resyncs),
            static_cast<unsigned long long>(f.net.dropped),
            static_cast<unsigned long long>(f.net.kernel_drops),
            s.end_of_session ? ", end of session" : "");
        out += line;
        if (auto const* r = f.parser.recovery_stats()) {
            std::snprintf(line, sizeof(line),
                          "    recovery: %llu gaps, %llu recovered (%llu messages), %llu lost "
                          "(%llu messages), %llu re-requests sent\n",
                          static_cast<unsigned long long>(r->gaps),
                          static_cast<unsigned long long>(r->gaps_recovered),
                          static_cast<unsigned long long>(r->recovered_messages),
                          static_cast<unsigned long long>(r->gaps_lost),
                          static_cast<unsigned long long>(r->lost_messages),
                          static_cast<unsigned long long>(r->rerequests_sent));
            out += line;
        }
        if (auto const* client = f.parser.snapshot()) {
            snapshot_counters const c = client->counters();
            std::snprintf(line, sizeof(line),
                          "    snapshot: %s, %llu loaded (%llu orders, %llu buffered messages "
                          "replayed), last in %.1f ms; %llu failures (%llu connect, %llu "
                          "disconnects, %llu rejected, %llu protocol, %llu too old)\n",
                          to_string(client->phase()), static_cast<unsigned long long>(c.completed),
                          static_cast<unsigned long long>(c.orders_loaded),
                          static_cast<unsigned long long>(c.replayed_messages),
                          static_cast<double>(c.last_sync_us) / 1e3,
                          static_cast<unsigned long long>(c.failures()),
                          static_cast<unsigned long long>(c.connect_failures),
                          static_cast<unsigned long long>(c.disconnects),
                          static_cast<unsigned long long>(c.login_rejected),
                          static_cast<unsigned long long>(c.protocol_failures),
                          static_cast<unsigned long long>(c.too_old));
            out += line;
        }
        if (f.itch != nullptr) {
            std::snprintf(line, sizeof(line),
                          "    order book: %llu unknown order refs, %llu duplicate order refs, "
                          "%llu adds dropped at max_orders %zu\n",
                          static_cast<unsigned long long>(f.itch->unknown_order_refs),
                          static_cast<unsigned long long>(f.itch->duplicate_order_refs),
                          static_cast<unsigned long long>(f.itch->book_full_drops),
                          f.parser.config().max_orders);
            out += line;
        }
        if (auto const* book = f.parser.book()) {
            std::size_t shown = 0;
            book->for_each_stock([&](md::nasdaq::stock_view const& stock) {
                if (shown++ >= books) {
                    return;
                }
                out += format_book_line(stock.symbol, stock.top, stock.orders);
            });
        }
    }
    auto const latency = total_latency(receiver);
    std::snprintf(line, sizeof(line),
                  "  latency (kernel rx -> parsed): p50 %llu ns, p99 %llu ns, p99.9 %llu ns, "
                  "max %llu ns\n",
                  static_cast<unsigned long long>(latency.percentile(0.50)),
                  static_cast<unsigned long long>(latency.percentile(0.99)),
                  static_cast<unsigned long long>(latency.percentile(0.999)),
                  static_cast<unsigned long long>(latency.max));
    out += line;
    return out;
}

} // namespace signet::receiver
