// Running and verifying one point of signet_packet_rate; see measure.hpp. The socket point
// and the memory point share the window bookkeeping (parsed per feed, CPU and switches of the
// design's threads, other processes' CPU) and end with verify().

#include "measure.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signet/core/realtime_clock.hpp>

#include "network_path.hpp"
#include "sender.hpp"

namespace signet::bench {

namespace {

void sleep_seconds(double s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
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
/// Parses timed by the feeds' stage_latency (0 without --stages).
std::uint64_t stage_samples(sink_set const& sinks) {
    std::uint64_t n = 0;
    for (auto const& s : sinks) {
        n += s->stages().parse().take().count;
    }
    return n;
}

/// The kernel's drops at each of these UDP ports (IPv4, this network namespace): the last column
/// of /proc/net/udp. Read before the receiver closes its sockets; 0 for a port not listed.
std::vector<std::uint64_t> socket_drops(std::vector<std::uint16_t> const& ports) {
    std::vector<std::uint64_t> drops(ports.size(), 0);
    std::ifstream in("/proc/net/udp");
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string slot;
        std::string local;
        fields >> slot >> local;
        auto const colon = local.find(':');
        if (colon == std::string::npos) {
            continue;
        }
        auto const port =
            static_cast<std::uint16_t>(std::stoul(local.substr(colon + 1), nullptr, 16));
        std::string last;
        for (std::string field; fields >> field;) {
            last = field;
        }
        for (std::size_t i = 0; i < ports.size(); ++i) {
            if (ports[i] == port && !last.empty()) {
                drops[i] += std::stoull(last);
            }
        }
    }
    return drops;
}

/// Feeds before `from` are not checked (a flooded feed loses packets by design). `drops`: the
/// kernel's drops per feed socket, named in a feed's problem (where its packets went).
void verify(point_result& r, sink_set const& sinks, std::vector<feed_cursor> const& sent,
            std::size_t from = 0, std::vector<std::uint64_t> const& drops = {}) {
    for (std::size_t f = from; f < sinks.size(); ++f) {
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
            if (f < drops.size()) {
                problem << " (the kernel dropped " << drops[f] << " at its socket)";
            }
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

/// --path veth, drain: packets per point over all feeds (af_xdp's UMEM holds them: 2 KiB each).
constexpr std::size_t veth_drain_packets = 100'000;

/// --trace-latency: one header line naming the point, then "feed send_ns latency_ns" per timed
/// packet (send stamps are the sender's 48-bit monotonic clock).
void append_trace(std::string const& path, point_spec const& spec, sink_set const& sinks) {
    std::ofstream out(path, std::ios::app);
    out << "# design=" << spec.design << " backend=" << spec.backend
        << " idle=" << (spec.idle == idle_mode::spin ? "spin" : "block") << " mode=" << spec.mode
        << " feeds=" << spec.feeds << " rate=" << spec.rate << "\n";
    for (std::size_t f = 0; f < sinks.size(); ++f) {
        for (auto const& [sent, latency] : sinks[f]->samples()) {
            out << f << ' ' << sent << ' ' << latency << '\n';
        }
    }
    if (!out) {
        throw std::runtime_error("cannot write the latency trace " + path);
    }
}

/// Kernel memory one datagram of this workload takes in a receive queue (skb truesize).
std::size_t datagram_truesize(packet_templates const& templates, std::size_t request,
                              std::size_t& granted) {
    net::unique_fd const socket = open_udp_socket(request);
    int const probe = socket.get();
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
    return std::max<std::size_t>(info[SK_MEMINFO_RMEM_ALLOC] / 256, 256);
}

point_result run_socket_point(point_spec const& spec, packet_templates const& templates,
                              run_settings const& settings) {
    point_result r;
    r.spec = spec;
    bool const drain = spec.mode == "drain";
    bool const latency = latency_mode(spec.mode);
    // quiet, flood: feed 0 is the flooded one (silent when quiet); feeds 1.. are paced and timed.
    bool const fairness = fairness_mode(spec.mode);
    bool const flood = spec.mode == "flood";
    std::size_t const paced_from = fairness ? 1 : 0;
    std::atomic<bool> recording{false};
    sink_set sinks;
    for (std::size_t f = 0; f < spec.feeds; ++f) {
        sinks.push_back(std::make_unique<feed_sink>(drain ? sink_timing::drain
                                                    : latency && f >= paced_from
                                                        ? sink_timing::latency
                                                        : sink_timing::none,
                                                    &recording));
    }
    if (latency && !settings.trace_path.empty()) {
        // Every packet timed in the measured window (the sender's rate over the paced feeds),
        // with room to spare for a window that runs long.
        auto const per_feed = static_cast<std::size_t>(
            spec.rate * (settings.duration + 1) / static_cast<double>(spec.feeds - paced_from));
        for (std::size_t f = paced_from; f < spec.feeds; ++f) {
            sinks[f]->keep_samples(per_feed + 4096);
        }
    }
    receiver_config config;
    config.backend = spec.backend;
    config.feeds = spec.feeds;
    config.workers = spec.workers;
    config.idle = spec.idle;
    config.dedicated_poller = spec.design == "signet_poller";
    config.stages = spec.stages != "off";
    config.cpus = settings.receiver_cpus;
    config.queue_capacity = settings.queue_capacity != 0 ? settings.queue_capacity : 1024;
    config.ring_buffers = settings.ring_buffers;
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
        if (current_path().name == "veth") {
            // Every design drains the same count; af_xdp holds it in its RX ring (its frames
            // come out of the UMEM: 2 KiB each), the others in the socket buffer.
            per_feed_fill = std::min(per_feed_fill, veth_drain_packets / spec.feeds);
            if (spec.backend == "af_xdp") {
                config.queue_capacity = per_feed_fill;
                config.hold_until_start = true;
            }
        }
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
        // A receiver that started held (af_xdp) has threads already: the drain's CPU is what
        // they use from here on.
        std::uint64_t const cpu_before_start = cpu_of(threads_except(before));
        rx->start();
        std::vector<pid_t> threads = threads_except(before);
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
        std::uint64_t const cpu = cpu_of(threads) - std::min(cpu_of(threads), cpu_before_start);
        std::uint64_t const switches = switches_of(threads);
        cpu_ticks const ticks_b = read_cpu_ticks();
        r.other_cpus =
            other_cpus(ticks_a, ticks_b, static_cast<double>(monotonic_ns() - t_a) * 1e-9);
        r.steal_ms = steal_ms(ticks_a, ticks_b);
        std::vector<std::uint64_t> const drops = socket_drops(so.ports);
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
        verify(r, sinks, tx.cursors(), 0, drops);
        return r;
    }

    so.rate = spec.rate;
    so.batch = latency ? 1 : 32;
    so.ports.erase(so.ports.begin(), so.ports.begin() + static_cast<std::ptrdiff_t>(paced_from));
    // flood: a second sender on the same CPU sends feed 0 packets as fast as it can.
    std::unique_ptr<sender> flooder;
    if (flood) {
        sender_options fo = so;
        fo.ports = {rx->ports().front()};
        fo.rate = 0;
        fo.batch = 32;
        flooder = std::make_unique<sender>(fo);
    }
    rx->start();
    sleep_seconds(0.05);
    std::vector<pid_t> const threads = threads_except(before);
    if (flooder) {
        flooder->start();
    }
    sender tx(so);
    tx.start();
    sleep_seconds(settings.warmup);
    auto const flood_sent = [&] {
        return flooder ? flooder->sent() : 0;
    };
    auto const counts_a = parsed_per_feed(sinks);
    std::uint64_t const cpu_a = cpu_of(threads);
    std::uint64_t const switches_a = switches_of(threads);
    std::uint64_t const sent_a = tx.sent();
    std::uint64_t const flood_sent_a = flood_sent();
    cpu_ticks const ticks_a = read_cpu_ticks();
    std::uint64_t const t_a = monotonic_ns();
    recording.store(true, std::memory_order_relaxed); // relaxed: selects the window only
    sleep_seconds(settings.duration);
    recording.store(false, std::memory_order_relaxed);
    auto const counts_b = parsed_per_feed(sinks);
    std::uint64_t const cpu_b = cpu_of(threads);
    std::uint64_t const switches_b = switches_of(threads);
    std::uint64_t const sent_b = tx.sent();
    std::uint64_t const flood_sent_b = flood_sent();
    cpu_ticks const ticks_b = read_cpu_ticks();
    std::uint64_t const t_b = monotonic_ns();
    tx.stop();
    if (flooder) {
        flooder->stop();
    }
    r.sent = tx.sent();
    // The flood's kernel drops never arrive: wait for the paced feeds, and for quiet.
    wait_parsed(sinks, r.sent + (flooder ? flooder->sent() : 0), 0.5);
    std::vector<std::uint64_t> const drops = socket_drops(rx->ports());
    rx->stop();
    auto const parsed_final = parsed_per_feed(sinks);
    r.parsed = sum(parsed_final) - (fairness ? parsed_final.front() : 0);

    double const window = static_cast<double>(t_b - t_a) * 1e-9;
    r.other_cpus = other_cpus(ticks_a, ticks_b, window);
    r.steal_ms = steal_ms(ticks_a, ticks_b);
    std::uint64_t const packets = sum(counts_b) - sum(counts_a); // the CPU's: every feed's
    std::uint64_t paced_packets = packets;
    if (fairness) {
        std::uint64_t const flood_packets = counts_b.front() - counts_a.front();
        r.flood_pps = static_cast<double>(flood_packets) / window;
        r.flood_tx_pps = static_cast<double>(flood_sent_b - flood_sent_a) / window;
        paced_packets -= flood_packets;
    }
    r.pps = static_cast<double>(paced_packets) / window;
    r.tx_pps = static_cast<double>(sent_b - sent_a) / window;
    r.cpu_ns_per_packet =
        packets != 0 ? static_cast<double>(cpu_b - cpu_a) / static_cast<double>(packets) : 0;
    r.cpu_share = static_cast<double>(cpu_b - cpu_a) * 1e-9 / window;
    r.switches_per_packet =
        packets != 0 ? static_cast<double>(switches_b - switches_a) / static_cast<double>(packets)
                     : 0;
    r.feed_cv = fairness ? feed_cv_between({counts_a.begin() + 1, counts_a.end()},
                                           {counts_b.begin() + 1, counts_b.end()})
                         : feed_cv_between(counts_a, counts_b);
    r.loss_pct = r.sent != 0 ? 100.0 * static_cast<double>(r.sent - std::min(r.sent, r.parsed)) /
                                   static_cast<double>(r.sent)
                             : 0;
    if (latency && !settings.trace_path.empty()) {
        append_trace(settings.trace_path, spec, sinks);
    }
    if (latency) {
        metrics::histogram::snapshot all;
        for (auto const& s : sinks) {
            all += s->latency().take();
        }
        r.p50 = all.percentile(0.50);
        r.p99 = all.percentile(0.99);
        r.p999 = all.percentile(0.999);
    }
    r.stage_samples = stage_samples(sinks);
    std::vector<feed_cursor> sent = tx.cursors();
    if (fairness) {
        sent.insert(sent.begin(), flooder ? flooder->cursors().front() : feed_cursor{});
    }
    verify(r, sinks, sent, flood ? 1 : 0, drops);
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
    config.stages = spec.stages != "off";

    std::vector<pid_t> const before = thread_ids();
    std::unique_ptr<pipeline> p = pipeline_for(spec)(config, sinks);
    p->start();
    sleep_seconds(0.05);
    std::vector<pid_t> const threads = threads_except(before);
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
    r.steal_ms = steal_ms(ticks_a, ticks_b);
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
    r.stage_samples = stage_samples(sinks);
    verify(r, sinks, p->cursors());
    return r;
}

} // namespace

point_result run_point(point_spec const& spec, packet_templates const& templates,
                       run_settings const& settings) {
    // The point's threads are new: each takes its first clock anchor after this.
    realtime_clock::use_system_clock(spec.stages == "system");
    point_result r = spec.mode == "memory" ? run_memory_point(spec, templates, settings)
                                           : run_socket_point(spec, templates, settings);
    realtime_clock::use_system_clock(false);
    return r;
}

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
        if (latency_mode(mode)) {
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

} // namespace signet::bench
