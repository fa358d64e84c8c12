// The af_xdp backend's own behaviour over the veth pair of run-in-veth (the runtime suite's
// af_xdp cases cover what every backend does): the kernel keeps ARP and traffic that is not a
// feed's, multicast joins through the line's UDP socket, malformed frames are counted and
// dropped, and each way it cannot run is one clear error at start. Outside run-in-veth, or
// without the privileges, the tests skip with the reason.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <net/ethernet.h>
#include <net/if.h>

#if SIGNET_HAVE_AF_XDP
#include <linux/bpf.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#endif

#include <gtest/gtest.h>

#include <signet/net/runtime.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/net/unique_fd.hpp>

#include "support/stress.hpp"
#include "support/udp_sender.hpp"
#include "support/veth.hpp"

namespace {

using namespace std::chrono_literals;
using signet::net::backend_kind;
using signet::net::feed_options;
using signet::net::packet;
using signet::net::runtime;
using signet::net::udp_endpoint;
using signet::test::eventually;
using signet::test::sequence_of;
using signet::test::udp_sender;

class AfXdpTest : public ::testing::Test {
protected:
    void SetUp() override {
        struct {
            backend_kind backend = backend_kind::af_xdp;
        } const mode;
        SIGNET_SKIP_WITHOUT_AF_XDP(mode);
    }

    static feed_options veth_feed(std::string name) {
        feed_options options;
        options.name = std::move(name);
        options.lines.push_back(signet::test::test_line(backend_kind::af_xdp));
        return options;
    }

    static signet::net::runtime_options options() {
        return {.backend = backend_kind::af_xdp, .workers = 1};
    }
};

// ARP from a sender that forgot this host, and a datagram for a port no feed has, both reach
// the kernel while the program is attached; the feed's datagrams reach the feed.
TEST_F(AfXdpTest, ArpAndForeignTrafficStillReachTheKernel) {
    signet::test::watchdog dog(60s, "ArpAndForeignTrafficStillReachTheKernel");
    runtime rt(options());
    std::atomic<int> received{0};
    auto feed = rt.add_feed(
        veth_feed("xdp"), [&](packet const&) { received.fetch_add(1, std::memory_order_release); });
    signet::net::udp_socket foreign(
        {.bind = udp_endpoint::parse(signet::test::veth_address() + ":0")});
    rt.start();
    // The sender's neighbour table forgets us: its next datagram needs an ARP answer.
    int const flushed = signet::test::in_sender_namespace(
        [] { return std::system("ip neigh flush all >/dev/null 2>&1"); });
    ASSERT_EQ(flushed, 0);
    udp_sender sender;
    sender.send_sequence(foreign.local_endpoint(), 7);
    for (std::uint64_t i = 0; i < 100; ++i) {
        sender.send_sequence(rt.local_endpoint(feed), i);
    }
    std::array<std::byte, 64> buffer{};
    ASSERT_TRUE(eventually([&] {
        return ::recv(foreign.native_handle(), buffer.data(), buffer.size(), MSG_DONTWAIT) == 64;
    })) << "the datagram for a port without a feed did not reach its kernel socket";
    EXPECT_EQ(sequence_of(buffer), 7U);
    ASSERT_TRUE(eventually([&] { return received.load(std::memory_order_acquire) == 100; }))
        << received.load(std::memory_order_relaxed);
    rt.stop();
    EXPECT_EQ(rt.stats(feed).packets, 100U);
}

// A line joined to a group: the join goes through the line's UDP socket (the kernel sends the
// IGMP report and lists the membership), the group's datagrams come through the AF_XDP socket.
TEST_F(AfXdpTest, MulticastJoinsThroughTheKernelAndReceivesTheGroup) {
    signet::test::watchdog dog(60s, "MulticastJoinsThroughTheKernelAndReceivesTheGroup");
    runtime rt(options());
    std::atomic<int> received{0};
    feed_options options;
    options.name = "group";
    options.lines.push_back({.bind = udp_endpoint::parse("*:0"),
                             .group = udp_endpoint::parse("239.7.7.7:0"),
                             .interface = signet::test::veth_interface()});
    auto feed = rt.add_feed(
        options, [&](packet const&) { received.fetch_add(1, std::memory_order_release); });
    rt.start();
    std::ifstream igmp("/proc/net/igmp");
    std::string const table((std::istreambuf_iterator<char>(igmp)), {});
    EXPECT_NE(table.find("070707EF"), std::string::npos) << table; // 239.7.7.7, little-endian
    auto group = udp_endpoint::parse("239.7.7.7:0");
    group.set_port(rt.local_endpoint(feed).port());
    udp_sender sender(std::nullopt, "peer0");
    for (std::uint64_t i = 0; i < 100; ++i) {
        sender.send_sequence(group, i);
    }
    ASSERT_TRUE(eventually([&] { return received.load(std::memory_order_acquire) == 100; }))
        << received.load(std::memory_order_relaxed);
    rt.stop();
}

// Hand-made frames for the feed's address and port, sent raw from the other namespace: those
// whose headers lie are counted as malformed and dropped; the good one is delivered.
TEST_F(AfXdpTest, MalformedFramesAreCountedAndDropped) {
    signet::test::watchdog dog(60s, "MalformedFramesAreCountedAndDropped");
    runtime rt(options());
    std::atomic<int> received{0};
    std::vector<std::uint64_t> seen;
    auto feed = rt.add_feed(veth_feed("raw"), [&](packet const& p) {
        seen.push_back(sequence_of(p.payload()));
        received.fetch_add(1, std::memory_order_release);
    });
    rt.start();
    std::string mac_text;
    std::ifstream("/sys/class/net/" + signet::test::veth_interface() + "/address") >> mac_text;
    std::array<unsigned, 6> mac{};
    ASSERT_EQ(std::sscanf(mac_text.c_str(), "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3],
                          &mac[4], &mac[5]),
              6);
    std::uint16_t const port = rt.local_endpoint(feed).port();
    in_addr source{};
    in_addr destination{};
    ASSERT_EQ(::inet_pton(AF_INET, signet::test::veth_peer_address().c_str(), &source), 1);
    ASSERT_EQ(::inet_pton(AF_INET, signet::test::veth_address().c_str(), &destination), 1);

    // A frame of `payload` bytes with IPv4 total length and UDP length as given (0: true ones).
    auto frame = [&](std::uint64_t sequence, std::size_t payload, std::size_t ip_total,
                     std::size_t udp_length, bool break_checksum) {
        std::vector<std::uint8_t> f(14 + 20 + 8 + payload, 0);
        for (std::size_t i = 0; i < 6; ++i) {
            f[i] = static_cast<std::uint8_t>(mac[i]);
            f[6 + i] = static_cast<std::uint8_t>(0x02 + i);
        }
        f[12] = 0x08; // IPv4
        std::uint8_t* ip = f.data() + 14;
        std::size_t const total = ip_total != 0 ? ip_total : 20 + 8 + payload;
        ip[0] = 0x45;
        ip[2] = static_cast<std::uint8_t>(total >> 8);
        ip[3] = static_cast<std::uint8_t>(total);
        ip[8] = 64;
        ip[9] = 17; // UDP
        std::memcpy(ip + 12, &source, 4);
        std::memcpy(ip + 16, &destination, 4);
        std::uint32_t sum = 0;
        for (std::size_t i = 0; i < 20; i += 2) {
            sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
        }
        while (sum >> 16) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        std::uint16_t const checksum =
            static_cast<std::uint16_t>(~sum) ^ (break_checksum ? 0x0101 : 0);
        ip[10] = static_cast<std::uint8_t>(checksum >> 8);
        ip[11] = static_cast<std::uint8_t>(checksum);
        std::uint8_t* udp = ip + 20;
        std::size_t const length = udp_length != 0 ? udp_length : 8 + payload;
        udp[0] = 0x30;
        udp[1] = 0x39;
        udp[2] = static_cast<std::uint8_t>(port >> 8);
        udp[3] = static_cast<std::uint8_t>(port);
        udp[4] = static_cast<std::uint8_t>(length >> 8);
        udp[5] = static_cast<std::uint8_t>(length);
        std::memcpy(udp + 8, &sequence, sizeof(sequence));
        return f;
    };
    signet::net::unique_fd raw(signet::test::in_sender_namespace(
        [] { return ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); }));
    ASSERT_TRUE(raw.is_open()) << std::strerror(errno);
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = static_cast<int>(
        signet::test::in_sender_namespace([] { return ::if_nametoindex("peer0"); }));
    to.sll_halen = 6;
    ASSERT_NE(to.sll_ifindex, 0);
    auto send = [&](std::vector<std::uint8_t> const& f) {
        ASSERT_EQ(::sendto(raw.get(), f.data(), f.size(), 0, reinterpret_cast<sockaddr*>(&to),
                           sizeof(to)),
                  static_cast<ssize_t>(f.size()))
            << std::strerror(errno);
    };
    send(frame(1, 64, 0, 0, true));             // IPv4 header checksum wrong
    send(frame(2, 64, 20 + 8 + 500, 0, false)); // IPv4 total length beyond the frame
    send(frame(3, 64, 0, 8 + 300, false));      // UDP length beyond the IPv4 packet
    send(frame(4, 64, 0, 4, false));            // UDP length below its own header
    send(frame(5, 64, 0, 0, false));            // intact
    ASSERT_TRUE(eventually([&] { return received.load(std::memory_order_acquire) == 1; }));
    ASSERT_TRUE(eventually([&] { return rt.stats(feed).malformed == 4; }))
        << rt.stats(feed).malformed;
    rt.stop();
    ASSERT_EQ(seen.size(), 1U);
    EXPECT_EQ(seen[0], 5U);
    EXPECT_EQ(rt.stats(feed).packets, 1U);
}

// Two lines on one interface, each asking for a queue of its own: the program's map is per
// interface, so a frame of one line may arrive on the other's queue (the sender's flows spread
// over both). Every frame still reaches its own line.
TEST_F(AfXdpTest, LinesOnDifferentQueuesEachGetEveryFrame) {
    signet::test::watchdog dog(60s, "LinesOnDifferentQueuesEachGetEveryFrame");
    runtime rt(options());
    std::atomic<int> to_a{0};
    std::atomic<int> to_b{0};
    auto a_options = veth_feed("a");
    a_options.af_xdp.queues = {0};
    auto b_options = veth_feed("b");
    b_options.af_xdp.queues = {1};
    auto a = rt.add_feed(a_options,
                         [&](packet const&) { to_a.fetch_add(1, std::memory_order_release); });
    auto b = rt.add_feed(b_options,
                         [&](packet const&) { to_b.fetch_add(1, std::memory_order_release); });
    rt.start();
    constexpr int flows = 8; // one socket each: the sender spreads flows over its TX queues
    constexpr int per_flow = 50;
    for (int f = 0; f < flows; ++f) {
        udp_sender sender;
        for (int i = 0; i < per_flow; ++i) {
            sender.send_sequence(rt.local_endpoint(a), static_cast<std::uint64_t>(i));
            sender.send_sequence(rt.local_endpoint(b), static_cast<std::uint64_t>(i));
        }
    }
    ASSERT_TRUE(eventually([&] {
        return to_a.load(std::memory_order_acquire) == flows * per_flow &&
               to_b.load(std::memory_order_acquire) == flows * per_flow;
    })) << to_a.load(std::memory_order_relaxed)
        << " and " << to_b.load(std::memory_order_relaxed);
    rt.stop();
    EXPECT_EQ(rt.stats(a).packets, std::uint64_t{flows * per_flow});
    EXPECT_EQ(rt.stats(b).packets, std::uint64_t{flows * per_flow});
}

// Datagrams that reached the line's UDP socket before start() (no program yet) are read in
// batches after it; a worker that blocks when idle reads them all without waiting for new
// traffic to wake it (the socket is edge-triggered: the backlog gives no new edge).
TEST_F(AfXdpTest, ABacklogInTheUdpSocketIsReadWithoutNewTraffic) {
    signet::test::watchdog dog(60s, "ABacklogInTheUdpSocketIsReadWithoutNewTraffic");
    auto rt_options = options();
    rt_options.idle = signet::idle_strategy::block;
    runtime rt(rt_options);
    std::atomic<std::uint64_t> received{0};
    std::atomic<std::uint64_t> in_order{0};
    auto feed = rt.add_feed(veth_feed("backlog"), [&](packet const& p) {
        std::uint64_t const n = received.load(std::memory_order_relaxed);
        if (sequence_of(p.payload()) == n) {
            in_order.fetch_add(1, std::memory_order_relaxed);
        }
        received.store(n + 1, std::memory_order_release);
    });
    // 3200 datagrams: 100 batches of 32. Woken only by its 100 ms idle slice, the worker would
    // need 10 s.
    constexpr std::uint64_t backlog = 3200;
    udp_sender sender;
    for (std::uint64_t i = 0; i < backlog; ++i) {
        sender.send_sequence(rt.local_endpoint(feed), i);
    }
    rt.start();
    ASSERT_TRUE(eventually(
        [&] {
            return received.load(std::memory_order_acquire) + rt.stats(feed).kernel_drops ==
                   backlog;
        },
        5s))
        << received.load(std::memory_order_relaxed) << " of " << backlog;
    rt.stop();
    EXPECT_EQ(rt.stats(feed).kernel_drops, 0U) << "the socket buffer did not hold the backlog";
    EXPECT_EQ(in_order.load(std::memory_order_relaxed), backlog);
}

// full_policy::drop on lines read through their UDP sockets (no interface: the kernel path).
// While the parsers are held, a backlog beyond the first line's queue is counted as dropped, and
// each dropped frame goes back to the free stack once: a second line's packets, received next
// into frames from the top of that stack and held unparsed, each keep a frame of their own
// (a frame handed out twice would show as one payload overwritten by a later one).
TEST_F(AfXdpTest, DropsOnTheUdpSocketPathGiveEachFrameBackOnce) {
    signet::test::watchdog dog(60s, "DropsOnTheUdpSocketPathGiveEachFrameBackOnce");
    auto rt_options = options();
    rt_options.poller = signet::net::poller_mode::thread; // receives while the workers are held
    rt_options.workers = 2;                               // one held parser each
    runtime rt(rt_options);
    rt.add_feed(veth_feed("anchor"), [](packet const&) {}); // an AF_XDP port for the backend
    std::atomic<bool> open{false};
    struct recorded {
        std::vector<std::uint64_t> seen;
        std::atomic<int> parsed{0};
    };
    recorded held;
    recorded next;
    auto const release = [&open] {
        open.store(true, std::memory_order_release); // pairs with the parsers' acquire wait
        open.notify_all();
    };
    // A failed assertion below still lets the held parsers go and stops the runtime before
    // what the parsers write to goes away (declared after it, so it runs first).
    struct on_exit {
        decltype(release) const& let_go;
        runtime& rt;
        ~on_exit() {
            let_go();
            rt.stop();
        }
    } const guard{release, rt};
    auto add = [&](std::string name, recorded& into) {
        feed_options kernel;
        kernel.name = std::move(name);
        kernel.lines.push_back({.bind = udp_endpoint::parse("127.0.0.1:0")});
        kernel.queue_capacity = 64;
        kernel.on_full = signet::net::full_policy::drop;
        return rt.add_feed(kernel, [&open, &into](packet const& p) {
            open.wait(false, std::memory_order_acquire); // pairs with release()
            into.seen.push_back(sequence_of(p.payload()));
            into.parsed.fetch_add(1, std::memory_order_release);
        });
    };
    auto const held_feed = add("held", held);
    auto const next_feed = add("next", next);
    signet::net::udp_sender local({.family = AF_INET});
    auto send = [&](signet::net::udp_endpoint const& to, std::uint64_t sequence) {
        std::array<std::byte, 64> bytes{};
        std::memcpy(bytes.data(), &sequence, sizeof(sequence));
        local.send(bytes, to);
    };
    // Before start: read in batches of 32, two queued, then 32, 32 and 22 dropped.
    constexpr std::uint64_t backlog = 150; // within the socket buffer
    for (std::uint64_t i = 0; i < backlog; ++i) {
        send(rt.local_endpoint(held_feed), i);
    }
    rt.start();
    ASSERT_TRUE(eventually([&] { return rt.stats(held_feed).packets == backlog; }))
        << rt.stats(held_feed).packets;
    EXPECT_EQ(rt.stats(held_feed).dropped, backlog - 64);
    for (std::uint64_t i = 0; i < 64; ++i) { // fits the empty queue: nothing dropped
        send(rt.local_endpoint(next_feed), 1000 + i);
    }
    ASSERT_TRUE(eventually([&] { return rt.stats(next_feed).packets == 64; }))
        << rt.stats(next_feed).packets;
    release();
    ASSERT_TRUE(eventually([&] {
        return held.parsed.load(std::memory_order_acquire) == 64 &&
               next.parsed.load(std::memory_order_acquire) == 64;
    }));
    rt.stop();
    ASSERT_EQ(held.seen.size(), 64U);
    ASSERT_EQ(next.seen.size(), 64U);
    for (std::uint64_t i = 0; i < 64; ++i) {
        EXPECT_EQ(held.seen[i], i);
        EXPECT_EQ(next.seen[i], 1000 + i);
    }
    EXPECT_EQ(rt.stats(held_feed).dropped, backlog - 64);
    EXPECT_EQ(rt.stats(next_feed).dropped, 0U);
}

TEST_F(AfXdpTest, MissingInterfaceIsAClearErrorAtStart) {
    runtime rt(options());
    auto options = veth_feed("nowhere");
    options.lines[0].interface = "nosuch0";
    rt.add_feed(options, [](packet const&) {});
    try {
        rt.start();
        FAIL() << "expected std::system_error";
    } catch (std::system_error const& e) {
        EXPECT_NE(std::string(e.what()).find("'nosuch0'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    }
}

TEST_F(AfXdpTest, ZeroCopyWhereTheDriverLacksItIsAClearErrorAtStart) {
    runtime rt(options());
    auto options = veth_feed("zc");
    options.af_xdp.bind = signet::net::xdp_bind::zero_copy;
    rt.add_feed(options, [](packet const&) {});
    try {
        rt.start();
        SUCCEED() << "this interface's driver has AF_XDP zero-copy";
    } catch (std::system_error const& e) {
        EXPECT_NE(std::string(e.what()).find("zero-copy"), std::string::npos) << e.what();
    }
}

TEST_F(AfXdpTest, ASecondReceiverOnTheInterfaceIsAClearErrorAtStart) {
    runtime first(options());
    first.add_feed(veth_feed("first"), [](packet const&) {});
    first.start();
    runtime second(options());
    second.add_feed(veth_feed("second"), [](packet const&) {});
    try {
        second.start();
        FAIL() << "expected std::system_error";
    } catch (std::system_error const& e) {
        EXPECT_NE(std::string(e.what()).find("served by another af_xdp receiver"),
                  std::string::npos)
            << e.what();
    }
    first.stop();
}

#if SIGNET_HAVE_AF_XDP
// The id of the XDP program attached to the veth interface (0: none).
std::uint32_t attached_program() {
    int const index = static_cast<int>(::if_nametoindex(signet::test::veth_interface().c_str()));
    LIBBPF_OPTS(bpf_xdp_query_opts, query);
    EXPECT_EQ(bpf_xdp_query(index, 0, &query), 0) << std::strerror(errno);
    return query.prog_id;
}

// Someone else's XDP program (here a two-instruction XDP_PASS) stays: signet does not replace a
// program that is not its own.
TEST_F(AfXdpTest, AnotherProgramOnTheInterfaceIsAClearErrorAtStart) {
    bpf_insn const pass[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K,
         .dst_reg = BPF_REG_0,
         .src_reg = 0,
         .off = 0,
         .imm = XDP_PASS},
        {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
    };
    signet::net::unique_fd const program(
        bpf_prog_load(BPF_PROG_TYPE_XDP, "other", "GPL", pass, 2, nullptr));
    ASSERT_TRUE(program.is_open()) << std::strerror(errno);
    int const index = static_cast<int>(::if_nametoindex(signet::test::veth_interface().c_str()));
    ASSERT_EQ(bpf_xdp_attach(index, program.get(), XDP_FLAGS_SKB_MODE, nullptr), 0);
    runtime rt(options());
    rt.add_feed(veth_feed("blocked"), [](packet const&) {});
    try {
        rt.start();
        ADD_FAILURE() << "expected std::system_error";
    } catch (std::system_error const& e) {
        EXPECT_NE(std::string(e.what()).find("already has an XDP program"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(bpf_xdp_detach(index, XDP_FLAGS_SKB_MODE, nullptr), 0);
}

// A start that fails after the program was attached (two feeds on one destination) takes it
// off again and lets go of the interface: another receiver starts there at once, while the
// failed one still exists.
TEST_F(AfXdpTest, AFailedStartLeavesNeitherProgramNorLockBehind) {
    signet::test::watchdog dog(60s, "AFailedStartLeavesNeitherProgramNorLockBehind");
    runtime failed(options());
    feed_options one = veth_feed("first");
    one.lines[0].reuse_address = true;
    auto first = failed.add_feed(one, [](packet const&) {});
    feed_options same = veth_feed("same");
    same.lines[0].bind = failed.local_endpoint(first);
    same.lines[0].reuse_address = true;
    failed.add_feed(same, [](packet const&) {});
    EXPECT_THROW(failed.start(), std::system_error);
    EXPECT_EQ(attached_program(), 0U) << "the failed start left its XDP program attached";

    runtime next(options());
    std::atomic<int> received{0};
    auto feed = next.add_feed(veth_feed("next"), [&](packet const&) {
        received.fetch_add(1, std::memory_order_release);
    });
    next.start();
    udp_sender sender;
    for (std::uint64_t i = 0; i < 10; ++i) {
        sender.send_sequence(next.local_endpoint(feed), i);
    }
    EXPECT_TRUE(eventually([&] { return received.load(std::memory_order_acquire) == 10; }));
    next.stop();
}

// Thread mode: a poller thread that cannot be pinned (a CPU this machine lacks) fails start()
// before it receives anything, and the backend takes its program off again.
TEST_F(AfXdpTest, APollerThatCannotBePinnedLeavesNoProgramBehind) {
    signet::test::watchdog dog(60s, "APollerThatCannotBePinnedLeavesNoProgramBehind");
    auto rt_options = options();
    rt_options.poller = signet::net::poller_mode::thread;
    rt_options.poller_cpu = 1000;
    runtime rt(rt_options);
    rt.add_feed(veth_feed("unpinned"), [](packet const&) {});
    EXPECT_ANY_THROW(rt.start());
    EXPECT_EQ(attached_program(), 0U) << "the failed start left its XDP program attached";
}
#endif

TEST_F(AfXdpTest, QueueTheInterfaceLacksIsAClearErrorAtStart) {
    runtime rt(options());
    auto options = veth_feed("q");
    options.af_xdp.queues = {63};
    rt.add_feed(options, [](packet const&) {});
    try {
        rt.start();
        FAIL() << "expected an error";
    } catch (std::exception const& e) {
        EXPECT_NE(std::string(e.what()).find("queue 63 does not exist"), std::string::npos)
            << e.what();
    }
}

} // namespace
