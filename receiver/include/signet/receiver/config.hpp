#pragma once

// The receiver's configuration: typed structs a program fills in code, or reads from the TOML
// file md_receiver reads (see config/*.toml and docs/md_receiver.md). Unknown keys and bad values
// are errors that name the key and its line in the file.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <signet/core/worker_pool.hpp>
#include <signet/net/feed.hpp>
#include <signet/net/receive_backend.hpp>
#include <signet/net/udp_endpoint.hpp>

namespace signet::receiver {

enum class protocol_kind { moldudp64, mdp3, raw };
/// itch50: ITCH 5.0 into order books (moldudp64); count: counting only; mbp: CME MDP 3.0
/// market-by-price books (mdp3, the only parser it takes).
enum class parser_kind { itch50, count, mbp };

/// Bounds of the [stats] keys, in seconds.
inline constexpr double min_interval_s = 0.01;
inline constexpr double max_interval_s = 86'400;
/// Bounds of [book] max_orders (live orders per feed; the table takes 48 bytes per order).
inline constexpr std::size_t default_max_orders = std::size_t{1} << 20;
inline constexpr std::size_t max_max_orders = std::size_t{1} << 27;
/// Bounds of [[feed]] buffer_size (payload bytes per packet buffer; 65507 is the largest UDP
/// payload over IPv4) and busy_poll_us.
inline constexpr std::size_t min_buffer_size = 64;
inline constexpr std::size_t max_buffer_size = 65'507;
inline constexpr std::size_t max_busy_poll_us = 1'000'000;
/// Bound of [[feed]] max_sequence_jump (messages).
inline constexpr std::size_t max_max_sequence_jump = std::size_t{1} << 40;

struct feed_config {
    std::string name{};
    protocol_kind protocol = protocol_kind::moldudp64;
    parser_kind parser = parser_kind::itch50;
    net::udp_endpoint bind{};
    std::optional<net::udp_endpoint> bind_b{}; ///< line B (A/B arbitration)
    /// mdp3: the market recovery (snapshot loop) and instrument definition feeds' lines.
    std::optional<net::udp_endpoint> snapshot_bind{};
    std::optional<net::udp_endpoint> definitions_bind{};
    std::optional<net::udp_endpoint> group{}; ///< multicast group of line A
    std::optional<net::udp_endpoint> group_b{};
    std::optional<net::udp_endpoint> source{}; ///< source-specific multicast
    std::string interface {};
    std::size_t queue_capacity = 4096;
    net::full_policy on_full = net::full_policy::backpressure;
    std::size_t rcvbuf = 8u << 20;
    net::timestamping timestamps = net::timestamping::software;
    unsigned busy_poll_us = 0;      ///< SO_BUSY_POLL; 0: off
    bool reuse_port = false;        ///< SO_REUSEPORT on every line
    std::size_t buffer_size = 1500; ///< payload bytes per packet buffer; longer ones truncated
    std::size_t ring_buffers = 64;  ///< io_uring: buffers in each line's ring; 0: all
    std::string session{};          ///< MoldUDP64 session id to accept (pinned); empty: learn it
    std::uint64_t max_sequence_jump = 100'000; ///< farthest plausible sequence jump (messages)
    /// MoldUDP64 re-request server: gaps are requested from it (a line of its own receives the
    /// answers); none: gaps are counted and skipped.
    std::optional<net::udp_endpoint> rerequest{};
    std::uint64_t rerequest_timeout_ms = 50;   ///< a request unanswered this long is sent again
    std::size_t rerequest_max_messages = 1000; ///< messages per request
    std::size_t rerequest_max_in_flight = 4;   ///< requests outstanding at once
    unsigned rerequest_tries = 3;              ///< requests per range before the gap is lost
    std::size_t recovery_buffer = 4096;        ///< packets held behind a gap while recovering
    /// GLIMPSE 5.0 snapshot server (SoupBinTCP, "ip:port"): the feed joins late — it loads a
    /// snapshot at start, and again whenever a gap is declared lost, buffering the multicast
    /// meanwhile (docs/md_receiver.md, "Late join and restart"); none: it starts at sequence 1.
    std::optional<net::udp_endpoint> snapshot{};
    std::string snapshot_username{}; ///< the SoupBinTCP login (6 characters at most)
    std::string snapshot_password{}; ///< (10 characters at most)
    /// Live messages buffered while a snapshot loads (the bound: the oldest are evicted).
    std::size_t snapshot_buffer_messages = std::size_t{1} << 20;
    std::size_t max_orders = default_max_orders; ///< copied from [book] max_orders
    /// backend = "af_xdp": the feed's `af_xdp` table (queues, xdp_mode, bind, busy_poll_us,
    /// busy_poll_budget) on its `interface`.
    net::af_xdp_options af_xdp{};
};

struct receiver_config {
    net::backend_kind backend = net::backend_kind::automatic;
    std::size_t workers = 1;
    std::vector<int> cpus{};
    idle_strategy idle = idle_strategy::backoff;
    net::poller_mode poller = net::poller_mode::contract; ///< [runtime] poller
    double stats_interval_s = 1.0;
    double silent_warning_s = 5.0; ///< warn when a feed received nothing this long; 0 = never
    std::size_t max_orders = default_max_orders; ///< [book]: live orders per itch50 feed
    std::vector<feed_config> feeds{};
    /// [metrics] listen: serve /metrics (Prometheus text format) here; none: no endpoint.
    std::optional<net::udp_endpoint> metrics_listen{};
};

/// A configuration error; what() reads "FILE:LINE: key 'KEY': PROBLEM".
class config_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Throws config_error.
receiver_config load_receiver_config(std::string const& path);
receiver_config parse_receiver_config(std::string_view text, std::string const& source_name);

/// CPU ids that [runtime] cpus accepts are below this: the CPUs the system has configured
/// (online or not), at most CPU_SETSIZE.
int configured_cpu_limit() noexcept;

/// The socket options of a feed's lines (one, or two for A/B).
std::vector<net::udp_socket_options> line_options(feed_config const& feed);
/// The name of line_options(feed)[line]: "a", then "b" (A/B), then "r" (the re-request line),
/// or for mdp3 "s" (snapshots) and "d" (definitions).
char const* line_name(feed_config const& feed, std::size_t line) noexcept;

} // namespace signet::receiver
