#pragma once

// moldudp64_publisher: sends MoldUDP64 on one or two lines (A/B: every datagram on both) from a
// source of messages — the ITCH generator (signet::publisher::nasdaq::itch_generator), a Nasdaq
// BinaryFILE (md::nasdaq::binary_file_reader) — or re-sends the datagrams of a capture (pcap_source).
//
// Messages (run): packed into packets of at most `batch` messages and `max_payload` bytes,
// paced to `rate` messages per second. The line is never silent longer than `heartbeat`:
//   1. Each line's last send is remembered; the lines are due `heartbeat` after the oldest.
//   2. When they are due, what the packer holds leaves (however few messages), or a heartbeat
//      if it holds nothing. A message is built after the last send, so it too never waits
//      longer than `heartbeat` for its packet.
//   3. Otherwise the next message is built once it is due (message k at start + k / rate),
//      and a full packet leaves at once; else the publisher sleeps until the earlier of the
//      two deadlines.
//   A packet that fault injection keeps off a line is not a send on that line (the line stays
//   due), so the silence a receiver sees is bounded by the heartbeat even around drops. At the
//   end (the source ends, `duration` elapses or stop() is called) the packer's last packet
//   leaves, then `end_of_session_packets` end-of-session packets.
// Captures (replay): each datagram at its captured time after the first, divided by `speed`,
// or at a fixed packet rate; nothing is added (no heartbeats, no end of session).
//
// Fault injection applies to data packets of both kinds, counted from 1 by packet: every Nth is
// not sent (on line A, B or both), sent twice, or sent after the packet that follows it. Every
// data packet built or replayed goes to `on_packet` first, the dropped ones included (a request
// service's store must hold what receivers will ask for).
//
// Threading: run()/replay() and counts() on one thread (the publisher's); stop() from any
// thread or a signal handler. One run per publisher (the sequence goes on if run again). Use it
// to publish a feed, or as a test's source of MoldUDP64; it is not a retransmission server
// (rerequest_service is). Costs: buffers allocated at construction; per packet no
// allocation, lock, log or exception (a send error or an oversized message ends the run with a
// message in run_result). Not copyable or movable: stop() may be called through a pointer.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <signet/md/nasdaq/binary_file_reader.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/fault_injector.hpp>
#include <signet/publisher/line_output.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>
#include <signet/publisher/pacing_clock.hpp>
#include <signet/publisher/pcap_source.hpp>
#include <signet/publisher/run_result.hpp>

namespace signet::publisher::nasdaq {

struct moldudp64_publisher_options {
    /// The MoldUDP64 session id (space padded to 10).
    std::string session = "SIGNET0001";
    std::uint64_t first_sequence = 1;
    /// Messages per second (run); 0: as fast as possible.
    double rate = 100'000;
    /// The longest silence on a line, and the longest a message waits for its packet; > 0.
    std::chrono::nanoseconds heartbeat = std::chrono::seconds(1);
    /// Messages per packet at most, 1 to 65534.
    std::uint16_t batch = 8;
    /// Bytes per packet at most, header included.
    std::size_t max_payload = 1400;
    /// Send for this long, then end the session; 0: until the source ends or stop().
    std::chrono::nanoseconds duration{0};
    fault_options faults{};
    /// End-of-session packets after a run (none after a replay), this far apart.
    std::uint32_t end_of_session_packets = 3;
    std::chrono::nanoseconds end_of_session_spacing = std::chrono::milliseconds(5);
    /// Every data packet built or replayed, before fault injection (dropped ones included).
    /// Called on the publisher's thread; must not throw.
    std::function<void(std::span<std::byte const>)> on_packet{};
    /// An outside stop request (a signal handler's flag), polled like stop(); may be null.
    std::atomic<bool> const* stop_flag = nullptr;
};

/// Data packets and the messages in them, by message type (the first byte, all 256 values).
struct message_counts {
    std::uint64_t packets = 0;
    std::uint64_t messages = 0;
    std::array<std::uint64_t, 256> by_type{};
};

struct moldudp64_counts {
    message_counts sent;    ///< data packets that left on a line (each counted once)
    message_counts dropped; ///< data packets fault injection kept off every line
    std::uint64_t dropped_one_line_packets = 0; ///< kept off one line of two
    std::uint64_t duplicated_packets = 0;
    std::uint64_t reordered_packets = 0;
    std::uint64_t heartbeats = 0;
    std::uint64_t end_of_session_packets = 0;
    /// The sequence after the last message built, or replayed (0: a replay without messages).
    std::uint64_t next_sequence = 0;
    /// BinaryFILE records of length 0: not messages, skipped. The first one's record number.
    std::uint64_t malformed_records = 0;
    std::uint64_t first_malformed_record = 0;
};

/// Replay timing: a fixed packet rate, or the captured timing divided by `speed`.
struct replay_timing {
    /// Packets per second instead of the captured timing; 0: as fast as possible.
    std::optional<double> packets_per_second{};
    /// The captured gaps are divided by this; 0: as fast as possible.
    double speed = 1;
};

class moldudp64_publisher {
public:
    /// Throws std::invalid_argument on bad options. `out` and `clock` must outlive it.
    moldudp64_publisher(moldudp64_publisher_options options, line_output& out,
                        pacing_clock& clock = pacing_clock::steady());
    moldudp64_publisher(moldudp64_publisher const&) = delete;
    moldudp64_publisher& operator=(moldudp64_publisher const&) = delete;

    /// Sends the generator's messages until it finishes; the duration or stop() closes it (its
    /// closing events still go out).
    run_result run(signet::publisher::nasdaq::itch_generator& source);
    /// Sends the file's messages until its end, the duration or stop(). Zero-length records
    /// are skipped and counted (malformed_records).
    run_result run(md::nasdaq::binary_file_reader& source);
    /// Re-sends the capture's datagrams until its end, the duration or stop().
    run_result replay(pcap_source& capture, replay_timing const& timing);

    /// Any thread, async-signal-safe: the run ends soon (run: the session is closed properly).
    /// Setting options' stop_flag does the same.
    void stop() noexcept;
    [[nodiscard]] bool stop_requested() const noexcept;

    /// Publisher's thread (or after run()/replay() returned to the thread that reads it).
    [[nodiscard]] moldudp64_counts const& counts() const noexcept { return counts_; }
    [[nodiscard]] moldudp64_publisher_options const& options() const noexcept { return options_; }

private:
    using time_point = pacing_clock::time_point;
    struct message_source;
    struct generator_source;
    struct file_source;

    run_result run_messages(message_source& source);
    [[nodiscard]] time_point lines_due() const noexcept;
    [[nodiscard]] bool flush();
    [[nodiscard]] bool heartbeat();
    [[nodiscard]] bool emit(std::span<std::byte const> packet);
    [[nodiscard]] bool send(std::span<std::byte const> datagram, bool skip_a, bool skip_b,
                            int copies);
    /// send() as the fault injector calls it.
    [[nodiscard]] auto sender() noexcept {
        return [this](std::span<std::byte const> datagram, bool skip_a, bool skip_b, int copies) {
            return send(datagram, skip_a, skip_b, copies);
        };
    }
    [[nodiscard]] bool wait_until(time_point due, time_point stop_at) noexcept;
    [[nodiscard]] run_result finish(std::string error);

    moldudp64_publisher_options options_;
    line_output& out_;
    pacing_clock& clock_;
    std::vector<std::byte> packet_buffer_;
    md::nasdaq::moldudp64_packer packer_;
    fault_injector faults_;
    std::array<time_point, 2> last_send_{};
    std::error_code send_error_;
    std::size_t send_error_line_ = 0;
    moldudp64_counts counts_{};
    std::atomic<bool> stop_{false};
};

} // namespace signet::publisher::nasdaq
