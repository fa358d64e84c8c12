// net::udp_sender on loopback, ephemeral ports: datagrams arrive byte for byte from the bound
// source; setup errors name what to fix; try_send never waits; the multicast options are set.
#include <array>
#include <cstddef>
#include <string>
#include <system_error>
#include <vector>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/net/udp_sender.hpp>
#include <signet/net/udp_socket.hpp>

namespace {

using signet::net::udp_endpoint;
using signet::net::udp_sender;
using signet::net::udp_sender_options;
using signet::net::udp_socket;
using signet::net::udp_socket_options;

struct arrival {
    std::vector<std::byte> bytes;
    udp_endpoint from;
};

/// The next datagram on `socket` (waits up to 5 s: the sender already sent it).
arrival receive(udp_socket const& socket) {
    pollfd ready{.fd = socket.native_handle(), .events = POLLIN, .revents = 0};
    EXPECT_EQ(::poll(&ready, 1, 5000), 1) << "nothing arrived";
    std::array<std::byte, 2048> buffer{};
    sockaddr_storage from{};
    socklen_t length = sizeof(from);
    ssize_t const n = ::recvfrom(socket.native_handle(), buffer.data(), buffer.size(), MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &length);
    if (n < 0) {
        return {};
    }
    return {std::vector<std::byte>(buffer.begin(), buffer.begin() + n),
            udp_endpoint::from_sockaddr(reinterpret_cast<sockaddr*>(&from), length)};
}

udp_socket loopback_receiver() {
    return udp_socket(udp_socket_options{.bind = udp_endpoint::parse("127.0.0.1:0"),
                                         .timestamps = signet::net::timestamping::off});
}

std::vector<std::byte> payload(std::size_t size, unsigned seed) {
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::byte>((i * 31 + seed) & 0xFF);
    }
    return bytes;
}

TEST(UdpSender, SendsDatagramsByteForByteFromTheBoundSource) {
    udp_socket const receiver = loopback_receiver();
    udp_sender sender({.source = udp_endpoint::parse("127.0.0.1:0")});
    ASSERT_TRUE(sender.is_open());
    EXPECT_EQ(sender.family(), AF_INET);
    std::vector<std::byte> const first = payload(1400, 1);
    std::vector<std::byte> const second = payload(1, 2);
    sender.send(first, receiver.local_endpoint());
    std::error_code error;
    sender.send(second, receiver.local_endpoint(), error);
    EXPECT_FALSE(error) << error.message();
    EXPECT_FALSE(sender.try_send({}, receiver.local_endpoint())); // an empty datagram is one too

    arrival const a = receive(receiver);
    EXPECT_EQ(a.bytes, first);
    EXPECT_EQ(a.from, sender.local_endpoint()) << "sent from the bound address and port";
    EXPECT_EQ(a.from.to_string().rfind("127.0.0.1:", 0), 0U);
    EXPECT_EQ(receive(receiver).bytes, second);
    EXPECT_TRUE(receive(receiver).bytes.empty());
}

TEST(UdpSender, SourceThatIsNotOfThisHostNamesTheOptionAndTheFix) {
    try {
        udp_sender const sender(
            {.source = udp_endpoint::try_parse_address("192.0.2.1"), .source_name = "--source"});
        FAIL() << "bound to an address this host does not have";
    } catch (std::system_error const& e) {
        EXPECT_EQ(e.code(), std::errc::address_not_available);
        std::string const what = e.what();
        EXPECT_NE(what.find("--source 192.0.2.1: cannot bind the sending socket (it takes an "
                            "address of this host, e.g. 127.0.0.1)"),
                  std::string::npos)
            << what;
    }
}

TEST(UdpSender, TakenPortAndWrongFamilyAreErrorsWithoutExceptionsToo) {
    udp_socket const taken = loopback_receiver();
    std::error_code error;
    std::string what;
    udp_sender const sender = udp_sender::open({.source = taken.local_endpoint()}, error, what);
    EXPECT_EQ(error, std::errc::address_in_use);
    EXPECT_FALSE(sender.is_open());
    EXPECT_NE(what.find(taken.local_endpoint().to_string() + ": cannot bind the sending socket "
                                                             "(the port is taken"),
              std::string::npos)
        << what;

    udp_sender const mixed = udp_sender::open(
        {.family = AF_INET6, .source = udp_endpoint::parse("127.0.0.1:0")}, error, what);
    EXPECT_TRUE(error);
    EXPECT_FALSE(mixed.is_open());
    EXPECT_NE(what.find("another address family"), std::string::npos) << what;
}

TEST(UdpSender, UnknownMulticastInterfaceIsNamed) {
    try {
        udp_sender const sender(
            {.multicast = true, .interface = "no-such-if0", .interface_name = "--interface"});
        FAIL() << "an interface that does not exist was accepted";
    } catch (std::system_error const& e) {
        EXPECT_NE(std::string(e.what()).find("--interface 'no-such-if0'"), std::string::npos)
            << e.what();
    }
}

TEST(UdpSender, SetsTheMulticastOptionsForTheFamily) {
    udp_sender const sender({.multicast = true, .ttl = 7, .loop = false, .interface = "lo"});
    int ttl = 0;
    socklen_t length = sizeof(ttl);
    ASSERT_EQ(::getsockopt(sender.native_handle(), IPPROTO_IP, IP_MULTICAST_TTL, &ttl, &length), 0);
    EXPECT_EQ(ttl, 7);
    int loop = 1;
    length = sizeof(loop);
    ASSERT_EQ(::getsockopt(sender.native_handle(), IPPROTO_IP, IP_MULTICAST_LOOP, &loop, &length),
              0);
    EXPECT_EQ(loop, 0);
    int buffer = 0;
    length = sizeof(buffer);
    ASSERT_EQ(::getsockopt(sender.native_handle(), SOL_SOCKET, SO_SNDBUF, &buffer, &length), 0);
    EXPECT_GT(buffer, 212992 / 2) << "a large send buffer was asked for";
}

TEST(UdpSender, Ipv6LoopbackWhereAvailable) {
    std::error_code error;
    std::string what;
    auto const receiver = udp_socket::open(
        {.bind = udp_endpoint::parse("[::1]:0"), .timestamps = signet::net::timestamping::off},
        error, what);
    if (error) {
        GTEST_SKIP() << "no IPv6 loopback here: " << what;
    }
    udp_sender sender({.family = AF_INET6});
    std::vector<std::byte> const bytes = payload(100, 3);
    sender.send(bytes, receiver.local_endpoint());
    EXPECT_EQ(receive(receiver).bytes, bytes);
}

TEST(UdpSender, SendErrorsNameTheDestination) {
    udp_sender sender(udp_sender_options{});
    // An IPv6 destination for an IPv4 socket: refused at once, not waited on.
    udp_endpoint const v6 = udp_endpoint::parse("[::1]:9");
    std::error_code error;
    sender.send(payload(10, 4), v6, error);
    EXPECT_TRUE(error);
    EXPECT_TRUE(sender.try_send(payload(10, 4), v6));
    try {
        sender.send(payload(10, 4), v6);
        FAIL() << "no exception";
    } catch (std::system_error const& e) {
        EXPECT_NE(std::string(e.what()).find("sendto [::1]:9"), std::string::npos) << e.what();
    }
}

} // namespace
