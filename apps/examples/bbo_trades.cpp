// Best bid/offer changes and trades of chosen symbols, from any md_receiver config (any
// protocol): example_bbo_trades config/demo.toml 10 AAPL MSFT (and md_feed).
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>

#include <signet/receiver/receiver.hpp>

#include <fmt/core.h>

using namespace signet;

int main(int argc, char** argv) {
    if (argc < 4) {
        fmt::print(stderr, "usage: {} CONFIG.toml SECONDS SYMBOL...\n", argv[0]);
        return 2;
    }
    receiver::receiver feeds(receiver::load_receiver_config(argv[1]));
    std::map<std::string, double> unit; // a price unit per symbol, from its definition
    using k = md::event_kind;
    auto const kinds = md::event_mask::of({k::instrument_definition, k::bbo, k::trade});
    feeds.subscribe({.symbols = {argv + 3, argv + argc}, .kinds = kinds}, [&](auto const& v) {
        md::event const& e = v.event;
        double& u = unit[std::string(v.symbol)];
        if (e.kind == k::instrument_definition) {
            u = std::pow(10.0, e.definition.price_exponent);
        } else if (e.kind == k::bbo) {
            fmt::print("{} bbo {} @ {} / {} @ {}\n", v.symbol, e.bbo.bid_size,
                       double(e.bbo.bid_price) * u, e.bbo.ask_size, double(e.bbo.ask_price) * u);
        } else {
            fmt::print("{} trade {} @ {}\n", v.symbol, e.trade.quantity, double(e.trade.price) * u);
        }
    });
    feeds.start(); // events reach the handler on one of the receiver's event workers
    std::this_thread::sleep_for(std::chrono::duration<double>(std::stod(argv[2])));
    feeds.stop();
}
