// A consumer of the installed package: one contract run by hand (signet::core), a runtime with
// one loopback feed receiving a datagram (signet::net), and a publisher sending generated ITCH
// to that feed (signet::publisher, whose link interface brings libpcap and nlohmann_json).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <signet/core.hpp>
#include <signet/net/runtime.hpp>
#include <signet/publisher/nasdaq/moldudp64_publisher.hpp>
#include <signet/publisher/nasdaq/moldudp64_report.hpp>
#include <signet/publisher/udp_lines.hpp>

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
    signet::publisher::udp_lines lines({rt.local_endpoint(id)}, {});
    signet::publisher::nasdaq::moldudp64_publisher feed_out(
        {.rate = 0, .end_of_session_packets = 1}, lines);
    signet::publisher::nasdaq::itch_generator generator({.symbols = 1, .messages = 0});
    generator.close(); // the opening, the directory and the closing: 7 messages, one packet
    bool const sent = feed_out.run(generator).ok();
    for (int i = 0; i < 5000 && packets.load(std::memory_order_relaxed) < 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    signet::publisher::nasdaq::moldudp64_report report{0, "SIGNET0001", feed_out.counts()};
    rt.stop();
    std::printf("downstream: contract runs %d, packets %d, report %s\n", runs,
                packets.load(std::memory_order_relaxed), report.text().c_str());
    return runs == 1 && sent && packets.load(std::memory_order_relaxed) == 2 ? 0 : 1;
}
