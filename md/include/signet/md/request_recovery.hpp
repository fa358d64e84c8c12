#pragma once

/// request_recovery: the state machine of a gap-request client for one sequenced stream (one
/// feed's MoldUDP64 session with its A/B lines, or one Cboe PITCH unit). No sockets, no clock
/// and no wire format of its own: the owner passes the time and a `send(first, count)` callable
/// that puts one request on the wire (MoldUDP64's 20-byte request, moldudp64_request.hpp; Cboe's
/// Gap Request, cboe/pitch_session.hpp). Answers are normal downstream packets; the owner feeds
/// them to its session like any other and reports progress here.
///
/// One gap at a time: the owner delivers strictly in sequence, so the only gap that blocks
/// delivery is [next_sequence, first held packet). Lifecycle of a gap:
///   want(first, end, now)   the owner's reorder hold expired in front of a gap: request it
///                           (at most max_messages per request, max_in_flight requests out);
///                           true while the gap is being recovered, false once given up;
///   poll(now, send)         sends what is due: new chunks, and chunks whose answer did not
///                           come within timeout_ns again (a timeout) — up to max_tries per
///                           chunk, then the gap is given up (lost);
///   progress(next, now)     the session's next sequence moved: chunks below it are answered;
///                           when it passes the gap's end the gap is recovered;
///   abandon(now)            the owner's buffer is full: give the gap up now.
/// States: synchronized (no gap), recovering, lost (the gap was given up: want() refuses until
/// progress passes the gap's end, then synchronized). A state callback reports each change.
///
/// Threading: none (the feed's parser contract owns it). Costs: nothing per packet beyond a
/// compare in progress(); no allocation after construction.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

#include <signet/md/gap_recovery.hpp>

namespace signet::md {

struct request_recovery_options {
    std::uint64_t timeout_ns = 50'000'000; ///< a request unanswered this long is sent again
    std::uint16_t max_messages =
        1000;                      ///< messages per request (1..65535; the wire may allow fewer)
    std::size_t max_in_flight = 4; ///< requests outstanding at once (1..16)
    unsigned max_tries = 3;        ///< requests per chunk before the gap is lost
};

enum class recovery_state { synchronized, recovering, lost };
char const* to_string(recovery_state state) noexcept;

struct request_recovery_stats {
    std::uint64_t gaps = 0;               ///< gaps requested
    std::uint64_t gaps_recovered = 0;     ///< filled completely
    std::uint64_t gaps_lost = 0;          ///< given up (timeouts, or the owner's buffer full)
    std::uint64_t rerequests_sent = 0;    ///< request datagrams (retries included)
    std::uint64_t rerequest_timeouts = 0; ///< requests sent again after timeout_ns
    std::uint64_t recovered_messages = 0; ///< messages of requested gaps that arrived
    std::uint64_t lost_messages = 0;      ///< messages of given-up gaps that never arrived
    std::uint64_t recovering_ns = 0;      ///< time spent with a gap open
};

class request_recovery final : public gap_recovery {
public:
    static constexpr std::size_t max_chunks = 16;

    /// Throws std::invalid_argument for options out of range.
    explicit request_recovery(request_recovery_options const& options);

    /// Called with each state change (setup only; may be empty).
    void on_state_change(std::function<void(recovery_state)> callback) {
        on_state_ = std::move(callback);
    }

    /// [first, end) is missing in front of held data. True: keep holding (being recovered);
    /// false: given up, release what is held (the session counts the gap).
    bool want(std::uint64_t first, std::uint64_t end, std::uint64_t now) noexcept override;

    /// Sends due requests: send(first, count) -> bool (false: not sent, retried next poll).
    template <typename Send>
    void poll(std::uint64_t now, Send&& send);

    /// The session's next expected sequence is now `next`. Returns the latency (ns from want()
    /// to now) when this completed a gap, else 0.
    std::uint64_t progress(std::uint64_t next, std::uint64_t now) noexcept;

    /// Gives the open gap up now (the owner cannot hold more).
    void abandon(std::uint64_t now) noexcept override;

    [[nodiscard]] recovery_state state() const noexcept { return state_; }
    [[nodiscard]] bool recovering() const noexcept override {
        return state_ == recovery_state::recovering;
    }
    [[nodiscard]] request_recovery_stats const& stats() const noexcept { return stats_; }
    /// The earliest time poll() has something to do (a timeout); 0 when nothing is open.
    [[nodiscard]] std::uint64_t next_deadline() const noexcept override;

private:
    struct chunk {
        std::uint64_t first = 0;
        std::uint16_t count = 0;
        std::uint64_t sent_ns = 0;
        unsigned tries = 0; // requests sent for it
        bool open = false;
    };

    void give_up(std::uint64_t now) noexcept;
    void set_state(recovery_state state);
    void plan_chunks() noexcept;

    request_recovery_options options_;
    recovery_state state_ = recovery_state::synchronized;
    std::function<void(recovery_state)> on_state_;
    std::uint64_t first_ = 0; // the open gap: [first_, end_)
    std::uint64_t end_ = 0;
    std::uint64_t next_ = 0;    // the session's next sequence (progress)
    std::uint64_t planned_ = 0; // chunks cover [first_, planned_)
    std::uint64_t since_ns_ = 0;
    std::array<chunk, max_chunks> chunks_{};
    request_recovery_stats stats_{};
};

template <typename Send>
void request_recovery::poll(std::uint64_t now, Send&& send) {
    if (state_ != recovery_state::recovering) {
        return;
    }
    plan_chunks();
    for (std::size_t i = 0; i < options_.max_in_flight; ++i) {
        chunk& c = chunks_[i];
        if (!c.open) {
            continue;
        }
        bool const timed_out = c.tries != 0 && now - c.sent_ns >= options_.timeout_ns;
        if (c.tries != 0 && !timed_out) {
            continue;
        }
        if (timed_out && c.tries >= options_.max_tries) {
            give_up(now);
            return;
        }
        if (!send(c.first, c.count)) {
            continue; // the socket refused it: the next poll retries
        }
        if (timed_out) {
            ++stats_.rerequest_timeouts;
        }
        ++stats_.rerequests_sent;
        ++c.tries;
        c.sent_ns = now;
    }
}

} // namespace signet::md
