// md_feed: ITCH 5.0 over MoldUDP64 from signet::publisher; the report is stdout's last line. Exit
// codes: 0 ok, 1 runtime error (unreadable input, a port taken, ...), 2 bad command line.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>

#include <signet/publisher/cme/mdp3_generator.hpp>
#include <signet/publisher/glimpse_service.hpp>
#include <signet/publisher/mdp3_publisher.hpp>
#include <signet/publisher/publisher.hpp>
#include <signet/publisher/report.hpp>
#include <signet/publisher/request_service.hpp>
#include <signet/publisher/udp_lines.hpp>

#include "cli.hpp"

namespace {

using namespace signet;
namespace pub = signet::publisher;

std::atomic<bool> interrupted{false}; // the publisher's stop_flag
extern "C" void on_signal(int) {
    interrupted.store(true, std::memory_order_relaxed); // relaxed: a polled flag, nothing more
}

std::optional<net::udp_endpoint> address(std::string const& text) { // "1.2.3.4" or "1.2.3.4:5"
    auto const a = net::udp_endpoint::try_parse_address(text);
    return a ? a : net::udp_endpoint::try_parse(text);
}

// The report file, opened before anything is sent (an unwritable path fails first).
std::ofstream open_report(std::string const& path) {
    std::ofstream file;
    if (!path.empty() && (errno = 0, file.open(path), !file)) {
        throw std::system_error(errno != 0 ? errno : EIO, std::generic_category(),
                                "cannot write the report to " + path);
    }
    return file;
}

// The report as stdout's last line and into the file; a failed run is then an error.
void finish_run(std::string const& report, std::ofstream& file, std::string const& path,
                pub::run_result const& result) {
    std::printf("%s\n", report.c_str());
    if (file.is_open() && !(file << report << '\n').flush()) {
        throw std::runtime_error("cannot write the report to " + path);
    }
    if (!result.ok()) {
        throw std::runtime_error(result.error);
    }
}

// --protocol mdp3: a CME MDP 3.0 channel (incremental A/B, snapshot loop, definitions).
int run_mdp3(pub::mdp3_publisher_options options,
             signet::publisher::cme::mdp3_generator_options generation,
             std::vector<net::udp_endpoint> incremental, net::udp_endpoint snapshot_to,
             net::udp_endpoint definitions_to, net::udp_sender_options socket,
             std::string const& report_path) {
    try {
        std::ofstream report_file = open_report(report_path);
        signet::publisher::cme::mdp3_generator generator(generation);
        pub::udp_lines lines(std::move(incremental), socket);
        pub::udp_lines snapshots({snapshot_to}, socket);
        pub::udp_lines definitions({definitions_to}, socket);
        pub::mdp3_publisher publisher(options, generator, lines, snapshots, definitions);
        auto const start = std::chrono::steady_clock::now();
        pub::run_result const result = publisher.run();
        std::string const report = publisher.report_json(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        pub::mdp3_counts const& c = publisher.counts();
        std::fprintf(stderr,
                     "md_feed: mdp3: sent %llu incremental packets (dropped %llu, one line %llu, "
                     "duplicated %llu, reordered %llu), %llu snapshot packets, %llu definitions\n",
                     static_cast<unsigned long long>(c.packets),
                     static_cast<unsigned long long>(c.dropped_packets),
                     static_cast<unsigned long long>(c.dropped_one_line_packets),
                     static_cast<unsigned long long>(c.duplicated_packets),
                     static_cast<unsigned long long>(c.reordered_packets),
                     static_cast<unsigned long long>(c.snapshot_packets),
                     static_cast<unsigned long long>(c.definition_packets));
        finish_run(report, report_file, report_path, result);
    } catch (std::exception const& e) {
        std::fprintf(stderr, "md_feed: %s\n", cli::describe(e).c_str());
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"md_feed: ITCH 5.0 over MoldUDP64 feed generator"};
    cli.option_defaults()->always_capture_default();
    pub::publisher_options feed{.stop_flag = &interrupted};
    signet::publisher::nasdaq::itch_generator_options generation;
    net::udp_sender_options socket{.source_name = "--source", .interface_name = "--interface"};
    pub::request_service_options serving{.requests_per_second = 5000};
    pub::glimpse_service_options snapshots;
    pub::mdp3_publisher_options mdp3{.stop_flag = &interrupted};
    signet::publisher::cme::mdp3_generator_options mdp3_generation;
    std::string protocol = "moldudp64", snapshot_to, definitions_to;
    double snapshot_interval_ms = 1, definition_interval_ms = 5, tail = 1;
    std::string to, to_b, source, drop = "both", replay, report_path, pcap, group;
    double heartbeat = 1, duration = 0, linger = 2, speed = 1;
    std::size_t store = 1'000'000;
    std::uint16_t pcap_port = 0;
    auto const opt = [&cli](auto&&... args) {
        return cli.add_option(args...);
    };
    auto const ip_port = cli::parses(net::udp_endpoint::try_parse, "ip:port, e.g. 127.0.0.1:30001");
    auto const whole = cli::whole_number();
    auto* to_o = opt("--to", to, "line A destination ip:port (unicast or multicast); required")
                     ->check(ip_port);
    auto* to_b_o = opt("--to-b", to_b, "line B destination ip:port (A/B: every packet to both)")
                       ->check(ip_port);
    auto* rate_o = opt("--rate", feed.rate,
                       "messages/s; 0 = as fast as possible (--replay-pcap: packets/s, not the "
                       "captured timing)");
    opt("--duration", duration, "seconds of data, then close; 0 = until --count or a signal")
        ->check(cli::number_in(0, cli::max_duration_s, "s"));
    opt("--count", generation.messages, "body messages, then close (generator); 0 = no limit")
        ->check(whole);
    opt("--batch", feed.batch, "messages per packet (at most; packets stay <= 1400 bytes)")
        ->check(CLI::Range(1, 1000));
    auto* session_o = opt("--session", feed.session,
                          "MoldUDP64 session (10 characters, space padded; --replay-pcap with "
                          "--serve-rerequests: the one served, default the capture's first)");
    opt("--seed", generation.seed, "generator seed (same seed, same stream)")->check(whole);
    opt("--symbols", generation.symbols, "stocks in the directory")->check(CLI::Range(1, 65535));
    auto* live_o = opt("--live-orders", generation.target_live_orders,
                       "orders the generator keeps live (it adds more often below this)")
                       ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 26));
    opt("--ttl", socket.ttl, "multicast TTL")->check(CLI::Range(0, 255));
    opt("--loop", socket.loop, "multicast loopback (true/false)");
    opt("--interface", socket.interface, "multicast interface name")->default_str("none");
    opt("--source", source,
        "local IP the socket binds to (an SSM (232/8) receiver accepts only its source); none = "
        "the route's source address (0.0.0.0 on a `dev lo` route without `src`)")
        ->check(cli::parses(address, "an IP address (or ip:port), e.g. 127.0.0.1"))
        ->default_str("none");
    opt("--heartbeat", heartbeat,
        "MoldUDP64 heartbeat interval: no line is silent longer (a heartbeat, or the packet "
        "holding messages, goes out), so no message waits longer for its packet")
        ->check(cli::number_in(0.001, 3600, "s"));
    opt("--drop-every", feed.faults.drop_every, "fault injection: do not send every Nth packet")
        ->check(whole);
    auto* drop_o = opt("--drop-line", drop, "which line --drop-every affects: a, b or both");
    opt("--dup-every", feed.faults.duplicate_every, "fault injection: send every Nth packet twice")
        ->check(whole);
    opt("--reorder-every", feed.faults.reorder_every,
        "fault injection: send every Nth packet after the one that follows it")
        ->check(whole);
    auto* replay_o = opt("--replay", replay, "send a Nasdaq BinaryFILE (length-prefixed ITCH)");
    opt("--report-json", report_path, "also write the report to this file");
    auto* pcap_o = opt("--replay-pcap", pcap,
                       "re-send a capture's UDP payloads (pcap/pcapng; Ethernet, Linux SLL/SLL2 "
                       "or raw IPv4) at the captured timing scaled by --speed, or at --rate");
    auto* speed_o =
        opt("--speed", speed, "--replay-pcap: the captured timing sped up N times; 0 = at once");
    auto* port_o = opt("--pcap-port", pcap_port, "--replay-pcap: only datagrams to this port");
    auto* group_o =
        opt("--pcap-group", group, "--replay-pcap: only datagrams to this IPv4 address");
    auto* serve_o = opt("--serve-rerequests", serving.port,
                        "answer MoldUDP64 re-requests on this UDP port (any address of --to's "
                        "family; 0 = a free port, printed on stderr)");
    auto* store_o = opt("--store-messages", store,
                        "--serve-rerequests: the last N messages are kept to answer from (N x 50 "
                        "bytes: ITCH messages; longer ones, fewer)");
    auto* rate_limit_o = opt("--rerequest-rate", serving.requests_per_second,
                             "--serve-rerequests: requests/s per client (burst: one second's)");
    auto* answer_o = opt("--rerequest-max-messages", serving.max_messages_per_answer,
                         "--serve-rerequests: messages per answer at most (more are clamped)");
    opt("--protocol", protocol,
        "moldudp64 (ITCH 5.0) or mdp3 (CME MDP 3.0: --to/--to-b carry the "
        "incremental feed, --count and --rate count its packets)")
        ->check(CLI::IsMember({"moldudp64", "mdp3"}));
    auto* snapshot_to_o =
        opt("--snapshot-to", snapshot_to, "mdp3: the snapshot loop's destination ip:port")
            ->check(ip_port);
    auto* definitions_to_o = opt("--definitions-to", definitions_to,
                                 "mdp3: the instrument definitions' destination ip:port")
                                 ->check(ip_port);
    auto* instruments_o =
        opt("--instruments", mdp3_generation.instruments, "mdp3: instruments of the channel")
            ->check(CLI::Range(1, 200));
    auto* depth_o =
        opt("--depth", mdp3_generation.depth, "mdp3: book depth")->check(CLI::Range(1, 32));
    auto* snapshot_interval_o =
        opt("--snapshot-interval", snapshot_interval_ms, "mdp3: ms between snapshot packets")
            ->check(cli::number_in(0.001, 60'000, "ms"));
    auto* definition_interval_o =
        opt("--definition-interval", definition_interval_ms, "mdp3: ms between definition packets")
            ->check(cli::number_in(0.001, 60'000, "ms"));
    auto* tail_o = opt("--tail", tail,
                       "mdp3: seconds of snapshot and definition loops after "
                       "the last incremental packet")
                       ->check(cli::number_in(0, 3600, "s"));
    auto* glimpse_o = opt("--serve-glimpse", snapshots.port,
                          "serve GLIMPSE 5.0 snapshots (SoupBinTCP) on this TCP port (any address "
                          "of --to's family; 0 = a free port, printed on stderr)");
    auto* glimpse_user_o = opt("--glimpse-username", snapshots.username,
                               "--serve-glimpse: the login's username (default: any login)");
    auto* glimpse_password_o =
        opt("--glimpse-password", snapshots.password, "--serve-glimpse: the login's password");
    auto* linger_o = opt("--linger", linger,
                         "--serve-rerequests, --serve-glimpse: seconds of serving after sending "
                         "ends (the tail)");
    rate_o->check(cli::number_in(0, 1e9, "messages/s"));
    drop_o->check(cli::parses(pub::parse_fault_line, "a, b or both"))->needs(to_b_o);
    pcap_o->type_name("FILE")->excludes(replay_o);
    speed_o->check(cli::number_in(0, 1e6, "x"))->needs(pcap_o)->excludes(rate_o);
    port_o->check(CLI::Range(0, 65535))->needs(pcap_o)->default_str("any");
    group_o->check(cli::parses(pub::parse_ipv4, "an IPv4 address, e.g. 239.1.1.1"))->needs(pcap_o);
    group_o->type_name("IP")->default_str("any");
    serve_o->check(CLI::Range(0, 65535))->type_name("PORT")->default_str("off");
    store_o->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32))->needs(serve_o);
    store_o->default_str("1000000, --replay: the whole file");
    rate_limit_o->check(cli::number_in(0.001, 1e9, "requests/s"))->needs(serve_o);
    answer_o->check(CLI::Range(1U, 65535U))->needs(serve_o);
    glimpse_o->check(CLI::Range(0, 65535))->type_name("PORT")->default_str("off");
    glimpse_o->excludes(pcap_o); // a capture's messages are not generated here: no book
    glimpse_user_o->needs(glimpse_o)->check(CLI::Validator(
        [](std::string& v) { return v.size() <= 6 ? "" : "at most 6 characters"; }, "USER"));
    glimpse_password_o->needs(glimpse_o)->check(CLI::Validator(
        [](std::string& v) { return v.size() <= 10 ? "" : "at most 10 characters"; }, "PASS"));
    linger_o->check(cli::number_in(0, 3600, "s"));
    linger_o->default_str("2 when serving, else 0");
    if (auto const code = cli::parse_command_line(cli, argc, argv, "md_feed", {to_o})) {
        return *code;
    }
    if (protocol == "mdp3") {
        for (CLI::Option const* only_itch :
             {serve_o, glimpse_o, replay_o, pcap_o, session_o, live_o, linger_o}) {
            if (only_itch->count() > 0) {
                std::fprintf(stderr, "md_feed: %s does not apply to --protocol mdp3\n",
                             only_itch->get_name().c_str());
                return 2;
            }
        }
        if (snapshot_to_o->count() == 0 || definitions_to_o->count() == 0) {
            std::fputs("md_feed: --protocol mdp3 needs --snapshot-to and --definitions-to\n",
                       stderr);
            return 2;
        }
        mdp3.rate = feed.rate;
        mdp3.packets = generation.messages;
        mdp3.duration = cli::seconds(duration);
        mdp3.snapshot_interval = cli::seconds(snapshot_interval_ms / 1000);
        mdp3.definition_interval = cli::seconds(definition_interval_ms / 1000);
        mdp3.tail = cli::seconds(tail);
        mdp3.faults = feed.faults;
        mdp3.faults.drop_line = *pub::parse_fault_line(drop);
        mdp3_generation.seed = generation.seed;
        std::vector<net::udp_endpoint> incremental{*net::udp_endpoint::try_parse(to)};
        if (!to_b.empty()) {
            incremental.push_back(*net::udp_endpoint::try_parse(to_b));
        }
        socket.source = address(source);
        ::signal(SIGINT, on_signal);
        ::signal(SIGTERM, on_signal);
        return run_mdp3(mdp3, mdp3_generation, incremental,
                        *net::udp_endpoint::try_parse(snapshot_to),
                        *net::udp_endpoint::try_parse(definitions_to), socket, report_path);
    }
    for (CLI::Option const* only_mdp3 : {snapshot_to_o, definitions_to_o, instruments_o, depth_o,
                                         snapshot_interval_o, definition_interval_o, tail_o}) {
        if (only_mdp3->count() > 0) {
            std::fprintf(stderr, "md_feed: %s requires --protocol mdp3\n",
                         only_mdp3->get_name().c_str());
            return 2;
        }
    }
    if (linger_o->count() > 0 && serve_o->count() == 0 && glimpse_o->count() == 0) {
        std::fputs("md_feed: --linger requires --serve-rerequests or --serve-glimpse\n", stderr);
        return 2;
    }
    if (live_o->count() > 0) { // the hard cap: room above the target
        generation.max_live_orders = std::max<std::size_t>(
            generation.max_live_orders, generation.target_live_orders / 4 * 5 + 1);
    }
    net::udp_endpoint const a = *net::udp_endpoint::try_parse(to);
    auto const b = net::udp_endpoint::try_parse(to_b);
    socket.source = address(source);
    for (auto const& [name, other] : {std::pair{"--to-b", b}, {"--source", socket.source}}) {
        if (other && other->family() != a.family()) {
            std::fprintf(stderr, "md_feed: %s and --to are different address families\n", name);
            return 2;
        }
    }
    ::signal(SIGINT, on_signal);
    ::signal(SIGTERM, on_signal);
    try {
        std::ofstream report_file = open_report(report_path);
        pub::udp_lines lines(b ? std::vector{a, *b} : std::vector{a}, socket);
        std::optional<pub::pcap_source> capture; // unreadable: an error before anything is sent
        if (pcap_o->count() > 0) {
            auto const port = port_o->count() > 0 ? std::optional(pcap_port) : std::nullopt;
            capture.emplace(pcap, pub::pcap_filter{port, pub::parse_ipv4(group)});
        }
        std::optional<md::nasdaq::binary_file_reader> reader;
        if (!replay.empty()) {
            reader.emplace(replay);
        }
        signet::publisher::nasdaq::itch_generator generator(generation);
        std::optional<pub::request_service> service;
        if (serve_o->count() > 0) {
            serving.family = a.family();
            serving.session = capture && session_o->count() == 0 ? "" : feed.session;
            serving.store = reader && store_o->count() == 0 ? pub::store_for_file(replay)
                                                            : pub::store_for_messages(store);
            service.emplace(serving);
            std::fputs(("md_feed: serving re-requests on " + service->describe() + "\n").c_str(),
                       stderr);
        }
        std::optional<pub::glimpse_service> glimpse;
        if (glimpse_o->count() > 0) {
            snapshots.family = a.family();
            glimpse.emplace(snapshots);
            std::fprintf(stderr, "md_feed: serving GLIMPSE snapshots on TCP port %u\n",
                         static_cast<unsigned>(glimpse->port()));
        }
        if (service || glimpse) {
            feed.on_packet = [&](std::span<std::byte const> packet) {
                if (service) {
                    service->record(packet);
                }
                if (glimpse) {
                    glimpse->record(packet);
                }
            };
        }
        feed.faults.drop_line = *pub::parse_fault_line(drop);
        std::tie(feed.heartbeat, feed.duration) =
            std::pair{cli::seconds(heartbeat), cli::seconds(duration)};
        auto const fixed_rate = rate_o->count() > 0 ? std::optional(feed.rate) : std::nullopt;
        pub::publisher publisher(feed, lines);
        auto const start = std::chrono::steady_clock::now();
        pub::run_result const result = capture  ? publisher.replay(*capture, {fixed_rate, speed})
                                       : reader ? publisher.run(*reader)
                                                : publisher.run(generator);
        pub::report report{0, feed.session, publisher.counts()};
        if (reader) {
            report.add(*reader, replay);
        }
        if (capture) {
            report.add(*capture, pcap, result.error);
        }
        if (service || glimpse) {
            pub::wait_unless_interrupted(cli::seconds(linger), &interrupted); // the tail
            if (service) {
                service->stop();
                report.add(*service);
            }
            if (glimpse) {
                glimpse->stop();
                report.add(*glimpse);
            }
        }
        report.elapsed_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "%s", report.summary("md_feed").c_str());
        finish_run(report.text(), report_file, report_path, result);
    } catch (std::exception const& e) {
        std::fprintf(stderr, "md_feed: %s\n", cli::describe(e).c_str());
        return 1;
    }
    return 0;
}
