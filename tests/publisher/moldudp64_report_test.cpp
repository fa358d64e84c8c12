// moldudp64_report: the field list is the contract external tools read (scripts/md-verdict, the
// end to end tests): the fields every protocol's report starts with, then MoldUDP64's own,
// names and order fixed, the optional parts only with their sources, values from the counts,
// wire bytes as text, one line of ASCII.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/publisher/nasdaq/moldudp64_report.hpp>

namespace {

namespace pub = signet::publisher;
namespace md = signet::md;
using json = nlohmann::ordered_json;

std::vector<std::string> keys(json const& j) {
    std::vector<std::string> out;
    for (auto const& [name, value] : j.items()) {
        out.push_back(name);
    }
    return out;
}

std::vector<std::string> const top = {"protocol",
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
                                      "next_sequence",
                                      "session",
                                      "messages_by_type",
                                      "dropped_messages",
                                      "dropped_by_type"};
std::vector<std::string> const replay = {"replay_truncated", "replay_malformed_records"};
std::vector<std::string> const pcap = {"file",  "link_type", "frames",    "datagrams", "filtered",
                                       "other", "fragments", "truncated", "error"};
std::vector<std::string> const rerequests = {"port",
                                             "session",
                                             "requests",
                                             "answered",
                                             "messages_resent",
                                             "packets_resent",
                                             "malformed",
                                             "wrong_session",
                                             "zero_sequence",
                                             "zero_count",
                                             "rate_limited",
                                             "too_many_requesters",
                                             "evicted",
                                             "not_yet_sent",
                                             "oversized",
                                             "clamped",
                                             "partial",
                                             "send_errors",
                                             "stored_messages",
                                             "store_evictions",
                                             "store_restarts"};
std::vector<std::string> const glimpse = {"port",
                                          "connections",
                                          "refused_connections",
                                          "logins",
                                          "rejected_logins",
                                          "snapshots_sent",
                                          "snapshot_messages",
                                          "orders_sent",
                                          "dropped_clients",
                                          "applied_messages",
                                          "sequence_breaks",
                                          "handoff_lost_bytes",
                                          "next_sequence"};

TEST(Report, FieldNamesAndOrderAreTheContract) {
    std::vector<std::string> all = top;
    all.insert(all.end(), replay.begin(), replay.end());
    all.push_back("pcap");
    all.push_back("rerequests");
    all.push_back("glimpse");
    EXPECT_EQ(pub::nasdaq::moldudp64_report::field_names(), all);
    EXPECT_EQ(pub::nasdaq::moldudp64_report::field_names("pcap"), pcap);
    EXPECT_EQ(pub::nasdaq::moldudp64_report::field_names("rerequests"), rerequests);
    EXPECT_EQ(pub::nasdaq::moldudp64_report::field_names("glimpse"), glimpse);
    EXPECT_THROW((void)pub::nasdaq::moldudp64_report::field_names("nothing"), std::out_of_range);
}

TEST(Report, OptionalPartsOnlyWithTheirSources) {
    pub::nasdaq::moldudp64_report r;
    EXPECT_EQ(keys(r.to_json()), top);
    r.replay_truncated = true;
    std::vector<std::string> with_replay = top;
    with_replay.insert(with_replay.end(), replay.begin(), replay.end());
    EXPECT_EQ(keys(r.to_json()), with_replay);
    r.replay_truncated.reset();
    r.rerequests.emplace();
    std::vector<std::string> with_requests = top;
    with_requests.push_back("rerequests");
    EXPECT_EQ(keys(r.to_json()), with_requests);
    r.glimpse.emplace();
    with_requests.push_back("glimpse");
    EXPECT_EQ(keys(r.to_json()), with_requests);
}

TEST(Report, ValuesComeFromTheCounts) {
    pub::nasdaq::moldudp64_report r;
    r.elapsed_s = 1.5;
    r.session = "SIGNET0001";
    pub::nasdaq::moldudp64_counts& c = r.counts;
    c.sent = {.packets = 10, .messages = 80};
    c.sent.by_type['A'] = 70;
    c.sent.by_type['S'] = 9;
    c.sent.by_type[0x80] = 1; // a replayed type byte >= 0x80
    c.dropped = {.packets = 2, .messages = 16};
    c.dropped.by_type['A'] = 16;
    c.dropped_one_line_packets = 3;
    c.duplicated_packets = 4;
    c.reordered_packets = 5;
    c.heartbeats = 6;
    c.end_of_session_packets = 3;
    c.next_sequence = 97;
    c.malformed_records = 2;
    r.replay_truncated = false;
    r.pcap = pub::nasdaq::moldudp64_report::capture{
        "feed\xff.pcap", "EN10MB", {.frames = 12, .datagrams = 10}, "damaged"};
    md::nasdaq::rerequest_stats stats{};
    stats.requests = 7;
    stats.answered = 5;
    stats.rate_limited = 2;
    r.rerequests = pub::nasdaq::moldudp64_report::requests{
        31002, "SIGNET0001", stats, {.stored = 96, .evicted = 1, .restarts = 0, .send_errors = 0}};
    json const j = r.to_json();
    EXPECT_EQ(j["elapsed_s"], 1.5);
    EXPECT_EQ(j["session"], "SIGNET0001");
    EXPECT_EQ(j["packets"], 10);
    EXPECT_EQ(j["messages"], 80);
    EXPECT_EQ(j["dropped_packets"], 2);
    EXPECT_EQ(j["dropped_messages"], 16);
    EXPECT_EQ(j["dropped_by_type"], (json{{"A", 16}}));
    EXPECT_EQ(j["dropped_one_line_packets"], 3);
    EXPECT_EQ(j["duplicated_packets"], 4);
    EXPECT_EQ(j["reordered_packets"], 5);
    EXPECT_EQ(j["heartbeats"], 6);
    EXPECT_EQ(j["end_of_session_packets"], 3);
    EXPECT_EQ(j["next_sequence"], 97);
    EXPECT_EQ(j["replay_truncated"], false);
    EXPECT_EQ(j["replay_malformed_records"], 2);
    EXPECT_EQ(j["pcap"]["link_type"], "EN10MB");
    EXPECT_EQ(j["pcap"]["frames"], 12);
    EXPECT_EQ(j["pcap"]["error"], "damaged");
    EXPECT_EQ(j["rerequests"]["port"], 31002);
    EXPECT_EQ(j["rerequests"]["requests"], 7);
    EXPECT_EQ(j["rerequests"]["rate_limited"], 2);
    EXPECT_EQ(j["rerequests"]["stored_messages"], 96);
    EXPECT_EQ(j["rerequests"]["store_evictions"], 1);

    // One line of ASCII: wire bytes >= 0x80 (a type, a file name) as \u00XX, in type order.
    std::string const text = r.text();
    EXPECT_EQ(text.find('\n'), std::string::npos);
    for (char const ch : text) {
        ASSERT_LT(static_cast<unsigned char>(ch), 0x80) << text;
    }
    EXPECT_NE(text.find(R"("messages_by_type":{"A":70,"S":9,"\u0080":1})"), std::string::npos)
        << text;
    EXPECT_NE(text.find(R"("file":"feed\u00ff.pcap")"), std::string::npos) << text;
    EXPECT_EQ(text.rfind(R"({"protocol":"moldudp64","elapsed_s":1.5,"packets":10,)", 0), 0U)
        << text;
}

TEST(Report, SummaryLinesForStderr) {
    pub::nasdaq::moldudp64_report r;
    r.counts.sent = {.packets = 10, .messages = 80};
    r.counts.dropped = {.packets = 2, .messages = 16};
    r.counts.duplicated_packets = 4;
    r.counts.reordered_packets = 5;
    r.counts.heartbeats = 6;
    EXPECT_EQ(r.summary("md_feed"), "md_feed: sent 10 packets, 80 messages (dropped 2 packets / "
                                    "16 messages, duplicated 4, reordered 5, heartbeats 6)\n");
    r.counts.malformed_records = 3;
    r.counts.first_malformed_record = 7;
    r.replay_file = "day.itch";
    md::nasdaq::rerequest_stats stats{};
    stats.requests = 9;
    stats.answered = 5;
    stats.messages_resent = 40;
    stats.packets_resent = 6;
    r.rerequests = pub::nasdaq::moldudp64_report::requests{1, "S", stats, {}};
    std::string const text = r.summary("md_feed");
    EXPECT_EQ(text.find("md_feed: day.itch: record 7 has length 0 (not a message): skipped"), 0U)
        << text;
    EXPECT_NE(text.find("(3 zero-length record(s) in all)"), std::string::npos) << text;
    EXPECT_NE(text.find("md_feed: re-requests: 9 received, 5 answered (40 messages in 6 "
                        "packets), 4 ignored\n"),
              std::string::npos)
        << text;
}

} // namespace
