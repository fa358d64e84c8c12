#pragma once

// Measuring one point of signet_packet_rate. A socket point (paced, drain, latency) builds the
// design's receiver and drives it with the loopback sender; a memory point builds the design's
// in-memory pipeline and lets its injector run flat out. Either way the point's numbers come
// from one measured window: packets the feeds parsed, CPU time and context switches of the
// threads the design started (per-thread CPU clocks and /proc/self/task, see common.hpp), and
// the CPU other processes used (/proc/stat) so that a disturbed run can be repeated. Every
// point ends with verification: each feed's handler saw exactly the packets and messages sent,
// in order, nothing malformed; failures land in point_result::problems.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "plan.hpp"

namespace signet::bench {

/// What applies to every point of a run.
struct run_settings {
    double duration = 2;
    double warmup = 0.3;
    int sender_cpu = -1;
    std::vector<int> receiver_cpus;
    std::size_t drain_budget = 256u << 20; // bytes of socket buffer, all feeds together
    std::size_t queue_capacity = 0;        // 0: per mode default
    std::size_t ring_buffers = net::feed_options{}.ring_buffers; // signet io_uring; 0: whole pool
    /// Latency points (quiet, flood too) append each timed packet's send stamp and latency
    /// here (--trace-latency; bench/packet_rate/latency_trace.py reads it). Empty: not kept.
    std::string trace_path;
};

struct point_result {
    point_spec spec;
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
    double steal_ms = 0;            // ms the hypervisor took from the CPUs in the window
    std::uint64_t sent = 0;
    std::uint64_t parsed = 0;
    std::uint64_t stage_samples = 0; // parses timed by net::stage_latency (--stages on/system)
    // quiet, flood: feed 0's packets (the flood) parsed and sent per second in the window; the
    // fields above (pps, loss, latency, sent, parsed) are the paced feeds' alone.
    double flood_pps = 0;
    double flood_tx_pps = 0;
    std::vector<std::string> problems; // verification failures
};

/// Runs `spec` once (a memory point or a socket point, after its mode) and verifies it.
point_result run_point(point_spec const& spec, packet_templates const& templates,
                       run_settings const& settings);

/// The run with the median primary metric (paced: CPU/packet; latency: p50; drain, memory:
/// packets/s); the problems of every run are kept. `runs` is not empty.
point_result median_run(std::vector<point_result> runs);

} // namespace signet::bench
