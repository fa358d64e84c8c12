#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <signet/receiver/cme/mdp3_protocol.hpp>
#include <signet/receiver/config.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>

namespace {

using signet::receiver::config_error;
using signet::receiver::feed_config;
using signet::receiver::line_spec;
using signet::receiver::parse_receiver_config;
using signet::receiver::nasdaq::moldudp64_settings;

/// The lines the feed's protocol declares (the sockets the receiver opens, in order).
std::vector<line_spec> lines_of(feed_config const& feed) {
    return feed.protocol->make(feed)->lines();
}

/// A moldudp64 feed's own keys.
moldudp64_settings const& mold(feed_config const& feed) {
    return dynamic_cast<moldudp64_settings const&>(*feed.protocol);
}

std::string error_of(std::string const& text) {
    try {
        parse_receiver_config(text, "test.toml");
    } catch (config_error const& e) {
        return e.what();
    }
    return "no error";
}

TEST(MdConfig, ParsesEveryKey) {
    auto c = parse_receiver_config(R"(
[runtime]
backend = "epoll"
workers = 3
cpus = [0]
idle = "spin"
poller = "thread"
[stats]
interval_s = 0.25
silent_warning_s = 2.5
[book]
max_orders = 4096
[[feed]]
name = "a"
protocol = "moldudp64"
parser = "itch50"
bind = "*:30001"
bind_b = "*:30002"
group = "239.1.1.1"
group_b = "239.1.1.2"
source = "10.0.0.1"
interface = "lo"
queue_capacity = 128
on_full = "drop"
rcvbuf = 1048576
timestamps = "hardware"
busy_poll_us = 50
reuse_port = true
buffer_size = 9000
[[feed]]
name = "b"
protocol = "raw"
parser = "count"
bind = "127.0.0.1:30003"
)",
                                   "test.toml");
    EXPECT_EQ(c.backend, signet::net::backend_kind::epoll);
    EXPECT_EQ(c.workers, 3U);
    EXPECT_EQ(c.cpus, (std::vector<int>{0})); // ids must exist on the test machine
    EXPECT_DOUBLE_EQ(c.silent_warning_s, 2.5);
    EXPECT_EQ(c.max_orders, 4096U);
    EXPECT_EQ(c.idle, signet::idle_strategy::spin);
    EXPECT_EQ(c.poller, signet::net::poller_mode::thread);
    EXPECT_DOUBLE_EQ(c.stats_interval_s, 0.25);
    ASSERT_EQ(c.feeds.size(), 2U);
    auto const& a = c.feeds[0];
    EXPECT_EQ(a.name, "a");
    EXPECT_EQ(a.bind.port(), 30001);
    ASSERT_TRUE(a.bind_b.has_value());
    EXPECT_EQ(a.bind_b->port(), 30002);
    EXPECT_EQ(a.group->to_string(), "239.1.1.1:0");
    EXPECT_EQ(a.group_b->to_string(), "239.1.1.2:0");
    EXPECT_EQ(a.source->to_string(), "10.0.0.1:0");
    EXPECT_EQ(a.interface, "lo");
    EXPECT_EQ(a.queue_capacity, 128U);
    EXPECT_EQ(a.on_full, signet::net::full_policy::drop);
    EXPECT_EQ(a.rcvbuf, 1048576U);
    EXPECT_EQ(a.timestamps, signet::net::timestamping::hardware);
    EXPECT_EQ(a.busy_poll_us, 50U);
    EXPECT_TRUE(a.reuse_port);
    EXPECT_EQ(a.buffer_size, 9000U);
    EXPECT_EQ(a.max_orders, 4096U);
    EXPECT_EQ(c.feeds[1].protocol_name(), "raw");
    EXPECT_EQ(mold(a).parser, signet::receiver::nasdaq::moldudp64_parser::itch50);
    auto const lines = lines_of(a);
    ASSERT_EQ(lines.size(), 2U);
    EXPECT_EQ(lines[1].socket.group->to_string(), "239.1.1.2:0");
}

TEST(MdConfig, DefaultsApply) {
    auto c = parse_receiver_config("[[feed]]\nname = \"a\"\nbind = \"127.0.0.1:1\"\n", "t");
    EXPECT_EQ(c.backend, signet::net::backend_kind::automatic);
    EXPECT_EQ(c.workers, 1U);
    EXPECT_EQ(c.feeds[0].queue_capacity, 4096U);
    EXPECT_EQ(c.feeds[0].on_full, signet::net::full_policy::backpressure);
    EXPECT_EQ(c.feeds[0].timestamps, signet::net::timestamping::software);
    EXPECT_EQ(c.feeds[0].busy_poll_us, 0U);
    EXPECT_FALSE(c.feeds[0].reuse_port);
    EXPECT_EQ(c.feeds[0].buffer_size, 1500U);
}

TEST(MdConfig, ErrorsNameTheKeyAndLine) {
    EXPECT_EQ(error_of("[runtime]\nworkerz = 1\n[[feed]]\nname = \"a\"\nbind = \"*:1\"\n")
                  .rfind("test.toml:2: key 'workerz': unknown key in [runtime]", 0),
              0U);
    EXPECT_NE(
        error_of("[runtime]\nidle = \"nap\"\n[[feed]]\nname=\"a\"\nbind=\"*:1\"\n")
            .find("test.toml:2: key 'idle': expected one of \"spin\", \"backoff\", \"block\""),
        std::string::npos);
    EXPECT_NE(
        error_of("[[feed]]\nname = \"a\"\nbind = \"*:99999\"\n").find("test.toml:3: key 'bind'"),
        std::string::npos);
    EXPECT_NE(error_of("[[feed]]\nname = \"a\"\nbind = \"*:1\"\nqueue_capacity = 0\n")
                  .find("key 'queue_capacity'"),
              std::string::npos);
    EXPECT_NE(
        error_of("[[feed]]\nname = \"a\"\nbind = \"*:1\"\n[[feed]]\nname = \"a\"\nbind = \"*:2\"\n")
            .find("duplicate feed name"),
        std::string::npos);
    EXPECT_NE(error_of("[[feed]]\nname = \"a\"\nprotocol = \"raw\"\nparser = \"itch50\"\nbind = "
                       "\"*:1\"\n")
                  .find("test.toml:4: key 'parser': expected one of \"count\""),
              std::string::npos);
    EXPECT_NE(error_of("[[feed]]\nname = \"a\"\nprotocol = \"fix\"\nbind = \"*:1\"\n")
                  .find("test.toml:3: key 'protocol': expected one of \"moldudp64\", \"mdp3\", "
                        "\"pitch\", \"raw\""),
              std::string::npos);
    EXPECT_NE(error_of("[[feed]]\nname = \"a\"\nprotocol = \"pitch\"\nunits = [1, 300]\nbind = "
                       "\"*:1\"\n")
                  .find("key 'units': each unit is a number from 1 to 255"),
              std::string::npos);
    EXPECT_NE(error_of("[[feed]]\nname = \"a\"\nprotocol = \"pitch\"\nunits = [2, 2]\nbind = "
                       "\"*:1\"\n")
                  .find("key 'units': unit 2 is listed twice"),
              std::string::npos);
    EXPECT_NE(error_of("[stats]\ninterval_s = -1\n[[feed]]\nname = \"a\"\nbind = \"*:1\"\n")
                  .find("test.toml:2: key 'interval_s'"),
              std::string::npos);
    EXPECT_NE(error_of("[runtime]\ncpus = [\"x\"]\n[[feed]]\nname = \"a\"\nbind = \"*:1\"\n")
                  .find("key 'cpus'"),
              std::string::npos);
    EXPECT_NE(error_of("[[feed]]\nname = \"a\"\nbind = \"*:1\"\ngroup_b = \"239.0.0.1\"\n")
                  .find("needs bind_b"),
              std::string::npos);
    EXPECT_NE(error_of("[[feed]\n").find("TOML syntax"), std::string::npos);
    EXPECT_NE(error_of("").find("no [[feed]]"), std::string::npos);
}

std::string const feed_text = "[[feed]]\nname = \"a\"\nbind = \"*:1\"\n";

TEST(MdConfig, StatsIntervalIsBounded) {
    // Tiny intervals flooded the log; huge ones overflowed the clock. Both are errors now.
    for (char const* bad : {"1e-6", "0.009", "1e10", "86401", "1e30", "0", "-1", "inf", "nan"}) {
        std::string const error =
            error_of("[stats]\ninterval_s = " + std::string(bad) + "\n" + feed_text);
        EXPECT_EQ(error.rfind("test.toml:2: key 'interval_s': expected a number of seconds "
                              "from 0.01 to 86400",
                              0),
                  0U)
            << bad << ": " << error;
    }
    for (double good : {0.01, 1.0, 86400.0}) {
        auto const c = parse_receiver_config(
            "[stats]\ninterval_s = " + std::to_string(good) + "\n" + feed_text, "test.toml");
        EXPECT_DOUBLE_EQ(c.stats_interval_s, good);
    }
    EXPECT_DOUBLE_EQ(
        parse_receiver_config("[stats]\ninterval_s = 2\n" + feed_text, "t").stats_interval_s, 2.0)
        << "an integer is a number of seconds too";
}

TEST(MdConfig, SilentWarningIsBoundedOrOff) {
    EXPECT_DOUBLE_EQ(parse_receiver_config(feed_text, "t").silent_warning_s, 5.0);
    EXPECT_DOUBLE_EQ(
        parse_receiver_config("[stats]\nsilent_warning_s = 0\n" + feed_text, "t").silent_warning_s,
        0.0);
    EXPECT_DOUBLE_EQ(
        parse_receiver_config("[stats]\nsilent_warning_s = 30\n" + feed_text, "t").silent_warning_s,
        30.0);
    for (char const* bad : {"-1", "0.001", "1e10"}) {
        EXPECT_NE(error_of("[stats]\nsilent_warning_s = " + std::string(bad) + "\n" + feed_text)
                      .find("test.toml:2: key 'silent_warning_s'"),
                  std::string::npos)
            << bad;
    }
}

TEST(MdConfig, BookMaxOrdersIsBoundedAndReachesEveryFeed) {
    auto const defaults = parse_receiver_config(feed_text, "t");
    EXPECT_EQ(defaults.max_orders, 1048576U);
    EXPECT_EQ(defaults.feeds[0].max_orders, 1048576U);
    auto const c = parse_receiver_config(
        feed_text + "[[feed]]\nname = \"b\"\nbind = \"*:2\"\n[book]\nmax_orders = 1000\n", "t");
    EXPECT_EQ(c.max_orders, 1000U);
    ASSERT_EQ(c.feeds.size(), 2U);
    EXPECT_EQ(c.feeds[0].max_orders, 1000U);
    EXPECT_EQ(c.feeds[1].max_orders, 1000U);
    for (char const* bad : {"0", "-5", "134217729", "\"many\""}) {
        EXPECT_NE(error_of("[book]\nmax_orders = " + std::string(bad) + "\n" + feed_text)
                      .find("test.toml:2: key 'max_orders': expected an integer from 1 to "
                            "134217728"),
                  std::string::npos)
            << bad;
    }
    EXPECT_NE(error_of("[book]\nmax_order = 5\n" + feed_text).find("key 'max_order'"),
              std::string::npos);
}

TEST(MdConfig, PublishShmNamesTheSegmentAndItsSizes) {
    EXPECT_EQ(parse_receiver_config(feed_text, "t").shm, "");
    auto const c = parse_receiver_config(
        "[publish]\nshm = \"signet-md\"\nshm_instruments = 100\nshm_events = 1024\n" + feed_text,
        "t");
    EXPECT_EQ(c.shm, "signet-md");
    EXPECT_EQ(c.shm_instruments, 100U);
    EXPECT_EQ(c.shm_events, 1024U);
    for (char const* bad : {"\"\"", "\"a/b\"", "\"../x\"", "5"}) {
        EXPECT_NE(error_of("[publish]\nshm = " + std::string(bad) + "\n" + feed_text)
                      .find("test.toml:2: key 'shm'"),
                  std::string::npos)
            << bad;
    }
    EXPECT_NE(error_of("[publish]\nshm_events = 1000\n" + feed_text)
                  .find("key 'shm_events': expected a power of two"),
              std::string::npos);
    EXPECT_NE(error_of("[publish]\nnats = \"x\"\n" + feed_text).find("key 'nats'"),
              std::string::npos);
}

TEST(MdConfig, PublishNatsKeysReachTheBridge) {
    EXPECT_EQ(parse_receiver_config(feed_text, "t").nats.url, "");
    auto const c = parse_receiver_config(
        "[publish]\nnats = \"nats://10.0.0.1:4222,nats://10.0.0.2:4222\"\nnats_user = \"u\"\n"
        "nats_password = \"p\"\nnats_tls_ca = \"ca.pem\"\nnats_format = \"json\"\n"
        "nats_subjects = \"bbo,trade\"\nnats_stream = false\nnats_replicas = 3\n"
        "nats_conflate = true\nnats_queue = 4096\n" +
            feed_text,
        "t");
    EXPECT_EQ(c.nats.url, "nats://10.0.0.1:4222,nats://10.0.0.2:4222");
    EXPECT_EQ(c.nats.user, "u");
    EXPECT_EQ(c.nats.password, "p");
    EXPECT_EQ(c.nats.tls_ca, "ca.pem");
    EXPECT_TRUE(c.nats.json);
    EXPECT_EQ(c.nats.kinds, (std::vector<std::string>{"bbo", "trade"}));
    EXPECT_FALSE(c.nats.stream);
    EXPECT_EQ(c.nats.replicas, 3U);
    EXPECT_TRUE(c.nats.conflate);
    EXPECT_EQ(c.nats.queue, 4096U);
    for (auto const& [text, key] : std::vector<std::pair<std::string, std::string>>{
             {"nats = \"localhost:4222\"", "key 'nats': expected a server URL"},
             {"nats = \"nats://h:1\"\nnats_subjects = \"bbo,quotes\"", "got 'quotes'"},
             {"nats = \"nats://h:1\"\nnats_format = \"xml\"", "key 'nats_format'"},
             {"nats = \"nats://h:1\"\nnats_tls_cert = \"c.pem\"",
              "nats_tls_cert and nats_tls_key go together"},
             {"nats = \"nats://h:1\"\nnats_replicas = 7", "key 'nats_replicas'"},
             {"nats_user = \"u\"", "the nats_* options need the server"}}) {
        EXPECT_NE(error_of("[publish]\n" + text + "\n" + feed_text).find(key), std::string::npos)
            << text << ": " << error_of("[publish]\n" + text + "\n" + feed_text);
    }
}

// The per-feed socket keys: each reaches every line's socket options (A and B).
std::string const ab_feed_text = "[[feed]]\nname = \"a\"\nbind = \"*:1\"\nbind_b = \"*:2\"\n";

TEST(MdConfig, TimestampsSetEveryLine) {
    using signet::net::timestamping;
    auto const defaults = parse_receiver_config(ab_feed_text, "t");
    EXPECT_EQ(defaults.feeds[0].timestamps, timestamping::software);
    for (auto const& line : lines_of(defaults.feeds[0])) {
        EXPECT_EQ(line.socket.timestamps, timestamping::software);
    }
    for (auto [text, mode] :
         {std::pair{"off", timestamping::off}, std::pair{"software", timestamping::software},
          std::pair{"hardware", timestamping::hardware}}) {
        auto const c = parse_receiver_config(
            ab_feed_text + "timestamps = \"" + std::string(text) + "\"\n", "t");
        EXPECT_EQ(c.feeds[0].timestamps, mode) << text;
        auto const lines = lines_of(c.feeds[0]);
        ASSERT_EQ(lines.size(), 2U);
        EXPECT_EQ(lines[0].socket.timestamps, mode) << text;
        EXPECT_EQ(lines[1].socket.timestamps, mode) << text;
    }
    for (char const* bad : {"\"nic\"", "\"Hardware\"", "true", "1"}) {
        std::string const error = error_of(feed_text + "timestamps = " + std::string(bad) + "\n");
        EXPECT_EQ(error.rfind("test.toml:4: key 'timestamps': expected one of \"off\", "
                              "\"software\", \"hardware\"",
                              0),
                  0U)
            << bad << ": " << error;
    }
}

TEST(MdConfig, BusyPollIsBoundedAndSetsEveryLine) {
    auto const defaults = parse_receiver_config(ab_feed_text, "t");
    EXPECT_EQ(defaults.feeds[0].busy_poll_us, 0U);
    EXPECT_EQ(lines_of(defaults.feeds[0])[0].socket.busy_poll_us, 0U);
    for (unsigned good : {0U, 50U, 1'000'000U}) {
        auto const c = parse_receiver_config(
            ab_feed_text + "busy_poll_us = " + std::to_string(good) + "\n", "t");
        EXPECT_EQ(c.feeds[0].busy_poll_us, good);
        auto const lines = lines_of(c.feeds[0]);
        ASSERT_EQ(lines.size(), 2U);
        EXPECT_EQ(lines[0].socket.busy_poll_us, good);
        EXPECT_EQ(lines[1].socket.busy_poll_us, good);
    }
    for (char const* bad : {"-1", "1000001", "4294967346", "1.5", "\"50\""}) {
        std::string const error = error_of(feed_text + "busy_poll_us = " + std::string(bad) + "\n");
        EXPECT_EQ(error.rfind(
                      "test.toml:4: key 'busy_poll_us': expected an integer from 0 to 1000000", 0),
                  0U)
            << bad << ": " << error;
    }
}

TEST(MdConfig, SessionCanBePinnedAndTheJumpBoundSet) {
    auto const defaults = parse_receiver_config(feed_text, "t");
    EXPECT_EQ(mold(defaults.feeds[0]).session, "");
    EXPECT_EQ(defaults.feeds[0].max_sequence_jump, 100'000U);
    auto const c = parse_receiver_config(
        feed_text + "session = \"SESSION001\"\nmax_sequence_jump = 5000\n", "t");
    EXPECT_EQ(mold(c.feeds[0]).session, "SESSION001");
    EXPECT_EQ(c.feeds[0].max_sequence_jump, 5000U);
    for (char const* bad : {"\"ELEVENCHARS\"", "\"tab\\there\"", "42"}) {
        std::string const error = error_of(feed_text + "session = " + std::string(bad) + "\n");
        EXPECT_EQ(error.rfind("test.toml:4: key 'session': expected a", 0), 0U)
            << bad << ": " << error;
    }
    for (char const* bad : {"0", "-5", "1.5", "1099511627777"}) {
        std::string const error =
            error_of(feed_text + "max_sequence_jump = " + std::string(bad) + "\n");
        EXPECT_EQ(error.rfind("test.toml:4: key 'max_sequence_jump': expected an integer", 0), 0U)
            << bad << ": " << error;
    }
    std::string const raw =
        error_of(feed_text + "protocol = \"raw\"\nparser = \"count\"\nsession = \"S\"\n");
    EXPECT_NE(raw.find("key 'session': applies to protocol \"moldudp64\", not \"raw\""),
              std::string::npos)
        << raw;
    std::string const raw_jump =
        error_of(feed_text + "protocol = \"raw\"\nmax_sequence_jump = 5\n");
    EXPECT_NE(raw_jump.find("key 'max_sequence_jump': does not apply to protocol \"raw\""),
              std::string::npos)
        << raw_jump;
}

TEST(MdConfig, ReRequestKeysAddARequestLine) {
    auto const defaults = parse_receiver_config(feed_text, "t");
    EXPECT_FALSE(mold(defaults.feeds[0]).rerequest.has_value());
    EXPECT_EQ(lines_of(defaults.feeds[0]).size(), 1U);
    auto const c = parse_receiver_config(
        feed_text + "rerequest = \"127.0.0.1:9000\"\nrerequest_timeout_ms = 20\n"
                    "rerequest_max_messages = 500\nrerequest_max_in_flight = 8\n"
                    "rerequest_tries = 5\nrecovery_buffer = 1000\n",
        "t");
    auto const& f = c.feeds[0];
    auto const& m = mold(f);
    ASSERT_TRUE(m.rerequest.has_value());
    EXPECT_EQ(m.rerequest->to_string(), "127.0.0.1:9000");
    EXPECT_EQ(m.rerequest_timeout_ms, 20U);
    EXPECT_EQ(m.rerequest_max_messages, 500U);
    EXPECT_EQ(m.rerequest_max_in_flight, 8U);
    EXPECT_EQ(m.rerequest_tries, 5U);
    EXPECT_EQ(f.recovery_buffer, 1000U);
    auto const lines = lines_of(f);
    ASSERT_EQ(lines.size(), 2U); // line A and the request line (any address, ephemeral port)
    EXPECT_EQ(lines[1].name, "request");
    EXPECT_EQ(lines[1].role, signet::receiver::line_role::answers);
    EXPECT_TRUE(lines[1].socket.bind.is_any());
    EXPECT_EQ(lines[1].socket.bind.port(), 0);
    for (auto const& [key, bad] :
         std::vector<std::pair<std::string, std::string>>{{"rerequest", "\"*:9000\""},
                                                          {"rerequest", "\"239.1.1.1:9000\""},
                                                          {"rerequest", "\"127.0.0.1:0\""},
                                                          {"rerequest_timeout_ms", "0"},
                                                          {"rerequest_max_messages", "65535"},
                                                          {"rerequest_max_in_flight", "17"},
                                                          {"rerequest_tries", "0"},
                                                          {"recovery_buffer", "8"}}) {
        std::string const error = error_of(feed_text + key + " = " + bad + "\n");
        EXPECT_EQ(error.rfind("test.toml:4: key '" + key + "': expected", 0), 0U)
            << key << " = " << bad << ": " << error;
    }
}

TEST(MdConfig, GlimpseKeysSetTheLateJoinPath) {
    auto const defaults = parse_receiver_config(feed_text, "t");
    EXPECT_FALSE(mold(defaults.feeds[0]).glimpse.has_value());
    auto const c = parse_receiver_config(
        feed_text + "glimpse = \"127.0.0.1:9100\"\nglimpse_username = \"alice\"\n"
                    "glimpse_password = \"secret\"\nglimpse_buffer_messages = 4096\n",
        "t");
    auto const& f = mold(c.feeds[0]);
    ASSERT_TRUE(f.glimpse.has_value());
    EXPECT_EQ(f.glimpse->to_string(), "127.0.0.1:9100");
    EXPECT_EQ(f.glimpse_username, "alice");
    EXPECT_EQ(f.glimpse_password, "secret");
    EXPECT_EQ(f.glimpse_buffer_messages, 4096U);
    EXPECT_EQ(lines_of(c.feeds[0]).size(), 1U); // TCP: no UDP line of its own
    std::string const with_server = "glimpse = \"127.0.0.1:9100\"\n";
    for (auto const& [text, key] : std::vector<std::pair<std::string, std::string>>{
             {"glimpse = \"*:9100\"\n", "glimpse"},
             {"glimpse = \"239.1.1.1:9100\"\n", "glimpse"},
             {"glimpse = \"127.0.0.1:0\"\n", "glimpse"},
             {with_server + "glimpse_username = \"toolong\"\n", "glimpse_username"},
             {with_server + "glimpse_username = \"a b\"\n", "glimpse_username"},
             {with_server + "glimpse_password = \"elevenchars\"\n", "glimpse_password"},
             {with_server + "glimpse_buffer_messages = 10\n", "glimpse_buffer_messages"}}) {
        std::string const error = error_of(feed_text + text);
        EXPECT_NE(error.find("key '" + key + "': expected"), std::string::npos)
            << text << ": " << error;
    }
    EXPECT_NE(error_of(feed_text + "glimpse_username = \"alice\"\n")
                  .find("key 'glimpse_username': needs glimpse"),
              std::string::npos);
    EXPECT_NE(error_of(feed_text + "parser = \"count\"\n" + with_server)
                  .find("key 'glimpse': needs parser \"itch50\""),
              std::string::npos);
}

TEST(MdConfig, RenamedKeysFailWithOneLineNamingTheNewKey) {
    // "snapshot" meant a GLIMPSE server in one protocol and a snapshot loop in another.
    for (auto const& [old_key, new_key] : std::vector<std::pair<std::string, std::string>>{
             {"snapshot = \"127.0.0.1:9100\"", "glimpse"},
             {"snapshot_username = \"alice\"", "glimpse_username"},
             {"snapshot_password = \"secret\"", "glimpse_password"},
             {"snapshot_buffer_messages = 4096", "glimpse_buffer_messages"}}) {
        std::string const error = error_of(feed_text + old_key + "\n");
        EXPECT_EQ(error.rfind("test.toml:4: key '" + old_key.substr(0, old_key.find(' ')) +
                                  "': renamed to '" + new_key + "'",
                              0),
                  0U)
            << error;
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    }
}

TEST(MdConfig, Mdp3FeedsHaveSnapshotAndDefinitionLines) {
    auto const c = parse_receiver_config(R"([[feed]]
name = "cme"
protocol = "mdp3"
bind = "127.0.0.1:1"
bind_b = "127.0.0.1:2"
snapshot_bind = "127.0.0.1:3"
definitions_bind = "127.0.0.1:4"
)",
                                         "t");
    auto const& f = c.feeds[0];
    EXPECT_EQ(f.protocol_name(), "mdp3");
    auto const lines = lines_of(f);
    ASSERT_EQ(lines.size(), 4U);
    EXPECT_EQ(lines[2].socket.bind.to_string(), "127.0.0.1:3");
    EXPECT_EQ(lines[3].socket.bind.to_string(), "127.0.0.1:4");
    EXPECT_EQ(lines[1].name, "b");
    EXPECT_EQ(lines[2].name, "snapshot");
    EXPECT_EQ(lines[3].name, "definitions");
    EXPECT_EQ(lines[2].role, signet::receiver::line_role::side);
    std::string const head = "[[feed]]\nname = \"cme\"\nbind = \"127.0.0.1:1\"\n";
    EXPECT_NE(error_of(head + "protocol = \"mdp3\"\nsnapshot_bind = \"127.0.0.1:3\"\n")
                  .find("key 'definitions_bind': mdp3 feed 'cme' needs"),
              std::string::npos);
    EXPECT_NE(error_of(head + "snapshot_bind = \"127.0.0.1:3\"\n")
                  .find("key 'snapshot_bind': applies to protocol \"mdp3\", not \"moldudp64\""),
              std::string::npos);
    EXPECT_NE(error_of(head +
                       "protocol = \"mdp3\"\nparser = \"itch50\"\n"
                       "snapshot_bind = \"127.0.0.1:3\"\ndefinitions_bind = \"127.0.0.1:4\"\n")
                  .find("key 'parser'"),
              std::string::npos);
}

TEST(MdConfig, Mdp3SideLinesJoinTheirMulticastGroups) {
    std::string const feed = R"([[feed]]
name = "cme"
protocol = "mdp3"
bind = "*:1"
group = "239.1.2.1"
interface = "lo"
snapshot_bind = "*:3"
definitions_bind = "*:4"
)";
    auto const c = parse_receiver_config(
        feed + "snapshot_group = \"239.1.2.3\"\n" + "definitions_group = \"239.1.2.4\"\n", "t");
    auto const lines = lines_of(c.feeds[0]);
    ASSERT_EQ(lines.size(), 3U);
    for (auto const& [line, group] : {std::pair{lines[1], "239.1.2.3"}, {lines[2], "239.1.2.4"}}) {
        ASSERT_TRUE(line.socket.group.has_value()) << line.name;
        EXPECT_EQ(line.socket.group->to_string(), std::string(group) + ":0");
        EXPECT_EQ(line.socket.interface, "lo");
        EXPECT_TRUE(line.socket.reuse_address)
            << "groups share their ports with other hosts' feeds";
        EXPECT_FALSE(line.socket.source.has_value()) << "`source` is line A's sender";
    }
    auto const unicast = lines_of(parse_receiver_config(feed, "t").feeds[0]);
    EXPECT_FALSE(unicast[1].socket.group.has_value());
    EXPECT_FALSE(unicast[1].socket.reuse_address);
    EXPECT_NE(error_of(feed + "snapshot_group = \"10.0.0.1\"\n")
                  .find("key 'snapshot_group': 10.0.0.1:0 is not a multicast address"),
              std::string::npos)
        << error_of(feed + "snapshot_group = \"10.0.0.1\"\n");
}

TEST(MdConfig, ReusePortIsABooleanForEveryLine) {
    auto const defaults = parse_receiver_config(ab_feed_text, "t");
    EXPECT_FALSE(defaults.feeds[0].reuse_port);
    EXPECT_FALSE(lines_of(defaults.feeds[0])[0].socket.reuse_port);
    for (bool good : {true, false}) {
        auto const c = parse_receiver_config(
            ab_feed_text + "reuse_port = " + (good ? "true" : "false") + "\n", "t");
        EXPECT_EQ(c.feeds[0].reuse_port, good);
        auto const lines = lines_of(c.feeds[0]);
        ASSERT_EQ(lines.size(), 2U);
        EXPECT_EQ(lines[0].socket.reuse_port, good);
        EXPECT_EQ(lines[1].socket.reuse_port, good);
    }
    for (char const* bad : {"1", "\"yes\"", "\"true\""}) {
        std::string const error = error_of(feed_text + "reuse_port = " + std::string(bad) + "\n");
        EXPECT_EQ(error.rfind("test.toml:4: key 'reuse_port': expected true or false", 0), 0U)
            << bad << ": " << error;
    }
}

TEST(MdConfig, BufferSizeIsBounded) {
    EXPECT_EQ(parse_receiver_config(feed_text, "t").feeds[0].buffer_size, 1500U);
    for (std::size_t good : {std::size_t{64}, std::size_t{9000}, std::size_t{65507}}) {
        EXPECT_EQ(
            parse_receiver_config(feed_text + "buffer_size = " + std::to_string(good) + "\n", "t")
                .feeds[0]
                .buffer_size,
            good);
    }
    for (char const* bad : {"0", "63", "65508", "-1", "1500.0", "\"jumbo\""}) {
        std::string const error = error_of(feed_text + "buffer_size = " + std::string(bad) + "\n");
        EXPECT_EQ(
            error.rfind("test.toml:4: key 'buffer_size': expected an integer from 64 to 65507", 0),
            0U)
            << bad << ": " << error;
    }
}

TEST(MdConfig, RingBuffersIsBoundedAndZeroMeansAll) {
    EXPECT_EQ(parse_receiver_config(feed_text, "t").feeds[0].ring_buffers, 64U);
    for (std::size_t good : {std::size_t{0}, std::size_t{1}, std::size_t{32032}}) {
        EXPECT_EQ(
            parse_receiver_config(feed_text + "ring_buffers = " + std::to_string(good) + "\n", "t")
                .feeds[0]
                .ring_buffers,
            good);
    }
    for (char const* bad : {"-1", "32033", "1.5", "\"all\""}) {
        std::string const error = error_of(feed_text + "ring_buffers = " + std::string(bad) + "\n");
        EXPECT_EQ(
            error.rfind("test.toml:4: key 'ring_buffers': expected an integer from 0 to 32032", 0),
            0U)
            << bad << ": " << error;
    }
}

TEST(MdConfig, MemoryBackendIsRejected) {
    // The library accepts "memory" (in-process lines for tests and tools); md_receiver has no
    // writer for it, so it would receive nothing.
    std::string const error = error_of("[runtime]\nbackend = \"memory\"\n" + feed_text);
    EXPECT_EQ(error.rfind("test.toml:2: key 'backend': \"memory\" is the in-process backend", 0),
              0U)
        << error;
    EXPECT_NE(error.find("md_receiver has no writer for it"), std::string::npos) << error;
    EXPECT_EQ(error_of("[runtime]\nbackend = \"ram\"\n" + feed_text)
                  .rfind("test.toml:2: key 'backend': expected one of \"auto\", \"io_uring\", "
                         "\"epoll\", \"asio\"",
                         0),
              0U);
    for (char const* good : {"auto", "io_uring", "epoll", "asio"}) {
        EXPECT_NO_THROW(parse_receiver_config(
            "[runtime]\nbackend = \"" + std::string(good) + "\"\n" + feed_text, "t"))
            << good;
    }
}

TEST(MdConfig, CpusTheMachineDoesNotHaveAreConfigErrors) {
    // A CPU id the system lacks used to pass here and crash md_receiver when pinning failed.
    int const limit = signet::receiver::configured_cpu_limit();
    ASSERT_GE(limit, 1);
    EXPECT_EQ(parse_receiver_config("[runtime]\ncpus = [0]\n" + feed_text, "t").cpus,
              (std::vector<int>{0}));
    std::string const error =
        error_of("[runtime]\ncpus = [0, " + std::to_string(limit) + "]\n" + feed_text);
    EXPECT_EQ(error.rfind("test.toml:2: key 'cpus': expected CPU ids from 0 to " +
                              std::to_string(limit - 1),
                          0),
              0U)
        << error;
    if (limit <= 1000) {
        EXPECT_NE(error_of("[runtime]\ncpus = [1000]\n" + feed_text).find("got 1000"),
                  std::string::npos);
    }
    EXPECT_NE(error_of("[runtime]\ncpus = [-1]\n" + feed_text).find("key 'cpus'"),
              std::string::npos);
}

TEST(MdConfig, AfXdpTableReachesTheFeed) {
    auto const c = parse_receiver_config(R"(
[runtime]
backend = "af_xdp"
[[feed]]
name = "x"
bind = "10.0.0.1:30001"
interface = "eth1"
af_xdp = { queues = [0, 3], xdp_mode = "generic", bind = "copy", busy_poll_us = 50, busy_poll_budget = 64 }
)",
                                         "test.toml");
    EXPECT_EQ(c.backend, signet::net::backend_kind::af_xdp);
    auto const& x = c.feeds.at(0).af_xdp;
    EXPECT_EQ(x.queues, (std::vector<unsigned>{0, 3}));
    EXPECT_EQ(x.mode, signet::net::xdp_mode::generic);
    EXPECT_EQ(x.bind, signet::net::xdp_bind::copy);
    EXPECT_EQ(x.busy_poll_us, 50U);
    EXPECT_EQ(x.busy_poll_budget, 64U);
}

TEST(MdConfig, AfXdpMistakesNameTheKey) {
    std::string const feed = "[[feed]]\nname = \"x\"\nbind = \"10.0.0.1:30001\"\n";
    EXPECT_NE(error_of("[runtime]\nbackend = \"af_xdp\"\n" + feed)
                  .find("key 'interface': backend \"af_xdp\" needs each feed's interface"),
              std::string::npos)
        << error_of("[runtime]\nbackend = \"af_xdp\"\n" + feed);
    std::string const with_interface = feed + "interface = \"eth1\"\n";
    EXPECT_NE(error_of("[runtime]\nbackend = \"af_xdp\"\n" + with_interface +
                       "af_xdp = { bind = \"fast\" }\n")
                  .find("key 'bind'"),
              std::string::npos);
    EXPECT_NE(error_of("[runtime]\nbackend = \"af_xdp\"\n" + with_interface +
                       "af_xdp = { queues = [64] }\n")
                  .find("key 'queues'"),
              std::string::npos);
    EXPECT_NE(
        error_of("[runtime]\nbackend = \"af_xdp\"\n" + with_interface + "af_xdp = { rings = 4 }\n")
            .find("key 'rings'"),
        std::string::npos);
    EXPECT_NE(error_of(with_interface + "af_xdp = { bind = \"copy\" }\n")
                  .find("applies to [runtime] backend = \"af_xdp\""),
              std::string::npos);
}

TEST(MdConfig, ShippedExamplesParse) {
    for (char const* name :
         {"demo.toml", "multicast.toml", "ab_lines.toml", "af_xdp.toml", "mdp3.toml"}) {
        std::string const path = std::string(SIGNET_CONFIG_DIR) + "/" + name;
        EXPECT_NO_THROW(signet::receiver::load_receiver_config(path)) << path;
    }
}

} // namespace
