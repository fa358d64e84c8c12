#include <algorithm>
#include <array>
#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include <signet/core/realtime_clock.hpp>
#include <signet/md/nasdaq/moldudp64_request.hpp>
#include <signet/receiver/feed_parser.hpp>

namespace signet::receiver {

feed_parser::feed_parser(feed_config const& config)
    : config_(config) {
    if (config.protocol == protocol_kind::mdp3) {
        // Lines: A (and B), then the snapshot loop's and the definitions' (line_options()).
        mdp3_.emplace();
        snapshot_line_ = static_cast<std::uint16_t>(config.bind_b ? 2 : 1);
        definitions_line_ = static_cast<std::uint16_t>(snapshot_line_ + 1);
        arbiter_.emplace(config.bind_b ? 2 : 1, config.bind_b ? 1024 : 64, 2048,
                         config.bind_b ? 20'000'000 : 2'000'000);
        return;
    }
    if (config.protocol != protocol_kind::moldudp64) {
        return;
    }
    if (config.snapshot) {
        // Late join: the session adopts the first packet's sequence, the book comes from a
        // snapshot (attach_snapshot) and the live messages wait in the sync's buffer until then.
        session_.emplace(session_options());
        sync_.emplace(md::nasdaq::itch_snapshot_sync_options{
            .book = {.max_orders = config.max_orders},
            .buffer_messages = config.snapshot_buffer_messages,
            .buffer_bytes =
                config.snapshot_buffer_messages * md::nasdaq::itch50::max_message_length});
        sync_->start_buffering();
    } else if (config.parser == parser_kind::itch50) {
        // Pipelined: service() flushes before anything reads the book or the stats.
        itch_.emplace(
            md::nasdaq::itch_feed_handler_options{.session = session_options(),
                                                  .book = {.max_orders = config.max_orders},
                                                  .pipeline = true});
    } else {
        session_.emplace(session_options());
    }
    // With re-requests the hold is also what waits for a recovery: recovery_buffer deep.
    std::size_t const depth = config.rerequest ? config.recovery_buffer : 0;
    if (config.bind_b) {
        // A/B: line B's copy may lag line A's by a whole receive batch on another worker; hold
        // longer and deeper before calling a gap real (rule 2 releases real gaps early anyway:
        // both lines past it).
        arbiter_.emplace(2, std::max<std::size_t>(depth, 1024), 2048, 20'000'000);
    } else {
        // Reordering on one line: a short hold is enough.
        arbiter_.emplace(1, std::max<std::size_t>(depth, 64));
    }
    if (config.rerequest) {
        recovery_.emplace(md::nasdaq::moldudp64_recovery_options{
            .timeout_ns = config.rerequest_timeout_ms * 1'000'000,
            .max_messages = static_cast<std::uint16_t>(config.rerequest_max_messages),
            .max_in_flight = config.rerequest_max_in_flight,
            .max_tries = config.rerequest_tries});
        recovery_->on_state_change([this](md::nasdaq::recovery_state state) {
            // release: pairs with the acquire load in live().
            live_.recovering.store(state == md::nasdaq::recovery_state::recovering,
                                   std::memory_order_release);
        });
        arbiter_->set_recovery(&*recovery_);
    }
}

void feed_parser::attach_request_line(net::udp_socket const& socket, std::uint16_t line) {
    request_socket_ = &socket;
    request_line_ = line;
}

void feed_parser::attach_recorder(md::nasdaq::binary_file_writer& writer) {
    recorder_ = &writer;
}

void feed_parser::attach_snapshot(std::unique_ptr<net::tcp_client> connection, net::timer timer) {
    if (!sync_) {
        throw std::logic_error("feed_parser::attach_snapshot: the feed has no snapshot server");
    }
    snapshot_ = std::make_unique<snapshot_client>(
        snapshot_client_options{.username = config_.snapshot_username,
                                .password = config_.snapshot_password,
                                .name = "feed " + config_.name + " snapshot"},
        std::move(connection), timer, *sync_);
    snapshot_->request(snapshot_client::clock::now()); // the feed starts unsynchronized
}

bool feed_parser::send_request(std::uint64_t first, std::uint16_t count) noexcept {
    std::string_view const session = itch_ ? itch_->session().session() : session_->session();
    if (request_socket_ == nullptr || session.size() != md::nasdaq::moldudp64_session_size) {
        return false; // no session yet: nothing to name in a request
    }
    md::nasdaq::moldudp64_request request;
    std::copy(session.begin(), session.end(), request.session.begin());
    request.sequence = first;
    request.count = count;
    std::array<std::byte, md::nasdaq::moldudp64_request_size> datagram{};
    md::nasdaq::write_moldudp64_request(request, datagram);
    if (request_socket_->send_to(datagram, *config_.rerequest)) {
        ++request_send_errors_;
        return false;
    }
    return true;
}

void feed_parser::service_recovery() {
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

std::uint64_t feed_parser::next_sequence() const noexcept {
    if (mdp3_) {
        return mdp3_->next_sequence();
    }
    return itch_ ? itch_->session().next_sequence() : session_->next_sequence();
}

md::nasdaq::moldudp64_session_options feed_parser::session_options() const noexcept {
    return {.first_sequence = config_.snapshot ? md::nasdaq::moldudp64_session::late_join : 1,
            .max_sequence_jump = config_.max_sequence_jump,
            .session = config_.session};
}

void feed_parser::deliver(std::span<std::byte const> datagram) {
    if (mdp3_) {
        mdp3_->on_incremental(datagram, now_);
        return;
    }
    if (sync_) {
        session_->on_packet(datagram, [this](std::uint64_t sequence, auto message) {
            record(message);
            sync_->on_live(sequence, message);
        });
        if (std::uint64_t const gaps = session_->stats().gaps; gaps != snapshot_gaps_) {
            snapshot_gaps_ = gaps; // a gap declared lost: the book is wrong until a snapshot
            if (snapshot_) {
                snapshot_->request(snapshot_client::clock::now());
            }
        }
    } else if (recorder_ != nullptr) {
        auto const tap = [this](std::uint64_t, std::span<std::byte const> message) {
            record(message);
        };
        if (itch_) {
            itch_->on_datagram(datagram, tap);
        } else {
            session_->on_packet(datagram, tap);
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

void feed_parser::record(std::span<std::byte const> message) {
    if (recorder_ == nullptr) {
        return;
    }
    recorder_->append(message);
    if (record_since_ == 0) {
        record_since_ = now_;
    }
}

std::uint64_t feed_parser::sequence_of(std::span<std::byte const> datagram) const noexcept {
    if (mdp3_) {
        auto const header = md::cme::read_packet_header(datagram);
        return header ? header->sequence : 0;
    }
    return md::nasdaq::moldudp64_sequence(datagram);
}

void feed_parser::operator()(net::packet const& p) {
    std::uint64_t const start = stages_.begin(p);
    now_ = p.user_rx_ns != 0 ? p.user_rx_ns : start;
    if (p.line == request_line_ && request_socket_ != nullptr) {
        ++rerequest_answers_;
    }
    if (mdp3_ && (p.line == snapshot_line_ || p.line == definitions_line_)) {
        if (p.line == snapshot_line_) {
            mdp3_->on_snapshot(p.payload(), now_);
        } else {
            mdp3_->on_definition(p.payload(), now_);
        }
    } else if (arbiter_) {
        if (p.truncated) {
            deliver({}); // bytes are missing: let the session count it as malformed
        } else {
            arbiter_->on_packet(
                p.payload(), sequence_of(p.payload()), p.line, p.user_rx_ns,
                [this](auto bytes) { deliver(bytes); }, [this] { return next_sequence(); });
        }
        service_recovery();
    } else {
        ++raw_packets_;
    }
    stages_.end(p);
}

void feed_parser::service() {
    if (arbiter_) {
        arbiter_->tick(
            now_, [this](auto bytes) { deliver(bytes); }, [this] { return next_sequence(); });
    }
    service_recovery();
    if (mdp3_) {
        mdp3_->on_time(now_);
    }
    if (itch_) {
        itch_->flush(); // the messages the pipeline holds: the book is complete from here on
    }
    if (snapshot_) {
        snapshot_->service(snapshot_client::clock::now()); // at most one chunk of a snapshot
    }
    if (recorder_ != nullptr && record_since_ != 0 && now_ >= record_since_ + record_flush_ns) {
        recorder_->flush();
        record_since_ = 0;
    }
    if (book_interval_ns_ != 0 && now_ >= next_books_ns_) {
        // A reader copying the last snapshot holds the lock: try again soon, never wait.
        next_books_ns_ = now_ + (publish_books() ? book_interval_ns_ : retry_ns);
    }
}

void feed_parser::on_batch() {
    // now_ stays the last packet's receive time: packets still queued behind this run (line
    // B's copies, say) arrived by then, so a hold must not expire against the wall clock yet.
    service();
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
    bool const recovering = recovery_ && recovery_->recovering();
    if (arbiter_ && !recovering) { // while recovering, the held packets wait for the recovery
        consider(arbiter_->next_deadline());
    }
    if (recovering) {
        // A chunk not sent yet (the socket refused it) has no deadline: retry after a timeout.
        std::uint64_t const timeout = recovery_->next_deadline();
        consider(timeout != 0 ? timeout : now_ + config_.rerequest_timeout_ms * 1'000'000);
    }
    if (record_since_ != 0) {
        consider(record_since_ + record_flush_ns);
    }
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
    md::nasdaq::itch_order_book const* const current = book();
    if (current == nullptr) {
        return true;
    }
    books_scratch_.clear();
    current->for_each_stock([&](md::nasdaq::stock_view const& stock) {
        if (stock.orders == 0) {
            return;
        }
        book_row row;
        std::copy_n(stock.symbol.begin(), std::min(stock.symbol.size(), row.symbol.size()),
                    row.symbol.begin());
        row.top = stock.top;
        row.orders = stock.orders;
        books_scratch_.push_back(row);
    });
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
    static metrics::histogram const no_holds; // without an arbiter: stays empty
    return arbiter_ ? arbiter_->hold_latency() : no_holds;
}

void feed_parser::finish() {
    if (arbiter_) {
        arbiter_->flush([this](auto bytes) { deliver(bytes); }, [this] { return next_sequence(); });
    }
    if (recorder_ != nullptr) {
        recorder_->flush();
        record_since_ = 0;
    }
    while (!publish_books()) { // after the runtime stopped: a reader's copy ends soon
        std::this_thread::yield();
    }
    publish();
}

void feed_parser::publish() noexcept {
    // relaxed stores: single writer; readers take a snapshot.
    auto const s = session_stats();
    md::nasdaq::itch50_stats const* const itch = itch_stats();
    std::uint64_t const book_full = itch != nullptr ? itch->book_full_drops : 0;
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
    if (mdp3_) {
        // release: pairs with the acquire load in live().
        live_.recovering.store(mdp3_->recovering(), std::memory_order_release);
    }
    live_.end_of_session.store(s.end_of_session, std::memory_order_relaxed);
    live_.packets.store(arbiter_ ? s.packets : raw_packets_, std::memory_order_relaxed);
    live_.messages.store(s.messages, std::memory_order_relaxed);
    live_.gaps.store(s.gaps, std::memory_order_relaxed);
    live_.missing_messages.store(s.missing_messages, std::memory_order_relaxed);
    live_.duplicate_packets.store(s.duplicate_packets, std::memory_order_relaxed);
    live_.malformed_packets.store(s.malformed_packets, std::memory_order_relaxed);
}

void feed_parser::log_untrusted(md::nasdaq::moldudp64_stats const& s) noexcept {
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

live_counters feed_parser::live() const noexcept {
    // relaxed: independent counters; a snapshot. recovering: acquire, pairs with the release
    // store in the state callback.
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
            live_.recovering.load(std::memory_order_acquire)};
}

md::nasdaq::moldudp64_stats feed_parser::session_stats() const noexcept {
    if (mdp3_) { // the channel's counters, in the session's terms (the stats line, the summary)
        md::cme::mdp3_channel_stats const& c = mdp3_->stats();
        md::nasdaq::moldudp64_stats s;
        s.packets = c.packets;
        s.messages = c.book_entries;
        s.gaps = c.gaps;
        s.duplicate_packets = c.duplicate_packets;
        s.malformed_packets = c.malformed_packets;
        s.next_sequence = mdp3_->next_sequence();
        return s;
    }
    if (itch_) {
        return itch_->session_stats();
    }
    if (session_) {
        return session_->stats();
    }
    return {};
}

md::nasdaq::itch50_stats const* feed_parser::itch_stats() const noexcept {
    if (sync_) {
        return &sync_->parser().stats();
    }
    return itch_ ? &itch_->itch_stats() : nullptr;
}

md::nasdaq::itch_order_book const* feed_parser::book() const noexcept {
    if (sync_) {
        return &sync_->parser().book();
    }
    return itch_ ? &itch_->book() : nullptr;
}

} // namespace signet::receiver
