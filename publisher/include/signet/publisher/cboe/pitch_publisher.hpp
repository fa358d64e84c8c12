#pragma once

// pitch_publisher: sends a Cboe Multicast PITCH feed from a pitch_generator on one or two lines
// (A/B: every block to both) — md_feed --protocol pitch.
//
//   blocks      the units take turns; each block is one unit's next 1 to max_block_messages
//               messages (a Time message first when the unit's second changed), numbered by
//               the unit's own sequence; generated message k of the run (Time messages aside:
//               how many depends on the run's timing) leaves at start + k / rate; the
//               publisher's fault injection (drop on A, B or both, duplicate, reorder) applies
//               to blocks; `messages` of them, or until `duration` or stop()
//   heartbeats  a unit that sent nothing for heartbeat_interval sends a heartbeat (no
//               messages, its next sequence) on every line; never faulted
//   the end     each unit's End of Session, then for `tail` heartbeats only (a receiver that
//               lost the last blocks sees the gap and can recover it)
// on_block (optional) sees every block as it was built (before the faults): the recovery
// services' record(). on_tail (optional) is called once the last message and every End of
// Session are out, before the tail's heartbeats (md_feed says so: a case can start a receiver
// that must see heartbeats alone).
//
// Threading: run() on one thread; stop() from any thread or a signal handler. Costs: buffers
// at construction; per block no allocation (a send error ends the run with run_result).

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <signet/publisher/cboe/pitch_generator.hpp>
#include <signet/publisher/fault_injector.hpp>
#include <signet/publisher/line_output.hpp>
#include <signet/publisher/pacing_clock.hpp>
#include <signet/publisher/run_result.hpp>

namespace signet::publisher::cboe {

struct pitch_publisher_options {
    double rate = 100'000; ///< messages per second; 0: as fast as possible
    /// Generated messages to send (not counting Time and End of Session); 0: until duration or
    /// stop().
    std::uint64_t messages = 0;
    std::chrono::nanoseconds duration{0};
    std::size_t max_block_messages = 4; ///< 1 to 255
    std::size_t max_block_bytes = 1400; ///< a block's datagram, header included (64 to 65535)
    std::chrono::nanoseconds heartbeat_interval = std::chrono::seconds(1);
    std::chrono::nanoseconds tail = std::chrono::seconds(1);
    std::uint32_t start_time_s = 34'200; ///< the first Time: seconds since midnight (09:30)
    fault_options faults{};
    std::atomic<bool> const* stop_flag = nullptr;
    /// Every block as built, before the faults (the recovery services' record()).
    std::function<void(std::span<std::byte const>)> on_block{};
    /// Once the messages and each unit's End of Session are out, before the tail.
    std::function<void()> on_tail{};
};

struct pitch_counts {
    std::uint64_t packets = 0;  ///< blocks that left on a line
    std::uint64_t messages = 0; ///< messages in those
    std::uint64_t dropped_packets = 0;
    std::uint64_t dropped_messages = 0; ///< messages of the blocks kept off every line
    std::uint64_t dropped_one_line_packets = 0;
    std::uint64_t duplicated_packets = 0;
    std::uint64_t reordered_packets = 0;
    std::uint64_t heartbeats = 0; ///< on each line
    std::uint64_t generated = 0;  ///< messages built (dropped blocks' included)
};

class pitch_publisher {
public:
    static constexpr std::size_t max_units = 64;

    /// `lines` has 1 or 2 lines; both must outlive it. Throws std::invalid_argument on bad
    /// options or lines.
    pitch_publisher(pitch_publisher_options options, pitch_generator& generator, line_output& lines,
                    pacing_clock& clock = pacing_clock::steady());

    run_result run();
    void stop() noexcept { stop_.store(true, std::memory_order_relaxed); }
    [[nodiscard]] pitch_counts const& counts() const noexcept { return counts_; }
    /// The sequence unit `unit` (1 to units) numbers its next message with.
    [[nodiscard]] std::uint32_t next_sequence(std::uint8_t unit) const noexcept {
        return next_[unit];
    }
    /// The run as one line of JSON (md_feed's report): the fields every protocol's report
    /// starts with (feed_report.hpp; sequence numbers are messages, next_sequence the sum over
    /// the units of the messages sent plus one), then units, symbols, and per unit its
    /// next_sequence and live orders.
    [[nodiscard]] std::string report_json(double elapsed_s) const;

private:
    using time_point = pacing_clock::time_point;
    [[nodiscard]] bool stopping() const noexcept;
    [[nodiscard]] bool send_all(std::span<std::byte const> block, bool skip_a, bool skip_b,
                                int copies);
    /// Heartbeats of the units idle for heartbeat_interval (or all, `all`); false on a send
    /// error.
    [[nodiscard]] bool heartbeats(time_point now, bool all);
    /// Builds unit's next block of up to `messages` generated messages (plus Time).
    std::span<std::byte const> build(std::uint8_t unit, std::size_t messages, time_point now,
                                     time_point start, bool end_of_session);

    pitch_publisher_options options_;
    pitch_generator& generator_;
    line_output& lines_;
    pacing_clock& clock_;
    fault_injector faults_;
    std::vector<std::byte> buffer_;
    std::array<std::uint32_t, max_units + 1> next_{}; // per unit: its next sequence
    std::array<std::uint32_t, max_units + 1> time_{}; // per unit: its last Time (s)
    std::array<time_point, max_units + 1> last_sent_{};
    std::mt19937_64 random_;
    std::error_code send_error_;
    std::string send_error_where_;
    pitch_counts counts_{};
    std::atomic<bool> stop_{false};
};

} // namespace signet::publisher::cboe
