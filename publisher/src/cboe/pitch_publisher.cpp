#include <algorithm>
#include <stdexcept>

#include <signet/md/cboe/pitch.hpp>
#include <signet/publisher/cboe/pitch_publisher.hpp>
#include <signet/publisher/feed_report.hpp>

#include <nlohmann/json.hpp>

namespace signet::publisher::cboe {

namespace {
namespace mt = md::cboe::message_type;
} // namespace

pitch_publisher::pitch_publisher(pitch_publisher_options options, pitch_generator& generator,
                                 line_output& lines, pacing_clock& clock)
    : options_(std::move(options))
    , generator_(generator)
    , lines_(lines)
    , clock_(clock)
    , faults_(options_.faults)
    , buffer_(options_.max_block_bytes)
    , random_(0x5eed) {
    if (lines.lines() < 1 || lines.lines() > 2) {
        throw std::invalid_argument("pitch_publisher: 1 or 2 lines");
    }
    if (!(options_.rate >= 0) || options_.max_block_messages < 1 ||
        options_.max_block_messages > 255 || options_.max_block_bytes < 64 ||
        options_.max_block_bytes > 0xFFFF || options_.heartbeat_interval.count() <= 0 ||
        options_.duration.count() < 0 || options_.tail.count() < 0 ||
        generator.units() > max_units) {
        throw std::invalid_argument(
            "pitch_publisher: rate >= 0, 1 to 255 messages and 64 to 65535 bytes a block, "
            "heartbeat interval > 0, duration and tail >= 0, at most 64 units");
    }
    next_.fill(1);
}

bool pitch_publisher::stopping() const noexcept {
    // relaxed: request flags, nothing is published with them.
    return stop_.load(std::memory_order_relaxed) ||
           (options_.stop_flag != nullptr && options_.stop_flag->load(std::memory_order_relaxed));
}

bool pitch_publisher::send_all(std::span<std::byte const> block, bool skip_a, bool skip_b,
                               int copies) {
    for (int c = 0; c < copies; ++c) {
        for (std::size_t line = 0; line < lines_.lines(); ++line) {
            if ((line == 0 && skip_a) || (line == 1 && skip_b)) {
                continue;
            }
            if (std::error_code const error = lines_.send(line, block)) {
                send_error_ = error;
                send_error_where_ = lines_.describe(line);
                return false;
            }
        }
    }
    return true;
}

bool pitch_publisher::heartbeats(time_point now, bool all) {
    for (std::size_t u = 1; u <= generator_.units(); ++u) {
        if (!all && now - last_sent_[u] < options_.heartbeat_interval) {
            continue;
        }
        md::cboe::block_writer w(buffer_);
        w.begin(static_cast<std::uint8_t>(u), next_[u]);
        if (!send_all(w.finish(), false, false, 1)) {
            return false;
        }
        last_sent_[u] = now;
        ++counts_.heartbeats;
    }
    return true;
}

std::span<std::byte const> pitch_publisher::build(std::uint8_t unit, std::size_t messages,
                                                  time_point now, time_point start,
                                                  bool end_of_session) {
    auto const elapsed_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count());
    auto const second =
        static_cast<std::uint32_t>(options_.start_time_s + elapsed_ns / 1'000'000'000);
    auto const offset = static_cast<std::uint32_t>(elapsed_ns % 1'000'000'000);
    md::cboe::block_writer w(buffer_);
    w.begin(unit, next_[unit]);
    if (time_[unit] != second) {
        md::cboe::message t;
        t.type = mt::time;
        t.time = second;
        (void)w.add(t); // always fits an empty block
        time_[unit] = second;
    }
    md::cboe::message m;
    if (end_of_session) {
        m.type = mt::end_of_session;
        m.time_offset = offset;
        (void)w.add(m);
    }
    for (std::size_t i = 0; i < messages; ++i) {
        generator_.next(unit, m);
        m.time_offset = offset;
        ++counts_.generated;
        (void)w.add(m); // fits: run() asks for no more than the block holds of the longest
    }
    next_[unit] += w.count();
    return w.finish();
}

run_result pitch_publisher::run() {
    time_point const start = clock_.now();
    last_sent_.fill(start);
    time_point const stop_at =
        options_.duration.count() > 0 ? start + options_.duration : time_point::max();
    auto const send = [this](std::span<std::byte const> block, bool skip_a, bool skip_b,
                             int copies) {
        return send_all(block, skip_a, skip_b, copies);
    };
    auto const failed = [this] {
        return run_result{"send to " + send_error_where_ + " failed: " + send_error_.message()};
    };
    std::size_t const units = generator_.units();
    std::size_t turn = 0;
    auto const emit = [&](std::span<std::byte const> block, time_point now, std::uint8_t unit) {
        if (options_.on_block) {
            options_.on_block(block);
        }
        auto const count = static_cast<std::uint64_t>(block[2]);
        fault_outcome outcome;
        if (!faults_.emit(block, lines_.lines(), send, outcome)) {
            return false;
        }
        last_sent_[unit] = now;
        counts_.packets += outcome.dropped ? 0 : 1;
        counts_.messages += outcome.dropped ? 0 : count;
        counts_.dropped_packets += outcome.dropped ? 1 : 0;
        counts_.dropped_messages += outcome.dropped ? count : 0;
        counts_.dropped_one_line_packets += outcome.dropped_one_line ? 1 : 0;
        counts_.duplicated_packets += outcome.duplicated ? 1 : 0;
        counts_.reordered_packets += outcome.reordered ? 1 : 0;
        return true;
    };
    // The limit and the pacing count the generator's messages (a Time message goes out when
    // the second turns: how many depends on the run's timing, never what the market does).
    std::uint64_t const& made = counts_.generated;
    while (!stopping() && (options_.messages == 0 || made < options_.messages)) {
        time_point const now = clock_.now();
        if (now >= stop_at) {
            break;
        }
        if (!heartbeats(now, false)) {
            return failed();
        }
        time_point const due =
            options_.rate > 0
                ? start +
                      std::chrono::duration_cast<pacing_clock::duration>(
                          std::chrono::duration<double>(static_cast<double>(made) / options_.rate))
                : now;
        if (now < due) {
            clock_.sleep_until(std::min(due, now + options_.heartbeat_interval));
            continue;
        }
        auto const unit = static_cast<std::uint8_t>(1 + turn++ % units);
        // At most what a block holds of the longest message (43 bytes) beside a Time and the
        // End of Session (6 each): every message the generator makes goes out.
        std::size_t const fits = (options_.max_block_bytes - md::cboe::header_size - 12) / 43;
        std::size_t n = 1 + random_() % std::min(options_.max_block_messages, fits);
        if (options_.messages != 0) {
            n = static_cast<std::size_t>(std::min<std::uint64_t>(n, options_.messages - made));
        }
        if (!emit(build(unit, n, now, start, false), now, unit)) {
            return failed();
        }
    }
    if (!faults_.flush(send)) {
        return failed();
    }
    // Each unit's End of Session, then heartbeats through the tail.
    for (std::size_t u = 1; u <= units && !stopping(); ++u) {
        time_point const now = clock_.now();
        if (!emit(build(static_cast<std::uint8_t>(u), 0, now, start, true), now,
                  static_cast<std::uint8_t>(u))) {
            return failed();
        }
    }
    if (!faults_.flush(send)) {
        return failed();
    }
    if (options_.on_tail && !stopping()) {
        options_.on_tail();
    }
    time_point const tail_end = clock_.now() + options_.tail;
    bool first = true;
    while (!stopping()) {
        time_point const now = clock_.now();
        if (now >= tail_end) {
            break;
        }
        if (!heartbeats(now, first)) { // at once: the last sequences are known everywhere
            return failed();
        }
        first = false;
        clock_.sleep_until(std::min(tail_end, now + options_.heartbeat_interval));
    }
    return {};
}

std::string pitch_publisher::report_json(double elapsed_s) const {
    pitch_counts const& c = counts_;
    std::uint64_t next = 1;
    nlohmann::ordered_json units = nlohmann::ordered_json::array();
    for (std::size_t u = 1; u <= generator_.units(); ++u) {
        next += next_[u] - 1;
        units.push_back({{"unit", u},
                         {"next_sequence", next_[u]},
                         {"orders", generator_.orders(static_cast<std::uint8_t>(u))}});
    }
    nlohmann::ordered_json j =
        feed_report_json("pitch", elapsed_s,
                         {.packets = c.packets,
                          .messages = c.messages,
                          .dropped_packets = c.dropped_packets,
                          .dropped_sequences = c.dropped_messages,
                          .dropped_one_line_packets = c.dropped_one_line_packets,
                          .duplicated_packets = c.duplicated_packets,
                          .reordered_packets = c.reordered_packets,
                          .heartbeats = c.heartbeats,
                          .end_of_session_packets = 0,
                          .side_packets = 0,
                          .next_sequence = next});
    j["units"] = std::move(units);
    j["symbols"] = generator_.symbols();
    j["generated_messages"] = c.generated;
    return j.dump();
}

} // namespace signet::publisher::cboe
