#include <cstdio>
#include <functional>

#include <signet/receiver/summary.hpp>

#include "protocols.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace signet::receiver {

namespace {

using json = nlohmann::ordered_json;

/// What a per-feed field reads.
struct feed_view {
    receiver const& r;
    std::size_t index;
    feed_parser const& parser;
    feed_counters live;
    net::feed_stats net;
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

json line_counters(net::feed_stats const& s) {
    return {{"packets", s.packets},
            {"bytes", s.bytes},
            {"queue_drops", s.dropped},
            {"kernel_drops", s.kernel_drops},
            {"truncated", s.truncated},
            {"rearms", s.rearms},
            {"hardware_timestamps", s.hardware_timestamps},
            {"malformed_frames", s.malformed}};
}

/// A per-feed field: its documentation and its value (null: the field is left out).
struct feed_field {
    summary_field doc;
    std::function<json(feed_view const&)> value;
};

// The protocol-neutral per-feed fields, in output order. External tools read these names: add,
// never rename (a rename is a new schema).
std::vector<feed_field> const& feed_fields() {
    static std::vector<feed_field> const fields{
        {{"name", "the feed's name ([[feed]] name)"},
         [](feed_view const& f) {
             return json(f.parser.config().name);
         }},
        {{"protocol", "its protocol ([[feed]] protocol): the key of its section below"},
         [](feed_view const& f) {
             return json(f.parser.config().protocol_name());
         }},
        {{"packets", "datagrams the feed's parser took, all lines (A, B, re-request answers, "
                     "snapshot and definition lines)"},
         [](feed_view const& f) {
             return json(f.live.packets);
         }},
        {{"bytes", "payload bytes received, all lines"},
         [](feed_view const& f) {
             return json(f.net.bytes);
         }},
        {{"messages", "protocol messages delivered in sequence (its section says which)"},
         [](feed_view const& f) {
             return json(f.live.messages);
         }},
        {{"gaps", "sequence gaps not recovered (with re-requests: those given up)"},
         [](feed_view const& f) {
             return json(f.live.gaps);
         }},
        {{"missing", "sequence numbers lost in those gaps (the protocol's: messages or "
                     "packets, its section says which)"},
         [](feed_view const& f) {
             return json(f.live.missing);
         }},
        {{"recovered", "messages a recovery brought back (re-requests)"},
         [](feed_view const& f) {
             return json(f.live.recovered);
         }},
        {{"lost", "messages of gaps whose recovery was given up"},
         [](feed_view const& f) {
             return json(f.live.lost);
         }},
        {{"malformed", "packets that failed their protocol's validation or were cut short "
                       "(counted, never delivered: they claim no sequence)"},
         [](feed_view const& f) {
             return json(f.live.malformed);
         }},
        {{"duplicates", "packets whose sequence numbers were all delivered before (line B's "
                        "copies, resends)"},
         [](feed_view const& f) {
             return json(f.live.duplicates);
         }},
        {{"ignored", "packets of another stream (session) or with a sequence more than "
                     "max_sequence_jump away"},
         [](feed_view const& f) {
             return json(f.live.ignored);
         }},
        {{"late_start", "sequence numbers before the first packet of a late join (not gaps)"},
         [](feed_view const& f) {
             return json(f.live.late_start);
         }},
        {{"recovering", "a gap or the book was being recovered at the end"},
         [](feed_view const& f) {
             return json(f.live.recovering);
         }},
        {{"end_of_stream", "the stream said it ended (an end of session)"},
         [](feed_view const& f) {
             return json(f.live.end_of_stream);
         }},
        {{"book_state", "complete (every update applied), recovering, stale (data lost and not "
                        "brought back), or none (the feed builds no book)"},
         [](feed_view const& f) {
             return json(to_string(f.live.book));
         }},
        {{"sequencing", "the shared sequencing's counters (sequenced protocols): units, "
                        "heartbeats, foreign, implausible, resyncs, overlaps, next_sequence"},
         [](feed_view const& f) -> json {
             if (!f.parser.sequenced()) {
                 return nullptr;
             }
             md::sequence_stats const& s = f.parser.sequencing();
             return {{"units", s.units},
                     {"heartbeats", s.heartbeats},
                     {"foreign", s.foreign},
                     {"implausible", s.implausible},
                     {"resyncs", s.resyncs},
                     {"overlaps", s.overlaps},
                     {"next_sequence", f.parser.next_sequence()}};
         }},
        {{"queue_drops", "datagrams dropped because a line queue was full (on_full = drop)"},
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
        {{"lines", "per line by name (a, b, request, snapshot, definitions): packets, bytes, "
                   "queue_drops, kernel_drops, truncated, rearms, hardware_timestamps, "
                   "malformed_frames"},
         [](feed_view const& f) {
             json lines = json::object();
             for (std::size_t l = 0; l < f.parser.lines().size(); ++l) {
                 lines[f.parser.lines()[l].name] = line_counters(f.r.net_stats(f.index, l));
             }
             return lines;
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
    };
    return fields;
}

metrics::histogram::snapshot total_latency(receiver const& r) {
    metrics::histogram::snapshot latency;
    for (std::size_t i = 0; i < r.feed_count(); ++i) {
        latency += r.parser(i).stages().total().take();
    }
    return latency;
}

feed_view view(receiver const& r, std::size_t i) {
    feed_parser const& parser = r.parser(i);
    return {r, i, parser, parser.live(), r.net_stats(i)};
}

} // namespace

std::span<summary_field const> summary_fields() noexcept {
    static std::vector<summary_field> const all = [] {
        std::vector<summary_field> list{
            {"schema", "the layout's version (2)", false},
            {"elapsed_s", "seconds from start() to stop()", false},
            {"latency_ns", "all feeds: kernel receive stamp -> parsed, p50, p99, p999, max", false},
            {"feeds", "one object per feed, with the fields below", false},
            {"subscribers",
             "one object per event subscriber (receiver::subscribe, md_receiver --events): name, "
             "mode (inline, queued), delivered, dropped (a full queue, or left at stop), "
             "conflated (bbos replaced by a later one), lost_notices (events_lost delivered)",
             false},
            {"publish",
             "empty, or with [publish] nats: nats.url, state (connecting, connected, "
             "reconnecting), "
             "published, failed (refused by the connection: its reconnect buffer full), dropped "
             "(its queue full), disconnects, reconnects, streams (JetStream streams made), "
             "stream_errors, stream_unstored (messages a JetStream stream did not store: its store "
             "full, or no leader); with [publish] standby also standby: group, member, and per "
             "feed feed, role (leader, follower, suspended), holder (the lease's), takeovers, "
             "resyncs (takeovers that published the current state: the history did not reach "
             "back), resync_messages, last_takeover_ms (lease found free -> publishing again), "
             "resumed_after_sequence and resumed_after_index (the group's last position at the "
             "last takeover), history (events kept), lease_errors",
             false}};
        for (auto const& f : feed_fields()) {
            list.push_back(f.doc);
        }
        for (protocol_registration const& p : protocols()) {
            list.insert(list.end(), p.fields.begin(), p.fields.end());
        }
        return list;
    }();
    return all;
}

std::string summary_json(receiver const& r) {
    auto const latency = total_latency(r);
    json j;
    j["schema"] = summary_schema;
    j["elapsed_s"] = r.elapsed_s();
    j["latency_ns"] = {{"p50", latency.percentile(0.50)},
                       {"p99", latency.percentile(0.99)},
                       {"p999", latency.percentile(0.999)},
                       {"max", latency.max}};
    j["feeds"] = json::array();
    for (std::size_t i = 0; i < r.feed_count(); ++i) {
        feed_view const f = view(r, i);
        json feed;
        for (auto const& field : feed_fields()) {
            if (json value = field.value(f); !value.is_null()) {
                feed[std::string(field.doc.name)] = std::move(value);
            }
        }
        json section = json::object();
        f.parser.protocol().summary(section);
        if (!section.empty()) {
            feed[std::string(f.parser.config().protocol_name())] = std::move(section);
        }
        j["feeds"].push_back(std::move(feed));
    }
    j["subscribers"] = json::array();
    for (std::size_t i = 0; i < r.subscriber_count(); ++i) {
        subscriber_stats const s = r.subscriber(i);
        j["subscribers"].push_back({{"name", s.name},
                                    {"mode", to_string(s.mode)},
                                    {"delivered", s.delivered},
                                    {"dropped", s.dropped},
                                    {"conflated", s.conflated},
                                    {"lost_notices", s.lost_notices}});
    }
    j["publish"] = json::object(); // what the receiver publishes to (none: empty)
    if (auto const n = r.nats()) {
        j["publish"]["nats"] = {{"url", n->url},
                                {"state", n->state},
                                {"published", n->published},
                                {"failed", n->failed},
                                {"dropped", n->dropped},
                                {"disconnects", n->disconnects},
                                {"reconnects", n->reconnects},
                                {"streams", n->streams},
                                {"stream_errors", n->stream_errors},
                                {"stream_unstored", n->stream_unstored}};
    }
    if (auto const sb = r.standby()) {
        json feeds = json::array();
        for (standby_feed_stats const& f : sb->feeds) {
            feeds.push_back({{"feed", f.feed},
                             {"role", f.role},
                             {"holder", f.holder},
                             {"takeovers", f.takeovers},
                             {"resyncs", f.resyncs},
                             {"resync_messages", f.resync_messages},
                             {"last_takeover_ms", f.last_takeover_ms},
                             {"resumed_after_sequence", f.resumed_after_sequence},
                             {"resumed_after_index", f.resumed_after_index},
                             {"history", f.history},
                             {"lease_errors", f.lease_errors}});
        }
        j["publish"]["standby"] = {
            {"group", sb->group}, {"member", sb->member}, {"feeds", std::move(feeds)}};
    }
    // ASCII output: wire bytes went in as wire_text; a stray invalid byte becomes U+FFFD
    // instead of an exception.
    return j.dump(-1, ' ', true, json::error_handler_t::replace);
}

std::string nats_line(nats_stats const& n) {
    return fmt::format("publish nats {}: {}; {} published, {} failed, {} dropped, {} "
                       "disconnects, {} reconnects, {} streams, {} stream errors, {} unstored "
                       "by the streams",
                       n.url, n.state, n.published, n.failed, n.dropped, n.disconnects,
                       n.reconnects, n.streams, n.stream_errors, n.stream_unstored);
}

std::string standby_line(standby_stats const& s) {
    std::string out = fmt::format("publish standby {} ({}):", s.group, s.member);
    for (standby_feed_stats const& f : s.feeds) {
        out += fmt::format(" feed {} {} (holder {}; {} takeovers, {} resyncs, last {:.1f} ms "
                           "after sequence {} index {}; {} lease errors)",
                           f.feed, f.role, f.holder.empty() ? "none" : f.holder, f.takeovers,
                           f.resyncs, f.last_takeover_ms, f.resumed_after_sequence,
                           f.resumed_after_index, f.lease_errors);
    }
    return out;
}

std::string summary_text(receiver const& r, std::size_t books) {
    std::string out = fmt::format("md_receiver summary after {:.1f} s (backend {})\n",
                                  r.elapsed_s(), net::to_string(r.runtime().backend()));
    for (std::size_t i = 0; i < r.feed_count(); ++i) {
        feed_view const f = view(r, i);
        feed_counters const& c = f.live;
        out += fmt::format("  feed {} ({}): {} packets, {} messages, {} gaps ({} missing), {} "
                           "duplicates, {} malformed, {} ignored, {} late start, {} queue drops, "
                           "{} kernel drops; book {}{}\n",
                           f.parser.config().name, f.parser.config().protocol_name(), c.packets,
                           c.messages, c.gaps, c.missing, c.duplicates, c.malformed, c.ignored,
                           c.late_start, f.net.dropped, f.net.kernel_drops, to_string(c.book),
                           c.end_of_stream ? ", end of stream" : "");
        f.parser.protocol().summary_text(out, books);
    }
    for (std::size_t i = 0; i < r.subscriber_count(); ++i) {
        subscriber_stats const s = r.subscriber(i);
        out += fmt::format("  subscriber {} ({}): {} events delivered, {} dropped, {} conflated, "
                           "{} loss notices\n",
                           s.name, to_string(s.mode), s.delivered, s.dropped, s.conflated,
                           s.lost_notices);
    }
    if (auto const n = r.nats()) {
        out += "  " + nats_line(*n) + "\n";
    }
    if (auto const sb = r.standby()) {
        out += "  " + standby_line(*sb) + "\n";
    }
    auto const latency = total_latency(r);
    out += fmt::format("  latency (kernel rx -> parsed): p50 {} ns, p99 {} ns, p99.9 {} ns, max "
                       "{} ns\n",
                       latency.percentile(0.50), latency.percentile(0.99),
                       latency.percentile(0.999), latency.max);
    return out;
}

} // namespace signet::receiver
