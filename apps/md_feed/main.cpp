// md_feed: publishes market data from signet::publisher — the protocol --protocol names (its
// flags and its run: feed_protocol.hpp, the list in protocols.cpp) over the lines, pacing and
// fault injection every protocol shares; the report is stdout's last line. Exit codes: 0 ok, 1
// runtime error (unreadable input, a port taken, ...), 2 bad command line.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>

#include "cli.hpp"
#include "feed_protocol.hpp"
#include "run.hpp"

namespace {

using namespace signet;

extern "C" void on_signal(int) {
    // relaxed: a polled flag, nothing more
    md_feed::interrupted.store(true, std::memory_order_relaxed);
}

std::optional<net::udp_endpoint> address(std::string const& text) { // "1.2.3.4" or "1.2.3.4:5"
    auto const a = net::udp_endpoint::try_parse_address(text);
    return a ? a : net::udp_endpoint::try_parse(text);
}

/// The protocol --protocol names on the command line (the default when it names none), read
/// before the protocols' flags exist: CLI11 gives a flag to the first group that registered its
/// name, so the chosen protocol's group is registered first and a flag several protocols have
/// (--symbols, --heartbeat) reaches the chosen one. A bad value is refused by the real parse.
std::size_t protocol_on_command_line(int argc, char** argv, std::vector<std::string> const& names) {
    CLI::App first_pass;
    first_pass.allow_extras();
    first_pass.set_help_flag();
    std::string protocol;
    first_pass.add_option("--protocol", protocol);
    try {
        first_pass.parse(argc, argv);
    } catch (CLI::ParseError const&) {
        return 0; // the real parse says what is wrong
    }
    auto const at = std::find(names.begin(), names.end(), protocol);
    return at == names.end() ? 0 : static_cast<std::size_t>(at - names.begin());
}

/// Every option of the protocols other than `chosen` that is on the command line, with the
/// protocols that have it.
std::string foreign_flag(std::vector<std::unique_ptr<md_feed::feed_protocol>> const& all,
                         std::vector<CLI::Option_group*> const& groups, std::size_t chosen) {
    for (std::size_t p = 0; p < all.size(); ++p) {
        for (CLI::Option const* option : groups[p]->get_options()) {
            if (p == chosen || option->count() == 0) {
                continue;
            }
            std::string owners;
            for (std::size_t q = 0; q < all.size(); ++q) {
                if (groups[q]->get_option_no_throw(option->get_name()) != nullptr) {
                    owners += (owners.empty() ? "" : " or ") + std::string(all[q]->name());
                }
            }
            return option->get_name() + " applies to --protocol " + owners + ", not " +
                   std::string(all[chosen]->name());
        }
    }
    return {};
}

} // namespace

int main(int argc, char** argv) {
    auto const protocols = md_feed::protocols();
    CLI::App cli{"md_feed: market-data feed generator (the protocols: --protocol)"};
    cli.option_defaults()->always_capture_default();
    md_feed::common_options common;
    std::string protocol(protocols.front()->name());
    std::string to, to_b, source, drop = "both";
    auto const opt = [&cli](auto&&... args) {
        return cli.add_option(args...);
    };
    auto const ip_port = cli::parses(net::udp_endpoint::try_parse, "ip:port, e.g. 127.0.0.1:30001");
    auto const whole = cli::whole_number();
    std::vector<std::string> names;
    std::string choices;
    for (auto const& p : protocols) {
        names.emplace_back(p->name());
        choices += "; " + std::string(p->name()) + ": " + std::string(p->description());
    }
    opt("--protocol", protocol, "what to publish" + choices)->check(CLI::IsMember(names));
    auto* to_o = opt("--to", to, "line A destination ip:port (unicast or multicast); required")
                     ->check(ip_port);
    auto* to_b_o = opt("--to-b", to_b, "line B destination ip:port (A/B: every packet to both)")
                       ->check(ip_port);
    auto* rate_o = opt("--rate", common.rate,
                       "messages/s (the protocol's unit); 0 = as fast as possible (--replay-pcap: "
                       "packets/s, not the captured timing)")
                       ->check(cli::number_in(0, 1e9, "per second"));
    opt("--duration", common.duration_s,
        "seconds of data, then close; 0 = until --count or a "
        "signal")
        ->check(cli::number_in(0, cli::max_duration_s, "s"));
    opt("--count", common.count, "messages (the protocol's unit), then close; 0 = no limit")
        ->check(whole);
    opt("--seed", common.seed, "generator seed (same seed, same stream)")->check(whole);
    opt("--ttl", common.socket.ttl, "multicast TTL")->check(CLI::Range(0, 255));
    opt("--loop", common.socket.loop, "multicast loopback (true/false)");
    opt("--interface", common.socket.interface, "multicast interface name")->default_str("none");
    opt("--source", source,
        "local IP the socket binds to (an SSM (232/8) receiver accepts only its source); none = "
        "the route's source address (0.0.0.0 on a `dev lo` route without `src`)")
        ->check(cli::parses(address, "an IP address (or ip:port), e.g. 127.0.0.1"))
        ->default_str("none");
    opt("--drop-every", common.faults.drop_every, "fault injection: do not send every Nth packet")
        ->check(whole);
    opt("--drop-line", drop, "which line --drop-every affects: a, b or both")
        ->check(cli::parses(publisher::parse_fault_line, "a, b or both"))
        ->needs(to_b_o);
    opt("--dup-every", common.faults.duplicate_every,
        "fault injection: send every Nth packet twice")
        ->check(whole);
    opt("--reorder-every", common.faults.reorder_every,
        "fault injection: send every Nth packet after the one that follows it")
        ->check(whole);
    opt("--report-json", common.report_path, "also write the report to this file");
    opt("--truth-out", common.truth_path,
        "write the books the exchange holds after each sequence generated, as JSON lines "
        "(tests: the consumer-truth check)")
        ->type_name("FILE");
    // Each protocol's flags, in a group named after it, the chosen protocol's first (it takes
    // the flags several protocols have): a flag of another protocol is refused.
    std::size_t const named = protocol_on_command_line(argc, argv, names);
    std::vector<CLI::Option_group*> groups(protocols.size());
    for (std::size_t i = 0; i < protocols.size(); ++i) {
        std::size_t const p = i == 0 ? named : i <= named ? i - 1 : i;
        std::string const name(protocols[p]->name());
        groups[p] = cli.add_option_group(name, "--protocol " + name + " only");
        protocols[p]->add_options(*groups[p]);
    }
    common.socket.source_name = "--source";
    common.socket.interface_name = "--interface";
    if (auto const code = cli::parse_command_line(cli, argc, argv, "md_feed", {to_o})) {
        return *code;
    }
    std::size_t const chosen =
        static_cast<std::size_t>(std::find(names.begin(), names.end(), protocol) - names.begin());
    common.lines.push_back(*net::udp_endpoint::try_parse(to));
    if (!to_b.empty()) {
        common.lines.push_back(*net::udp_endpoint::try_parse(to_b));
    }
    common.socket.source = source.empty() ? std::nullopt : address(source);
    common.rate_given = rate_o->count() > 0;
    common.faults.drop_line = *publisher::parse_fault_line(drop);
    std::string problem = foreign_flag(protocols, groups, chosen);
    for (auto const& [name, other] :
         {std::pair{"--to-b",
                    common.lines.size() > 1 ? std::optional(common.lines[1]) : std::nullopt},
          std::pair{"--source", common.socket.source}}) {
        if (problem.empty() && other && other->family() != common.lines.front().family()) {
            problem = std::string(name) + " and --to are different address families";
        }
    }
    if (problem.empty()) {
        problem = protocols[chosen]->check(common);
    }
    if (!problem.empty()) {
        std::fprintf(stderr, "md_feed: %s\n", problem.c_str());
        return 2;
    }
    ::signal(SIGINT, on_signal);
    ::signal(SIGTERM, on_signal);
    return protocols[chosen]->run(common);
}
