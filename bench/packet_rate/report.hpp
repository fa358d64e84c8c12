#pragma once

// Reporting for signet_packet_rate: the text on stdout (the machine and workload banner, one
// table row per point with its verification failures as '!' lines, the retry notes) and the
// JSON array, one object per point with the fields check_results.py and bench/plot-packet-rate
// read: design, backend, feeds, workers, rate, payload, mode, pps, loss_pct, cpu_ns_per_packet,
// p50_ns, p99_ns, p999_ns, feed_cv (quiet and flood: also flood_pps and flood_sent_pps). The
// stdout-only numbers (tx_pps, cpu%, cs/p, other%) are not in the JSON.

#include <cstddef>
#include <string>
#include <vector>

#include "common.hpp"
#include "measure.hpp"

namespace signet::bench {

/// CPU, kernel, pinning and the measured window of this run; `receiver_cpus` as printed.
void print_setup(run_settings const& settings, std::string const& receiver_cpus);
/// One line per payload about its template packets.
void print_templates(std::size_t payload, std::size_t count, packet_templates const& templates);
void print_header();
/// The point's row, then one '!' line per problem.
void print_row(point_result const& r);
/// A run was disturbed by other processes or by the hypervisor (steal) and is repeated.
void print_retry(point_result const& r);
/// Writes `rows` as a JSON array; throws std::runtime_error when the file cannot be written.
void write_json(std::string const& path, std::vector<point_result> const& rows);

} // namespace signet::bench
