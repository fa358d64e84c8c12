#pragma once

// moldudp64_report: what a MoldUDP64 publishing run sent, as one line of JSON — md_feed's report
// for --protocol moldudp64 (its last line of stdout and --report-json), read by
// scripts/md-verdict and the tests. The field names, their order and their meaning are an
// external contract; to_json() holds the one list of them (field_names() reads it back).
//
// Top level: the fields every protocol's report starts with (feed_report.hpp: protocol,
// elapsed_s, packets, messages, dropped_packets, dropped_sequences, dropped_one_line_packets,
// duplicated_packets, reordered_packets, heartbeats, end_of_session_packets, side_packets,
// next_sequence), then session, messages_by_type, dropped_messages, dropped_by_type; with a
// BinaryFILE replay_truncated and replay_malformed_records; with a capture "pcap" (file,
// link_type, frames, datagrams, filtered, other, fragments, truncated, error); with a
// re-request service "rerequests" (port, session, requests, answered, messages_resent,
// packets_resent, malformed, wrong_session, zero_sequence, zero_count, rate_limited,
// too_many_requesters, evicted, not_yet_sent, oversized, clamped, partial, send_errors,
// stored_messages, store_evictions, store_restarts); with a GLIMPSE service "glimpse" (port,
// connections, refused_connections, logins, rejected_logins, snapshots_sent, snapshot_messages,
// orders_sent, dropped_clients, applied_messages, sequence_breaks, handoff_lost_bytes,
// next_sequence). Wire bytes (session names, message types, file names) go through
// md::wire_text; the text is ASCII (non-ASCII as \u00XX).
//
// Threading: none (a value type). Costs: built once, after a run.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <signet/md/nasdaq/binary_file_reader.hpp>
#include <signet/md/nasdaq/rerequest_server.hpp>
#include <signet/publisher/nasdaq/glimpse_service.hpp>
#include <signet/publisher/nasdaq/moldudp64_publisher.hpp>
#include <signet/publisher/nasdaq/rerequest_service.hpp>
#include <signet/publisher/pcap_source.hpp>

#include <nlohmann/json.hpp>

namespace signet::publisher::nasdaq {

struct moldudp64_report {
    /// A capture replay (pcap_source).
    struct capture {
        std::string file;
        std::string link_type; ///< pcap_source::link_name()
        pcap_counts counts{};
        std::string error; ///< run_result::error of the replay (a damaged file); empty if none
    };
    /// A request service.
    struct requests {
        std::uint16_t port = 0;
        std::string session; ///< request_service::session()
        md::nasdaq::rerequest_stats stats{};
        rerequest_store_counts store{};
    };

    double elapsed_s = 0;
    std::string session; ///< the session as configured
    moldudp64_counts counts{};
    /// Set for a BinaryFILE run: whether the file ended inside a record.
    std::optional<bool> replay_truncated{};
    /// The BinaryFILE's name, for summary() (not in the JSON).
    std::string replay_file{};
    std::optional<capture> pcap{};
    std::optional<requests> rerequests{};
    /// A GLIMPSE service: its port and counters.
    struct snapshots {
        std::uint16_t port = 0;
        glimpse_counts counts{};
    };
    std::optional<snapshots> glimpse{};

    /// The optional parts, from their sources: a BinaryFILE run (`name` for summary()); a
    /// replay of the capture in `file` (`error`: the replay's run_result::error); a request
    /// service (its counters as of now: final after its stop()).
    void add(md::nasdaq::binary_file_reader const& reader, std::string name);
    void add(pcap_source const& source, std::string file, std::string error);
    void add(rerequest_service const& service);
    void add(glimpse_service const& service);

    [[nodiscard]] nlohmann::ordered_json to_json() const;
    /// One line of ASCII JSON (nlohmann's dump with ensure_ascii; invalid UTF-8 replaced).
    [[nodiscard]] std::string text() const;

    /// The human version, one line each, every line starting with "<program>: ": what was sent,
    /// dropped, duplicated, reordered and heartbeats; the BinaryFILE's zero-length records; the
    /// re-requests received, answered and ignored; the snapshots served.
    [[nodiscard]] std::string summary(std::string_view program) const;

    /// The field names in report order: of the top level (""), "pcap", "rerequests" or "glimpse";
    /// the optional ones included. Throws std::out_of_range for another object.
    [[nodiscard]] static std::vector<std::string> field_names(std::string_view object = "");
};

} // namespace signet::publisher::nasdaq
