#include <utility>

#include <spdlog/spdlog.h>

#include <signet/md/nasdaq/glimpse.hpp>
#include <signet/receiver/nasdaq/glimpse_client.hpp>

namespace signet::receiver::nasdaq {

namespace {

char const* describe(md::nasdaq::soupbintcp::client_failure why) noexcept {
    using md::nasdaq::soupbintcp::client_failure;
    switch (why) {
    case client_failure::none:
        return "no failure";
    case client_failure::not_authorized:
        return "login rejected: not authorized";
    case client_failure::session_not_available:
        return "login rejected: session not available";
    case client_failure::login_timeout:
        return "no answer to the login";
    case client_failure::server_silent:
        return "the server went silent";
    case client_failure::invalid_frame:
        return "a packet length of 0 or above the bound";
    case client_failure::malformed_packet:
        return "a login answer that does not parse";
    case client_failure::unexpected_packet:
        return "an unexpected packet";
    }
    return "?";
}

} // namespace

char const* to_string(glimpse_phase phase) noexcept {
    switch (phase) {
    case glimpse_phase::off:
        return "off";
    case glimpse_phase::live:
        return "live";
    case glimpse_phase::buffering:
        return "buffering";
    case glimpse_phase::loading:
        return "loading";
    case glimpse_phase::rejected:
        return "rejected";
    }
    return "?";
}

glimpse_client::glimpse_client(glimpse_client_options options, std::unique_ptr<net::tcp_client> tcp,
                               net::timer timer, md::nasdaq::itch_snapshot_sync& sync)
    : options_(std::move(options))
    , tcp_(std::move(tcp))
    , timer_(timer)
    , sync_(sync) {}

void glimpse_client::request(clock::time_point now) {
    ++counters_.requests;
    if (rejected_) {
        return; // the credentials were refused: a clear error was logged once
    }
    if (!wanted_) {
        wanted_ = true;
        requested_at_ = now;
        if (sync_.phase() == md::nasdaq::sync_phase::live) {
            sync_.start_buffering();
        }
    }
    if (tcp_->state() == net::tcp_state::idle && sync_.stream_known()) {
        tcp_->connect(now);
    }
    publish();
}

void glimpse_client::service(clock::time_point now) {
    std::int64_t const now_ns = ns(now);
    if (wanted_ && !rejected_ && tcp_->state() == net::tcp_state::idle && sync_.stream_known()) {
        tcp_->connect(now);
    }
    net::tcp_event const event = tcp_->service(now, [&](std::span<std::byte const> bytes) {
        if (!soup_) {
            return bytes.size(); // after an outcome: the rest is not ours to read
        }
        return soup_->on_bytes(
            bytes, now_ns,
            [&](std::uint64_t, std::span<std::byte const> message) { on_message(message); });
    });
    switch (event) {
    case net::tcp_event::connected:
        soup_.emplace(md::nasdaq::soupbintcp::client_options{
            .username = options_.username,
            .password = options_.password,
            .first_sequence = 1,
            .login_timeout_ns = options_.login_timeout.count(),
            .server_timeout_ns = options_.server_timeout.count(),
            .max_length = options_.max_packet_length});
        (void)soup_->start(now_ns);
        connected_at_ = now;
        break;
    case net::tcp_event::disconnected: // counted by the tcp_client, by cause
        if (sync_.phase() == md::nasdaq::sync_phase::loading) {
            sync_.abort(); // nothing half-applied
        }
        soup_.reset(); // the tcp_client reconnects when its backoff ends
        break;
    case net::tcp_event::none:
    case net::tcp_event::data:
        break;
    }
    if (soup_ && pending_ == outcome::none) {
        soup_->on_time(now_ns);
        switch (soup_->state()) {
        case md::nasdaq::soupbintcp::client_state::failed:
            if (soup_->failure() == md::nasdaq::soupbintcp::client_failure::not_authorized ||
                soup_->failure() == md::nasdaq::soupbintcp::client_failure::session_not_available) {
                pending_ = outcome::rejected;
            } else {
                fail(describe(soup_->failure()));
            }
            break;
        case md::nasdaq::soupbintcp::client_state::ended:
            fail("End of Session before End of Snapshot");
            break;
        default:
            if (now >= connected_at_ + options_.snapshot_timeout) {
                fail("no End of Snapshot within snapshot_timeout");
            }
            break;
        }
    }
    if (soup_) {
        // The output: login, heartbeats, the logout an outcome queued.
        for (auto out = soup_->output(); !out.empty(); out = soup_->output()) {
            std::size_t const n = tcp_->send(out, now);
            soup_->sent(n, now_ns);
            if (n == 0) {
                break;
            }
        }
    }
    if (pending_ != outcome::none) {
        finish(std::exchange(pending_, outcome::none), now);
    }
    clock::time_point deadline = tcp_->next_deadline();
    if (soup_ && soup_->next_deadline() != 0) {
        deadline =
            std::min(deadline, clock::time_point(std::chrono::nanoseconds(soup_->next_deadline())));
    }
    if (deadline != clock::time_point::max() && deadline != armed_for_) {
        timer_.arm_at(deadline);
        armed_for_ = deadline;
    } else if (deadline == clock::time_point::max()) {
        armed_for_ = deadline;
    }
    publish();
}

void glimpse_client::on_message(std::span<std::byte const> message) {
    if (pending_ != outcome::none) {
        return; // an outcome is decided: the rest of this read is ignored
    }
    if (sync_.phase() == md::nasdaq::sync_phase::buffering) {
        sync_.start_snapshot();
    }
    std::optional<md::nasdaq::itch_snapshot_sync::end_result> const end =
        sync_.on_snapshot(message);
    if (!end) {
        return;
    }
    switch (*end) {
    case md::nasdaq::itch_snapshot_sync::end_result::synchronized:
        pending_ = outcome::synchronized;
        break;
    case md::nasdaq::itch_snapshot_sync::end_result::too_old:
        SPDLOG_WARN("{}: the snapshot resumes before the buffered live messages (sequence {} "
                    "and later are buffered); asking for a newer one",
                    options_.name, sync_.buffer_first());
        pending_ = outcome::retry;
        break;
    case md::nasdaq::itch_snapshot_sync::end_result::future:
        if (!std::exchange(future_logged_, true)) {
            SPDLOG_WARN("{}: the snapshot resumes at sequence {}, beyond the live stream (next "
                        "{}) by more than {}: refused, the book kept; a snapshot of another "
                        "session or day? Asking again (counted as future, logged once)",
                        options_.name, sync_.stats().last_future_resume, sync_.stream_next(),
                        sync_.options().max_ahead);
        }
        pending_ = outcome::retry;
        break;
    case md::nasdaq::itch_snapshot_sync::end_result::malformed:
    case md::nasdaq::itch_snapshot_sync::end_result::not_loading:
        fail("an End of Snapshot whose sequence does not parse");
        break;
    }
}

void glimpse_client::fail(char const* why) {
    ++counters_.protocol_failures;
    pending_ = outcome::retry;
    SPDLOG_WARN("{}: {}; the snapshot is dropped and asked for again", options_.name, why);
}

void glimpse_client::finish(outcome what, clock::time_point now) {
    if (soup_ && soup_->state() == md::nasdaq::soupbintcp::client_state::logged_in) {
        soup_->logout();
        (void)tcp_->send(soup_->output(), now); // best effort: we close next
    }
    soup_.reset();
    if (sync_.phase() == md::nasdaq::sync_phase::loading) {
        sync_.abort();
    }
    switch (what) {
    case outcome::synchronized: {
        wanted_ = false;
        tcp_->disconnect(now, false);
        tcp_->reset_backoff();
        auto const took =
            std::chrono::duration_cast<std::chrono::microseconds>(now - requested_at_).count();
        counters_.last_sync_us = static_cast<std::uint64_t>(took);
        counters_.total_sync_us += counters_.last_sync_us;
        auto const& s = sync_.stats();
        SPDLOG_INFO("{}: synchronized from a snapshot ({} orders, {} buffered messages "
                    "replayed) {:.1f} ms after it was needed",
                    options_.name, s.orders_loaded, s.replayed_messages,
                    static_cast<double>(took) / 1000.0);
        break;
    }
    case outcome::retry:
        tcp_->disconnect(now, true); // reconnects after the backoff
        break;
    case outcome::rejected:
        ++counters_.login_rejected;
        rejected_ = true;
        wanted_ = false;
        tcp_->disconnect(now, false);
        SPDLOG_ERROR("{}: the snapshot server rejected the login (check glimpse_username and "
                     "glimpse_password); the feed stays unsynchronized",
                     options_.name);
        break;
    case outcome::none:
        break;
    }
}

glimpse_phase glimpse_client::phase() const noexcept {
    if (rejected_) {
        return glimpse_phase::rejected;
    }
    switch (sync_.phase()) {
    case md::nasdaq::sync_phase::live:
        return glimpse_phase::live;
    case md::nasdaq::sync_phase::buffering:
        return glimpse_phase::buffering;
    case md::nasdaq::sync_phase::loading:
        return glimpse_phase::loading;
    }
    return glimpse_phase::buffering;
}

glimpse_counters glimpse_client::counters() const noexcept {
    glimpse_counters c = counters_;
    net::tcp_client_stats const& t = tcp_->stats();
    c.attempts = t.attempts;
    c.connect_failures = t.refused + t.connect_timeouts;
    c.disconnects = t.peer_closed + t.resets + t.frames_too_large;
    auto const& s = sync_.stats();
    c.completed = s.snapshots_completed;
    c.orders_loaded = s.orders_loaded;
    c.snapshot_messages = s.snapshot_messages;
    c.buffered_messages = s.buffered_messages;
    c.replayed_messages = s.replayed_messages;
    c.buffer_evictions = s.buffer_evictions;
    c.buffer_restarts = s.buffer_restarts;
    c.too_old = s.too_old;
    c.future = s.future;
    c.covered_messages = s.covered_messages;
    c.aborted = s.aborted;
    return c;
}

glimpse_live glimpse_client::live() const noexcept {
    return {.phase = live_phase_.load(std::memory_order_relaxed),
            .completed = live_completed_.load(std::memory_order_relaxed),
            .orders_loaded = live_orders_.load(std::memory_order_relaxed),
            .buffered_messages = live_buffered_.load(std::memory_order_relaxed),
            .failures = live_failures_.load(std::memory_order_relaxed),
            .last_sync_us = live_last_sync_us_.load(std::memory_order_relaxed)};
}

void glimpse_client::publish() noexcept {
    glimpse_counters const c = counters();
    live_phase_.store(phase(), std::memory_order_relaxed);
    live_completed_.store(c.completed, std::memory_order_relaxed);
    live_orders_.store(c.orders_loaded, std::memory_order_relaxed);
    live_buffered_.store(c.buffered_messages, std::memory_order_relaxed);
    live_failures_.store(c.failures(), std::memory_order_relaxed);
    live_last_sync_us_.store(c.last_sync_us, std::memory_order_relaxed);
}

} // namespace signet::receiver::nasdaq
