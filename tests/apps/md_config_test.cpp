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
    EXPECT_EQ(a.max_orders, 4096U);
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

TEST(MdConfig, CpusTheMachineDoesNotHaveAreConfigErrors) {
    // A CPU id the system lacks used to pass here and crash md_receiver when pinning failed.
    int const limit = signet::apps::configured_cpu_limit();
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

TEST(MdConfig, ShippedExamplesParse) {
    for (char const* name : {"demo.toml", "multicast.toml", "ab_lines.toml"}) {
        std::string const path = std::string(SIGNET_CONFIG_DIR) + "/" + name;
        EXPECT_NO_THROW(signet::apps::load_receiver_config(path)) << path;
    }
}

} // namespace
