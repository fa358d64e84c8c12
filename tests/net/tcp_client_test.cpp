// tcp_client through the runtime, on every backend and poller mode: connect, a framed stream
// split across reads, sends, the peer closing and the reconnect with backoff, refused
// connects, and a frame that cannot fit the buffer. The peer is a plain blocking listener on
// the test's thread (loopback, an ephemeral port, bounded waits).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/net/runtime.hpp>
#include <signet/net/tcp_client.hpp>
#include <signet/net/unique_fd.hpp>

#include "support/runtime_modes.hpp"
#include "support/stress.hpp"
#include "support/tcp_peer.hpp"

namespace {

using namespace std::chrono_literals;
using signet::net::feed_options;
using signet::net::packet;
using signet::net::runtime;
using signet::net::tcp_client;
using signet::net::tcp_client_options;
using signet::net::tcp_event;
using signet::net::udp_endpoint;
using signet::net::unique_fd;
using signet::test::eventually;
using signet::test::runtime_mode;

using signet::test::send_all;
using listener = signet::test::tcp_listener;

std::string read_line(int fd) {
    std::string line;
    char c = 0;
    while (::recv(fd, &c, 1, 0) == 1 && c != '\n') {
        line.push_back(c);
    }
    return line;
}

// The client side: newline-framed lines, "hello\n" sent on each connection. Counters are
// published for the test's thread (release, paired with its acquire loads).
struct line_client {
    std::unique_ptr<tcp_client> tcp;
    std::atomic<std::uint64_t> lines{0};
    std::atomic<std::uint64_t> line_bytes{0};
    std::atomic<std::uint64_t> connects{0};
    std::atomic<std::uint64_t> disconnects{0};
    std::atomic<std::uint64_t> refused{0};
    std::atomic<std::uint64_t> too_large{0};
    std::atomic<bool> bad_line{false};
    signet::net::timer timer;
    std::string pending_hello; // contract only

    void run() {
        auto const now = tcp_client::clock::now();
        if (tcp->state() == signet::net::tcp_state::idle) {
            tcp->connect(now);
        }
        tcp_event const event = tcp->service(now, [&](std::span<std::byte const> bytes) {
            std::size_t used = 0;
            for (std::size_t i = 0; i < bytes.size(); ++i) {
                if (static_cast<char>(bytes[i]) != '\n') {
                    continue;
                }
                // Each line is "L<n>:" then n x's: a frame cut or glued wrongly fails this.
                std::string const text(reinterpret_cast<char const*>(bytes.data() + used),
                                       i - used);
                auto const colon = text.find(':');
                if (text.empty() || text[0] != 'L' || colon == std::string::npos ||
                    std::stoul(text.substr(1, colon - 1)) != text.size() - colon - 1) {
                    bad_line.store(true, std::memory_order_relaxed);
                }
                line_bytes.fetch_add(text.size(), std::memory_order_relaxed);
                lines.fetch_add(1, std::memory_order_release);
                used = i + 1;
            }
            return used;
        });
        if (event == tcp_event::connected) {
            pending_hello = "hello\n";
            connects.fetch_add(1, std::memory_order_release);
        } else if (event == tcp_event::disconnected) {
            disconnects.fetch_add(1, std::memory_order_release);
        }
        if (!pending_hello.empty()) {
            std::size_t const n = tcp->send(std::as_bytes(std::span(pending_hello)), now);
            pending_hello.erase(0, n);
        }
        auto const& s = tcp->stats();
        refused.store(s.refused, std::memory_order_release);
        too_large.store(s.frames_too_large, std::memory_order_release);
        if (tcp->next_deadline() != tcp_client::clock::time_point::max()) {
            timer.arm_at(tcp->next_deadline());
        }
    }
};

struct client_parser {
    line_client* client;
    void operator()(packet const& /*p*/) {}
    void on_idle() { client->run(); }
    void on_batch() { client->run(); }
};

class TcpClientTest : public ::testing::TestWithParam<runtime_mode> {
protected:
    void SetUp() override { SIGNET_SKIP_WITHOUT_IO_URING(GetParam()); }

    // A runtime with one feed whose parser drives `client` connected to `port`.
    std::unique_ptr<runtime> make(line_client& client, std::uint16_t port,
                                  std::size_t receive_buffer = 4096) {
        auto rt = std::make_unique<runtime>(GetParam().options(2));
        feed_options feed;
        feed.name = "tcp";
        if (GetParam().backend != signet::net::backend_kind::memory) {
            feed.lines.push_back({.bind = udp_endpoint::parse("127.0.0.1:0")});
        }
        std::size_t const id = rt->add_feed(feed, client_parser{&client});
        tcp_client_options options;
        options.peer = udp_endpoint::parse("127.0.0.1:" + std::to_string(port));
        options.receive_buffer = receive_buffer;
        options.backoff_initial = 10ms;
        options.backoff_max = 40ms;
        options.name = "test tcp";
        client.tcp = rt->make_tcp_client(id, options);
        client.timer = rt->parser_timer(id);
        return rt;
    }
};

TEST_P(TcpClientTest, ReadsAFramedStreamSendsAndReconnectsAfterThePeerCloses) {
    signet::test::watchdog dog(120s, "tcp client stream");
    listener server;
    line_client client;
    auto rt = make(client, server.port());
    rt->start();
    rt->wake_parser(0);

    // Lines of 0..3000 bytes, written in odd-sized pieces: frames straddle reads and the
    // client's 4 KiB buffer; one line (3000 + header) nearly fills it.
    std::string stream;
    std::uint64_t expected_lines = 0;
    std::uint64_t expected_bytes = 0;
    for (std::uint64_t i = 0; i < 3000; ++i) {
        std::size_t const n = (i * 7919) % 3001;
        std::string line = "L" + std::to_string(n) + ":" + std::string(n, 'x');
        expected_bytes += line.size();
        stream += line + "\n";
        ++expected_lines;
    }
    for (std::uint64_t round = 0; round < 2; ++round) {
        unique_fd peer = server.accept();
        ASSERT_TRUE(peer.is_open()) << "no connection in round " << round;
        EXPECT_EQ(read_line(peer.get()), "hello");
        for (std::size_t at = 0; at < stream.size(); at += 1237) {
            ASSERT_TRUE(send_all(peer.get(), stream.substr(at, 1237)));
        }
        auto const want = expected_lines * (round + 1);
        ASSERT_TRUE(eventually([&] {
            return client.lines.load(std::memory_order_acquire) == want;
        })) << client.lines.load(std::memory_order_relaxed)
            << " of " << want;
        peer.reset(); // the peer closes: the client backs off and connects again
        ASSERT_TRUE(eventually(
            [&] { return client.disconnects.load(std::memory_order_acquire) == round + 1U; }));
    }
    rt->stop();
    EXPECT_FALSE(client.bad_line.load(std::memory_order_acquire));
    EXPECT_EQ(client.line_bytes.load(std::memory_order_acquire), 2 * expected_bytes);
    EXPECT_GE(client.connects.load(std::memory_order_acquire), 2U);
    EXPECT_EQ(client.tcp->stats().peer_closed, 2U);
    EXPECT_GT(client.tcp->stats().reads, 2U);
}

TEST_P(TcpClientTest, RefusedConnectsBackOffAndRetry) {
    signet::test::watchdog dog(60s, "tcp client refused");
    std::uint16_t port = 0;
    {
        listener gone; // a port that was just free: nothing listens on it now
        port = gone.port();
    }
    line_client client;
    auto rt = make(client, port);
    rt->start();
    rt->wake_parser(0);
    // Retries come from the backoff timer alone (10, 20, 40, 40 ms ...).
    ASSERT_TRUE(eventually([&] { return client.refused.load(std::memory_order_acquire) >= 4; }))
        << client.refused.load(std::memory_order_acquire);
    rt->stop();
    EXPECT_EQ(client.tcp->stats().connections, 0U);
    EXPECT_EQ(client.connects.load(std::memory_order_acquire), 0U);
    EXPECT_GE(client.tcp->stats().attempts, 4U);
}

TEST_P(TcpClientTest, AFrameLargerThanTheBufferClosesTheConnection) {
    signet::test::watchdog dog(60s, "tcp client frame too large");
    listener server;
    line_client client;
    auto rt = make(client, server.port(), 1024);
    rt->start();
    rt->wake_parser(0);
    unique_fd peer = server.accept();
    ASSERT_TRUE(peer.is_open());
    EXPECT_EQ(read_line(peer.get()), "hello");
    ASSERT_TRUE(send_all(peer.get(), "L3:xxx\n" + std::string(5000, 'y'))); // never a frame
    ASSERT_TRUE(eventually([&] { return client.too_large.load(std::memory_order_acquire) == 1; }));
    unique_fd again = server.accept(); // and it comes back
    EXPECT_TRUE(again.is_open());
    rt->stop();
    EXPECT_EQ(client.lines.load(std::memory_order_acquire), 1U);
    EXPECT_FALSE(client.bad_line.load(std::memory_order_acquire));
}

INSTANTIATE_TEST_SUITE_P(AllBackends, TcpClientTest,
                         ::testing::ValuesIn(signet::test::runtime_modes(
                             {signet::net::backend_kind::io_uring, signet::net::backend_kind::epoll,
                              signet::net::backend_kind::asio, signet::net::backend_kind::memory})),
                         signet::test::runtime_mode_name);

} // namespace
