#include <algorithm>
#include <optional>

#include <signet/md/nasdaq/glimpse.hpp>
#include <signet/md/nasdaq/itch_snapshot_sync.hpp>

namespace signet::md::nasdaq {

itch_snapshot_sync::itch_snapshot_sync(itch_snapshot_sync_options const& options)
    : options_(options)
    , parser_(std::make_unique<itch50_parser>(options.book))
    , buffer_(options.buffer_messages, options.buffer_bytes) {}

void itch_snapshot_sync::set_event_sink(event_sink* sink, event_mask kinds) {
    sink_ = sink;
    kinds_ = kinds;
    parser_->set_event_sink(sink, kinds);
}

void itch_snapshot_sync::on_live(std::uint64_t sequence, std::span<std::byte const> message,
                                 std::uint64_t receive_ns) {
    stream_position(sequence + 1);
    if (phase_ == sync_phase::live) {
        if (sequence >= skip_below_) {
            parser_->on_message(message, {.sequence = sequence, .receive_ns = receive_ns});
        } else {
            ++stats_.covered_messages;
        }
        return;
    }
    if (!buffer_.empty() && sequence != buffer_.next_sequence()) {
        // A live gap: what was buffered no longer leads up to what comes.
        buffer_.clear();
        ++stats_.buffer_restarts;
    }
    std::uint64_t const evicted = buffer_.evicted();
    if (buffer_.append(sequence, message)) {
        ++stats_.buffered_messages;
        stats_.buffer_evictions += buffer_.evicted() - evicted; // the bound made room
    } else { // longer than the buffer: a hole the buffer cannot hold, so it starts after it
        buffer_.clear();
        ++stats_.buffer_restarts;
    }
}

void itch_snapshot_sync::stream_position(std::uint64_t next) noexcept {
    stream_next_ = std::max(stream_next_, next);
}

void itch_snapshot_sync::start_buffering() noexcept {
    if (phase_ == sync_phase::live && sink_ != nullptr &&
        kinds_.has(event_kind::instrument_stale)) {
        sink_->on_event(marker_event(event_kind::instrument_stale, all_instruments,
                                     {.sequence = stream_next_, .receive_ns = 0}));
    }
    buffer_.clear();
    fresh_.reset();
    phase_ = sync_phase::buffering;
}

void itch_snapshot_sync::start_snapshot() {
    if (phase_ == sync_phase::live) {
        start_buffering();
    }
    fresh_ = std::make_unique<itch50_parser>(options_.book);
    phase_ = sync_phase::loading;
    ++stats_.snapshots_started;
}

std::optional<itch_snapshot_sync::end_result>
itch_snapshot_sync::on_snapshot(std::span<std::byte const> message) {
    if (phase_ != sync_phase::loading) {
        return std::nullopt;
    }
    if (glimpse::is_end_of_snapshot(message)) {
        std::optional<std::uint64_t> const resume = glimpse::parse_end_of_snapshot(message);
        if (!resume) {
            ++stats_.malformed_end;
            abort();
            return end_result::malformed;
        }
        return end(*resume);
    }
    fresh_->on_message(message);
    ++stats_.snapshot_messages;
    return std::nullopt;
}

itch_snapshot_sync::end_result itch_snapshot_sync::end(std::uint64_t resume_sequence) {
    if (phase_ != sync_phase::loading) {
        return end_result::not_loading;
    }
    if (!buffer_.empty() && resume_sequence < buffer_.first_sequence()) {
        fresh_.reset(); // the messages between the snapshot and the buffer are gone
        phase_ = sync_phase::buffering;
        ++stats_.too_old;
        return end_result::too_old;
    }
    // Sequence 1 is where a stream starts: the reference while no live datagram has come.
    std::uint64_t const stream = std::max<std::uint64_t>(stream_next_, 1);
    if (resume_sequence > stream && resume_sequence - stream > options_.max_ahead) {
        fresh_.reset(); // applied, its live messages below the resume would vanish unseen
        phase_ = sync_phase::buffering;
        ++stats_.future;
        stats_.last_future_resume = resume_sequence;
        return end_result::future;
    }
    std::uint64_t const loaded = fresh_->stats().count('A') + fresh_->stats().count('F');
    if (!buffer_.empty() && resume_sequence > buffer_.first_sequence()) {
        stats_.covered_messages +=
            std::min(resume_sequence, buffer_.next_sequence()) - buffer_.first_sequence();
    }
    if (sink_ != nullptr) {
        emit_loaded(resume_sequence);
    }
    for (std::uint64_t s = resume_sequence; s < buffer_.next_sequence(); ++s) {
        if (std::optional<std::span<std::byte const>> const m = buffer_.find(s)) {
            fresh_->on_message(*m, {.sequence = s, .receive_ns = 0});
            ++stats_.replayed_messages;
        }
    }
    skip_below_ = std::max(resume_sequence, buffer_.next_sequence());
    parser_ = std::move(fresh_);
    buffer_.clear();
    phase_ = sync_phase::live;
    ++stats_.snapshots_completed;
    stats_.orders_loaded += loaded;
    return end_result::synchronized;
}

void itch_snapshot_sync::emit_loaded(std::uint64_t resume_sequence) {
    event_context const context{.sequence = resume_sequence, .receive_ns = 0};
    auto const mark = [&](event_kind kind) {
        if (kinds_.has(kind)) {
            sink_->on_event(
                marker_event(kind, all_instruments, context, event_flag::from_snapshot));
        }
    };
    mark(event_kind::snapshot_begin);
    mark(event_kind::book_clear);
    fresh_->set_event_sink(sink_, kinds_);
    fresh_->emit_book(event_flag::from_snapshot, context);
    mark(event_kind::snapshot_end);
    mark(event_kind::instrument_recovered);
}

void itch_snapshot_sync::abort() noexcept {
    if (phase_ == sync_phase::loading) {
        fresh_.reset();
        phase_ = sync_phase::buffering;
        ++stats_.aborted;
    }
}

} // namespace signet::md::nasdaq
