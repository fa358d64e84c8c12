#include <string>

#include <gtest/gtest.h>

#include "config.hpp"

namespace {

using signet::apps::config_error;
using signet::apps::parse_receiver_config;

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
cpus = [0, 1]
idle = "spin"
[stats]
interval_s = 0.25
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
[[feed]]
name = "b"
protocol = "raw"
parser = "count"
bind = "127.0.0.1:30003"
)",
                                   "test.toml");
    EXPECT_EQ(c.backend, signet::net::backend_kind::epoll);
    EXPECT_EQ(c.workers, 3U);
    EXPECT_EQ(c.cpus, (std::vector<int>{0, 1}));
    EXPECT_EQ(c.idle, signet::idle_strategy::spin);
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
    EXPECT_EQ(c.feeds[1].protocol, signet::apps::protocol_kind::raw);
    EXPECT_EQ(c.feeds[1].parser, signet::apps::parser_kind::count);
    auto const lines = signet::apps::line_options(a);
    ASSERT_EQ(lines.size(), 2U);
    EXPECT_EQ(lines[1].group->to_string(), "239.1.1.2:0");
}

TEST(MdConfig, DefaultsApply) {
    auto c = parse_receiver_config("[[feed]]\nname = \"a\"\nbind = \"127.0.0.1:1\"\n", "t");
    EXPECT_EQ(c.backend, signet::net::backend_kind::automatic);
    EXPECT_EQ(c.workers, 1U);
    EXPECT_EQ(c.feeds[0].queue_capacity, 4096U);
    EXPECT_EQ(c.feeds[0].on_full, signet::net::full_policy::backpressure);
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
    EXPECT_NE(
        error_of("[[feed]]\nname = \"a\"\nprotocol = \"raw\"\nbind = \"*:1\"\n").find("parser"),
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

TEST(MdConfig, ShippedExamplesParse) {
    for (char const* name : {"demo.toml", "multicast.toml", "ab_lines.toml"}) {
        std::string const path = std::string(SIGNET_CONFIG_DIR) + "/" + name;
        EXPECT_NO_THROW(signet::apps::load_receiver_config(path)) << path;
    }
}

} // namespace
