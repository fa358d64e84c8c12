// signet_publish_rate: what publishing costs the receiver, and how many events a second it gets
// out. One signet::receiver (N moldudp64 feeds, one worker pinned to CPU 0, the default
// backend) takes a paced MoldUDP64 + ITCH 5.0 stream from bench/packet_rate's sender (CPU 1,
// packets round-robin over the feeds; the worker blocks when idle, so its CPU time is work)
// with one of these publishers:
//   off           none: the baseline;
//   shm           [publish] shm (the ring and the instruments' slots; no reader attached);
//   nats          [publish] nats into a running nats-server (--nats URL), core subjects;
//   nats_stalled  the same, the server stopped with SIGSTOP (--nats-pid) for the measured
//                 window: the receive path must not notice.
// Every point also has an inline subscription per feed (bench/events/latency_probe.hpp, its
// clocks read once per packet) that records the sender's stamp -> its handler: the receive
// path's latency with the publisher beside it.
// Per point, over the measured window: the receiver's CPU time per packet (all its threads:
// the worker, the event workers, libnats's threads; not the sender's), packets received/sent,
// events a second the parsers produced (each goes to every publisher), what the NATS bridge
// published and dropped, and the probe's p50/p99. Publishers run in interleaved rounds at each
// (feeds, rate). bench/run-publish-rate starts the nats-server and writes
// bench/results/publish_rate.json (docs/benchmarks.md quotes it).
//
//   signet_publish_rate --publishers off,shm --feeds 1,8 --rates 200000 --rounds 3
//   signet_publish_rate --publishers off,shm,nats,nats_stalled --nats nats://127.0.0.1:4222
//                       --nats-pid 1234 --json out.json

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>
#include <signet/receiver/receiver.hpp>

#include "common.hpp"
#include "latency_probe.hpp"
#include "points_file.hpp"
#include "sender.hpp"
#include <nlohmann/json.hpp>

namespace {

using namespace signet;
using json = nlohmann::ordered_json;

struct settings {
    double duration_s = 3;
    double warmup_s = 0.5;
    int receiver_cpu = 0;
    int sender_cpu = 1;
    std::string nats_url;
    pid_t nats_pid = 0;
};

receiver::receiver_config make_config(std::size_t feeds, std::string const& publisher,
                                      settings const& s, std::string const& shm_name) {
    receiver::receiver_config config;
    config.stats_interval_s = 1;
    config.silent_warning_s = 0;
    config.workers = 1;
    config.idle = idle_strategy::block; // CPU time is work, not an idle worker's spinning
    if (s.receiver_cpu >= 0) {
        config.cpus = {s.receiver_cpu};
    }
    for (std::size_t f = 0; f < feeds; ++f) {
        receiver::feed_config feed;
        feed.name = "bench" + std::to_string(f);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        feed.bind = net::udp_endpoint::from_sockaddr(reinterpret_cast<sockaddr const*>(&address),
                                                     sizeof(address));
        feed.protocol = std::make_shared<receiver::nasdaq::moldudp64_settings>();
        config.feeds.push_back(feed);
    }
    if (publisher == "shm") {
        config.shm = shm_name;
    } else if (publisher.starts_with("nats")) {
        config.nats.url = s.nats_url;
        config.nats.stream = false; // core subjects: the rate is theirs
    }
    return config;
}

std::uint64_t packets_of(receiver::receiver const& r, std::size_t feeds) {
    std::uint64_t sum = 0;
    for (std::size_t f = 0; f < feeds; ++f) {
        sum += r.parser(f).live().packets;
    }
    return sum;
}

json run_point(std::string const& publisher, std::size_t feeds, double messages_per_s,
               settings const& s, bench::packet_templates const& templates) {
    std::string const shm_name = "signet-publish-rate-" + std::to_string(::getpid());
    std::vector<pid_t> before = bench::thread_ids(); // the controlling thread and leftovers
    // A probe per feed: an inline handler runs in one feed's parser contract.
    std::vector<std::unique_ptr<bench::latency_probe>> probes;
    receiver::receiver rx(make_config(feeds, publisher, s, shm_name),
                          receiver::receiver_options{.stats_lines = false});
    for (std::size_t f = 0; f < feeds; ++f) {
        auto& probe = *probes.emplace_back(std::make_unique<bench::latency_probe>(true));
        rx.subscribe({.name = "probe" + std::to_string(f),
                      .feeds = {"bench" + std::to_string(f)},
                      .mode = receiver::delivery_mode::inline_call},
                     [&probe](receiver::event_view const& v) { probe.on_event(v.event); });
    }
    auto const events = [&probes] {
        std::uint64_t sum = 0;
        for (auto const& p : probes) {
            sum += p->events();
        }
        return sum;
    };
    auto const record = [&probes](bool on) {
        for (auto const& p : probes) {
            p->record(on);
        }
    };
    rx.start();
    std::vector<pid_t> const with_receiver = bench::thread_ids();
    std::vector<std::uint16_t> ports;
    for (std::size_t f = 0; f < feeds; ++f) {
        ports.push_back(rx.runtime().local_endpoint(f).port());
    }
    double const packets_per_s = messages_per_s / templates.mean_messages();
    bench::sender out(
        {.ports = ports,
         .templates = &templates,
         .rate = packets_per_s,
         .batch = 32,
         .limit = static_cast<std::uint64_t>(packets_per_s * (s.warmup_s + s.duration_s + 0.5)),
         .cpu = s.sender_cpu});
    out.start();
    // The sender's thread is the one the start added; every other thread is the receiver's
    // (libnats may start its own later: they count).
    std::vector<pid_t> sender_thread = bench::threads_except(with_receiver);
    std::vector<pid_t> exclude = before;
    exclude.insert(exclude.end(), sender_thread.begin(), sender_thread.end());
    std::sort(exclude.begin(), exclude.end());

    std::this_thread::sleep_for(std::chrono::duration<double>(s.warmup_s)); // the warm-up phase
    bool const stall = publisher == "nats_stalled";
    if (stall) {
        ::kill(s.nats_pid, SIGSTOP);
    }
    auto const nats_a = rx.nats();
    std::vector<pid_t> const threads_a = bench::threads_except(exclude);
    std::uint64_t const cpu_a = bench::cpu_of(threads_a);
    std::uint64_t const packets_a = packets_of(rx, feeds);
    std::uint64_t const events_a = events();
    std::uint64_t const sent_a = out.sent();
    std::uint64_t const t_a = bench::monotonic_ns();
    record(true);
    std::this_thread::sleep_for(std::chrono::duration<double>(s.duration_s)); // the window
    record(false);
    std::vector<pid_t> const threads_b = bench::threads_except(exclude);
    std::uint64_t const cpu_b = bench::cpu_of(threads_b);
    // Threads that ended inside the window are not counted; threads that started inside it
    // count from their start (cpu_a did not include them).
    std::uint64_t const packets_b = packets_of(rx, feeds);
    std::uint64_t const events_b = events();
    std::uint64_t const sent_b = out.sent();
    std::uint64_t const t_b = bench::monotonic_ns();
    auto const nats_b = rx.nats();
    if (stall) {
        ::kill(s.nats_pid, SIGCONT);
    }
    out.stop();
    rx.stop();
    if (publisher == "shm") {
        ::shm_unlink(("/" + shm_name).c_str());
    }
    metrics::histogram::snapshot latency;
    for (auto const& p : probes) {
        latency += p->from_send().take();
    }
    double const seconds = static_cast<double>(t_b - t_a) * 1e-9;
    std::uint64_t const packets = packets_b - packets_a;
    json p{{"publisher", publisher},
           {"feeds", feeds},
           {"messages_per_s", messages_per_s},
           {"packets_per_s", packets_per_s},
           {"seconds", seconds},
           {"packets_sent", sent_b - sent_a},
           {"packets_received", packets},
           {"receiver_threads", threads_b.size()},
           {"cpu_ns_per_packet",
            packets != 0
                ? static_cast<double>(cpu_b - std::min(cpu_b, cpu_a)) / static_cast<double>(packets)
                : 0.0},
           {"events_per_s", static_cast<double>(events_b - events_a) / seconds},
           {"send_to_handler_ns", bench::percentiles(latency)}};
    if (nats_a && nats_b) {
        p["nats"] = {
            {"published_per_s",
             static_cast<double>(nats_b->published - nats_a->published) / seconds},
            {"dropped_per_s", static_cast<double>(nats_b->dropped - nats_a->dropped) / seconds},
            {"failed", nats_b->failed - nats_a->failed},
            {"disconnects", nats_b->disconnects}};
    }
    return p;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"signet publishing: the receiver's CPU per packet and events/s with each "
                 "publisher, beside none"};
    std::vector<double> rates{200'000, 2'000'000};
    std::vector<std::size_t> feed_counts{1, 8};
    std::vector<std::string> publishers{"off", "shm"};
    std::size_t rounds = 3;
    std::string json_path;
    std::vector<int> cpus{0, 1};
    settings s;
    app.add_option("--rates", rates, "messages/s over all feeds, paced")->delimiter(',');
    app.add_option("--feeds", feed_counts, "feed counts")->delimiter(',');
    app.add_option("--publishers", publishers, "off, shm, nats, nats_stalled")
        ->delimiter(',')
        ->check(CLI::IsMember({"off", "shm", "nats", "nats_stalled"}));
    app.add_option("--nats", s.nats_url, "the nats publishers' server (nats://host:port)");
    app.add_option("--nats-pid", s.nats_pid, "nats_stalled: the server's pid (SIGSTOP/SIGCONT)");
    app.add_option("--rounds", rounds, "interleaved rounds (every publisher at every point)");
    app.add_option("--duration", s.duration_s, "seconds measured per point");
    app.add_option("--warmup", s.warmup_s, "seconds sent before measuring");
    app.add_option("--cpus", cpus, "receiving CPU, sending CPU (-1: unpinned)")->delimiter(',');
    app.add_option("--json", json_path, "write the points here");
    CLI11_PARSE(app, argc, argv);
#if !defined(NDEBUG) || !defined(__OPTIMIZE__)
    std::printf("Debug build: numbers are not representative\n");
#endif
    bool const nats = std::any_of(publishers.begin(), publishers.end(),
                                  [](std::string const& p) { return p.starts_with("nats"); });
    bool const stalled =
        std::find(publishers.begin(), publishers.end(), "nats_stalled") != publishers.end();
    if ((nats && s.nats_url.empty()) || (stalled && s.nats_pid <= 0)) {
        std::fprintf(stderr, "the nats publishers need --nats URL (and nats_stalled "
                             "--nats-pid PID) of a running nats-server\n");
        return 2;
    }
    s.receiver_cpu = cpus.empty() ? -1 : cpus[0];
    s.sender_cpu = cpus.size() < 2 ? -1 : cpus[1];
    spdlog::set_level(spdlog::level::err); // the stalled server's warnings are expected

    bench::packet_templates const templates(512, 4096);
    json points = json::array();
    std::printf("%-5s %-13s %5s %9s %15s %9s %12s %12s %9s %9s\n", "round", "publisher", "feeds",
                "msgs/s", "recv/sent", "cpu ns/p", "events/s", "nats pub/s", "p50 ns", "p99 ns");
    for (std::size_t round = 1; round <= rounds; ++round) {
        for (std::size_t const feeds : feed_counts) {
            for (double const rate : rates) {
                for (std::string const& name : publishers) {
                    json p = run_point(name, feeds, rate, s, templates);
                    p["round"] = round;
                    p["messages_per_packet"] = templates.mean_messages();
                    std::printf(
                        "%-5zu %-13s %5zu %9.0f %7llu/%-7llu %9.0f %12.0f %12.0f %9llu "
                        "%9llu\n",
                        round, name.c_str(), feeds, rate,
                        static_cast<unsigned long long>(p["packets_received"].get<std::uint64_t>()),
                        static_cast<unsigned long long>(p["packets_sent"].get<std::uint64_t>()),
                        p["cpu_ns_per_packet"].get<double>(), p["events_per_s"].get<double>(),
                        p.contains("nats") ? p["nats"]["published_per_s"].get<double>() : 0.0,
                        static_cast<unsigned long long>(
                            p["send_to_handler_ns"]["p50"].get<std::uint64_t>()),
                        static_cast<unsigned long long>(
                            p["send_to_handler_ns"]["p99"].get<std::uint64_t>()));
                    std::fflush(stdout);
                    points.push_back(std::move(p));
                }
            }
        }
    }
    return json_path.empty() || bench::write_points_file(json_path, points) ? 0 : 1;
}
