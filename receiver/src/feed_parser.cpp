#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include <signet/core/realtime_clock.hpp>
#include <signet/md/wire_text.hpp>
#include <signet/receiver/feed_parser.hpp>

namespace signet::receiver {

namespace {

md::sequence_tracker_options tracker_options(feed_config const& config,
                                             feed_protocol const& protocol) {
    md::sequence_tracker_options options = protocol.sequencing();
    options.max_jump = config.max_sequence_jump;
    return options;
}

} // namespace

char const* to_string(book_state state) noexcept {
    constexpr char const* names[] = {"none", "complete", "recovering", "stale"};
    auto const i = static_cast<std::size_t>(state);
    return i < std::size(names) ? names[i] : "?";
}

feed_parser::feed_parser(feed_config const& config, std::unique_ptr<feed_protocol> protocol)
    : config_(config)
    , protocol_(std::move(protocol))
    , lines_(protocol_->lines()) {
    std::size_t const streams = protocol_->streams();
    if (streams == 0 || streams > feed_protocol::max_streams) {
        throw std::invalid_argument("feed " + config_.name + ": the protocol declares " +
                                    std::to_string(streams) + " sequenced streams; 1 to " +
                                    std::to_string(feed_protocol::max_streams) + " are possible");
    }
    for (std::size_t i = 0; i < streams; ++i) {
        streams_.push_back(std::make_unique<stream_state>(tracker_options(config_, *protocol_)));
    }
    std::size_t arbitrated = 0;
    std::size_t answers = 0;
    for (std::size_t l = 0; l < lines_.size(); ++l) {
        line_spec const& line = lines_[l];
        line_info info{line.role, line.tag, 0};
        if (line.role == line_role::arbitrated) {
            info.arbiter_line = static_cast<std::uint16_t>(arbitrated++);
            arbitrated_lines_.push_back(l);
        } else if (line.role == line_role::answers) {
            ++answers;
            answer_lines_.push_back(l);
        }
        line_info_.push_back(info);
    }
    if (arbitrated > md::sequence_arbiter::max_lines) {
        throw std::invalid_argument("feed " + config_.name + ": the protocol declares " +
                                    std::to_string(arbitrated) +
                                    " arbitrated lines; the arbiter merges at most two");
    }
    for (line_info& info : line_info_) {
        if (info.role == line_role::answers) {
            info.arbiter_line = static_cast<std::uint16_t>(arbitrated); // not a line of rule 2
        }
    }
    if (arbitrated + answers == 0) {
        return; // side lines only: nothing to sequence
    }
    sequenced_ = true;
    // With a recovery, the hold is also what waits for it: recovery_buffer deep. A/B: line B's
    // copy may lag line A's by a whole receive batch on another worker; hold longer and deeper
    // before calling a gap real (rule 2 releases real gaps early anyway: both lines past it,
    // after a reorder allowance - a reordered packet comes late on both lines alike).
    // One line: reordering alone, a short hold.
    for (std::size_t i = 0; i < streams; ++i) {
        stream_state& stream = *streams_[i];
        stream.recovery = protocol_->recovery(i);
        std::size_t const depth = stream.recovery != nullptr ? config_.recovery_buffer : 0;
        if (arbitrated >= 2) {
            stream.arbiter.emplace(2, std::max<std::size_t>(depth, 1024), 2048, 20'000'000,
                                   ab_reorder_ns);
        } else {
            stream.arbiter.emplace(1, std::max<std::size_t>(depth, 64));
        }
        stream.arbiter->set_recovery(stream.recovery);
        stream.arbiter->record_holds_in(sequence_latency_);
    }
}

void feed_parser::set_input_probe(std::function<bool(std::size_t line)> probe) {
    input_waiting_ = std::move(probe);
    for (auto& stream : streams_) {
        if (stream->arbiter) {
            stream->arbiter->set_input_probe(input_waiting_ ? &probe_ : nullptr,
                                             max_input_defer_ns);
        }
    }
}

bool feed_parser::line_probe::waiting(std::size_t line) const noexcept {
    try {
        return line < parser_.arbitrated_lines_.size() &&
               parser_.input_waiting_(parser_.arbitrated_lines_[line]);
    } catch (...) { // a probe that cannot tell: nothing is waiting, the hold expires as before
        return false;
    }
}

void feed_parser::operator()(net::packet const& p) {
    std::uint64_t const start = stages_.begin(p);
    now_ = p.user_rx_ns != 0 ? p.user_rx_ns : start;
    receive_ns_ = p.kernel_rx_ns != 0 ? p.kernel_rx_ns : now_;
    ++packets_;
    line_info const& line = line_info_[p.line];
    if (line.role == line_role::side) {
        protocol_->on_side_packet(line.tag, p, now_);
    } else if (std::optional<md::sequence_unit> unit;
               p.truncated || !(unit = protocol_->frame(p.payload()))) {
        ++malformed_; // bytes missing, or framing that lies: it claims no sequence
    } else if (unit->stream >= streams_.size()) {
        ++unfollowed_; // a stream (unit) this feed does not follow: ignored, counted
    } else {
        stream_state& stream = *streams_[unit->stream];
        framed_data_ = p.payload().data();
        framed_unit_ = *unit;
        // An implausible sequence neither waits for a gap nor asks the recovery for a range
        // (it is far): it goes at once, or, while packets wait in the hold, right after them,
        // so that the tracker judges them first whatever the arrival order (a far unit must not
        // replace a provisional anchor that the held ones would confirm).
        std::uint64_t const order_by =
            stream.tracker.plausible(unit->first) ? unit->first : md::sequence_arbiter::far;
        stream.arbiter->on_packet(
            p.payload(), order_by, line.arbiter_line, p.user_rx_ns,
            [this, &stream](auto bytes) { deliver(stream, bytes); },
            [&stream] { return stream.tracker.next(); });
        framed_data_ = nullptr;
        poll_recovery(stream);
    }
    stages_.end(p);
}

void feed_parser::deliver(stream_state& stream, std::span<std::byte const> datagram) {
    md::sequence_unit unit = framed_unit_;
    std::uint64_t receive_ns = receive_ns_;
    if (datagram.data() != framed_data_) { // released from the hold: framed when it arrived
        receive_ns = 0;                    // its stamp was not kept
        std::optional<md::sequence_unit> const held = protocol_->frame(datagram);
        if (!held) {
            return; // cannot happen: the hold keeps the bytes it was given
        }
        unit = *held;
    }
    md::sequence_step const step = stream.tracker.track(unit);
    if (step.ignored) {
        return; // counted by the tracker; logged at most once a second (publish)
    }
    protocol_->deliver({datagram, unit, step, stream.tracker.next(), now_, receive_ns});
}

void feed_parser::tick(stream_state& stream) {
    stream.arbiter->tick(
        now_, [this, &stream](auto bytes) { deliver(stream, bytes); },
        [&stream] { return stream.tracker.next(); });
}

void feed_parser::poll_recovery(stream_state& stream) {
    md::gap_recovery* const recovery = stream.recovery;
    if (recovery == nullptr || !recovery->recovering()) {
        return;
    }
    // A re-request due while its answer may already wait on an answers line: the answer first
    // (at most max_input_defer_ns), so that a slow receiver does not resend or give up.
    std::uint64_t const due = recovery->next_deadline();
    if (due != 0 && due <= now_ && input_waiting_) {
        bool waiting = false;
        for (std::size_t const line : answer_lines_) {
            waiting = waiting || input_waiting_(line);
        }
        if (waiting && (stream.recovery_deferred_since == 0 ||
                        now_ - stream.recovery_deferred_since < max_input_defer_ns)) {
            if (stream.recovery_deferred_since == 0) {
                stream.recovery_deferred_since = now_;
            }
            return;
        }
    }
    stream.recovery_deferred_since = 0;
    protocol_->poll_recovery(now_);
    if (!recovery->recovering()) {
        tick(stream); // given up: release what waited behind the gap (the tracker counts it lost)
    }
}

void feed_parser::service() {
    for (auto& stream : streams_) {
        if (stream->arbiter) {
            tick(*stream);
            poll_recovery(*stream);
        }
    }
    protocol_->service(now_);
    if (auto const beat = protocol_->inferred_heartbeat(); beat && beat->stream < streams_.size()) {
        stream_state& stream = *streams_[beat->stream];
        if (stream.arbiter && stream.tracker.next() != 0 && beat->first > stream.tracker.next()) {
            (void)stream.tracker.track(*beat); // counts the gap the protocol saw
            tick(stream);                      // and releases what waited behind it
        }
    }
    if (book_interval_ns_ != 0 && now_ >= next_books_ns_) {
        // A reader copying the last rows holds the lock: try again soon, never wait.
        next_books_ns_ = now_ + (publish_books() ? book_interval_ns_ : retry_ns);
    }
}

void feed_parser::on_batch() {
    // now_ stays the last packet's receive time: packets still queued behind this run (line
    // B's copies, say) arrived by then, so a hold must not expire against the wall clock yet.
    service();
    if (after_run_) {
        after_run_();
    }
    publish();
    arm_timer();
}

void feed_parser::on_idle() {
    now_ = realtime_clock::now_ns(); // nothing queued: the wall clock is the time
    on_batch();
}

void feed_parser::arm_timer() noexcept {
    if (!timer_.is_valid()) {
        return;
    }
    std::uint64_t due = 0; // realtime ns; 0: nothing to wait for
    auto const consider = [&due](std::uint64_t at) {
        if (at != 0 && (due == 0 || at < due)) {
            due = at;
        }
    };
    // While a recovery is open, the held packets wait for it (its deadlines are the protocol's).
    for (auto const& stream : streams_) {
        if (stream->arbiter && (stream->recovery == nullptr || !stream->recovery->recovering())) {
            consider(stream->arbiter->next_deadline());
        }
    }
    consider(protocol_->next_deadline(now_));
    if (book_interval_ns_ != 0) {
        consider(std::max(next_books_ns_, now_ + 1));
    }
    if (due != 0 && due <= now_) {
        due = now_ + retry_ns; // what could not be done yet (a refused send): retry soon
    }
    // Armed for that already, and not about to fire: nothing to do (the common case, no
    // re-arming per batch). A deadline that is due (or nearly: the timer runs on the steady
    // clock, `now_` is realtime_clock) is armed again, in case this run consumed its firing.
    if (due == armed_for_ && (due == 0 || due > now_ + retry_ns)) {
        return;
    }
    armed_for_ = due;
    if (due == 0) {
        timer_.cancel();
        return;
    }
    timer_.arm_after(std::chrono::nanoseconds(due - now_));
}

bool feed_parser::publish_books() {
    books_scratch_.clear();
    protocol_->book_rows(books_scratch_);
    std::stable_sort(books_scratch_.begin(), books_scratch_.end(),
                     [](book_row const& a, book_row const& b) { return a.orders > b.orders; });
    std::unique_lock const lock(books_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
        return false;
    }
    books_published_.swap(books_scratch_);
    return true;
}

std::vector<book_row> feed_parser::books() const {
    std::lock_guard lock(books_mutex_);
    return books_published_;
}

metrics::histogram const& feed_parser::sequence_latency() const noexcept {
    return sequence_latency_; // without an arbiter: stays empty
}

md::sequence_stats feed_parser::sequencing() const noexcept {
    md::sequence_stats sum;
    for (auto const& stream : streams_) {
        md::sequence_stats const& s = stream->tracker.stats();
        sum.units += s.units;
        sum.items += s.items;
        sum.gaps += s.gaps;
        sum.missing += s.missing;
        sum.duplicates += s.duplicates;
        sum.overlaps += s.overlaps;
        sum.heartbeats += s.heartbeats;
        sum.foreign += s.foreign;
        sum.implausible += s.implausible;
        sum.resyncs += s.resyncs;
        sum.late_start += s.late_start;
        sum.end_of_stream = sum.end_of_stream || s.end_of_stream;
    }
    sum.foreign += unfollowed_;
    return sum;
}

void feed_parser::finish() {
    for (auto& stream : streams_) {
        if (stream->arbiter) {
            stream->arbiter->flush([this, &stream](auto bytes) { deliver(*stream, bytes); },
                                   [&stream] { return stream->tracker.next(); });
        }
    }
    protocol_->finish();
    if (after_run_) {
        after_run_();
    }
    while (!publish_books()) { // after the runtime stopped: a reader's copy ends soon
        std::this_thread::yield();
    }
    publish();
}

void feed_parser::publish() noexcept {
    // relaxed stores: single writer; readers take a snapshot.
    md::sequence_stats const s = sequencing();
    protocol_counters const p = protocol_->counters();
    std::uint64_t const ignored = s.foreign + s.implausible;
    if (ignored + s.resyncs != ignored_logged_) {
        log_ignored(); // rare: forged, stale or foreign packets
    }
    live_.packets.store(packets_, std::memory_order_relaxed);
    live_.messages.store(p.messages, std::memory_order_relaxed);
    live_.gaps.store(s.gaps, std::memory_order_relaxed);
    live_.missing.store(s.missing, std::memory_order_relaxed);
    live_.recovered.store(p.recovered, std::memory_order_relaxed);
    live_.lost.store(p.lost, std::memory_order_relaxed);
    live_.malformed.store(malformed_, std::memory_order_relaxed);
    live_.duplicates.store(s.duplicates, std::memory_order_relaxed);
    live_.ignored.store(ignored, std::memory_order_relaxed);
    live_.late_start.store(s.late_start, std::memory_order_relaxed);
    live_.recovering.store(p.recovering, std::memory_order_relaxed);
    live_.end_of_stream.store(s.end_of_stream, std::memory_order_relaxed);
    live_.book.store(p.book, std::memory_order_relaxed);
    protocol_->publish();
}

void feed_parser::log_ignored() noexcept {
    // The packet's (or wake-up's) time: no clock read of its own while the limit holds.
    md::sequence_stats const s = sequencing();
    md::sequence_tracker const& first = streams_.front()->tracker;
    std::string_view key(first.key().data(), first.key().size());
    key = key.substr(0, key.find('\0'));
    if (ignored_logged_ != 0 && now_ < ignored_log_ns_ + ignored_log_interval_ns) {
        return; // rate-limited: the counts are in the stats line and the summary
    }
    ignored_logged_ = s.foreign + s.implausible + s.resyncs;
    ignored_log_ns_ = now_;
    try {
        SPDLOG_WARN("feed {}: stream '{}', next sequence {}: so far ignored {} packet(s) of "
                    "another stream and {} with a sequence more than {} away; {} resync(s) "
                    "(at most one such line per {} s)",
                    config_.name, md::wire_text(key), first.next(), s.foreign, s.implausible,
                    config_.max_sequence_jump, s.resyncs, ignored_log_interval_ns / 1'000'000'000);
    } catch (...) { // NOLINT(bugprone-empty-catch): a lost log line must not stop the feed
    }
}

feed_counters feed_parser::live() const noexcept {
    return {live_.packets.load(std::memory_order_relaxed),
            live_.messages.load(std::memory_order_relaxed),
            live_.gaps.load(std::memory_order_relaxed),
            live_.missing.load(std::memory_order_relaxed),
            live_.recovered.load(std::memory_order_relaxed),
            live_.lost.load(std::memory_order_relaxed),
            live_.malformed.load(std::memory_order_relaxed),
            live_.duplicates.load(std::memory_order_relaxed),
            live_.ignored.load(std::memory_order_relaxed),
            live_.late_start.load(std::memory_order_relaxed),
            live_.recovering.load(std::memory_order_relaxed),
            live_.end_of_stream.load(std::memory_order_relaxed),
            live_.book.load(std::memory_order_relaxed)};
}

} // namespace signet::receiver
