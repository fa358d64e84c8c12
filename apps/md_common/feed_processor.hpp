#pragma once

// feed_processor: what md_receiver plugs into a feed's parser contract. Per packet: MoldUDP64
// sequencing (through a sequence_arbiter), ITCH 5.0 decoding into the order book, counting, and
// the latency from the kernel's receive timestamp to the end of parsing, with its stages
// (net::stage_latency: one clock read per packet, one more per parser run). Never runs
// concurrently
// with itself (it is the parser contract's body); live() may be read from any thread. Logs once
// (a warning) when the order book first drops an add because it holds max_orders live orders,
// and at most once a second when the MoldUDP64 session ignored or resynchronized on packets
// (forged, stale or foreign: moldudp64.hpp, step 2).

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <signet/md/binary_file_writer.hpp>
#include <signet/md/feed_handler.hpp>
#include <signet/md/moldudp64_recovery.hpp>
#include <signet/md/sequence_arbiter.hpp>
#include <signet/net/packet.hpp>
#include <signet/net/stage_latency.hpp>
#include <signet/net/udp_socket.hpp>

#include "config.hpp"
#include "latency_histogram.hpp"

namespace signet::apps {

class feed_processor {
public:
    explicit feed_processor(feed_config const& config);

    /// Setup, before the runtime starts: the feed's request line (config rerequest), whose
    /// socket sends the re-requests and whose packets are the answers.
    void attach_request_line(net::udp_socket const& socket, std::uint16_t line);

    /// Setup: record what the session delivers (md_receiver --record); `r` outlives this.
    void attach_recorder(md::binary_file_writer& r);

    /// Parser contract only.
    void operator()(net::packet const& p);
    /// Parser contract only, after a run that parsed packets: publishes live() (once per run of
    /// up to 64 packets, not per packet).
    void on_batch();
    /// Parser contract only, run without packets (runtime::wake_parser): timers — the reorder
    /// hold and re-request timeouts.
    void on_idle();
    /// The live view (md_receiver --top): the `n` stocks with the most live orders and their
    /// top of book, published by on_idle() (parser contract) under a mutex — once per wake-up,
    /// never per packet — and copied out by top_rows() on any thread.
    struct top_row {
        std::array<char, 8> symbol{};
        md::top_of_book top{};
        std::uint32_t orders = 0;
    };
    void set_top(std::size_t n) {
        top_n_ = n;
        top_scratch_.reserve(n + 1);
        top_published_.reserve(n + 1);
    }
    [[nodiscard]] std::vector<top_row> top_rows() const;

    /// Any thread: a gap is being recovered (the owner wakes the parser for its timers).
    [[nodiscard]] bool recovering() const noexcept {
        // acquire: pairs with the release store in the state callback.
        return live_.recovering.load(std::memory_order_acquire);
    }
    /// After the runtime stopped: releases packets still held by the arbiter.
    void finish();

    /// Counters readable from any thread while running: as of the parser's last on_batch(),
    /// on_idle() or finish().
    struct live_counters {
        std::uint64_t packets = 0;
        std::uint64_t messages = 0;
        std::uint64_t gaps = 0;
        std::uint64_t missing_messages = 0;
        std::uint64_t duplicate_packets = 0;
        std::uint64_t malformed_packets = 0;
        std::uint64_t ignored_packets = 0; ///< another session or an implausible sequence
        std::uint64_t book_full_drops = 0;
        std::uint64_t recovered_messages = 0; ///< re-requests (config rerequest)
        std::uint64_t lost_messages = 0;
        bool end_of_session = false;
        bool recovering = false;
    };
    [[nodiscard]] live_counters live() const noexcept;
    /// Where the latency goes, per packet (net/stage_latency.hpp): receive, queue, parse, and
    /// total (the kernel's stamp -> parse done).
    [[nodiscard]] net::stage_latency const& stages() const noexcept { return stages_; }
    /// The "sequence" stage: how long packets that arrived ahead of a gap (reordered, line B's
    /// copy, a re-request answer) waited until delivered in sequence (sequence_arbiter's
    /// hold_latency); empty without MoldUDP64.
    [[nodiscard]] latency_histogram const& sequence_latency() const noexcept {
        static latency_histogram const no_holds; // without an arbiter: stays empty
        return arbiter_ ? arbiter_->hold_latency() : no_holds;
    }

    // After the runtime stopped (or from the parser contract).
    [[nodiscard]] feed_config const& config() const noexcept { return config_; }
    [[nodiscard]] md::moldudp64_stats session_stats() const noexcept;
    [[nodiscard]] md::itch50_stats const* itch_stats() const noexcept;
    [[nodiscard]] md::order_book const* book() const noexcept;
    /// The re-request client's counters (nullptr without config rerequest).
    [[nodiscard]] md::moldudp64_recovery_stats const* recovery_stats() const noexcept {
        return recovery_ ? &recovery_->stats() : nullptr;
    }
    [[nodiscard]] md::recovery_state recovery_state() const noexcept {
        return recovery_ ? recovery_->state() : md::recovery_state::synchronized;
    }
    [[nodiscard]] latency_histogram const& recovery_latency() const noexcept {
        return recovery_latency_;
    }
    [[nodiscard]] std::uint64_t rerequest_answers() const noexcept { return rerequest_answers_; }
    [[nodiscard]] std::uint64_t request_send_errors() const noexcept {
        return request_send_errors_;
    }

private:
    void deliver(std::span<std::byte const> datagram);
    std::uint64_t next_sequence() const noexcept;
    void publish() noexcept;
    md::moldudp64_session_options session_options() const noexcept;
    bool send_request(std::uint64_t first, std::uint16_t count) noexcept;
    void service_recovery();
    void log_untrusted(md::moldudp64_stats const& s) noexcept;

    static constexpr std::uint64_t untrusted_log_interval_ns = 1'000'000'000;

    feed_config config_;
    std::optional<md::itch_feed_handler> itch_;      // moldudp64 + itch50
    std::optional<md::moldudp64_session> session_;   // moldudp64 + count
    std::optional<md::sequence_arbiter> arbiter_;    // moldudp64
    std::optional<md::moldudp64_recovery> recovery_; // moldudp64 + rerequest
    md::binary_file_writer* recorder_ = nullptr;
    net::udp_socket const* request_socket_ = nullptr;
    std::uint16_t request_line_ = 0;
    std::uint64_t now_ = 0; // CLOCK_REALTIME ns of the packet (or wake-up) being handled
    std::uint64_t rerequest_answers_ = 0;
    std::uint64_t request_send_errors_ = 0;
    latency_histogram recovery_latency_; // gap requested -> filled
    std::uint64_t raw_packets_ = 0;      // raw + count
    net::stage_latency stages_;
    struct atomic_counters {
        std::atomic<std::uint64_t> packets{0};
        std::atomic<std::uint64_t> messages{0};
        std::atomic<std::uint64_t> gaps{0};
        std::atomic<std::uint64_t> missing_messages{0};
        std::atomic<std::uint64_t> duplicate_packets{0};
        std::atomic<std::uint64_t> malformed_packets{0};
        std::atomic<std::uint64_t> ignored_packets{0};
        std::atomic<std::uint64_t> book_full_drops{0};
        std::atomic<std::uint64_t> recovered_messages{0};
        std::atomic<std::uint64_t> lost_messages{0};
        std::atomic<bool> end_of_session{false};
        std::atomic<bool> recovering{false};
    } live_;
    bool book_full_logged_ = false;
    void publish_top();
    std::size_t top_n_ = 0;
    std::vector<top_row> top_scratch_; // parser contract only
    mutable std::mutex top_mutex_;     // guards top_published_
    std::vector<top_row> top_published_;
    std::uint64_t untrusted_logged_ = 0; // ignored + resyncs when last logged
    std::uint64_t untrusted_log_ns_ = 0; // now_ when last logged
};

} // namespace signet::apps
