#include <algorithm>
#include <stdexcept>

#include <signet/md/cme/mdp3.hpp>
#include <signet/publisher/cme/mdp3_publisher.hpp>
#include <signet/publisher/feed_report.hpp>

#include <nlohmann/json.hpp>

namespace signet::publisher::cme {

mdp3_publisher::mdp3_publisher(mdp3_publisher_options options,
                               signet::publisher::cme::mdp3_generator& generator,
                               line_output& incremental, line_output& snapshots,
                               line_output& definitions, pacing_clock& clock)
    : options_(std::move(options))
    , generator_(generator)
    , incremental_(incremental)
    , snapshots_(snapshots)
    , definitions_(definitions)
    , clock_(clock)
    , faults_(options_.faults)
    , buffer_(signet::publisher::cme::mdp3_generator::max_packet)
    , loop_buffer_(signet::publisher::cme::mdp3_generator::max_packet) {
    if (incremental.lines() < 1 || incremental.lines() > 2 || snapshots.lines() != 1 ||
        definitions.lines() != 1) {
        throw std::invalid_argument("mdp3_publisher: 1 or 2 incremental lines, 1 snapshot line, "
                                    "1 definition line");
    }
    if (!(options_.rate >= 0) || options_.snapshot_interval.count() <= 0 ||
        options_.definition_interval.count() <= 0 || options_.duration.count() < 0 ||
        options_.tail.count() < 0) {
        throw std::invalid_argument(
            "mdp3_publisher: rate >= 0, intervals > 0, duration and tail >= 0");
    }
}

bool mdp3_publisher::stopping() const noexcept {
    // relaxed: request flags, nothing is published with them.
    return stop_.load(std::memory_order_relaxed) ||
           (options_.stop_flag != nullptr && options_.stop_flag->load(std::memory_order_relaxed));
}

bool mdp3_publisher::send(line_output& out, std::size_t line, std::span<std::byte const> packet) {
    if (std::error_code const error = out.send(line, packet)) {
        send_error_ = error;
        send_error_where_ = out.describe(line);
        return false;
    }
    return true;
}

bool mdp3_publisher::service_loops(time_point now) {
    std::size_t const instruments = generator_.instruments();
    while (now >= next_snapshot_) {
        // One instrument per tick: its SnapshotFullRefresh52, then every chunk of its
        // SnapshotFullRefreshOrderBook53 back to back — built at one instant, so that they
        // describe one book (one LastMsgSeqNumProcessed, NoChunks that hold).
        if (snapshot_instrument_ == 0) {
            loop_sequence_ = 0; // the loop's MsgSeqNum: 1 for its first packet
        }
        std::uint32_t const chunks = generator_.order_chunks(snapshot_instrument_);
        for (std::uint32_t part = 0; part <= chunks; ++part) {
            std::size_t const n =
                part == 0
                    ? generator_.snapshot(loop_buffer_, snapshot_instrument_, loop_sequence_ + 1)
                    : generator_.order_snapshot(loop_buffer_, snapshot_instrument_, part,
                                                loop_sequence_ + 1);
            if (n == 0) {
                continue; // nothing to say: no datagram, and no MsgSeqNum used up
            }
            ++loop_sequence_;
            if (!send(snapshots_, 0, std::span(loop_buffer_).first(n))) {
                return false;
            }
            ++counts_.snapshot_packets;
        }
        if (++snapshot_instrument_ == instruments) {
            snapshot_instrument_ = 0;
            ++counts_.snapshot_loops;
        }
        next_snapshot_ += options_.snapshot_interval;
    }
    while (now >= next_definition_) {
        auto const sequence = static_cast<std::uint32_t>(definition_instrument_ + 1);
        std::size_t const n = generator_.definition(loop_buffer_, definition_instrument_, sequence);
        if (!send(definitions_, 0, std::span(loop_buffer_).first(n))) {
            return false;
        }
        ++counts_.definition_packets;
        definition_instrument_ = (definition_instrument_ + 1) % instruments;
        next_definition_ += options_.definition_interval;
    }
    return true;
}

run_result mdp3_publisher::run() {
    time_point const start = clock_.now();
    next_snapshot_ = start;
    next_definition_ = start;
    time_point const stop_at =
        options_.duration.count() > 0 ? start + options_.duration : time_point::max();
    auto const incremental_send = [this](std::span<std::byte const> datagram, bool skip_a,
                                         bool skip_b, int copies) {
        for (int c = 0; c < copies; ++c) {
            for (std::size_t line = 0; line < incremental_.lines(); ++line) {
                if ((line == 0 && skip_a) || (line == 1 && skip_b)) {
                    continue;
                }
                if (!send(incremental_, line, datagram)) {
                    return false;
                }
            }
        }
        return true;
    };
    auto const failed = [this] {
        return run_result{"send to " + send_error_where_ + " failed: " + send_error_.message()};
    };
    std::uint64_t sent = 0;
    while (!stopping() && (options_.packets == 0 || sent < options_.packets)) {
        time_point const now = clock_.now();
        if (now >= stop_at) {
            break;
        }
        if (!service_loops(now)) {
            return failed();
        }
        time_point const due =
            options_.rate > 0
                ? start +
                      std::chrono::duration_cast<pacing_clock::duration>(
                          std::chrono::duration<double>(static_cast<double>(sent) / options_.rate))
                : now;
        if (now < due) {
            clock_.sleep_until(std::min({due, next_snapshot_, next_definition_}));
            continue;
        }
        std::size_t const n = generator_.next_incremental(buffer_);
        if (options_.on_incremental) {
            options_.on_incremental(generator_);
        }
        fault_outcome outcome;
        if (!faults_.emit(std::span(buffer_).first(n), incremental_.lines(), incremental_send,
                          outcome)) {
            return failed();
        }
        ++sent;
        counts_.packets += outcome.dropped ? 0 : 1;
        counts_.messages += outcome.dropped
                                ? 0
                                : md::cme::for_each_message(std::span(buffer_).first(n),
                                                            [](md::cme::message const&) {})
                                      .messages;
        counts_.dropped_packets += outcome.dropped ? 1 : 0;
        counts_.dropped_one_line_packets += outcome.dropped_one_line ? 1 : 0;
        counts_.duplicated_packets += outcome.duplicated ? 1 : 0;
        counts_.reordered_packets += outcome.reordered ? 1 : 0;
    }
    if (!faults_.flush(incremental_send)) {
        return failed();
    }
    counts_.book_entries = generator_.book_entries();
    counts_.trades = generator_.trades();
    counts_.order_entries = generator_.order_entries();
    counts_.next_sequence = std::uint64_t{generator_.sequence()} + 1;
    // The tail: the loops go on so that a receiver that lost the last packets recovers.
    time_point const tail_end = clock_.now() + options_.tail;
    while (!stopping()) {
        time_point const now = clock_.now();
        if (now >= tail_end) {
            break;
        }
        if (!service_loops(now)) {
            return failed();
        }
        clock_.sleep_until(std::min({tail_end, next_snapshot_, next_definition_}));
    }
    return {};
}

std::string mdp3_publisher::report_json(double elapsed_s) const {
    mdp3_counts const& c = counts_;
    // The fields every protocol's report starts with (feed_report.hpp): MDP 3.0 numbers
    // packets, so the sequence numbers the drops took away are the dropped packets; the snapshot
    // loop and the definitions are the other lines' packets.
    nlohmann::ordered_json j =
        feed_report_json("mdp3", elapsed_s,
                         {.packets = c.packets,
                          .messages = c.messages,
                          .dropped_packets = c.dropped_packets,
                          .dropped_sequences = c.dropped_packets,
                          .dropped_one_line_packets = c.dropped_one_line_packets,
                          .duplicated_packets = c.duplicated_packets,
                          .reordered_packets = c.reordered_packets,
                          .heartbeats = 0,
                          .end_of_session_packets = 0,
                          .side_packets = c.snapshot_packets + c.definition_packets,
                          .next_sequence = c.next_sequence});
    j["book_entries"] = c.book_entries;
    j["trades"] = c.trades;
    j["order_entries"] = c.order_entries;
    j["snapshot_packets"] = c.snapshot_packets;
    j["snapshot_loops"] = c.snapshot_loops;
    j["definition_packets"] = c.definition_packets;
    j["instruments"] = generator_.instruments();
    return j.dump();
}

} // namespace signet::publisher::cme
