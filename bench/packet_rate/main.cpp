// signet_packet_rate: the same MoldUDP64/ITCH 5.0 workload received by signet (each backend),
// by the queue-based baselines users write (thread pool + moodycamel task queue; Asio with
// strands) and by a raw single-thread loop (io_uring multishot, recvmmsg) as the ceiling. Every
// design runs one md::itch_feed_handler per feed. Modes:
//   paced    sender at --rate packets/s; receiver-thread CPU ns per packet, loss
//   drain    the sockets fill (large SO_RCVBUF) before the receiver starts; then packets/s
//   latency  paced (50k/s by default), send timestamp -> parse done percentiles, spin and block
//   memory   no kernel: packets injected straight into each design's queueing path
// One table row and one JSON object per point (see README "Packet-rate benchmark").
//
//   signet_packet_rate --mode paced,drain --design signet,raw --backend io_uring --feeds 1,16
//                      --workers 1 --payload 64,512 --duration 2 --cpus 1,0 --json out.json

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <linux/sock_diag.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "common.hpp"
#include "machine_info.hpp"
#include "sender.hpp"

namespace {

using signet::bench::affinity_cpus;
using signet::bench::cpu_model;
using signet::bench::join;

using namespace signet::bench;

struct point_spec {
    std::string design;
    std::string backend; // signet: io_uring/epoll/asio; raw: io_uring/recvmmsg; else fixed
    std::size_t feeds = 1;
    std::size_t workers = 1;
    double rate = 0;
    std::size_t payload = 64;
    std::string mode;
    idle_mode idle = idle_mode::block;
};

struct point_result {
    point_spec spec;
    std::string backend_label; // JSON "backend" (latency points carry "+spin"/"+block")
    double pps = 0;
    double loss_pct = 0;
    double cpu_ns_per_packet = 0;
    std::uint64_t p50 = 0;
    std::uint64_t p99 = 0;
    std::uint64_t p999 = 0;
    double feed_cv = 0;
    // stdout only
    double tx_pps = 0;
    double cpu_share = 0;           // receiver CPU / window
    double switches_per_packet = 0; // receiver threads' context switches
    double other_cpus = 0;          // CPUs' worth used by other processes in the window
    std::uint64_t sent = 0;
    std::uint64_t parsed = 0;
    std::vector<std::string> problems; // verification failures
};

struct run_settings {
    double duration = 2;
    double warmup = 0.3;
    int sender_cpu = -1;
    std::vector<int> receiver_cpus;
    std::size_t drain_budget = 256u << 20; // bytes of socket buffer, all feeds together
    std::size_t queue_capacity = 0;        // 0: per mode default
};

void sleep_seconds(double s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

std::vector<pid_t> new_threads(std::vector<pid_t> const& before) {
    std::vector<pid_t> now = thread_ids();
    std::vector<pid_t> added;
    std::set_difference(now.begin(), now.end(), before.begin(), before.end(),
                        std::back_inserter(added));
    return added;
}

std::uint64_t cpu_of(std::vector<pid_t> const& threads) {
    std::uint64_t sum = 0;
    for (pid_t t : threads) {
        sum += thread_cpu_ns(t);
    }
    return sum;
}

std::uint64_t switches_of(std::vector<pid_t> const& threads) {
    std::uint64_t sum = 0;
    for (pid_t t : threads) {
        sum += thread_switches(t);
    }
    return sum;
}

std::vector<std::uint64_t> parsed_per_feed(sink_set const& sinks) {
    std::vector<std::uint64_t> counts;
    counts.reserve(sinks.size());
    for (auto const& s : sinks) {
        counts.push_back(s->parsed());
    }
    return counts;
}

std::uint64_t sum(std::vector<std::uint64_t> const& values) {
    std::uint64_t total = 0;
    for (auto v : values) {
        total += v;
    }
    return total;
}

double feed_cv_between(std::vector<std::uint64_t> const& a, std::vector<std::uint64_t> const& b) {
    std::vector<double> delta(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        delta[i] = static_cast<double>(b[i] - a[i]);
    }
    return coefficient_of_variation(delta);
}

/// Waits until the sinks parsed `target` packets, or until nothing moved for `quiet` seconds.
void wait_parsed(sink_set const& sinks, std::uint64_t target, double quiet) {
    std::uint64_t last = 0;
    auto last_change = std::chrono::steady_clock::now();
    for (;;) {
        std::uint64_t const now = sum(parsed_per_feed(sinks));
        if (now >= target) {
            return;
        }
        if (now != last) {
            last = now;
            last_change = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - last_change >
                   std::chrono::duration<double>(quiet)) {
            return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
}

/// Checks every feed: the handler saw exactly what was sent, in order, nothing malformed.
void verify(point_result& r, sink_set const& sinks, std::vector<feed_cursor> const& sent) {
    for (std::size_t f = 0; f < sinks.size(); ++f) {
        auto const& session = sinks[f]->handler().session_stats();
        auto const& itch = sinks[f]->handler().itch_stats();
        std::ostringstream problem;
        if (sinks[f]->parsed() != sent[f].packets) {
            problem << "parsed " << sinks[f]->parsed() << " of " << sent[f].packets << " packets";
        } else if (session.messages != sent[f].messages) {
            problem << "delivered " << session.messages << " of " << sent[f].messages
                    << " messages";
        } else if (session.gaps != 0 || session.malformed_packets != 0 ||
                   session.duplicate_packets != 0 || itch.malformed_messages != 0) {
            problem << "gaps " << session.gaps << ", malformed " << session.malformed_packets
                    << ", duplicates " << session.duplicate_packets << ", malformed messages "
                    << itch.malformed_messages;
        }
        if (!problem.str().empty()) {
            r.problems.push_back("feed " + std::to_string(f) + ": " + problem.str());
        }
    }
}

using receiver_factory =
    std::function<std::unique_ptr<receiver>(receiver_config const&, sink_set&)>;
using pipeline_factory =
    std::function<std::unique_ptr<pipeline>(pipeline_config const&, sink_set&)>;

receiver_factory receiver_for(point_spec const& s) {
    if (s.design == "signet" || s.design == "signet_poller") {
        return &make_signet_receiver;
    }
    if (s.design == "queue") {
        return &make_queue_receiver;
    }
    if (s.design == "asio") {
        return &make_asio_receiver;
    }
    if (s.backend == "io_uring") {
        return &make_raw_uring_receiver;
    }
    return &make_raw_recvmmsg_receiver;
}

pipeline_factory pipeline_for(point_spec const& s) {
    if (s.design == "signet" || s.design == "signet_poller") {
        return &make_signet_pipeline;
    }
    if (s.design == "queue") {
        return &make_queue_pipeline;
    }
    if (s.design == "asio") {
        return &make_asio_pipeline;
    }
    return &make_raw_pipeline;
}

/// Kernel memory one datagram of this workload takes in a receive queue (skb truesize).
std::size_t datagram_truesize(packet_templates const& templates, std::size_t request,
                              std::size_t& granted) {
    int const probe = open_udp_socket(request);
    int value = 0;
    socklen_t length = sizeof(value);
    ::getsockopt(probe, SOL_SOCKET, SO_RCVBUF, &value, &length);
    granted = static_cast<std::size_t>(value);
    {
        sender_options o;
        o.ports = {local_port(probe)};
        o.templates = &templates;
        o.limit = 256;
        sender s(o);
        s.start();
        s.wait();
    }
    std::array<std::uint32_t, SK_MEMINFO_VARS> info{};
    socklen_t info_length = sizeof(info);
    ::getsockopt(probe, SOL_SOCKET, SO_MEMINFO, info.data(), &info_length);
    ::close(probe);
    return std::max<std::size_t>(info[SK_MEMINFO_RMEM_ALLOC] / 256, 256);
}

point_result run_socket_point(point_spec const& spec, packet_templates const& templates,
                              run_settings const& settings) {
    point_result r;
    r.spec = spec;
    bool const drain = spec.mode == "drain";
    bool const latency = spec.mode == "latency";
    std::atomic<bool> recording{false};
    sink_set sinks;
    for (std::size_t f = 0; f < spec.feeds; ++f) {
        sinks.push_back(std::make_unique<feed_sink>(
            drain ? sink_timing::drain : (latency ? sink_timing::latency : sink_timing::none),
            &recording));
    }
    receiver_config config;
    config.backend = spec.backend;
    config.feeds = spec.feeds;
    config.workers = spec.workers;
    config.idle = spec.idle;
    config.dedicated_poller = spec.design == "signet_poller";
    config.cpus = settings.receiver_cpus;
    config.queue_capacity = settings.queue_capacity != 0 ? settings.queue_capacity : 1024;
    std::size_t per_feed_fill = 0;
    if (drain) {
        // The sender is done before the receiver starts: the receiver may use its CPU too.
        if (settings.sender_cpu >= 0 && std::find(config.cpus.begin(), config.cpus.end(),
                                                  settings.sender_cpu) == config.cpus.end()) {
            config.cpus.push_back(settings.sender_cpu);
        }
        // Kernel doubles the request; fill to 85% of the granted buffer.
        config.receive_buffer =
            std::clamp<std::size_t>(settings.drain_budget / spec.feeds / 2, 1u << 20, 512u << 20);
        std::size_t granted = 0;
        std::size_t const truesize = datagram_truesize(templates, config.receive_buffer, granted);
        per_feed_fill = granted * 85 / 100 / truesize;
    } else {
        config.receive_buffer = 4u << 20;
    }

    std::vector<pid_t> const before = thread_ids();
    std::unique_ptr<receiver> rx = receiver_for(spec)(config, sinks);
    sender_options so;
    so.ports = rx->ports();
    so.templates = &templates;
    so.cpu = settings.sender_cpu;

    if (drain) {
        so.rate = 0;
        so.batch = 32;
        so.limit = per_feed_fill * spec.feeds;
        // The interference check spans the fill too: the drain alone is too short for the
        // clock-tick resolution of /proc/stat.
        cpu_ticks const ticks_a = read_cpu_ticks();
        std::uint64_t const t_a = monotonic_ns();
        sender tx(so);
        tx.start();
        tx.wait();
        r.sent = tx.sent();
        r.tx_pps = static_cast<double>(r.sent) / tx.seconds();
        sleep_seconds(0.02);
        rx->start();
        std::vector<pid_t> threads = new_threads(before);
        std::vector<std::uint64_t> half;
        std::uint64_t last = 0;
        auto last_change = std::chrono::steady_clock::now();
        for (;;) {
            auto const counts = parsed_per_feed(sinks);
            std::uint64_t const total = sum(counts);
            if (half.empty() && total * 2 >= r.sent) {
                half = counts;
            }
            if (total >= r.sent) {
                break;
            }
            if (total != last) {
                last = total;
                last_change = std::chrono::steady_clock::now();
            } else if (std::chrono::steady_clock::now() - last_change > std::chrono::seconds(1)) {
                break;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        std::uint64_t const cpu = cpu_of(threads);
        std::uint64_t const switches = switches_of(threads);
        r.other_cpus =
            other_cpus(ticks_a, read_cpu_ticks(), static_cast<double>(monotonic_ns() - t_a) * 1e-9);
        rx->stop();
        auto const counts = parsed_per_feed(sinks);
        r.parsed = sum(counts);
        std::uint64_t first = ~std::uint64_t{0};
        std::uint64_t final_ns = 0;
        for (auto const& s : sinks) {
            if (s->parsed() != 0) {
                first = std::min(first, s->first_ns());
                final_ns = std::max(final_ns, s->last_ns());
            }
        }
        if (r.parsed > 1 && final_ns > first) {
            r.pps = static_cast<double>(r.parsed - 1) * 1e9 / static_cast<double>(final_ns - first);
            r.cpu_share = static_cast<double>(cpu) / static_cast<double>(final_ns - first);
        }
        r.cpu_ns_per_packet =
            r.parsed != 0 ? static_cast<double>(cpu) / static_cast<double>(r.parsed) : 0;
        r.switches_per_packet =
            r.parsed != 0 ? static_cast<double>(switches) / static_cast<double>(r.parsed) : 0;
        std::vector<double> shares;
        for (auto v : half.empty() ? counts : half) {
            shares.push_back(static_cast<double>(v));
        }
        r.feed_cv = coefficient_of_variation(shares);
        r.loss_pct = r.sent != 0
                         ? 100.0 * static_cast<double>(r.sent - std::min(r.sent, r.parsed)) /
                               static_cast<double>(r.sent)
                         : 0;
        verify(r, sinks, tx.cursors());
        return r;
    }

    so.rate = spec.rate;
    so.batch = latency ? 1 : 32;
    rx->start();
    sleep_seconds(0.05);
    std::vector<pid_t> const threads = new_threads(before);
    sender tx(so);
    tx.start();
    sleep_seconds(settings.warmup);
    auto const counts_a = parsed_per_feed(sinks);
    std::uint64_t const cpu_a = cpu_of(threads);
    std::uint64_t const switches_a = switches_of(threads);
    std::uint64_t const sent_a = tx.sent();
    cpu_ticks const ticks_a = read_cpu_ticks();
    std::uint64_t const t_a = monotonic_ns();
    recording.store(true, std::memory_order_relaxed); // relaxed: selects the window only
    sleep_seconds(settings.duration);
    recording.store(false, std::memory_order_relaxed);
    auto const counts_b = parsed_per_feed(sinks);
    std::uint64_t const cpu_b = cpu_of(threads);
    std::uint64_t const switches_b = switches_of(threads);
    std::uint64_t const sent_b = tx.sent();
    cpu_ticks const ticks_b = read_cpu_ticks();
    std::uint64_t const t_b = monotonic_ns();
    tx.stop();
    r.sent = tx.sent();
    wait_parsed(sinks, r.sent, 0.5);
    rx->stop();
    r.parsed = sum(parsed_per_feed(sinks));

    double const window = static_cast<double>(t_b - t_a) * 1e-9;
    r.other_cpus = other_cpus(ticks_a, ticks_b, window);
    std::uint64_t const packets = sum(counts_b) - sum(counts_a);
    r.pps = static_cast<double>(packets) / window;
    r.tx_pps = static_cast<double>(sent_b - sent_a) / window;
    r.cpu_ns_per_packet =
        packets != 0 ? static_cast<double>(cpu_b - cpu_a) / static_cast<double>(packets) : 0;
    r.cpu_share = static_cast<double>(cpu_b - cpu_a) * 1e-9 / window;
    r.switches_per_packet =
        packets != 0 ? static_cast<double>(switches_b - switches_a) / static_cast<double>(packets)
                     : 0;
    r.feed_cv = feed_cv_between(counts_a, counts_b);
    r.loss_pct = r.sent != 0 ? 100.0 * static_cast<double>(r.sent - std::min(r.sent, r.parsed)) /
                                   static_cast<double>(r.sent)
                             : 0;
    if (latency) {
        latency_histogram all;
        for (auto const& s : sinks) {
            all.merge(s->latency());
        }
        r.p50 = all.percentile(0.50);
        r.p99 = all.percentile(0.99);
        r.p999 = all.percentile(0.999);
    }
    verify(r, sinks, tx.cursors());
    return r;
}

point_result run_memory_point(point_spec const& spec, packet_templates const& templates,
                              run_settings const& settings) {
    point_result r;
    r.spec = spec;
    sink_set sinks;
    for (std::size_t f = 0; f < spec.feeds; ++f) {
        sinks.push_back(std::make_unique<feed_sink>(sink_timing::none, nullptr));
    }
    pipeline_config config;
    config.feeds = spec.feeds;
    config.workers = spec.workers;
    config.idle = spec.idle;
    config.injector_cpu = settings.sender_cpu;
    config.worker_cpus = settings.receiver_cpus;
    if (settings.sender_cpu >= 0 && std::find(config.worker_cpus.begin(), config.worker_cpus.end(),
                                              settings.sender_cpu) == config.worker_cpus.end()) {
        config.worker_cpus.push_back(settings.sender_cpu);
    }
    config.queue_capacity = settings.queue_capacity != 0
                                ? settings.queue_capacity
                                : std::clamp<std::size_t>(65536 / spec.feeds, 64, 1024);
    config.templates = &templates;

    std::vector<pid_t> const before = thread_ids();
    std::unique_ptr<pipeline> p = pipeline_for(spec)(config, sinks);
    p->start();
    sleep_seconds(0.05);
    std::vector<pid_t> const threads = new_threads(before);
    sleep_seconds(settings.warmup);
    auto const counts_a = parsed_per_feed(sinks);
    std::uint64_t const cpu_a = cpu_of(threads);
    std::uint64_t const switches_a = switches_of(threads);
    cpu_ticks const ticks_a = read_cpu_ticks();
    std::uint64_t const t_a = monotonic_ns();
    sleep_seconds(settings.duration);
    auto const counts_b = parsed_per_feed(sinks);
    std::uint64_t const cpu_b = cpu_of(threads);
    std::uint64_t const switches_b = switches_of(threads);
    cpu_ticks const ticks_b = read_cpu_ticks();
    std::uint64_t const t_b = monotonic_ns();
    p->stop();

    double const window = static_cast<double>(t_b - t_a) * 1e-9;
    r.other_cpus = other_cpus(ticks_a, ticks_b, window);
    std::uint64_t const packets = sum(counts_b) - sum(counts_a);
    r.pps = static_cast<double>(packets) / window;
    r.tx_pps = r.pps;
    r.cpu_ns_per_packet =
        packets != 0 ? static_cast<double>(cpu_b - cpu_a) / static_cast<double>(packets) : 0;
    r.cpu_share = static_cast<double>(cpu_b - cpu_a) * 1e-9 / window;
    r.switches_per_packet =
        packets != 0 ? static_cast<double>(switches_b - switches_a) / static_cast<double>(packets)
                     : 0;
    r.feed_cv = feed_cv_between(counts_a, counts_b);
    r.parsed = sum(parsed_per_feed(sinks));
    for (auto const& c : p->cursors()) {
        r.sent += c.packets;
    }
    r.loss_pct = r.sent != 0 ? 100.0 * static_cast<double>(r.sent - std::min(r.sent, r.parsed)) /
                                   static_cast<double>(r.sent)
                             : 0;
    verify(r, sinks, p->cursors());
    return r;
}

/// The run with the median primary metric; the problems of every run are kept.
point_result median_run(std::vector<point_result> runs) {
    std::vector<std::string> problems;
    for (auto const& r : runs) {
        problems.insert(problems.end(), r.problems.begin(), r.problems.end());
    }
    std::string const& mode = runs.front().spec.mode;
    auto const metric = [&mode](point_result const& r) {
        if (mode == "paced") {
            return r.cpu_ns_per_packet;
        }
        if (mode == "latency") {
            return static_cast<double>(r.p50);
        }
        return r.pps;
    };
    std::sort(runs.begin(), runs.end(),
              [&](point_result const& a, point_result const& b) { return metric(a) < metric(b); });
    point_result r = std::move(runs[runs.size() / 2]);
    r.problems = std::move(problems);
    return r;
}

// ---- output ----------------------------------------------------------------------------------

std::string json_number(double value, int precision) {
    if (!std::isfinite(value)) {
        return "0";
    }
    std::ostringstream out;
    out.precision(precision);
    out << value;
    return out.str();
}

void write_json(std::string const& path, std::vector<point_result> const& rows) {
    std::ofstream out(path);
    if (!out) {
        throw std::runtime_error("cannot open " + path + " for writing");
    }
    out << "[\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        auto const& r = rows[i];
        out << "  {\"design\": \"" << r.spec.design << "\", \"backend\": \"" << r.backend_label
            << "\", \"feeds\": " << r.spec.feeds << ", \"workers\": " << r.spec.workers
            << ", \"rate\": " << json_number(r.spec.rate, 12) << ", \"payload\": " << r.spec.payload
            << ", \"mode\": \"" << r.spec.mode
            << "\", \"pps\": " << json_number(std::round(r.pps), 15)
            << ", \"loss_pct\": " << json_number(r.loss_pct, 6)
            << ", \"cpu_ns_per_packet\": " << json_number(r.cpu_ns_per_packet, 6)
            << ", \"p50_ns\": " << r.p50 << ", \"p99_ns\": " << r.p99 << ", \"p999_ns\": " << r.p999
            << ", \"feed_cv\": " << json_number(r.feed_cv, 6) << "}"
            << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    out << "]\n";
    if (!out) {
        throw std::runtime_error("cannot write " + path);
    }
}

void print_header() {
    std::printf("%-7s %-15s %5s %3s %8s %4s %-7s %11s %8s %9s %8s %8s %8s %7s %11s %5s %6s %6s\n",
                "design", "backend", "feeds", "w", "rate", "B", "mode", "pps", "loss%", "cpu_ns/p",
                "p50_ns", "p99_ns", "p999_ns", "feed_cv", "tx_pps", "cpu%", "cs/p", "other%");
}

void print_row(point_result const& r) {
    std::printf("%-7s %-15s %5zu %3zu %8.0f %4zu %-7s %11.0f %8.4f %9.1f %8llu %8llu %8llu %7.4f "
                "%11.0f %5.1f %6.3f %6.1f\n",
                r.spec.design.c_str(), r.backend_label.c_str(), r.spec.feeds, r.spec.workers,
                r.spec.rate, r.spec.payload, r.spec.mode.c_str(), r.pps, r.loss_pct,
                r.cpu_ns_per_packet, static_cast<unsigned long long>(r.p50),
                static_cast<unsigned long long>(r.p99), static_cast<unsigned long long>(r.p999),
                r.feed_cv, r.tx_pps, 100 * r.cpu_share, r.switches_per_packet, 100 * r.other_cpus);
    for (auto const& p : r.problems) {
        std::printf("        ! %s\n", p.c_str());
    }
    std::fflush(stdout);
}

bool contains(std::vector<std::string> const& list, std::string const& value) {
    return std::find(list.begin(), list.end(), value) != list.end();
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"signet packet-rate benchmark: signet vs queue/asio baselines vs raw loops"};
    std::vector<std::string> designs;
    std::vector<std::string> backends;
    std::vector<std::size_t> feeds{1};
    std::vector<std::size_t> workers{1};
    double rate = 500'000;
    std::vector<std::size_t> payloads{64};
    std::vector<std::string> modes{"paced"};
    std::vector<std::string> idles;
    std::vector<int> cpus;
    std::string json_path;
    bool check = false;
    std::size_t drain_mib = 256;
    std::size_t repeat = 1;
    std::size_t retries = 3;
    double max_other = 10;
    run_settings settings;
    app.add_option(
           "--design", designs,
           "designs: signet (reactor contract on the workers, the default runtime), signet_poller "
           "(dedicated poller thread), queue, asio, raw (default: all)")
        ->delimiter(',');
    app.add_option("--backend", backends,
                   "backends: signet io_uring,epoll,asio; raw io_uring,recvmmsg (default: all)")
        ->delimiter(',');
    app.add_option("--feeds", feeds, "feed (socket) counts, e.g. 1,4,16,64")
        ->delimiter(',')
        ->check(CLI::Range(1, 4096));
    app.add_option("--workers", workers, "worker thread counts (raw always 1)")
        ->delimiter(',')
        ->check(CLI::Range(1, 64));
    app.add_option("--rate", rate, "paced rate in packets/s (default 500000; latency 50000)")
        ->check(CLI::PositiveNumber);
    app.add_option("--payload", payloads, "target UDP payload bytes: 64,512")
        ->delimiter(',')
        ->check(CLI::Range(64, 1024));
    app.add_option("--duration", settings.duration, "measured seconds per point")
        ->check(CLI::PositiveNumber);
    app.add_option("--warmup", settings.warmup, "seconds before the measured window");
    app.add_option("--mode", modes, "paced,drain,latency,memory")->delimiter(',');
    app.add_option("--idle", idles,
                   "worker idle: spin,block (default: latency both, other modes block)")
        ->delimiter(',');
    app.add_option("--cpus", cpus,
                   "CPU ids: the first for the sender (memory mode: injector), the rest for the "
                   "receiver threads (default: last CPU sends, the others receive)")
        ->delimiter(',');
    app.add_option("--drain-mib", drain_mib, "drain: socket buffer MiB over all feeds")
        ->check(CLI::Range(1, 4096));
    app.add_option("--queue-capacity", settings.queue_capacity,
                   "packets in flight per feed (default 1024; memory: 65536/feeds in 64..1024)");
    app.add_option("--repeat", repeat,
                   "runs per point; the row is the median run (paced: CPU/packet; drain, "
                   "memory: packets/s; latency: p50)")
        ->check(CLI::Range(1, 99));
    app.add_option("--max-other", max_other,
                   "percent of a CPU other processes may use during a run before it is repeated "
                   "(shared machines; default 10)");
    app.add_option("--retries", retries, "repeats of a disturbed run (default 3)")
        ->check(CLI::Range(0, 20));
    app.add_flag("--verify", check,
                 "exit 1 unless every point parsed exactly what was sent (no loss, no gap)");
    app.add_option("--json", json_path, "write the results as a JSON array to this file");
    CLI11_PARSE(app, argc, argv);

    std::vector<std::string> const all_designs{"signet", "signet_poller", "queue", "asio", "raw"};
    if (designs.empty()) {
        designs = all_designs;
    }
    for (auto const& d : designs) {
        if (!contains(all_designs, d)) {
            std::cerr << "unknown design '" << d << "' (signet, signet_poller, queue, asio, raw)\n";
            return 2;
        }
    }
    std::vector<std::string> const all_modes{"paced", "drain", "latency", "memory"};
    for (auto const& m : modes) {
        if (!contains(all_modes, m)) {
            std::cerr << "unknown mode '" << m << "' (paced, drain, latency, memory)\n";
            return 2;
        }
    }
    std::vector<std::string> const all_backends{"io_uring", "epoll", "asio", "recvmmsg"};
    for (auto const& b : backends) {
        if (!contains(all_backends, b)) {
            std::cerr << "unknown backend '" << b << "' (io_uring, epoll, asio, recvmmsg)\n";
            return 2;
        }
    }
    for (auto const& i : idles) {
        if (i != "spin" && i != "block") {
            std::cerr << "unknown idle mode '" << i << "' (spin, block)\n";
            return 2;
        }
    }
    if (cpus.empty()) {
        auto const mine = affinity_cpus();
        if (mine.size() >= 2) {
            cpus.push_back(mine.back());
            cpus.insert(cpus.end(), mine.begin(), mine.end() - 1);
        } else if (!mine.empty()) {
            cpus = {mine.front(), mine.front()};
        }
    }
    for (int cpu : cpus) {
        auto const mine = affinity_cpus();
        if (std::find(mine.begin(), mine.end(), cpu) == mine.end()) {
            std::cerr << "--cpus: CPU " << cpu << " is not in this process's affinity mask\n";
            return 2;
        }
    }
    if (!cpus.empty()) {
        settings.sender_cpu = cpus.front();
        settings.receiver_cpus.assign(cpus.begin() + (cpus.size() > 1 ? 1 : 0), cpus.end());
    }
    settings.drain_budget = drain_mib << 20;
    bool const rate_given = app.count("--rate") != 0;
    spdlog::set_level(spdlog::level::warn); // the runtime logs its backend choice at info

    std::vector<point_spec> points;
    for (auto const& mode : modes) {
        for (auto const& design : designs) {
            std::vector<std::string> design_backends;
            if (design == "signet" || design == "signet_poller") {
                for (auto const& b : {"io_uring", "epoll", "asio"}) {
                    if (backends.empty() || contains(backends, b)) {
                        design_backends.emplace_back(b);
                    }
                }
            } else if (design == "raw") {
                for (auto const& b : {"io_uring", "recvmmsg"}) {
                    if (backends.empty() || contains(backends, b)) {
                        design_backends.emplace_back(b);
                    }
                }
            } else {
                design_backends.emplace_back(design == "queue" ? "recvmmsg" : "asio");
            }
            if (mode == "memory") {
                design_backends = {"none"}; // no kernel, no backend
            }
            std::vector<std::string> mode_idles = idles;
            if (mode_idles.empty()) {
                mode_idles = mode == "latency" ? std::vector<std::string>{"spin", "block"}
                                               : std::vector<std::string>{"block"};
            }
            for (auto const& backend : design_backends) {
                for (auto f : feeds) {
                    for (auto w : workers) {
                        if (design == "raw" && w != workers.front()) {
                            continue; // one thread: a single point per feed count
                        }
                        for (auto payload : payloads) {
                            for (auto const& idle : mode_idles) {
                                point_spec s;
                                s.design = design;
                                s.backend = backend;
                                s.feeds = f;
                                s.workers = design == "raw" ? 1 : w;
                                s.rate = mode == "latency" && !rate_given ? 50'000 : rate;
                                if (mode == "drain" || mode == "memory") {
                                    s.rate = 0; // as fast as possible
                                }
                                s.payload = payload;
                                s.mode = mode;
                                s.idle = idle == "spin" ? idle_mode::spin : idle_mode::block;
                                points.push_back(s);
                            }
                        }
                    }
                }
            }
        }
    }

    utsname uts{};
    uname(&uts);
    std::cout << "signet packet-rate benchmark\n  cpu: " << cpu_model() << " ("
              << std::thread::hardware_concurrency() << " logical)\n  kernel: " << uts.release
              << "\n  sender/injector cpu: " << settings.sender_cpu
              << ", receiver cpus: " << join(settings.receiver_cpus, "-") << "\n  measured "
              << settings.duration << " s after " << settings.warmup
              << " s warm-up per point; drain buffers " << drain_mib << " MiB in total\n";

    std::map<std::size_t, std::unique_ptr<packet_templates>> templates;
    for (auto payload : payloads) {
        std::size_t const count = payload <= 128 ? 16384 : 4096;
        templates[payload] = std::make_unique<packet_templates>(payload, count);
        std::printf("  payload %zu: %zu template packets, mean %.1f bytes, %.2f messages/packet\n",
                    payload, count, templates[payload]->mean_size(),
                    templates[payload]->mean_messages());
    }
    std::printf("\n");
    print_header();

    std::vector<point_result> rows;
    bool failed = false;
    try {
        for (auto const& spec : points) {
            std::vector<point_result> runs;
            for (std::size_t i = 0; i < repeat; ++i) {
                // A run during which other processes used more than --max-other of a CPU is
                // repeated (at most --retries times); the least disturbed attempt is kept.
                point_result best;
                for (std::size_t attempt = 0; attempt <= retries; ++attempt) {
                    point_result r =
                        spec.mode == "memory"
                            ? run_memory_point(spec, *templates[spec.payload], settings)
                            : run_socket_point(spec, *templates[spec.payload], settings);
                    bool const quiet = r.other_cpus * 100 <= max_other;
                    if (attempt == 0 || r.other_cpus < best.other_cpus) {
                        best = std::move(r);
                    }
                    if (quiet) {
                        break;
                    }
                    if (attempt < retries) {
                        std::printf("        (other processes used %.0f%% of a CPU: again)\n",
                                    100 * best.other_cpus);
                        sleep_seconds(2);
                    }
                }
                runs.push_back(std::move(best));
            }
            point_result r = median_run(std::move(runs));
            r.backend_label = spec.backend;
            if (spec.mode == "latency") {
                r.backend_label += spec.idle == idle_mode::spin ? "+spin" : "+block";
            }
            print_row(r);
            failed = failed || !r.problems.empty();
            rows.push_back(std::move(r));
        }
        if (!json_path.empty()) {
            write_json(json_path, rows);
            std::cout << "\nwrote " << rows.size() << " points to " << json_path << "\n";
        }
    } catch (std::exception const& e) {
        std::cerr << "signet_packet_rate: " << e.what() << "\n";
        return 1;
    }
    if (check && failed) {
        std::cerr << "signet_packet_rate: --verify: some point did not parse exactly what was "
                     "sent (see the '!' lines)\n";
        return 1;
    }
    return 0;
}
