// Receiving UDP with signet::net: two feeds on loopback, each with its own parser contract.
// The parser is any callable taking a packet; it never runs concurrently with itself, so the
// plain counters below need no lock. Sends a few datagrams to itself and checks they arrived.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signet/net/runtime.hpp>

int main() {
    using namespace signet::net;
    runtime rt({.backend = backend_kind::automatic, .workers = 2});

    std::uint64_t bytes = 0; // touched only by the "prices" parser
    std::atomic<int> packets{0};
    feed_options prices;
    prices.name = "prices";
    prices.lines.push_back({.bind = udp_endpoint::parse("127.0.0.1:0")});
    prices.on_full = full_policy::backpressure; // or full_policy::drop
    auto feed = rt.add_feed(prices, [&](packet const& p) {
        bytes += p.size;
        packets.fetch_add(1, std::memory_order_release);
    });
    rt.start();
    std::printf("backend: %s (%s)\n", std::string(to_string(rt.backend())).c_str(),
                rt.backend_reason().c_str());

    int const sender = ::socket(AF_INET, SOCK_DGRAM, 0);
    auto const to = rt.local_endpoint(feed);
    char const message[] = "hello, signet";
    for (int i = 0; i < 10; ++i) {
        ::sendto(sender, message, sizeof(message), 0, to.data(), to.size());
    }
    ::close(sender);
    for (int i = 0; i < 5000 && packets.load(std::memory_order_acquire) < 10; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rt.stop(); // drains: every received packet is parsed or counted as dropped
    auto const s = rt.stats(feed);
    std::printf("received %llu, parsed %llu, dropped %llu, %llu bytes\n",
                static_cast<unsigned long long>(s.packets),
                static_cast<unsigned long long>(s.parsed),
                static_cast<unsigned long long>(s.dropped), static_cast<unsigned long long>(bytes));
    return s.parsed == 10 && bytes == 10 * sizeof(message) ? 0 : 1;
}
