#pragma once

// Planning for signet_packet_rate: which points run, in which order. A point is one design,
// backend, feed count, worker count, rate, payload, mode and idle mode; plan_points() expands the
// command line's lists into points (mode outermost, then design, backend, feeds, workers,
// payload, idle, stages) and applies the per-mode rules: latency (and the fairness pair quiet,
// flood) defaults to 50k packets/s and to both idle modes, drain and memory run unpaced, memory
// has no backend, raw always runs one thread. Nothing here opens a
// socket or starts a thread; measure.hpp runs a point, report.hpp prints it.

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"

namespace signet::bench {

inline constexpr std::array<std::string_view, 5> all_designs{"signet", "signet_poller", "queue",
                                                             "asio", "raw"};
inline constexpr std::array<std::string_view, 6> all_modes{"paced",  "drain", "latency",
                                                           "memory", "quiet", "flood"};

/// The fairness pair: latency of feeds 1..N-1 (paced) while feed 0 is silent (quiet) or
/// flooded by a second sender as fast as it can send (flood).
inline bool fairness_mode(std::string_view mode) noexcept {
    return mode == "quiet" || mode == "flood";
}
/// Modes whose points record send-to-parse latency.
inline bool latency_mode(std::string_view mode) noexcept {
    return mode == "latency" || fairness_mode(mode);
}
inline constexpr std::array<std::string_view, 3> all_stages{"off", "on", "system"};
inline constexpr std::array<std::string_view, 5> all_backends{"io_uring", "epoll", "asio",
                                                              "recvmmsg", "af_xdp"};

/// Whether `list` holds `value`.
template <typename List>
bool contains(List const& list, std::string_view value) {
    return std::find(list.begin(), list.end(), value) != list.end();
}

struct point_spec {
    std::string design;
    std::string backend; // signet: io_uring/epoll/asio/af_xdp; raw: io_uring/recvmmsg; else fixed
    std::size_t feeds = 1;
    std::size_t workers = 1;
    double rate = 0;
    std::size_t payload = 64;
    std::string mode;
    idle_mode idle = idle_mode::block;
    /// signet designs: "off", "on" (net::stage_latency in the parser; memory mode stamps
    /// user_rx_ns per burst, socket modes ask for kernel software timestamps) or "system" (on,
    /// with realtime_clock forced to the system clock). Other designs: "off".
    std::string stages = "off";
};

/// The command line's lists, already checked against all_designs, all_modes and all_backends.
struct plan_options {
    std::vector<std::string> designs;  ///< not empty
    std::vector<std::string> backends; ///< empty: every backend of each design
    std::vector<std::size_t> feeds;
    std::vector<std::size_t> workers;
    double rate = 0;         ///< packets/s of paced and latency points
    bool rate_given = false; ///< false: latency points run at 50k/s instead of `rate`
    std::vector<std::size_t> payloads;
    std::vector<std::string> modes;
    std::vector<std::string> idles; ///< "spin"/"block"; empty: latency both, other modes block
    std::vector<std::string> stages{"off"}; ///< of all_stages; innermost, signet designs only
    bool veth = false;                      ///< --path veth: the signet designs also run on af_xdp
};

/// Every point to run, in run order.
std::vector<point_spec> plan_points(plan_options const& options);

} // namespace signet::bench
