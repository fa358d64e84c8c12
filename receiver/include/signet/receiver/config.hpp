#pragma once

// The receiver's configuration: typed structs a program fills in code, or reads from the TOML
// file md_receiver reads (see config/*.toml and docs/md_receiver.md). A feed's keys are in two
// parts: the ones every feed has (its sockets, queues, sequencing bounds), here, and its
// protocol's own (protocol_settings, in each protocol's header beside this one). Unknown keys
// and bad values are errors that name the key and its line in the file.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <signet/core/worker_pool.hpp>
#include <signet/net/feed.hpp>
#include <signet/net/receive_backend.hpp>
#include <signet/net/udp_endpoint.hpp>
#include <signet/net/udp_socket.hpp>

namespace signet::receiver {

class protocol_settings; // feed_protocol.hpp

/// Bounds of the [stats] keys, in seconds.
inline constexpr double min_interval_s = 0.01;
inline constexpr double max_interval_s = 86'400;
/// Bounds of [book] max_orders (live orders per feed's book).
inline constexpr std::size_t default_max_orders = std::size_t{1} << 20;
inline constexpr std::size_t max_max_orders = std::size_t{1} << 27;
/// Bounds of [[feed]] buffer_size (payload bytes per packet buffer; 65507 is the largest UDP
/// payload over IPv4) and busy_poll_us.
inline constexpr std::size_t min_buffer_size = 64;
inline constexpr std::size_t max_buffer_size = 65'507;
inline constexpr std::size_t max_busy_poll_us = 1'000'000;
/// Bound of [[feed]] max_sequence_jump (sequence numbers).
inline constexpr std::size_t max_max_sequence_jump = std::size_t{1} << 40;

/// What a feed's line carries, for the feed's parser contract.
enum class line_role : std::uint8_t {
    arbitrated, ///< the sequenced stream (lines A and B): framed, guarded, arbitrated, sequenced
    answers,    ///< the same stream's resent packets (re-request answers): sequenced, not a line of
                ///< the A/B arbitration
    side,       ///< the protocol's own (a snapshot loop, definitions): handed to it as they come
};

/// A line of a feed: its name (a, b, request, snapshot, definitions: the `line` label of the
/// metrics and the log lines), its socket and its role; `tag` is the protocol's own id for a
/// side line (what on_side_packet() is told).
struct line_spec {
    std::string name;
    net::udp_socket_options socket{};
    line_role role = line_role::arbitrated;
    std::uint16_t tag = 0;
};

struct feed_config {
    std::string name{};
    /// The protocol and its keys (one of the registered protocols' settings); required.
    std::shared_ptr<protocol_settings const> protocol{};
    net::udp_endpoint bind{};
    std::optional<net::udp_endpoint> bind_b{}; ///< line B (A/B arbitration)
    std::optional<net::udp_endpoint> group{};  ///< multicast group of line A
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
    /// The farthest plausible sequence jump (sequence numbers): a packet farther from the next
    /// expected one is ignored and counted (md::sequence_tracker), whatever the protocol.
    std::uint64_t max_sequence_jump = 100'000;
    /// Packets held behind a gap while the protocol recovers it (re-requests).
    std::size_t recovery_buffer = 4096;
    std::size_t max_orders = default_max_orders; ///< copied from [book] max_orders
    /// backend = "af_xdp": the feed's `af_xdp` table (queues, xdp_mode, bind, busy_poll_us,
    /// busy_poll_budget) on its `interface`.
    net::af_xdp_options af_xdp{};

    /// The protocol's name (what `protocol = "..."` selects); "" without settings.
    [[nodiscard]] std::string_view protocol_name() const noexcept;
};

/// The socket of line A as the feed's keys set it (bind, group, source, interface, buffers,
/// timestamps, busy poll, reuse): the base of every line of the feed.
[[nodiscard]] net::udp_socket_options line_a_socket(feed_config const& feed);
/// Lines A and B (when bind_b is set) of the feed's sequenced stream: what most protocols
/// declare first.
[[nodiscard]] std::vector<line_spec> ab_lines(feed_config const& feed);

/// [publish] nats...: the NATS bridge (docs/publishing.md). Off while `url` is empty.
struct nats_config {
    std::string url{};      ///< nats: "nats://host:port" (a comma-separated list for a cluster)
    std::string user{};     ///< nats_user (with nats_password)
    std::string password{}; ///< nats_password
    std::string token{};    ///< nats_token
    std::string creds{};    ///< nats_creds: a credentials file (JWT and NKey seed)
    bool tls = false;       ///< nats_tls: require TLS (implied by the nats_tls_* files)
    std::string tls_ca{};   ///< nats_tls_ca: the CA certificates to trust
    std::string tls_cert{}; ///< nats_tls_cert: this client's certificate chain (with tls_key)
    std::string tls_key{};  ///< nats_tls_key
    bool json = false;      ///< nats_format = "json" (else "binary")
    /// nats_subjects: the subject kinds published (bbo, trade, book, status, definition).
    std::vector<std::string> kinds{"bbo", "trade", "book", "status", "definition"};
    bool stream = true;          ///< nats_stream: a JetStream last-value stream per feed
    std::size_t replicas = 1;    ///< nats_replicas: the stream's replicas (a cluster's servers)
    bool conflate = false;       ///< nats_conflate: a full queue keeps each symbol's latest bbo
    std::size_t queue = 1 << 18; ///< nats_queue: events queued per feed
    /// standby: the hot-standby group this receiver is a member of ("" : none; per feed one
    /// member of the group publishes; docs/publishing.md "Standby groups").
    std::string standby{};
    std::string standby_name{};              ///< standby_name: this member ("" : hostname:pid)
    std::size_t standby_lease_ms = 2000;     ///< standby_lease_ms: the lease's TTL
    std::size_t standby_history = 1 << 18;   ///< standby_history: events kept per feed
    std::size_t standby_instruments = 16384; ///< standby_instruments: state slots per feed
};

struct receiver_config {
    net::backend_kind backend = net::backend_kind::automatic;
    std::size_t workers = 1;
    std::vector<int> cpus{};
    idle_strategy idle = idle_strategy::backoff;
    net::poller_mode poller = net::poller_mode::contract; ///< [runtime] poller
    double stats_interval_s = 1.0;
    double silent_warning_s = 5.0; ///< warn when a feed received nothing this long; 0 = never
    std::size_t max_orders = default_max_orders; ///< [book]: live orders per feed's book
    std::vector<feed_config> feeds{};
    /// [metrics] listen: serve /metrics (Prometheus text format) here; none: no endpoint.
    std::optional<net::udp_endpoint> metrics_listen{};
    /// [publish] shm: the shared-memory segment's name ("" for none; docs/publishing.md).
    std::string shm{};
    std::size_t shm_instruments = 16384; ///< [publish] shm_instruments: slots per feed
    std::size_t shm_events = 65536;      ///< [publish] shm_events: ring entries per feed
    nats_config nats{};                  ///< [publish] nats...
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

} // namespace signet::receiver
