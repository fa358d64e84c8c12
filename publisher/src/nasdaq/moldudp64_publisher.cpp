#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/publisher/nasdaq/moldudp64_publisher.hpp>

namespace signet::publisher::nasdaq {

namespace {

using clock_duration = pacing_clock::duration;

static_assert(std::atomic<bool>::is_always_lock_free, "stop() must be async-signal-safe");

/// Offsets beyond a year (a tiny replay speed, a capture spanning decades) are clamped, so
/// time points cannot overflow.
constexpr double max_offset_s = 365.0 * 86'400;

clock_duration seconds(double s) {
    // Rounded, not truncated: 0.15 s is 150 ms, not 149.999999 ms.
    return std::chrono::round<clock_duration>(
        std::chrono::duration<double>(std::min(s, max_offset_s)));
}

/// Adds a data packet to `counts` (its well-formed MoldUDP64 messages by type; zero-length
/// ones are not messages) and returns the sequence after its last message, or 0 if the
/// datagram is not a well-formed data packet (it still counts as a packet).
std::uint64_t add_packet(message_counts& counts, std::span<std::byte const> datagram) noexcept {
    ++counts.packets;
    std::optional<md::nasdaq::moldudp64_header> const header =
        md::nasdaq::moldudp64_peek_header(datagram);
    if (!header || header->count == 0 ||
        header->count == md::nasdaq::moldudp64_end_of_session_count ||
        !md::nasdaq::moldudp64_blocks_fill(datagram, header->count)) {
        return 0;
    }
    std::size_t offset = md::nasdaq::moldudp64_header_size;
    for (std::uint32_t i = 0; i < header->count; ++i) {
        std::size_t const length = md::load_be16(datagram.data() + offset);
        if (length != 0) {
            ++counts.messages;
            ++counts.by_type[std::to_integer<unsigned char>(datagram[offset + 2])];
        }
        offset += 2 + length;
    }
    return header->sequence + header->count;
}

std::size_t checked_payload(moldudp64_publisher_options const& o) {
    if (o.batch == 0 || o.batch > md::nasdaq::moldudp64_max_messages) {
        throw std::invalid_argument("moldudp64_publisher: batch must be 1 to 65534 messages");
    }
    if (!(o.rate >= 0) || o.heartbeat <= std::chrono::nanoseconds::zero() ||
        o.duration < std::chrono::nanoseconds::zero()) {
        throw std::invalid_argument(
            "moldudp64_publisher: rate >= 0, heartbeat > 0 and duration >= 0");
    }
    return o.max_payload; // the packer checks it against the header
}

} // namespace

// ---- sources of messages ------------------------------------------------------------------------

struct moldudp64_publisher::message_source {
    enum class status : std::uint8_t { message, skipped, end };
    virtual ~message_source() = default;
    /// The next message into `message` (valid until the next call).
    virtual status next(std::span<std::byte const>& message, bool closing) noexcept = 0;
    /// The run is ending (duration, stop()).
    virtual void close() noexcept = 0;
};

struct moldudp64_publisher::generator_source final : message_source {
    explicit generator_source(signet::publisher::nasdaq::itch_generator& g)
        : generator(g) {}
    status next(std::span<std::byte const>& message, bool) noexcept override {
        std::size_t const n = generator.next(scratch);
        message = {scratch.data(), n};
        return n == 0 ? status::end : status::message; // 0: finished, closing events sent
    }
    void close() noexcept override { generator.close(); }

    signet::publisher::nasdaq::itch_generator& generator;
    std::array<std::byte, md::nasdaq::itch50::max_message_length> scratch{};
};

struct moldudp64_publisher::file_source final : message_source {
    file_source(md::nasdaq::binary_file_reader& r, moldudp64_counts& c)
        : reader(r)
        , counts(c) {}
    status next(std::span<std::byte const>& message, bool closing) noexcept override {
        if (closing) {
            return status::end; // a file has no closing events of its own
        }
        std::optional<std::span<std::byte const>> record;
        try {
            record = reader.next();
        } catch (...) { // a read error of the stream: the end of the file, as far as we know
            return status::end;
        }
        if (!record) {
            return status::end;
        }
        if (record->empty()) {
            if (counts.malformed_records++ == 0) {
                counts.first_malformed_record = reader.messages();
            }
            return status::skipped;
        }
        message = *record;
        return status::message;
    }
    void close() noexcept override {}

    md::nasdaq::binary_file_reader& reader;
    moldudp64_counts& counts;
};

// ---- moldudp64_publisher
// ----------------------------------------------------------------------------------

moldudp64_publisher::moldudp64_publisher(moldudp64_publisher_options options, line_output& out,
                                         pacing_clock& clock)
    : options_(std::move(options))
    , out_(out)
    , clock_(clock)
    , packet_buffer_(checked_payload(options_))
    , packer_(packet_buffer_, options_.session, options_.first_sequence,
              {.max_payload = options_.max_payload, .max_messages = options_.batch})
    , faults_(options_.faults) {
    if (out_.lines() < 1 || out_.lines() > 2) {
        throw std::invalid_argument("moldudp64_publisher: one or two lines");
    }
    counts_.next_sequence = options_.first_sequence;
}

void moldudp64_publisher::stop() noexcept {
    // relaxed: the flag only ends the loop; nothing is published with it.
    stop_.store(true, std::memory_order_relaxed);
}

bool moldudp64_publisher::stop_requested() const noexcept {
    // relaxed (both): see stop(); the outside flag is a plain request too.
    return stop_.load(std::memory_order_relaxed) ||
           (options_.stop_flag != nullptr && options_.stop_flag->load(std::memory_order_relaxed));
}

run_result moldudp64_publisher::run(signet::publisher::nasdaq::itch_generator& source) {
    generator_source adapter(source);
    return run_messages(adapter);
}

run_result moldudp64_publisher::run(md::nasdaq::binary_file_reader& source) {
    file_source adapter(source, counts_);
    return run_messages(adapter);
}

moldudp64_publisher::time_point moldudp64_publisher::lines_due() const noexcept {
    time_point const oldest =
        out_.lines() > 1 ? std::min(last_send_[0], last_send_[1]) : last_send_[0];
    return oldest + options_.heartbeat;
}

run_result moldudp64_publisher::run_messages(message_source& source) {
    time_point const start = clock_.now();
    last_send_ = {start, start};
    time_point const stop_at = options_.duration > std::chrono::nanoseconds::zero()
                                   ? start + options_.duration
                                   : time_point::max();
    double const rate = options_.rate;
    std::uint64_t built = 0;
    bool closing = false;
    for (;;) {
        time_point const now = clock_.now();
        if (!closing && (stop_requested() || now >= stop_at)) {
            closing = true;
            source.close();
        }
        // Steps 1 and 2: the lines are due; the packet leaves however few it holds.
        time_point const due = lines_due();
        if (now >= due) {
            if (!(packer_.empty() ? heartbeat() : flush())) {
                return finish({});
            }
            continue;
        }
        // Step 3: pace by messages.
        if (rate > 0 && !closing) {
            time_point const message_due = start + seconds(static_cast<double>(built) / rate);
            if (now < message_due) {
                clock_.sleep_until(std::min({message_due, due, stop_at}));
                continue;
            }
        }
        std::span<std::byte const> message;
        message_source::status const status = source.next(message, closing);
        if (status == message_source::status::end) {
            break;
        }
        if (status == message_source::status::skipped) {
            continue;
        }
        if (!packer_.append(message)) {
            if (!flush()) {
                return finish({});
            }
            if (!packer_.append(message)) {
                return finish("a " + std::to_string(message.size()) +
                              "-byte message does not fit a packet (at most " +
                              std::to_string(packer_.max_message_size()) + " bytes)");
            }
        }
        ++built;
        if (packer_.message_count() >= options_.batch && !flush()) {
            return finish({});
        }
    }
    if (!packer_.empty() && !flush()) {
        return finish({});
    }
    if (!faults_.flush(sender())) {
        return finish({});
    }
    for (std::uint32_t i = 0; i < options_.end_of_session_packets; ++i) {
        if (i != 0) {
            time_point const next = clock_.now() + options_.end_of_session_spacing;
            while (clock_.now() < next) {
                clock_.sleep_until(next);
            }
        }
        if (!send(packer_.end_of_session(), false, false, 1)) {
            return finish({});
        }
        ++counts_.end_of_session_packets;
    }
    return finish({});
}

run_result moldudp64_publisher::replay(pcap_source& capture, replay_timing const& timing) {
    time_point const start = clock_.now();
    last_send_ = {start, start};
    time_point const stop_at = options_.duration > std::chrono::nanoseconds::zero()
                                   ? start + options_.duration
                                   : time_point::max();
    counts_.next_sequence = 0; // what the capture holds: emit() finds it
    std::optional<std::int64_t> first_ns;
    time_point first_due{};
    std::uint64_t replayed = 0;
    for (;;) {
        if (stop_requested() || clock_.now() >= stop_at) {
            break;
        }
        std::optional<pcap_source::datagram> const datagram = capture.next();
        if (!datagram) {
            break;
        }
        if (!first_ns) {
            first_ns = datagram->time_ns;
            first_due = clock_.now();
        }
        double offset_s = -1; // < 0: now
        if (timing.packets_per_second) {
            if (*timing.packets_per_second > 0) {
                offset_s = static_cast<double>(replayed) / *timing.packets_per_second;
            }
        } else if (timing.speed > 0) {
            offset_s = static_cast<double>(datagram->time_ns - *first_ns) * 1e-9 / timing.speed;
        }
        if (offset_s > 0 && !wait_until(first_due + seconds(offset_s), stop_at)) {
            break;
        }
        if (options_.on_packet) {
            options_.on_packet(datagram->payload);
        }
        if (!emit(datagram->payload)) {
            return finish({});
        }
        ++replayed;
    }
    if (!faults_.flush(sender())) {
        return finish({});
    }
    return finish(capture.error());
}

bool moldudp64_publisher::wait_until(time_point due, time_point stop_at) noexcept {
    for (;;) {
        time_point const now = clock_.now();
        if (stop_requested() || now >= stop_at) {
            return false;
        }
        if (now >= due) {
            return true;
        }
        clock_.sleep_until(std::min(due, stop_at));
    }
}

run_result moldudp64_publisher::finish(std::string error) {
    if (send_error_) {
        error = "sendto " + out_.describe(send_error_line_) + ": " + send_error_.message();
    }
    return {std::move(error)};
}

bool moldudp64_publisher::flush() {
    std::span<std::byte const> const packet = packer_.finish();
    if (options_.on_packet) {
        options_.on_packet(packet); // dropped packets too: recovery needs them
    }
    return emit(packet);
}

bool moldudp64_publisher::heartbeat() {
    if (!send(packer_.heartbeat(), false, false, 1)) {
        return false;
    }
    ++counts_.heartbeats;
    return true;
}

bool moldudp64_publisher::emit(std::span<std::byte const> packet) {
    fault_outcome outcome;
    bool const sent = faults_.emit(packet, out_.lines(), sender(), outcome);
    std::uint64_t const next = add_packet(outcome.dropped ? counts_.dropped : counts_.sent, packet);
    counts_.next_sequence = std::max(counts_.next_sequence, next);
    counts_.dropped_one_line_packets += outcome.dropped_one_line ? 1 : 0;
    counts_.duplicated_packets += outcome.duplicated ? 1 : 0;
    counts_.reordered_packets += outcome.reordered ? 1 : 0;
    return sent;
}

bool moldudp64_publisher::send(std::span<std::byte const> datagram, bool skip_a, bool skip_b,
                               int copies) {
    std::size_t const lines = out_.lines();
    for (int c = 0; c < copies; ++c) {
        for (std::size_t line = 0; line < lines; ++line) {
            if ((line == 0 && skip_a) || (line == 1 && skip_b)) {
                continue;
            }
            if (std::error_code const error = out_.send(line, datagram)) {
                send_error_ = error;
                send_error_line_ = line;
                return false;
            }
        }
    }
    time_point const now = clock_.now();
    for (std::size_t line = 0; line < lines; ++line) {
        if (!((line == 0 && skip_a) || (line == 1 && skip_b))) {
            last_send_[line] = now;
        }
    }
    return true;
}

} // namespace signet::publisher::nasdaq
