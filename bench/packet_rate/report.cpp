// The stdout text and the JSON of signet_packet_rate; see report.hpp for what goes where.

#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <thread>

#include <sys/utsname.h>

#include "json_array.hpp"
#include "machine_info.hpp"
#include "network_path.hpp"

namespace signet::bench {

namespace {

/// JSON "backend": the point's backend; latency points (quiet, flood too) carry "+spin"/"+block".
std::string backend_label(point_spec const& spec) {
    std::string label = spec.backend;
    if (latency_mode(spec.mode)) {
        label += spec.idle == idle_mode::spin ? "+spin" : "+block";
    }
    return label;
}

/// stdout's design column: "+st" (stages on) or "+st-sys" (on, system clock) after the name.
std::string design_label(point_spec const& spec) {
    if (spec.stages == "on") {
        return spec.design + "+st";
    }
    if (spec.stages == "system") {
        return spec.design + "+st-sys";
    }
    return spec.design;
}

} // namespace

void print_setup(run_settings const& settings, std::string const& receiver_cpus) {
    utsname uts{};
    uname(&uts);
    std::cout << "signet packet-rate benchmark\n  cpu: " << cpu_model() << " ("
              << std::thread::hardware_concurrency() << " logical)\n  kernel: " << uts.release
              << "\n  sender/injector cpu: " << settings.sender_cpu
              << ", receiver cpus: " << receiver_cpus << "\n  measured " << settings.duration
              << " s after " << settings.warmup << " s warm-up per point; drain buffers "
              << (settings.drain_budget >> 20) << " MiB in total\n  path: " << current_path().name
              << (current_path().name == "veth"
                      ? " (a veth pair between two network namespaces made for this run)"
                      : " (127.0.0.1)")
              << "\n";
}

void print_templates(std::size_t payload, std::size_t count, packet_templates const& templates) {
    std::printf("  payload %zu: %zu template packets, mean %.1f bytes, %.2f messages/packet\n",
                payload, count, templates.mean_size(), templates.mean_messages());
}

void print_header() {
    std::printf(
        "%-7s %-15s %5s %3s %8s %4s %-7s %11s %8s %9s %8s %8s %8s %7s %11s %5s %6s %6s %5s\n",
        "design", "backend", "feeds", "w", "rate", "B", "mode", "pps", "loss%", "cpu_ns/p",
        "p50_ns", "p99_ns", "p999_ns", "feed_cv", "tx_pps", "cpu%", "cs/p", "other%", "steal");
}

void print_row(point_result const& r) {
    std::string const backend = backend_label(r.spec);
    std::string const design = design_label(r.spec);
    std::printf("%-7s %-15s %5zu %3zu %8.0f %4zu %-7s %11.0f %8.4f %9.1f %8llu %8llu %8llu %7.4f "
                "%11.0f %5.1f %6.3f %6.1f %5.0f\n",
                design.c_str(), backend.c_str(), r.spec.feeds, r.spec.workers, r.spec.rate,
                r.spec.payload, r.spec.mode.c_str(), r.pps, r.loss_pct, r.cpu_ns_per_packet,
                static_cast<unsigned long long>(r.p50), static_cast<unsigned long long>(r.p99),
                static_cast<unsigned long long>(r.p999), r.feed_cv, r.tx_pps, 100 * r.cpu_share,
                r.switches_per_packet, 100 * r.other_cpus, r.steal_ms);
    if (fairness_mode(r.spec.mode)) {
        std::printf("        feed 0 (the flood): sent %.0f/s, parsed %.0f/s\n", r.flood_tx_pps,
                    r.flood_pps);
    }
    for (auto const& p : r.problems) {
        std::printf("        ! %s\n", p.c_str());
    }
    std::fflush(stdout);
}

void print_retry(point_result const& r) {
    std::printf("        (other processes used %.0f%% of a CPU, the hypervisor took %.0f ms: "
                "again)\n",
                100 * r.other_cpus, r.steal_ms);
}

void write_json(std::string const& path, std::vector<point_result> const& rows) {
    std::vector<nlohmann::ordered_json> objects;
    objects.reserve(rows.size());
    for (auto const& r : rows) {
        objects.push_back({{"design", r.spec.design},
                           {"backend", backend_label(r.spec)},
                           {"feeds", r.spec.feeds},
                           {"workers", r.spec.workers},
                           {"rate", finite_or_zero(r.spec.rate)},
                           {"payload", r.spec.payload},
                           {"mode", r.spec.mode},
                           {"pps", finite_or_zero(std::round(r.pps))},
                           {"loss_pct", finite_or_zero(r.loss_pct)},
                           {"cpu_ns_per_packet", finite_or_zero(r.cpu_ns_per_packet)},
                           {"p50_ns", r.p50},
                           {"p99_ns", r.p99},
                           {"p999_ns", r.p999},
                           {"feed_cv", finite_or_zero(r.feed_cv)},
                           {"switches_per_packet", finite_or_zero(r.switches_per_packet)},
                           {"steal_ms", finite_or_zero(r.steal_ms)},
                           {"stages", r.spec.stages},
                           {"stage_samples", r.stage_samples},
                           {"path", current_path().name}});
        if (fairness_mode(r.spec.mode)) {
            objects.back()["flood_pps"] = finite_or_zero(std::round(r.flood_pps));
            objects.back()["flood_sent_pps"] = finite_or_zero(std::round(r.flood_tx_pps));
        }
    }
    write_json_array(path, objects);
}

} // namespace signet::bench
