#include "feed_processor.hpp"

#include <algorithm>
#include <array>

#include <spdlog/spdlog.h>

#include <signet/md/moldudp64_request.hpp>

namespace signet::apps {

feed_processor::feed_processor(feed_config const& config)
    : config_(config) {
    if (config.protocol == protocol_kind::moldudp64) {
        if (config.parser == parser_kind::itch50) {
            itch_.emplace(md::itch_feed_handler_options{.session = session_options(),
                                                        .book = {.max_orders = config.max_orders}});
        } else {
            session_.emplace(session_options());
        }
        // With re-requests the hold is also what waits for a recovery: recovery_buffer deep.
        std::size_t const depth = config.rerequest ? config.recovery_buffer : 0;
        if (config.bind_b) {
            // A/B: line B's copy may lag line A's by a whole receive batch on another worker;
            // hold longer and deeper before calling a gap real (rule 2 releases real gaps
            // early anyway: both lines past it).
            arbiter_.emplace(2, std::max<std::size_t>(depth, 1024), 2048, 20'000'000);
        } else {
            // Reordering on one line: a short hold is enough.
            arbiter_.emplace(1, std::max<std::size_t>(depth, 64));
        }
        if (config.rerequest) {
            recovery_.emplace(md::moldudp64_recovery_options{
                .timeout_ns = config.rerequest_timeout_ms * 1'000'000,
                .max_messages = static_cast<std::uint16_t>(config.rerequest_max_messages),
                .max_in_flight = config.rerequest_max_in_flight,
                .max_tries = config.rerequest_tries});
            recovery_->on_state_change([this](md::recovery_state state) {
                // release: pairs with the acquire load in recovering().
                live_.recovering.store(state == md::recovery_state::recovering,
                                       std::memory_order_release);
            });
            arbiter_->set_recovery(&*recovery_);
        }
    }
}

void feed_processor::attach_request_line(net::udp_socket const& socket, std::uint16_t line) {
    request_socket_ = &socket;
    request_line_ = line;
}

bool feed_processor::send_request(std::uint64_t first, std::uint16_t count) noexcept {
    std::string_view const session = itch_ ? itch_->session().session() : session_->session();
    if (request_socket_ == nullptr || session.size() != md::moldudp64_session_size) {
        return false; // no session yet: nothing to name in a request
    }
    md::moldudp64_request request;
    std::copy(session.begin(), session.end(), request.session.begin());
    request.sequence = first;
    request.count = count;
    std::array<std::byte, md::moldudp64_request_size> datagram{};
    md::write_moldudp64_request(request, datagram);
    if (request_socket_->send_to(datagram, *config_.rerequest)) {
        ++request_send_errors_;
        return false;
    }
    return true;
}

void feed_processor::service_recovery() {
    if (!recovery_ || !recovery_->recovering()) {
        return;
    }
    recovery_->poll(now_, [this](std::uint64_t first, std::uint16_t count) {
        return send_request(first, count);
    });
    if (!recovery_->recovering()) {
        // Given up: release what waited behind the gap now (the session counts it as lost).
        arbiter_->tick(
            now_, [this](auto bytes) { deliver(bytes); }, [this] { return next_sequence(); });
    }
}

void feed_processor::publish_top() {
    if (top_n_ == 0 || !itch_) {
        return;
    }
    top_scratch_.clear();
    itch_->book().for_each_stock([&](md::stock_view const& stock) {
        if (stock.orders == 0) {
            return;
        }
        top_row row;
        std::copy_n(stock.symbol.begin(), std::min(stock.symbol.size(), row.symbol.size()),
                    row.symbol.begin());
        row.top = stock.top;
        row.orders = stock.orders;
        // Keep the n busiest, sorted by live orders (insertion into a short list).
        auto at = std::find_if(top_scratch_.begin(), top_scratch_.end(),
                               [&](top_row const& r) { return r.orders < row.orders; });
        if (at != top_scratch_.end() || top_scratch_.size() < top_n_) {
            top_scratch_.insert(at, row);
            if (top_scratch_.size() > top_n_) {
                top_scratch_.pop_back();
            }
        }
    });
    std::lock_guard lock(top_mutex_);
    top_published_ = top_scratch_;
}

std::vector<feed_processor::top_row> feed_processor::top_rows() const {
    std::lock_guard lock(top_mutex_);
    return top_published_;
}

void feed_processor::on_idle() {
    now_ = realtime_clock::now_ns();
    publish_top();
    if (recorder_ != nullptr) {
        recorder_->flush(); // a quiet feed's last messages reach the disk too
    }
    if (arbiter_) {
        arbiter_->tick(
            now_, [this](auto bytes) { deliver(bytes); }, [this] { return next_sequence(); });
    }
    service_recovery();
    publish();
}

md::moldudp64_session_options feed_processor::session_options() const noexcept {
    return {.first_sequence = 1,
            .max_sequence_jump = config_.max_sequence_jump,
            .session = config_.session};
}

std::uint64_t feed_processor::next_sequence() const noexcept {
    return itch_ ? itch_->session().next_sequence() : session_->next_sequence();
}

void feed_processor::deliver(std::span<std::byte const> datagram) {
    if (recorder_ != nullptr) {
        auto const record = [this](std::uint64_t, std::span<std::byte const> message) {
            recorder_->append(message);
        };
        if (itch_) {
            itch_->on_datagram(datagram, record);
        } else {
            session_->on_packet(datagram, record);
        }
    } else if (itch_) {
        itch_->on_datagram(datagram);
    } else {
        session_->on_packet(datagram, [](std::uint64_t, std::span<std::byte const>) {});
    }
    if (recovery_) {
        if (std::uint64_t const took = recovery_->progress(next_sequence(), now_); took != 0) {
            recovery_latency_.record(took);
        }
    }
}

void feed_processor::operator()(net::packet const& p) {
    std::uint64_t const start = stages_.begin(p);
    now_ = p.user_rx_ns != 0 ? p.user_rx_ns : start;
    if (p.line == request_line_ && request_socket_ != nullptr) {
        ++rerequest_answers_;
    }
    if (arbiter_) {
        if (p.truncated) {
            deliver({}); // bytes are missing: let the session count it as malformed
        } else {
            arbiter_->on_packet(
                p.payload(), md::moldudp64_sequence(p.payload()), p.line, p.user_rx_ns,
                [this](auto bytes) { deliver(bytes); }, [this] { return next_sequence(); });
        }
        service_recovery();
    } else {
        ++raw_packets_;
    }
    stages_.end(p);
}

void feed_processor::on_batch() {
    publish();
}

void feed_processor::attach_recorder(md::binary_file_writer& r) {
    recorder_ = &r;
}

void feed_processor::finish() {
    if (arbiter_) {
        arbiter_->flush([this](auto bytes) { deliver(bytes); }, [this] { return next_sequence(); });
    }
    publish();
}

void feed_processor::publish() noexcept {
    // relaxed stores: single writer; the stats line reads a snapshot.
    auto const s = session_stats();
    std::uint64_t const book_full = itch_ ? itch_->itch_stats().book_full_drops : 0;
    if (book_full != 0 && !book_full_logged_) {
        book_full_logged_ = true; // once per feed: never per packet
        try {
            SPDLOG_WARN("feed {}: the order book holds {} live orders ([book] max_orders): "
                        "further adds are dropped and counted (book_full_drops)",
                        config_.name, config_.max_orders);
        } catch (...) { // NOLINT(bugprone-empty-catch): a lost log line must not stop the feed
        }
    }
    std::uint64_t const ignored = s.foreign_session_packets + s.implausible_packets;
    if (ignored + s.resyncs != untrusted_logged_) {
        log_untrusted(s); // rare: forged, stale or foreign packets
    }
    live_.ignored_packets.store(ignored, std::memory_order_relaxed);
    live_.book_full_drops.store(book_full, std::memory_order_relaxed);
    if (recovery_) {
        live_.recovered_messages.store(recovery_->stats().recovered_messages,
                                       std::memory_order_relaxed);
        live_.lost_messages.store(recovery_->stats().lost_messages, std::memory_order_relaxed);
    }
    live_.end_of_session.store(s.end_of_session, std::memory_order_relaxed);
    live_.packets.store(arbiter_ ? s.packets : raw_packets_, std::memory_order_relaxed);
    live_.messages.store(s.messages, std::memory_order_relaxed);
    live_.gaps.store(s.gaps, std::memory_order_relaxed);
    live_.missing_messages.store(s.missing_messages, std::memory_order_relaxed);
    live_.duplicate_packets.store(s.duplicate_packets, std::memory_order_relaxed);
    live_.malformed_packets.store(s.malformed_packets, std::memory_order_relaxed);
}

void feed_processor::log_untrusted(md::moldudp64_stats const& s) noexcept {
    // The packet's (or wake-up's) time: no clock read of its own while the limit holds.
    if (untrusted_logged_ != 0 && now_ < untrusted_log_ns_ + untrusted_log_interval_ns) {
        return; // rate-limited: the counts are in the stats line and the summary
    }
    untrusted_logged_ = s.foreign_session_packets + s.implausible_packets + s.resyncs;
    untrusted_log_ns_ = now_;
    std::string_view const session = itch_ ? itch_->session().session() : session_->session();
    try {
        SPDLOG_WARN("feed {}: MoldUDP64 session '{}', next sequence {}: so far ignored {} "
                    "packet(s) of another session and {} with a sequence more than {} away; "
                    "{} resync(s) (at most one such line per {} s)",
                    config_.name, session, next_sequence(), s.foreign_session_packets,
                    s.implausible_packets, config_.max_sequence_jump, s.resyncs,
                    untrusted_log_interval_ns / 1'000'000'000);
    } catch (...) { // NOLINT(bugprone-empty-catch): a lost log line must not stop the feed
    }
}

feed_processor::live_counters feed_processor::live() const noexcept {
    // relaxed: independent counters; a snapshot.
    return {live_.packets.load(std::memory_order_relaxed),
            live_.messages.load(std::memory_order_relaxed),
            live_.gaps.load(std::memory_order_relaxed),
            live_.missing_messages.load(std::memory_order_relaxed),
            live_.duplicate_packets.load(std::memory_order_relaxed),
            live_.malformed_packets.load(std::memory_order_relaxed),
            live_.ignored_packets.load(std::memory_order_relaxed),
            live_.book_full_drops.load(std::memory_order_relaxed),
            live_.recovered_messages.load(std::memory_order_relaxed),
            live_.lost_messages.load(std::memory_order_relaxed),
            live_.end_of_session.load(std::memory_order_relaxed),
            live_.recovering.load(std::memory_order_relaxed)};
}

md::moldudp64_stats feed_processor::session_stats() const noexcept {
    if (itch_) {
        return itch_->session_stats();
    }
    if (session_) {
        return session_->stats();
    }
    return {};
}

md::itch50_stats const* feed_processor::itch_stats() const noexcept {
    return itch_ ? &itch_->itch_stats() : nullptr;
}

md::order_book const* feed_processor::book() const noexcept {
    return itch_ ? &itch_->book() : nullptr;
}

} // namespace signet::apps
