#pragma once

// Shared pieces of signet_packet_rate: the workload (pre-generated MoldUDP64/ITCH packets replayed
// per feed with per-feed sequence numbers), the per-feed sink every design calls (one
// md::itch_feed_handler per feed, counters, latency histogram), thread CPU accounting, pinning
// and small socket helpers. No io_uring, Asio or moodycamel here: each design lives in its own
// translation unit (liburing's <linux/fs.h> defines BLOCK_SIZE, which breaks moodycamel).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/core/metrics/histogram.hpp>
#include <signet/md/nasdaq/itch_feed_handler.hpp>
#include <signet/net/feed.hpp>
#include <signet/net/stage_latency.hpp>
#include <signet/net/unique_fd.hpp>

namespace signet::bench {

// ---- workload --------------------------------------------------------------------------------

/// Where the sender stamps its send time: the 6-byte ITCH timestamp of the packet's first
/// message (MoldUDP64 header 20 bytes + block length 2 + ITCH offset 5). CLOCK_MONOTONIC ns,
/// modulo 2^48 (78 hours).
inline constexpr std::size_t timestamp_offset = 20 + 2 + 5;
inline constexpr std::uint64_t timestamp_mask = (std::uint64_t{1} << 48) - 1;
/// Offset of the MoldUDP64 sequence number.
inline constexpr std::size_t sequence_offset = 10;
/// Receive buffer per packet in every design (payloads are at most 512 bytes here).
inline constexpr std::size_t packet_buffer_size = 1024;

/// A cycle of MoldUDP64 packets (ITCH 5.0 from signet::publisher::nasdaq::itch_generator, packed by
/// md::moldudp64_packer) that every feed replays with its own sequence numbers. The ITCH stream
/// is one generator's: after a cycle the order references repeat, which the book counts as
/// duplicates/unknown refs for the few orders still live at the cycle's end (the same for every
/// design).
class packet_templates {
public:
    /// `payload`: the target UDP payload (64 or 512); packets are filled greedily up to
    /// max(payload, 72) bytes so that every ITCH message fits in a packet of its own.
    packet_templates(std::size_t payload, std::size_t packets);

    [[nodiscard]] std::size_t size() const noexcept { return offsets_.size(); }
    [[nodiscard]] std::span<std::byte const> packet(std::size_t i) const noexcept {
        return {bytes_.data() + offsets_[i], sizes_[i]};
    }
    [[nodiscard]] std::uint16_t messages(std::size_t i) const noexcept { return counts_[i]; }
    [[nodiscard]] double mean_size() const noexcept { return mean_size_; }
    [[nodiscard]] double mean_messages() const noexcept { return mean_messages_; }
    [[nodiscard]] std::size_t max_size() const noexcept { return max_size_; }

private:
    std::vector<std::byte> bytes_;
    std::vector<std::size_t> offsets_;
    std::vector<std::uint32_t> sizes_;
    std::vector<std::uint16_t> counts_;
    double mean_size_ = 0;
    double mean_messages_ = 0;
    std::size_t max_size_ = 0;
};

/// One feed's position in the template cycle and its next MoldUDP64 sequence number.
struct feed_cursor {
    std::size_t next = 0;
    std::uint64_t sequence = 1;
    std::uint64_t packets = 0;
    std::uint64_t messages = 0;
};

/// Writes the feed's next packet into `out` (at least templates.max_size() bytes) with the
/// feed's sequence number; returns its size. Does not stamp the time.
std::size_t produce_packet(packet_templates const& templates, feed_cursor& cursor,
                           std::byte* out) noexcept;
/// Stamps `ns` into the packet's first message timestamp (see timestamp_offset).
void stamp_packet(std::byte* packet, std::uint64_t ns) noexcept;

// ---- per-feed sink ---------------------------------------------------------------------------

enum class sink_timing : std::uint8_t {
    none,    ///< count only (paced, memory)
    drain,   ///< also first/last parse time (drain)
    latency, ///< also send-timestamp -> parse-done latency while recording is on (latency)
};

/// What every design calls per packet: the feed's itch_feed_handler, then the counters. Calls
/// for one feed never overlap (each design serializes its feed); `parsed` and the drain times
/// are read by the controlling thread while running.
class feed_sink {
public:
    feed_sink(sink_timing timing, std::atomic<bool> const* recording);

    void on_packet(std::span<std::byte const> packet) noexcept;

    [[nodiscard]] std::uint64_t parsed() const noexcept {
        return parsed_.load(std::memory_order_relaxed); // relaxed: a snapshot
    }
    [[nodiscard]] std::uint64_t first_ns() const noexcept {
        return first_ns_.load(std::memory_order_relaxed); // relaxed: a snapshot
    }
    [[nodiscard]] std::uint64_t last_ns() const noexcept {
        return last_ns_.load(std::memory_order_relaxed); // relaxed: a snapshot
    }
    /// After the receiver stopped.
    [[nodiscard]] md::nasdaq::itch_feed_handler const& handler() const noexcept { return handler_; }
    /// Send timestamp -> parse done (ns), recorded by the feed's parser; take() on any thread.
    [[nodiscard]] metrics::histogram const& latency() const noexcept { return latency_; }
    /// Keeps each timed packet's send stamp and latency too (up to `capacity`, reserved now:
    /// the parser does not allocate), for --trace-latency. Before the receiver starts.
    void keep_samples(std::size_t capacity);
    /// {send stamp ns, latency ns} of the timed packets, in parse order. After the receiver
    /// stopped.
    [[nodiscard]] std::span<std::pair<std::uint64_t, std::uint64_t> const>
    samples() const noexcept {
        return {samples_.data(), samples_.size()};
    }
    /// Per-stage latency, for a design that times its parser's stages (signet --stages):
    /// begin()/end() by the feed's parser, the histograms' take() on any thread.
    [[nodiscard]] net::stage_latency& stages() noexcept { return stages_; }

private:
    md::nasdaq::itch_feed_handler handler_;
    sink_timing timing_;
    std::atomic<bool> const* recording_;
    metrics::histogram latency_;
    net::stage_latency stages_;
    std::atomic<std::uint64_t> parsed_{0};
    std::atomic<std::uint64_t> first_ns_{0};
    std::atomic<std::uint64_t> last_ns_{0};
    std::vector<std::pair<std::uint64_t, std::uint64_t>> samples_; // capacity fixed before start
};

/// One sink per feed. unique_ptrs: the sinks never move while designs hold references.
using sink_set = std::vector<std::unique_ptr<feed_sink>>;

// ---- designs ---------------------------------------------------------------------------------

enum class idle_mode : std::uint8_t { spin, block };

/// A socket receiver design. Construction opens and binds the sockets (127.0.0.1, ephemeral
/// ports); start() starts its threads; stop() stops and joins them.
class receiver {
public:
    virtual ~receiver() = default;
    [[nodiscard]] virtual std::vector<std::uint16_t> ports() const = 0;
    virtual void start() = 0;
    virtual void stop() = 0;
};

struct receiver_config {
    std::string backend; ///< signet: io_uring/epoll/asio/af_xdp; raw: io_uring/recvmmsg
    std::size_t feeds = 1;
    std::size_t workers = 1;
    idle_mode idle = idle_mode::block;
    std::vector<int> cpus;                 ///< receiver CPUs (first: poller/receive thread)
    std::size_t receive_buffer = 4u << 20; ///< SO_RCVBUF(FORCE) request per socket
    std::size_t queue_capacity = 1024;     ///< packets in flight per feed (signet, queue)
    bool dedicated_poller = false;         ///< signet: poller thread instead of the reactor
    std::size_t ring_buffers = net::feed_options{}.ring_buffers; ///< signet io_uring
    bool stages = false; ///< signet: kernel software timestamps and feed_sink::stages()
    /// signet af_xdp drain: the runtime starts on construction with the parsers held until
    /// start() (signet_design.cpp).
    bool hold_until_start = false;
};

std::unique_ptr<receiver> make_signet_receiver(receiver_config const& config, sink_set& sinks);
std::unique_ptr<receiver> make_queue_receiver(receiver_config const& config, sink_set& sinks);
std::unique_ptr<receiver> make_asio_receiver(receiver_config const& config, sink_set& sinks);
std::unique_ptr<receiver> make_raw_uring_receiver(receiver_config const& config, sink_set& sinks);
std::unique_ptr<receiver> make_raw_recvmmsg_receiver(receiver_config const& config,
                                                     sink_set& sinks);

/// An in-memory pipeline (memory mode): no sockets; an injector thread (the poller's / receive
/// thread's place) copies template packets into the design's buffers and hands them to the
/// design's queueing path, as fast as the pipeline accepts them.
class pipeline {
public:
    virtual ~pipeline() = default;
    virtual void start() = 0;
    /// Stops injecting, waits until everything injected was parsed, stops the threads.
    virtual void stop() = 0;
    /// Per-feed injected packets and messages; valid after stop().
    [[nodiscard]] virtual std::vector<feed_cursor> const& cursors() const = 0;
};

struct pipeline_config {
    std::size_t feeds = 1;
    std::size_t workers = 1;
    idle_mode idle = idle_mode::block;
    int injector_cpu = -1;
    std::vector<int> worker_cpus;
    std::size_t queue_capacity = 1024; ///< packets in flight per feed
    packet_templates const* templates = nullptr;
    bool stages = false; ///< signet: user_rx_ns stamped per burst and feed_sink::stages()
};

std::unique_ptr<pipeline> make_signet_pipeline(pipeline_config const& config, sink_set& sinks);
std::unique_ptr<pipeline> make_queue_pipeline(pipeline_config const& config, sink_set& sinks);
std::unique_ptr<pipeline> make_asio_pipeline(pipeline_config const& config, sink_set& sinks);
std::unique_ptr<pipeline> make_raw_pipeline(pipeline_config const& config, sink_set& sinks);

// ---- threads, CPU time, sockets --------------------------------------------------------------

std::uint64_t monotonic_ns() noexcept;
/// CPU of `cpus[i % size]`, or -1 when `cpus` is empty.
int cpu_at(std::vector<int> const& cpus, std::size_t i) noexcept;
/// The process's thread ids (/proc/self/task).
std::vector<pid_t> thread_ids();
/// CPU time (user + system) of thread `tid` of this process in ns: its per-thread CPU clock,
/// which is what getrusage(RUSAGE_THREAD) reports, readable from another thread.
std::uint64_t thread_cpu_ns(pid_t tid) noexcept;
/// The process's threads now, less `except` (sorted, as thread_ids() gives them): the threads
/// started since `except` was taken.
std::vector<pid_t> threads_except(std::vector<pid_t> const& except);
/// The CPU time of `threads`, summed (thread_cpu_ns; an exited thread adds 0).
std::uint64_t cpu_of(std::vector<pid_t> const& threads) noexcept;
pid_t current_tid() noexcept;
/// CPU time of the whole machine (/proc/stat: all but nice, idle and iowait; niced work such
/// as `nice make` yields to the benchmark) and of this process
/// (/proc/self/stat utime + stime, all threads), in clock ticks. Their difference over a window
/// is what other processes used: the benchmark's interference check on a shared machine.
struct cpu_ticks {
    std::uint64_t machine = 0;
    std::uint64_t process = 0;
    std::uint64_t steal = 0; ///< time the hypervisor ran something else on our CPUs (all CPUs)
};
cpu_ticks read_cpu_ticks();
/// CPUs' worth of time other processes used between `a` and `b` (`seconds` apart).
double other_cpus(cpu_ticks const& a, cpu_ticks const& b, double seconds);
/// Milliseconds the hypervisor took from this machine's CPUs between `a` and `b` (steal time;
/// clock-tick resolution, 10 ms): a receiver whose virtual CPU is not running stalls, whatever
/// its design.
double steal_ms(cpu_ticks const& a, cpu_ticks const& b);

/// Voluntary + involuntary context switches of thread `tid` (/proc/self/task/<tid>/status).
std::uint64_t thread_switches(pid_t tid);

/// A non-blocking UDP socket bound to the path's receiving address (network_path.hpp; 127.0.0.1
/// on loopback), port 0, with SO_RCVBUFFORCE (or SO_RCVBUF) of
/// `receive_buffer` bytes. Throws std::system_error.
net::unique_fd open_udp_socket(std::size_t receive_buffer);
std::uint16_t local_port(int fd);

/// Sample coefficient of variation (stddev / mean); 0 for fewer than two values or mean 0.
double coefficient_of_variation(std::vector<double> const& values);

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

} // namespace signet::bench
