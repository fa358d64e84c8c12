#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include <sys/socket.h>
#include <sys/uio.h>

#include <gtest/gtest.h>

#include <signet/net/udp_socket.hpp>
#include <signet/net/unique_fd.hpp>

namespace {

using signet::net::udp_endpoint;
using signet::net::udp_socket;
using signet::net::udp_socket_options;
using signet::net::unique_fd;

TEST(UdpEndpoint, ParsesIpv4Ipv6AndAny) {
    auto v4 = udp_endpoint::parse("127.0.0.1:5000");
    EXPECT_FALSE(v4.is_v6());
    EXPECT_EQ(v4.port(), 5000);
    EXPECT_EQ(v4.to_string(), "127.0.0.1:5000");
    auto v6 = udp_endpoint::parse("[::1]:6000");
    EXPECT_TRUE(v6.is_v6());
    EXPECT_EQ(v6.port(), 6000);
    EXPECT_EQ(v6.to_string(), "[::1]:6000");
    EXPECT_TRUE(udp_endpoint::parse("*:7000").is_any());
    EXPECT_TRUE(udp_endpoint::parse("239.1.2.3:1").is_multicast());
    EXPECT_FALSE(udp_endpoint::parse("10.1.2.3:1").is_multicast());
}

TEST(UdpEndpoint, RejectsMalformedText) {
    for (char const* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:70000", "1.2.3:5", "::1:5",
                            "host:5", "127.0.0.1:5x"}) {
        EXPECT_FALSE(udp_endpoint::try_parse(bad).has_value()) << bad;
    }
    EXPECT_THROW(udp_endpoint::parse("nonsense"), std::invalid_argument);
}

TEST(UdpSocket, BindsAnEphemeralPortAndReportsIt) {
    udp_socket s(udp_socket_options{.bind = udp_endpoint::parse("127.0.0.1:0")});
    EXPECT_TRUE(s.is_open());
    EXPECT_NE(s.local_endpoint().port(), 0);
    EXPECT_EQ(s.local_endpoint().to_string().rfind("127.0.0.1:", 0), 0U);
}

TEST(UdpSocket, BindsIpv6Loopback) {
    std::error_code error;
    std::string what;
    auto s = udp_socket::open({.bind = udp_endpoint::parse("[::1]:0")}, error, what);
    if (error == std::errc::address_not_available ||
        error == std::errc::address_family_not_supported) {
        GTEST_SKIP() << "no IPv6 loopback here: " << what;
    }
    ASSERT_FALSE(error) << what;
    EXPECT_TRUE(s.local_endpoint().is_v6());
}

TEST(UdpSocket, PortInUseGivesAClearError) {
    udp_socket first(udp_socket_options{.bind = udp_endpoint::parse("127.0.0.1:0")});
    std::error_code error;
    std::string what;
    auto const started = std::chrono::steady_clock::now();
    auto second = udp_socket::open({.bind = first.local_endpoint()}, error, what);
    // Held by a running process (this one): refused at once, not after the 5 s a port held by
    // no process is waited for.
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(4));
    EXPECT_EQ(error, std::errc::address_in_use);
    EXPECT_FALSE(second.is_open());
    EXPECT_NE(what.find(first.local_endpoint().to_string()), std::string::npos) << what;
    EXPECT_NE(what.find("reuse_port"), std::string::npos) << what;
    EXPECT_THROW(udp_socket(udp_socket_options{.bind = first.local_endpoint()}), std::system_error);
}

/// Sends `fd` over `through` (SCM_RIGHTS): until the other end reads it or is closed, the
/// message holds the file, and no process has it open. False if sendmsg() failed (errno).
bool send_descriptor(int through, int fd) {
    char byte = 0;
    iovec data{&byte, 1};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
    msghdr m{};
    m.msg_iov = &data;
    m.msg_iovlen = 1;
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    cmsghdr* const c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return ::sendmsg(through, &m, 0) == 1;
}

TEST(UdpSocket, APortHeldByNoProcessIsWaitedForUntilFreed) {
    // A crashed receiver's sockets outlive it by milliseconds (its io_uring is torn down after
    // it exits): held by no process, they are waited for, and a restarted receiver binds once
    // they are gone. Here the socket lives on in a message in flight between two Unix sockets
    // (its descriptor closed), until the closer closes them.
    std::optional<udp_socket> first(udp_socket_options{.bind = udp_endpoint::parse("127.0.0.1:0")});
    udp_endpoint const port = first->local_endpoint();
    std::array<int, 2> ends{};
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, ends.data()), 0);
    std::array<unique_fd, 2> pair{unique_fd(ends[0]), unique_fd(ends[1])};
    ASSERT_TRUE(send_descriptor(pair[0].get(), first->native_handle())) << std::strerror(errno);
    first.reset();
    std::atomic<bool> trying{false};
    std::thread closer([&] {
        while (!trying.load(std::memory_order_acquire)) { // pairs with the release below
            std::this_thread::yield();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the scenario: freed later
        pair[0].reset();
        pair[1].reset(); // the message, and the socket with it, goes
    });
    auto const started = std::chrono::steady_clock::now();
    trying.store(true, std::memory_order_release);
    std::error_code error;
    std::string what;
    auto second = udp_socket::open({.bind = port}, error, what); // taken at its first try
    closer.join();
    EXPECT_FALSE(error) << what;
    EXPECT_TRUE(second.is_open());
    // Bound only once the message went: the socket in it held the port until then.
    EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(50));
}

TEST(UdpSocket, ReusePortLetsTwoSocketsShareAPort) {
    udp_socket first({.bind = udp_endpoint::parse("127.0.0.1:0"), .reuse_port = true});
    EXPECT_NO_THROW(udp_socket({.bind = first.local_endpoint(), .reuse_port = true}));
}

TEST(UdpSocket, AddressNotOfThisHostIsExplained) {
    std::error_code error;
    std::string what;
    auto s = udp_socket::open({.bind = udp_endpoint::parse("192.0.2.1:0")}, error, what);
    EXPECT_EQ(error, std::errc::address_not_available);
    EXPECT_NE(what.find("not an address of this host"), std::string::npos) << what;
}

TEST(UdpSocket, NonMulticastGroupIsRejected) {
    std::error_code error;
    std::string what;
    auto s = udp_socket::open(
        {.bind = udp_endpoint::parse("*:0"), .group = udp_endpoint::parse("10.1.2.3:0")}, error,
        what);
    EXPECT_TRUE(error);
    EXPECT_NE(what.find("not a multicast address"), std::string::npos) << what;
}

TEST(UdpSocket, UnknownInterfaceIsRejected) {
    std::error_code error;
    std::string what;
    auto s = udp_socket::open({.bind = udp_endpoint::parse("*:0"),
                               .group = udp_endpoint::parse("239.1.1.1:0"),
                               .interface = "no-such-if0"},
                              error, what);
    EXPECT_TRUE(error);
    EXPECT_NE(what.find("interface"), std::string::npos) << what;
}

TEST(UdpSocket, ReceiveBufferIsReadBack) {
    udp_socket s({.bind = udp_endpoint::parse("127.0.0.1:0"), .receive_buffer = 1u << 20});
    // Linux reports twice the usable size; either way at least what was asked unless capped.
    if (!s.receive_buffer_capped()) {
        EXPECT_GE(s.receive_buffer(), 1u << 20);
    } else {
        EXPECT_LT(s.receive_buffer() / 2, 1u << 20);
    }
}

TEST(UdpSocket, SoftwareTimestampsAreTheDefault) {
    udp_socket s({.bind = udp_endpoint::parse("127.0.0.1:0")});
    EXPECT_EQ(s.timestamps(), signet::net::timestamping::software);
    EXPECT_TRUE(s.timestamp_note().empty());
    udp_socket off(
        {.bind = udp_endpoint::parse("127.0.0.1:0"), .timestamps = signet::net::timestamping::off});
    EXPECT_EQ(off.timestamps(), signet::net::timestamping::off);
}

TEST(UdpSocket, HardwareTimestampsFallBackToSoftwareAndSayWhy) {
    // Loopback cannot stamp in hardware: software is in effect and the note names the reason.
    udp_socket lo({.bind = udp_endpoint::parse("127.0.0.1:0"),
                   .interface = "lo",
                   .timestamps = signet::net::timestamping::hardware});
    EXPECT_EQ(lo.timestamps(), signet::net::timestamping::software);
    EXPECT_NE(lo.timestamp_note().find("lo"), std::string::npos) << lo.timestamp_note();
    udp_socket unnamed({.bind = udp_endpoint::parse("127.0.0.1:0"),
                        .timestamps = signet::net::timestamping::hardware});
    EXPECT_EQ(unnamed.timestamps(), signet::net::timestamping::software);
    EXPECT_NE(unnamed.timestamp_note().find("interface"), std::string::npos)
        << unnamed.timestamp_note();
}

TEST(UdpSocket, TimestampingNamesRoundTrip) {
    for (auto mode : {signet::net::timestamping::off, signet::net::timestamping::software,
                      signet::net::timestamping::hardware}) {
        EXPECT_EQ(signet::net::parse_timestamping(signet::net::to_string(mode)), mode);
    }
    EXPECT_THROW((void)signet::net::parse_timestamping("nic"), std::invalid_argument);
}

TEST(UdpSocket, BusyPollIsSetOnTheSocket) {
    std::error_code error;
    std::string what;
    auto s = udp_socket::open({.bind = udp_endpoint::parse("127.0.0.1:0"), .busy_poll_us = 50},
                              error, what);
    if (error == std::errc::operation_not_permitted) {
        GTEST_SKIP() << "SO_BUSY_POLL above net.core.busy_read needs CAP_NET_ADMIN: " << what;
    }
    ASSERT_FALSE(error) << what;
    int value = 0;
    socklen_t length = sizeof(value);
    ASSERT_EQ(::getsockopt(s.native_handle(), SOL_SOCKET, SO_BUSY_POLL, &value, &length), 0);
    EXPECT_EQ(value, 50);
    ASSERT_EQ(::getsockopt(s.native_handle(), SOL_SOCKET, SO_PREFER_BUSY_POLL, &value, &length), 0);
    EXPECT_EQ(value, 1);
}

} // namespace
