#include <array>
#include <span>
#include <utility>

#include <signet/md/wire_text.hpp>
#include <signet/publisher/report.hpp>

namespace signet::publisher {

namespace {

using json = nlohmann::ordered_json;

/// One field of a report object: its name, its value, and when it is there (always if null).
template <typename From>
struct field {
    std::string_view name;
    json (*value)(From const&);
    bool (*present)(From const&) = nullptr;
};

json types_json(std::array<std::uint64_t, 256> const& by_type) {
    json j = json::object();
    for (std::size_t c = 0; c < by_type.size(); ++c) {
        if (by_type[c] != 0) {
            j[md::wire_text(std::string(1, static_cast<char>(c)))] = by_type[c];
        }
    }
    return j;
}

template <typename From, std::size_t N>
json object_of(field<From> const (&fields)[N], From const& from) {
    json j = json::object();
    for (field<From> const& f : fields) {
        if (f.present == nullptr || f.present(from)) {
            j[std::string(f.name)] = f.value(from);
        }
    }
    return j;
}

template <typename From, std::size_t N>
std::vector<std::string_view> names_of(field<From> const (&fields)[N]) {
    std::vector<std::string_view> names;
    for (field<From> const& f : fields) {
        names.push_back(f.name);
    }
    return names;
}

// ---- the field lists: the report's contract (names, order, meaning) --------------------------

using capture = report::capture;
using requests = report::requests;

constexpr field<capture> pcap_fields[] = {
    {"file",
     [](capture const& c) -> json {
         return md::wire_text(c.file);
     }},
    {"link_type",
     [](capture const& c) -> json {
         return c.link_type;
     }},
    {"frames",
     [](capture const& c) -> json {
         return c.counts.frames;
     }},
    {"datagrams",
     [](capture const& c) -> json {
         return c.counts.datagrams;
     }},
    {"filtered",
     [](capture const& c) -> json {
         return c.counts.filtered;
     }},
    {"other",
     [](capture const& c) -> json {
         return c.counts.other;
     }},
    {"fragments",
     [](capture const& c) -> json {
         return c.counts.fragments;
     }},
    {"truncated",
     [](capture const& c) -> json {
         return c.counts.truncated;
     }},
    {"error",
     [](capture const& c) -> json {
         return md::wire_text(c.error);
     }},
};

constexpr field<requests> rerequest_fields[] = {
    {"port",
     [](requests const& q) -> json {
         return q.port;
     }},
    {"session",
     [](requests const& q) -> json {
         return md::wire_text(q.session);
     }},
    {"requests",
     [](requests const& q) -> json {
         return q.stats.requests;
     }},
    {"answered",
     [](requests const& q) -> json {
         return q.stats.answered;
     }},
    {"messages_resent",
     [](requests const& q) -> json {
         return q.stats.messages_resent;
     }},
    {"packets_resent",
     [](requests const& q) -> json {
         return q.stats.packets_resent;
     }},
    {"malformed",
     [](requests const& q) -> json {
         return q.stats.malformed;
     }},
    {"wrong_session",
     [](requests const& q) -> json {
         return q.stats.wrong_session;
     }},
    {"zero_sequence",
     [](requests const& q) -> json {
         return q.stats.zero_sequence;
     }},
    {"zero_count",
     [](requests const& q) -> json {
         return q.stats.zero_count;
     }},
    {"rate_limited",
     [](requests const& q) -> json {
         return q.stats.rate_limited;
     }},
    {"too_many_requesters",
     [](requests const& q) -> json {
         return q.stats.too_many_requesters;
     }},
    {"evicted",
     [](requests const& q) -> json {
         return q.stats.evicted;
     }},
    {"not_yet_sent",
     [](requests const& q) -> json {
         return q.stats.not_yet_sent;
     }},
    {"oversized",
     [](requests const& q) -> json {
         return q.stats.oversized;
     }},
    {"clamped",
     [](requests const& q) -> json {
         return q.stats.clamped;
     }},
    {"partial",
     [](requests const& q) -> json {
         return q.stats.partial;
     }},
    {"send_errors",
     [](requests const& q) -> json {
         return q.store.send_errors;
     }},
    {"stored_messages",
     [](requests const& q) -> json {
         return q.store.stored;
     }},
    {"store_evictions",
     [](requests const& q) -> json {
         return q.store.evicted;
     }},
    {"store_restarts",
     [](requests const& q) -> json {
         return q.store.restarts;
     }},
};

bool has_replay(report const& r) {
    return r.replay_truncated.has_value();
}

constexpr field<report> top_fields[] = {
    {"elapsed_s",
     [](report const& r) -> json {
         return r.elapsed_s;
     }},
    {"session",
     [](report const& r) -> json {
         return md::wire_text(r.session);
     }},
    // Data packets that left (on a line; a duplicate counts once) and their messages.
    {"packets",
     [](report const& r) -> json {
         return r.counts.sent.packets;
     }},
    {"messages",
     [](report const& r) -> json {
         return r.counts.sent.messages;
     }},
    {"messages_by_type",
     [](report const& r) -> json {
         return types_json(r.counts.sent.by_type);
     }},
    // Data packets kept off every line by fault injection.
    {"dropped_packets",
     [](report const& r) -> json {
         return r.counts.dropped.packets;
     }},
    {"dropped_messages",
     [](report const& r) -> json {
         return r.counts.dropped.messages;
     }},
    {"dropped_by_type",
     [](report const& r) -> json {
         return types_json(r.counts.dropped.by_type);
     }},
    {"dropped_one_line_packets",
     [](report const& r) -> json {
         return r.counts.dropped_one_line_packets;
     }},
    {"duplicated_packets",
     [](report const& r) -> json {
         return r.counts.duplicated_packets;
     }},
    {"reordered_packets",
     [](report const& r) -> json {
         return r.counts.reordered_packets;
     }},
    {"heartbeats",
     [](report const& r) -> json {
         return r.counts.heartbeats;
     }},
    {"end_of_session_packets",
     [](report const& r) -> json {
         return r.counts.end_of_session_packets;
     }},
    {"next_sequence",
     [](report const& r) -> json {
         return r.counts.next_sequence;
     }},
    {"replay_truncated", [](report const& r) -> json { return *r.replay_truncated; }, has_replay},
    {"replay_malformed_records", [](report const& r) -> json { return r.counts.malformed_records; },
     has_replay},
    {"pcap", [](report const& r) -> json { return object_of(pcap_fields, *r.pcap); },
     [](report const& r) {
         return r.pcap.has_value();
     }},
    {"rerequests",
     [](report const& r) -> json { return object_of(rerequest_fields, *r.rerequests); },
     [](report const& r) {
         return r.rerequests.has_value();
     }},
};

} // namespace

void report::add(md::binary_file_reader const& reader, std::string name) {
    replay_truncated = reader.truncated();
    replay_file = std::move(name);
}

void report::add(pcap_source const& source, std::string file, std::string error) {
    pcap = capture{std::move(file), source.link_name(), source.counts(), std::move(error)};
}

void report::add(request_service const& service) {
    rerequests =
        requests{service.port(), service.session(), service.stats(), service.store_counts()};
}

nlohmann::ordered_json report::to_json() const {
    return object_of(top_fields, *this);
}

std::string report::text() const {
    return to_json().dump(-1, ' ', true, json::error_handler_t::replace);
}

std::string report::summary(std::string_view program) const {
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
        md::rerequest_stats const& r = rerequests->stats;
        out += p + ": re-requests: " + n(r.requests) + " received, " + n(r.answered) +
               " answered (" + n(r.messages_resent) + " messages in " + n(r.packets_resent) +
               " packets), " + n(r.requests - r.answered) + " ignored\n";
    }
    return out;
}

std::vector<std::string_view> report::field_names(std::string_view object) {
    if (object == "pcap") {
        return names_of(pcap_fields);
    }
    if (object == "rerequests") {
        return names_of(rerequest_fields);
    }
    return object.empty() ? names_of(top_fields) : std::vector<std::string_view>{};
}

} // namespace signet::publisher
