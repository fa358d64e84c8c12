#pragma once

/// itch_feed_handler: one ITCH 5.0 over MoldUDP64 feed — a moldudp64_session whose delivered
/// messages go to an itch50_parser and its itch_order_book.
///
/// Threading: none. One feed = one handler; the socket layer calls it from the feed's parser
/// contract, which never runs concurrently with itself. Readers of the stats and the book run on
/// that thread (or after it stopped). Costs: those of moldudp64_session and itch50_parser; no
/// allocation in steady state (see itch_order_book.hpp), no locks, no logging.

#include <cstdint>
#include <span>

#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/itch_order_book.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>

namespace signet::md::nasdaq {

struct itch_feed_handler_options {
    /// The MoldUDP64 session: first expected sequence (moldudp64_session::late_join adopts the
    /// first packet's), plausibility bound, pinned session id.
    moldudp64_session_options session{};
    itch_order_book_options book{};
    /// Messages go through itch50_parser::push() (prefetching across packets): call flush()
    /// before reading book() or itch_stats(). Off: each datagram is applied when it returns.
    bool pipeline = false;
};

class itch_feed_handler {
public:
    explicit itch_feed_handler(itch_feed_handler_options options = {});

    /// One UDP payload: a MoldUDP64 packet carrying ITCH 5.0 messages.
    void on_datagram(std::span<std::byte const> datagram);
    void operator()(std::span<std::byte const> datagram) { on_datagram(datagram); }
    /// As on_datagram, and `tap(sequence, message)` sees each message the session delivers,
    /// in sequence, before the parser does (a recorder).
    template <typename Tap>
    void on_datagram(std::span<std::byte const> datagram, Tap&& tap) {
        (void)session_.on_packet(datagram,
                                 [&](std::uint64_t sequence, std::span<std::byte const> message) {
                                     tap(sequence, message);
                                     apply(message);
                                 });
    }
    /// Applies the messages the pipeline still holds (options.pipeline).
    void flush() { parser_.flush(); }

    [[nodiscard]] moldudp64_stats session_stats() const noexcept { return session_.stats(); }
    [[nodiscard]] itch50_stats const& itch_stats() const noexcept { return parser_.stats(); }
    [[nodiscard]] itch_order_book const& book() const noexcept { return parser_.book(); }
    [[nodiscard]] moldudp64_session const& session() const noexcept { return session_; }
    [[nodiscard]] itch50_parser const& parser() const noexcept { return parser_; }

private:
    void apply(std::span<std::byte const> message) {
        if (pipeline_) {
            parser_.push(message);
        } else {
            parser_.on_message(message);
        }
    }

    moldudp64_session session_;
    itch50_parser parser_;
    bool pipeline_;
};

} // namespace signet::md::nasdaq
