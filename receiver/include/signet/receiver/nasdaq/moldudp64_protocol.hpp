#pragma once

// moldudp64: Nasdaq's MoldUDP64 carrying ITCH 5.0 as a receiver protocol (`protocol =
// "moldudp64"`, the default). Its lines: A (and B), and with `rerequest` a request line whose
// socket sends the re-requests and receives the answers. Its packets are framed by
// md::nasdaq::moldudp64_frame (validated in full; the session is the stream key); the shared
// sequencing delivers them in order, and each new message goes
//   - with `parser = "itch50"` (the default) to an md::nasdaq::itch50_parser and its order book
//     (prefetching across packets: service() flushes before anything reads the book);
//   - with `glimpse` (late join) to an md::nasdaq::itch_snapshot_sync instead: buffered until a
//     GLIMPSE snapshot (glimpse_client) loaded a fresh book, then applied to it; a gap declared
//     lost asks for a new snapshot;
//   - with `parser = "count"` nowhere: counted only;
//   - with md_receiver --record, also to a BinaryFILE recording (md::nasdaq::binary_file_writer).
// Gaps are recovered, with `rerequest`, by md::request_recovery (the arbiter holds what
// arrived behind the gap meanwhile). Its summary section "moldudp64" holds the session, the
// ITCH counters and books, the recovery's and GLIMPSE's counters and the recording.
//
// Threading: feed_protocol's.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <signet/core/metrics/histogram.hpp>
#include <signet/md/nasdaq/binary_file_writer.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_snapshot_sync.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/request_recovery.hpp>
#include <signet/net/udp_socket.hpp>
#include <signet/receiver/feed_protocol.hpp>
#include <signet/receiver/nasdaq/glimpse_client.hpp>

namespace signet::receiver::nasdaq {

/// What a moldudp64 feed does with the messages.
enum class moldudp64_parser : std::uint8_t {
    itch50, ///< ITCH 5.0 into order books
    count,  ///< counting only (sequencing, gaps, re-requests: no book)
};

/// A moldudp64 feed's own keys (docs/md_receiver.md).
class moldudp64_settings final : public protocol_settings {
public:
    moldudp64_parser parser = moldudp64_parser::itch50;
    std::string session{}; ///< the MoldUDP64 session to accept (pinned); empty: learn it
    /// The re-request server: gaps are requested from it (the request line receives the
    /// answers); none: gaps are counted and skipped.
    std::optional<net::udp_endpoint> rerequest{};
    std::uint64_t rerequest_timeout_ms = 50;   ///< a request unanswered this long is sent again
    std::size_t rerequest_max_messages = 1000; ///< messages per request
    std::size_t rerequest_max_in_flight = 4;   ///< requests outstanding at once
    unsigned rerequest_tries = 3;              ///< requests per range before the gap is lost
    /// A GLIMPSE 5.0 snapshot server (SoupBinTCP, "ip:port"): the feed joins late — it loads a
    /// snapshot at start, and again whenever a gap is declared lost, buffering the multicast
    /// meanwhile (docs/md_receiver.md, "Late join and restart"); none: it starts at sequence 1.
    std::optional<net::udp_endpoint> glimpse{};
    std::string glimpse_username{}; ///< the SoupBinTCP login (6 characters at most)
    std::string glimpse_password{}; ///< (10 characters at most)
    /// Live messages buffered while a snapshot loads (the bound: the oldest are evicted).
    std::size_t glimpse_buffer_messages = std::size_t{1} << 20;

    [[nodiscard]] std::string_view protocol() const noexcept override { return "moldudp64"; }
    [[nodiscard]] std::unique_ptr<feed_protocol> make(feed_config const& feed) const override;
    /// Its keys, their parser and its summary fields (receiver/src/protocols.cpp).
    [[nodiscard]] static protocol_registration registration();
};

class moldudp64_protocol final : public feed_protocol {
public:
    moldudp64_protocol(feed_config const& feed, moldudp64_settings const& settings);
    ~moldudp64_protocol() override;

    [[nodiscard]] std::vector<line_spec> lines() const override;
    [[nodiscard]] md::sequence_tracker_options sequencing() const override;
    void setup(feed_setup& setup) override;
    [[nodiscard]] md::gap_recovery* recovery(std::size_t stream) noexcept override;
    [[nodiscard]] std::string describe() const override;
    void set_event_sink(md::event_sink* sink, md::event_mask kinds) override;

    [[nodiscard]] std::optional<md::sequence_unit>
    frame(std::span<std::byte const> datagram) const noexcept override {
        return md::nasdaq::moldudp64_frame(datagram);
    }
    void deliver(delivery const& d) override;
    void poll_recovery(std::uint64_t now_ns) override;
    void service(std::uint64_t now_ns) override;
    [[nodiscard]] std::uint64_t next_deadline(std::uint64_t now_ns) const noexcept override;
    void book_rows(std::vector<book_row>& out) const override;
    [[nodiscard]] std::size_t book_levels(std::uint32_t instrument, char side,
                                          std::span<book_level> out) const override;
    [[nodiscard]] protocol_counters counters() const noexcept override;
    void publish() noexcept override;
    void finish() override;

    void stats_lines(std::string_view feed, feed_counters const& live,
                     std::vector<std::string>& out) const override;
    [[nodiscard]] std::string live_state(feed_counters const& live) const override;
    void metrics(metric_writer& out, std::string const& feed) const override;

    void summary(nlohmann::ordered_json& out) const override;
    void summary_text(std::string& out, std::size_t books) const override;

    // ---- for tests and tools, after the runtime stopped (or on the parser's thread) ----
    [[nodiscard]] moldudp64_settings const& settings() const noexcept { return settings_; }
    /// The book (nullptr with parser "count").
    [[nodiscard]] md::nasdaq::itch_order_book const* book() const noexcept;
    [[nodiscard]] md::nasdaq::itch50_stats const* itch_stats() const noexcept;
    /// The re-request client (nullptr without rerequest).
    [[nodiscard]] md::request_recovery const* rerequests() const noexcept {
        return recovery_ ? &*recovery_ : nullptr;
    }
    /// The GLIMPSE path (nullptr without glimpse); live() from any thread.
    [[nodiscard]] glimpse_client const* glimpse() const noexcept { return glimpse_.get(); }
    /// Gap requested -> filled (rerequest).
    [[nodiscard]] metrics::histogram const& recovery_latency() const noexcept {
        return recovery_latency_;
    }
    [[nodiscard]] std::uint64_t request_send_errors() const noexcept {
        return request_send_errors_;
    }
    [[nodiscard]] md::nasdaq::binary_file_writer const* recording() const noexcept {
        return recording_.get();
    }

private:
    void stale(delivery const& d); // events: the book lost data for good (no GLIMPSE)
    void record(std::span<std::byte const> message);
    bool send_request(std::uint64_t first, std::uint16_t count) noexcept;

    /// A partly filled recording chunk goes to the disk at most this long after its first
    /// message: a quiet feed's last messages reach the file too.
    static constexpr std::uint64_t record_flush_ns = 50'000'000;

    feed_config feed_;
    moldudp64_settings settings_;
    std::optional<md::nasdaq::itch50_parser> parser_;    // itch50, from sequence 1
    std::optional<md::nasdaq::itch_snapshot_sync> sync_; // itch50 + glimpse
    std::optional<md::request_recovery> recovery_;
    std::unique_ptr<glimpse_client> glimpse_;
    std::unique_ptr<md::nasdaq::binary_file_writer> recording_;
    net::udp_socket const* request_socket_ = nullptr;
    md::stream_key session_{}; // the last delivered packet's: what a re-request names
    metrics::histogram recovery_latency_;
    std::uint64_t messages_ = 0;
    std::uint64_t lost_gaps_ = 0;    // gaps delivered without a snapshot to repair them
    bool started_ = false;           // a unit was delivered
    bool started_late_ = false;      // the first one was not the stream's first (late_start)
    md::event_sink* sink_ = nullptr; // events (set_event_sink)
    md::event_mask kinds_{};
    std::uint64_t record_since_ = 0;
    std::uint64_t request_send_errors_ = 0;
    std::uint64_t now_ = 0; // the last delivery's time (recording)
    bool book_full_logged_ = false;
};

} // namespace signet::receiver::nasdaq
