// Multicast through the runtime: any-source and source-specific joins, on every backend. The
// default namespace's `lo` has no multicast flag, so ctest runs this binary inside a network
// namespace it creates (run-in-netns); outside one the tests skip with the reason.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <set>
#include <span>
#include <string>

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/net/runtime.hpp>
#include <signet/net/udp_socket.hpp>

#include "support/stress.hpp"
#include "support/udp_sender.hpp"

namespace {

using namespace std::chrono_literals;
using signet::net::backend_kind;
using signet::net::feed_options;
using signet::net::packet;
using signet::net::runtime;
using signet::net::udp_endpoint;
using signet::net::udp_socket;
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
    // Each stray left before a wanted datagram: a filter that let one through has it among the
    // first 50 parsed (its source in `sources`), with no wait for late ones.
    ASSERT_TRUE(signet::test::eventually([&] {
        return received.load(std::memory_order_acquire) >= 50;
    })) << received.load(std::memory_order_acquire)
        << " of 50 datagrams";
    rt.stop();
    EXPECT_EQ(received.load(std::memory_order_acquire), 50);
    EXPECT_EQ(sources, (std::set<std::string>{"127.0.0.1"}));
}

/// The next datagram's sequence number, if one is waiting (non-blocking).
std::optional<std::uint64_t> next_sequence(udp_socket const& s) {
    std::array<std::byte, 64> buffer{};
    auto const n = ::recv(s.native_handle(), buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n < 8) {
        return std::nullopt;
    }
    return sequence_of(std::span<std::byte const>(buffer.data(), static_cast<std::size_t>(n)));
}

// A socket that left its group gets none of the group's datagrams until it joins again. A
// witness socket on the same group and port, joined throughout, shows when each datagram has
// been delivered (the kernel hands a multicast datagram to every member socket in one pass), so
// "nothing arrived" is read after the delivery, not after a guessed delay.
void check_leave_and_join(udp_endpoint group, std::optional<udp_endpoint> source) {
    auto const options = [&](udp_endpoint bind) {
        return signet::net::udp_socket_options{.bind = bind,
                                               .group = group,
                                               .source = source,
                                               .interface = "lo",
                                               .reuse_address = true,
                                               .receive_buffer = 1u << 20,
                                               .timestamps = signet::net::timestamping::off};
    };
    udp_socket subject(options(udp_endpoint::parse("*:0")));
    auto bind = udp_endpoint::parse("*:0");
    bind.set_port(subject.local_endpoint().port());
    udp_socket witness(options(bind));
    group.set_port(bind.port());
    ASSERT_TRUE(subject.group().has_value());
    udp_sender sender(udp_endpoint::parse("127.0.0.1:0"), "lo");
    auto const witnessed = [&](std::uint64_t sequence) {
        std::optional<std::uint64_t> seen;
        return signet::test::eventually(
                   [&] { return (seen = next_sequence(witness)).has_value(); }) &&
               seen == sequence;
    };

    sender.send_sequence(group, 1);
    ASSERT_TRUE(witnessed(1));
    EXPECT_EQ(next_sequence(subject), std::optional<std::uint64_t>(1));

    ASSERT_FALSE(subject.set_group_membership(false));
    sender.send_sequence(group, 2);
    ASSERT_TRUE(witnessed(2));
    EXPECT_EQ(next_sequence(subject), std::nullopt) << "a socket that left still received";
    EXPECT_TRUE(subject.set_group_membership(false)) << "leaving twice is an error";

    ASSERT_FALSE(subject.set_group_membership(true));
    sender.send_sequence(group, 3);
    ASSERT_TRUE(witnessed(3));
    EXPECT_EQ(next_sequence(subject), std::optional<std::uint64_t>(3));
}

class MulticastMembership : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::getenv("SIGNET_IN_NETNS") == nullptr) {
            GTEST_SKIP() << "needs a network namespace with a multicast loopback; ctest runs "
                            "this test through tests/net/run-in-netns";
        }
    }
};

TEST_F(MulticastMembership, AnySourceLeaveStopsTheGroupAndJoinResumesIt) {
    check_leave_and_join(udp_endpoint::parse("239.1.2.4:0"), std::nullopt);
}

TEST_F(MulticastMembership, SourceSpecificLeaveStopsTheGroupAndJoinResumesIt) {
    check_leave_and_join(udp_endpoint::parse("232.1.2.4:0"), udp_endpoint::parse("127.0.0.1:0"));
}

TEST(MulticastMembershipErrors, ASocketWithoutAGroupCannotLeaveOne) {
    udp_socket unicast({.bind = udp_endpoint::parse("127.0.0.1:0")});
    EXPECT_FALSE(unicast.group().has_value());
    EXPECT_EQ(unicast.set_group_membership(false),
              std::make_error_code(std::errc::invalid_argument));
}

INSTANTIATE_TEST_SUITE_P(Backends, MulticastTest,
                         ::testing::Values(backend_kind::io_uring, backend_kind::epoll,
                                           backend_kind::asio),
                         [](auto const& param_info) {
                             return std::string(to_string(param_info.param));
                         });

} // namespace
