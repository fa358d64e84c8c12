#pragma once

// mdp3: a CME MDP 3.0 channel as a receiver protocol (`protocol = "mdp3"`). Its lines: the
// incremental feed's A (and B) — framed by md::cme::validate_packet (the whole packet must
// frame before its MsgSeqNum counts), one sequence number per packet, sequenced and arbitrated
// by the shared layer into an md::cme::mdp3_channel — and two side lines of its own: the
// snapshot loop (market recovery) and the instrument definitions, handed to the channel as they
// come. The channel keeps its books (by price and by order) right through loss: a gap, a late
// start or a RptSeq gap makes it recover from the snapshot loop (docs/mdp3.md). Its summary
// section "mdp3" holds the instruments (books, orders, statistics) and the channel's counters.
// Side lines may be multicast groups (snapshot_group, definitions_group, as CME sends them):
// the definitions' group stays joined; the snapshot loop's is joined only while the channel
// recovers (left at setup, joined when recovery begins, left when it ends):
// a loop of every instrument's book is heavy traffic a synchronized channel does not need.
//
// Threading: feed_protocol's.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include <signet/md/cme/mdp3_channel.hpp>
#include <signet/receiver/feed_protocol.hpp>

namespace signet::receiver::cme {

/// A mdp3 feed's own keys (docs/md_receiver.md).
class mdp3_settings final : public protocol_settings {
public:
    /// The market recovery feed (the snapshot loop) and the instrument definition feed.
    net::udp_endpoint snapshot_bind{};
    net::udp_endpoint definitions_bind{};
    /// Their multicast groups (the feed's `interface`); none: unicast.
    std::optional<net::udp_endpoint> snapshot_group{};
    std::optional<net::udp_endpoint> definitions_group{};

    [[nodiscard]] std::string_view protocol() const noexcept override { return "mdp3"; }
    [[nodiscard]] std::unique_ptr<feed_protocol> make(feed_config const& feed) const override;
    [[nodiscard]] static protocol_registration registration();
};

class mdp3_protocol final : public feed_protocol {
public:
    /// Side-line tags.
    static constexpr std::uint16_t snapshot_line = 1;
    static constexpr std::uint16_t definitions_line = 2;

    mdp3_protocol(feed_config const& feed, mdp3_settings const& settings);

    [[nodiscard]] std::vector<line_spec> lines() const override;
    [[nodiscard]] md::sequence_tracker_options sequencing() const override;
    void setup(feed_setup& setup) override;
    void set_event_sink(md::event_sink* sink, md::event_mask kinds) override {
        channel_.set_event_sink(sink, kinds);
    }
    [[nodiscard]] std::optional<md::sequence_unit>
    frame(std::span<std::byte const> datagram) const noexcept override;
    void deliver(delivery const& d) override;
    void on_side_packet(std::uint16_t tag, net::packet const& p, std::uint64_t now_ns) override;
    void service(std::uint64_t now_ns) override;
    [[nodiscard]] std::uint64_t next_deadline(std::uint64_t now_ns) const noexcept override;
    [[nodiscard]] std::optional<md::sequence_unit> inferred_heartbeat() const noexcept override;
    void book_rows(std::vector<book_row>& out) const override;
    [[nodiscard]] std::size_t book_levels(std::uint32_t instrument, char side,
                                          std::span<book_level> out) const override;
    [[nodiscard]] protocol_counters counters() const noexcept override;
    void publish() noexcept override;

    void stats_lines(std::string_view feed, feed_counters const& live,
                     std::vector<std::string>& out) const override;
    [[nodiscard]] std::string live_state(feed_counters const& live) const override;
    void metrics(metric_writer& out, std::string const& feed) const override;
    void summary(nlohmann::ordered_json& out) const override;
    void summary_text(std::string& out, std::size_t books) const override;

    /// The channel (instruments, books, counters): on the parser's thread or after stop().
    [[nodiscard]] md::cme::mdp3_channel const& channel() const noexcept { return channel_; }

private:
    /// Joins the snapshot loop's group when the channel recovers, leaves it when it does not.
    void follow_snapshot_loop(std::uint64_t now_ns) noexcept;

    feed_config feed_;
    mdp3_settings settings_;
    md::cme::mdp3_channel channel_;
    bool budget_logged_ = false; // the parser contract's own
    // The snapshot group's membership (snapshot_group): the parser contract's own.
    struct membership {
        net::udp_socket const* socket = nullptr; ///< none: unicast
        bool joined = true;                      ///< open() joined it
        std::uint64_t joins = 0;
        std::uint64_t leaves = 0;
        std::uint64_t errors = 0;      ///< joins or leaves the kernel refused
        std::uint64_t retry_at_ns = 0; ///< after an error, not before (1 s)
        bool error_logged = false;
    } snapshot_membership_;
    // For the "any thread" calls, as of the last publish(): relaxed, independent values.
    std::atomic<std::uint64_t> live_instruments_{0};
    std::atomic<std::uint64_t> live_stale_{0};
    std::atomic<std::uint64_t> live_recoveries_{0};
    std::atomic<std::uint64_t> live_completed_{0};
    std::atomic<std::uint64_t> live_rpt_seq_gaps_{0};
    std::atomic<std::uint64_t> live_last_recovery_us_{0};
};

} // namespace signet::receiver::cme
