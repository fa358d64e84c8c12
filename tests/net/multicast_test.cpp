// Multicast through the runtime: any-source and source-specific joins, on every backend. The
// default namespace's `lo` has no multicast flag, so ctest runs this binary inside a network
// namespace it creates (run-in-netns); outside one the tests skip with the reason.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <signet/net/runtime.hpp>

#include "support/stress.hpp"
#include "support/udp_sender.hpp"

namespace {

using namespace std::chrono_literals;
using signet::net::backend_kind;
using signet::net::feed_options;
using signet::net::packet;
using signet::net::runtime;
using signet::net::udp_endpoint;
using signet::test::sequence_of;
using signet::test::udp_sender;

class MulticastTest : public ::testing::TestWithParam<backend_kind> {
protected:
    void SetUp() override {
        if (std::getenv("SIGNET_IN_NETNS") == nullptr) {
            GTEST_SKIP() << "needs a network namespace with a multicast loopback; ctest runs "
                            "this test through tests/net/run-in-netns";
        }
        std::string why_not;
        if (GetParam() == backend_kind::io_uring && !signet::net::io_uring_available(why_not)) {
            GTEST_SKIP() << "io_uring backend unavailable here: " << why_not;
        }
    }
};

TEST_P(MulticastTest, AnySourceJoinReceivesTheGroup) {
    signet::test::watchdog dog(60s, "AnySourceJoinReceivesTheGroup");
    runtime rt({.backend = GetParam(), .workers = 2});
    std::atomic<int> received{0};
    feed_options options;
    options.name = "asm";
    options.lines.push_back({.bind = udp_endpoint::parse("*:0"),
                             .group = udp_endpoint::parse("239.1.2.3:0"),
                             .interface = "lo"});
    auto feed = rt.add_feed(
        options, [&](packet const&) { received.fetch_add(1, std::memory_order_release); });
    rt.start();
    auto group = udp_endpoint::parse("239.1.2.3:0");
    group.set_port(rt.local_endpoint(feed).port());
    udp_sender sender(std::nullopt, "lo");
    for (int i = 0; i < 100; ++i) {
        sender.send_sequence(group, static_cast<std::uint64_t>(i));
    }
    signet::test::eventually([&] { return received.load(std::memory_order_acquire) == 100; });
    rt.stop();
    EXPECT_EQ(received.load(std::memory_order_acquire), 100);
}

TEST_P(MulticastTest, SourceSpecificJoinFiltersOtherSources) {
    signet::test::watchdog dog(60s, "SourceSpecificJoinFiltersOtherSources");
    runtime rt({.backend = GetParam(), .workers = 2});
    std::set<std::string> sources; // parser-only
    std::atomic<int> received{0};
    feed_options options;
    options.name = "ssm";
    options.lines.push_back({.bind = udp_endpoint::parse("*:0"),
                             .group = udp_endpoint::parse("232.1.2.3:0"),
                             .source = udp_endpoint::parse("127.0.0.1:0"),
                             .interface = "lo"});
    auto feed = rt.add_feed(options, [&](packet const& p) {
        auto s = p.source().to_string();
        sources.insert(s.substr(0, s.rfind(':')));
        received.fetch_add(1, std::memory_order_release);
    });
    rt.start();
    auto group = udp_endpoint::parse("232.1.2.3:0");
    group.set_port(rt.local_endpoint(feed).port());
    udp_sender wanted(udp_endpoint::parse("127.0.0.1:0"), "lo");
    udp_sender other(udp_endpoint::parse("127.0.0.2:0"), "lo");
    for (int i = 0; i < 50; ++i) {
        other.send_sequence(group, 1000 + static_cast<std::uint64_t>(i));
        wanted.send_sequence(group, static_cast<std::uint64_t>(i));
    }
    signet::test::eventually([&] { return received.load(std::memory_order_acquire) >= 50; });
    std::this_thread::sleep_for(50ms); // would-be strays from the other source arrive by now
    rt.stop();
    EXPECT_EQ(received.load(std::memory_order_acquire), 50);
    EXPECT_EQ(sources, (std::set<std::string>{"127.0.0.1"}));
}

INSTANTIATE_TEST_SUITE_P(Backends, MulticastTest,
                         ::testing::Values(backend_kind::io_uring, backend_kind::epoll,
                                           backend_kind::asio),
                         [](auto const& param_info) {
                             return std::string(to_string(param_info.param));
                         });

} // namespace
