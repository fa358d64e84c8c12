#pragma once

// The parser contract's work: takes packets from the feed's line queues (merged by arrival time
// across A/B lines), calls the parser, hands each buffer back to its pool, then resumes paused
// lines and re-schedules itself while packets remain. Runs as a contract, so never concurrently
// with itself: the single consumer of every line queue and single producer of every returns
// queue of its feed.

#include <exception>

#include <signet/net/detail/feed_state.hpp>

namespace signet::net::detail {

/// Called once per parser contract run after its batch.
void after_parse_batch(feed_state& feed) noexcept;

/// Logs a parser exception once per feed (error path), counted by the caller.
void report_parser_error(feed_state& feed, std::exception_ptr error) noexcept;

/// Calls `call()`; an exception is counted (parser_errors) and logged once per feed.
template <typename Call>
void guarded(feed_state& feed, Call&& call) noexcept {
    try {
        call();
    } catch (...) {
        feed.parser_errors.add(1);
        report_parser_error(feed, std::current_exception());
    }
}

/// Up to `batch` packets, merged by arrival time across lines. Then the parser's `on_batch()`,
/// if it has one, after a run that parsed packets (publish counters once per run, not per
/// packet), or its `on_idle()` after a run that found none (runtime::wake_parser: timers).
template <typename Parser>
void run_parser(feed_state& feed, Parser& parser) {
    constexpr int batch = 64;
    int n = 0;
    for (; n < batch; ++n) {
        line_state* from = nullptr;
        packet* next = nullptr;
        for (auto& line : feed.lines) {
            if (packet* p = line->ready.front(); p != nullptr) {
                if (next == nullptr || p->user_rx_ns < next->user_rx_ns) {
                    next = p;
                    from = line.get();
                }
            }
        }
        if (next == nullptr) {
            break;
        }
        next->follows_in_run = n != 0;
        guarded(feed, [&] { parser(static_cast<packet const&>(*next)); });
        // Never full: the returns queue holds every buffer of the pool.
        [[maybe_unused]] bool const returned = from->pool.returns().push(next->buffer);
        from->ready.pop_front();
        feed.parsed.add(1);
    }
    if constexpr (requires { parser.on_batch(); }) {
        if (n != 0) {
            guarded(feed, [&] { parser.on_batch(); });
        }
    }
    if constexpr (requires { parser.on_idle(); }) {
        if (n == 0) {
            guarded(feed, [&] { parser.on_idle(); });
        }
    }
    after_parse_batch(feed);
}

} // namespace signet::net::detail
