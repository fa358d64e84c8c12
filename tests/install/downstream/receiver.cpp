// A consumer of the installed signet::receiver: a receiver configured in code on a loopback
// port, one MoldUDP64 packet (built with signet::md's packer) sent to it, the summary checked.
#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>
#include <signet/receiver/receiver.hpp>
#include <signet/receiver/summary.hpp>

int main() {
    using namespace signet;
    receiver::receiver_config config;
    receiver::feed_config feed;
    feed.name = "downstream";
    feed.bind = net::udp_endpoint::parse("127.0.0.1:0");
    feed.protocol = std::make_shared<receiver::nasdaq::moldudp64_settings>();
    config.feeds.push_back(feed);
    receiver::receiver feeds(config, {.stats_lines = false});
    feeds.start();
    std::array<std::byte, 64> buffer{};
    md::nasdaq::moldudp64_packer packer(buffer, "DOWNSTREAM");
    std::array<std::byte, 12> system_event{std::byte{'S'}};
    (void)packer.append(system_event);
    auto const packet = packer.finish();
    net::udp_socket sender({.bind = net::udp_endpoint::parse("127.0.0.1:0")});
    (void)sender.send_to(packet, feeds.runtime().local_endpoint(0));
    for (int i = 0; i < 2000 && feeds.parser(0).live().messages == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5)); // a polling period
    }
    feeds.stop();
    std::string const summary = receiver::summary_json(feeds);
    std::printf("%s\n", summary.c_str());
    return summary.find("\"messages\":1,") != std::string::npos ? 0 : 1;
}
