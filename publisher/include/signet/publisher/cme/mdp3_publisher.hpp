#pragma once

// mdp3_publisher: sends a CME MDP 3.0 channel from an signet::publisher::cme::mdp3_generator — the
// incremental feed on one or two lines (A/B: every packet to both), the market recovery feed (the
// snapshot loop) on a line of its own and the instrument definition feed on another (md_feed
// --protocol mdp3).
//
//   incremental   packet k at start + k / rate, with the publisher's fault injection (drop on
//                 A, B or both, duplicate, reorder); `packets` of them, or until `duration`
//                 or stop()
//   snapshots     one packet every snapshot_interval, the loop going round the instruments:
//                 each instrument's SnapshotFullRefresh52 (its levels), then the chunks of its
//                 SnapshotFullRefreshOrderBook53 (its orders), as of the last incremental
//                 packet; the loop's MsgSeqNum restarts at 1 with each loop
//   definitions   one MDInstrumentDefinitionFuture54 packet every definition_interval, round
//                 the instruments
// After the last incremental packet the loops go on for `tail`, so that a receiver that lost
// packets near the end still recovers. The loops are never faulted.
//
// Threading: run() on one thread; stop() from any thread or a signal handler. Costs: buffers
// at construction; per packet no allocation (a send error ends the run with run_result).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <signet/publisher/cme/mdp3_generator.hpp>
#include <signet/publisher/fault_injector.hpp>
#include <signet/publisher/line_output.hpp>
#include <signet/publisher/pacing_clock.hpp>
#include <signet/publisher/run_result.hpp>

namespace signet::publisher::cme {

struct mdp3_publisher_options {
    double rate = 10'000;      ///< incremental packets per second; 0: as fast as possible
    std::uint64_t packets = 0; ///< incremental packets; 0: until duration or stop()
    std::chrono::nanoseconds duration{0};
    std::chrono::nanoseconds snapshot_interval = std::chrono::milliseconds(1);
    std::chrono::nanoseconds definition_interval = std::chrono::milliseconds(5);
    std::chrono::nanoseconds tail = std::chrono::seconds(1);
    fault_options faults{};
    std::atomic<bool> const* stop_flag = nullptr;
    /// Optional: called after each incremental packet is generated (before the faults), with
    /// the generator holding the books as of it (md_feed --truth-out).
    std::function<void(mdp3_generator const&)> on_incremental{};
};

struct mdp3_counts {
    std::uint64_t packets = 0;                  ///< incremental packets that left on a line
    std::uint64_t messages = 0;                 ///< the SBE messages in those
    std::uint64_t dropped_packets = 0;          ///< kept off every line
    std::uint64_t dropped_one_line_packets = 0; ///< kept off one line of two
    std::uint64_t duplicated_packets = 0;
    std::uint64_t reordered_packets = 0;
    std::uint64_t book_entries = 0; ///< generated (dropped packets' included)
    std::uint64_t trades = 0;
    std::uint64_t order_entries = 0; ///< market by order (47)
    std::uint64_t snapshot_packets = 0;
    std::uint64_t snapshot_loops = 0; ///< completed
    std::uint64_t definition_packets = 0;
    std::uint64_t next_sequence = 1; ///< the incremental MsgSeqNum after the last packet
};

class mdp3_publisher {
public:
    /// `incremental` has 1 or 2 lines; `snapshots` and `definitions` 1 each. All must outlive
    /// it. Throws std::invalid_argument on bad options or lines.
    mdp3_publisher(mdp3_publisher_options options,
                   signet::publisher::cme::mdp3_generator& generator, line_output& incremental,
                   line_output& snapshots, line_output& definitions,
                   pacing_clock& clock = pacing_clock::steady());

    run_result run();
    void stop() noexcept { stop_.store(true, std::memory_order_relaxed); }
    [[nodiscard]] mdp3_counts const& counts() const noexcept { return counts_; }
    /// The run as one line of JSON (md_feed's report): the fields every protocol's report
    /// starts with (feed_report.hpp), then book_entries, trades, order_entries,
    /// snapshot_packets, snapshot_loops, definition_packets, instruments.
    [[nodiscard]] std::string report_json(double elapsed_s) const;

private:
    using time_point = pacing_clock::time_point;
    [[nodiscard]] bool stopping() const noexcept;
    /// Sends the loop packets that are due; false on a send error.
    [[nodiscard]] bool service_loops(time_point now);
    [[nodiscard]] bool send(line_output& out, std::size_t line, std::span<std::byte const> packet);

    mdp3_publisher_options options_;
    signet::publisher::cme::mdp3_generator& generator_;
    line_output& incremental_;
    line_output& snapshots_;
    line_output& definitions_;
    pacing_clock& clock_;
    fault_injector faults_;
    std::vector<std::byte> buffer_;
    std::vector<std::byte> loop_buffer_;
    time_point next_snapshot_{};
    time_point next_definition_{};
    std::size_t snapshot_instrument_ = 0;
    std::uint32_t loop_sequence_ = 0;
    std::size_t definition_instrument_ = 0;
    std::error_code send_error_;
    std::string send_error_where_;
    mdp3_counts counts_{};
    std::atomic<bool> stop_{false};
};

} // namespace signet::publisher::cme
