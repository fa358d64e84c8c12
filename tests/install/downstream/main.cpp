// A consumer of the installed package: one contract run by hand (signet::core), and a runtime
// with one loopback feed receiving a datagram (signet::net).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <sys/socket.h>
#include <unistd.h>

#include <signet/core.hpp>
#include <signet/net/runtime.hpp>

int main() {
    signet::work_contract_group group(64);
    int runs = 0;
    auto contract = group.create_contract([&runs] { ++runs; });
    contract.schedule();
    while (group.execute_next_contract()) {
    }

    using namespace signet::net;
    runtime rt({.backend = backend_kind::epoll, .workers = 1});
    feed_options feed;
    feed.name = "downstream";
    feed.lines.push_back({.bind = udp_endpoint::parse("127.0.0.1:0")});
    std::atomic<int> packets{0};
    auto id =
        rt.add_feed(feed, [&](packet const&) { packets.fetch_add(1, std::memory_order_relaxed); });
    rt.start();
    int const fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    auto const to = rt.local_endpoint(id);
    ::sendto(fd, "x", 1, 0, to.data(), to.size());
    ::close(fd);
    for (int i = 0; i < 5000 && packets.load(std::memory_order_relaxed) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rt.stop();
    std::printf("downstream: contract runs %d, packets %d\n", runs,
                packets.load(std::memory_order_relaxed));
    return runs == 1 && packets.load(std::memory_order_relaxed) == 1 ? 0 : 1;
}
