#include <signet/publisher/feed_report.hpp>

namespace signet::publisher {

namespace {

constexpr std::string_view fields[] = {"protocol",
                                       "elapsed_s",
                                       "packets",
                                       "messages",
                                       "dropped_packets",
                                       "dropped_sequences",
                                       "dropped_one_line_packets",
                                       "duplicated_packets",
                                       "reordered_packets",
                                       "heartbeats",
                                       "end_of_session_packets",
                                       "side_packets",
                                       "next_sequence"};

} // namespace

nlohmann::ordered_json feed_report_json(std::string_view protocol, double elapsed_s,
                                        feed_counts const& c) {
    std::uint64_t const counts[] = {c.packets,
                                    c.messages,
                                    c.dropped_packets,
                                    c.dropped_sequences,
                                    c.dropped_one_line_packets,
                                    c.duplicated_packets,
                                    c.reordered_packets,
                                    c.heartbeats,
                                    c.end_of_session_packets,
                                    c.side_packets,
                                    c.next_sequence};
    static_assert(std::size(counts) + 2 == std::size(fields));
    nlohmann::ordered_json j;
    j[std::string(fields[0])] = protocol;
    j[std::string(fields[1])] = elapsed_s;
    for (std::size_t i = 0; i < std::size(counts); ++i) {
        j[std::string(fields[i + 2])] = counts[i];
    }
    return j;
}

std::span<std::string_view const> feed_report_fields() noexcept {
    return fields;
}

} // namespace signet::publisher
