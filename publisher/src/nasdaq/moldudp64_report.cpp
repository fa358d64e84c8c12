#include <array>
#include <span>
#include <stdexcept>
#include <utility>

#include <signet/md/wire_text.hpp>
#include <signet/publisher/feed_report.hpp>
#include <signet/publisher/nasdaq/moldudp64_report.hpp>

namespace signet::publisher::nasdaq {

namespace {

using json = nlohmann::ordered_json;

json types_json(std::array<std::uint64_t, 256> const& by_type) {
    json j = json::object();
    for (std::size_t c = 0; c < by_type.size(); ++c) {
        if (by_type[c] != 0) {
            j[md::wire_text(std::string(1, static_cast<char>(c)))] = by_type[c];
        }
    }
    return j;
}

} // namespace

// ---- the field list: the report's contract (names, order, meaning) -----------------------------

nlohmann::ordered_json moldudp64_report::to_json() const {
    // The fields every protocol's report starts with (feed_report.hpp); MoldUDP64 numbers
    // messages, so the sequence numbers the drops took away are the dropped messages.
    json j = feed_report_json("moldudp64", elapsed_s,
                              {.packets = counts.sent.packets,
                               .messages = counts.sent.messages,
                               .dropped_packets = counts.dropped.packets,
                               .dropped_sequences = counts.dropped.messages,
                               .dropped_one_line_packets = counts.dropped_one_line_packets,
                               .duplicated_packets = counts.duplicated_packets,
                               .reordered_packets = counts.reordered_packets,
                               .heartbeats = counts.heartbeats,
                               .end_of_session_packets = counts.end_of_session_packets,
                               .side_packets = 0,
                               .next_sequence = counts.next_sequence});
    j["session"] = md::wire_text(session);
    j["messages_by_type"] = types_json(counts.sent.by_type);
    // Data packets kept off every line by fault injection: their messages, by type.
    j["dropped_messages"] = counts.dropped.messages;
    j["dropped_by_type"] = types_json(counts.dropped.by_type);
    if (replay_truncated) {
        j["replay_truncated"] = *replay_truncated;
        j["replay_malformed_records"] = counts.malformed_records;
    }
    if (pcap) {
        j["pcap"] = {
            {"file", md::wire_text(pcap->file)},   {"link_type", pcap->link_type},
            {"frames", pcap->counts.frames},       {"datagrams", pcap->counts.datagrams},
            {"filtered", pcap->counts.filtered},   {"other", pcap->counts.other},
            {"fragments", pcap->counts.fragments}, {"truncated", pcap->counts.truncated},
            {"error", md::wire_text(pcap->error)},
        };
    }
    if (rerequests) {
        md::nasdaq::rerequest_stats const& r = rerequests->stats;
        rerequest_store_counts const& store = rerequests->store;
        j["rerequests"] = {
            {"port", rerequests->port},
            {"session", md::wire_text(rerequests->session)},
            {"requests", r.requests},
            {"answered", r.answered},
            {"messages_resent", r.messages_resent},
            {"packets_resent", r.packets_resent},
            {"malformed", r.malformed},
            {"wrong_session", r.wrong_session},
            {"zero_sequence", r.zero_sequence},
            {"zero_count", r.zero_count},
            {"rate_limited", r.rate_limited},
            {"too_many_requesters", r.too_many_requesters},
            {"evicted", r.evicted},
            {"not_yet_sent", r.not_yet_sent},
            {"oversized", r.oversized},
            {"clamped", r.clamped},
            {"partial", r.partial},
            {"send_errors", store.send_errors},
            {"stored_messages", store.stored},
            {"store_evictions", store.evicted},
            {"store_restarts", store.restarts},
        };
    }
    if (glimpse) {
        glimpse_counts const& g = glimpse->counts;
        j["glimpse"] = {
            {"port", glimpse->port},
            {"connections", g.connections},
            {"refused_connections", g.refused_connections},
            {"logins", g.logins},
            {"rejected_logins", g.rejected_logins},
            {"snapshots_sent", g.snapshots_sent},
            {"snapshot_messages", g.snapshot_messages},
            {"orders_sent", g.orders_sent},
            {"dropped_clients", g.dropped_clients},
            {"applied_messages", g.applied_messages},
            {"sequence_breaks", g.sequence_breaks},
            {"handoff_lost_bytes", g.handoff_lost_bytes},
            {"next_sequence", g.next_sequence},
        };
    }
    return j;
}

void moldudp64_report::add(md::nasdaq::binary_file_reader const& reader, std::string name) {
    replay_truncated = reader.truncated();
    replay_file = std::move(name);
}

void moldudp64_report::add(pcap_source const& source, std::string file, std::string error) {
    pcap = capture{std::move(file), source.link_name(), source.counts(), std::move(error)};
}

void moldudp64_report::add(rerequest_service const& service) {
    rerequests =
        requests{service.port(), service.session(), service.stats(), service.store_counts()};
}

void moldudp64_report::add(glimpse_service const& service) {
    glimpse = snapshots{service.port(), service.counts()};
}

std::string moldudp64_report::text() const {
    return to_json().dump(-1, ' ', true, json::error_handler_t::replace);
}

std::string moldudp64_report::summary(std::string_view program) const {
    std::string const p(program);
    std::string out;
    auto const n = [](std::uint64_t v) {
        return std::to_string(v);
    };
    if (counts.malformed_records != 0) {
        out += p + ": " + replay_file + ": record " + n(counts.first_malformed_record) +
               " has length 0 (not a message): skipped and counted as replay_malformed_records (" +
               n(counts.malformed_records) + " zero-length record(s) in all); the replay went on\n";
    }
    out += p + ": sent " + n(counts.sent.packets) + " packets, " + n(counts.sent.messages) +
           " messages (dropped " + n(counts.dropped.packets) + " packets / " +
           n(counts.dropped.messages) + " messages, duplicated " + n(counts.duplicated_packets) +
           ", reordered " + n(counts.reordered_packets) + ", heartbeats " + n(counts.heartbeats) +
           ")\n";
    if (rerequests) {
        md::nasdaq::rerequest_stats const& r = rerequests->stats;
        out += p + ": re-requests: " + n(r.requests) + " received, " + n(r.answered) +
               " answered (" + n(r.messages_resent) + " messages in " + n(r.packets_resent) +
               " packets), " + n(r.requests - r.answered) + " ignored\n";
    }
    if (glimpse) {
        glimpse_counts const& g = glimpse->counts;
        out += p + ": GLIMPSE snapshots: " + n(g.snapshots_sent) + " sent (" + n(g.orders_sent) +
               " orders), " + n(g.logins) + " logins, " + n(g.rejected_logins) + " rejected, " +
               n(g.dropped_clients) + " clients dropped\n";
    }
    return out;
}

std::vector<std::string> moldudp64_report::field_names(std::string_view object) {
    // Every optional part present: the names come from to_json(), the one list.
    moldudp64_report full;
    full.replay_truncated = false;
    full.pcap.emplace();
    full.rerequests.emplace();
    full.glimpse.emplace();
    json const j = full.to_json();
    if (!object.empty() && !j.contains(object)) {
        throw std::out_of_range("moldudp64_report: no object \"" + std::string(object) + "\"");
    }
    json const& fields = object.empty() ? j : j[std::string(object)];
    std::vector<std::string> names;
    for (auto const& [name, value] : fields.items()) {
        names.push_back(name);
    }
    return names;
}

} // namespace signet::publisher::nasdaq
