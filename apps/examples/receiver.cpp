// A full market-data receiver: the feeds of a TOML config (ITCH 5.0 over MoldUDP64, CME MDP
// 3.0, ...), stats lines while it runs, the summary at the end. Try: example_receiver
// config/demo.toml 10 (and md_feed).
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/receiver/receiver.hpp>
#include <signet/receiver/summary.hpp>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s CONFIG.toml SECONDS\n", argv[0]);
        return 2;
    }
    signet::net::set_logger(spdlog::default_logger()); // the library's info lines: stats
    signet::receiver::receiver receiver(signet::receiver::load_receiver_config(argv[1]));
    receiver.start(); // feeds run on the receiver's workers from here
    std::this_thread::sleep_for(std::chrono::duration<double>(std::stod(argv[2])));
    receiver.stop(); // drains; the books and counters are final
    std::fputs(signet::receiver::summary_text(receiver).c_str(), stdout);
    return 0;
}
