#pragma once

/// rerequest_server: the decision logic of a MoldUDP64 re-request server, without sockets.
/// Given a request datagram (moldudp64_request.hpp), an opaque 64-bit key for the requester
/// (its address and port, hashed by the caller) and the time, it either answers with normal
/// MoldUDP64 downstream packets built from a message_store, or ignores the request and counts
/// why.
///
/// Algorithm (handle), one outcome per request:
///   1. Not exactly 20 bytes: malformed.
///   2. Another session id than the server's: wrong_session. Sequence 0: zero_sequence. Count 0:
///      zero_count. (These cost nothing and use no rate budget.)
///   3. Rate limit, per requester: a token bucket of requests_per_second with `burst` tokens,
///      kept as one theoretical arrival time (GCRA). The requester table is fixed (max_requesters
///      slots, open addressing over a window of 8 slots): a new requester takes a free slot or
///      the slot of one whose bucket has refilled completely (forgetting it loses nothing: a new
///      entry starts full too). When its window holds none, the request is refused
///      (too_many_requesters): a flood of spoofed sources can neither grow the table nor evict
///      a requester that is still being limited. A slot's arrival time only moves forward, so
///      the whole table admits at most max_requesters * (requests_per_second * t + burst)
///      requests in any t seconds. An empty bucket: rate_limited. The budget is spent by every
///      request that passes step 2, answered or not.
///   4. The first message wanted is older than the store's oldest (evicted) or not sent yet
///      (not_yet_sent).
///   5. Answer: counts above max_messages_per_answer are clamped (counted), an answer stops at
///      the store's newest message (partial). Messages go into packets of at most max_payload
///      bytes through moldudp64_packer, in sequence order. A message too long for an empty
///      packet ends the answer before it (oversized, if it is the first).
///
/// Threading: none; the caller serialises handle() with the store's writer (md_feed holds one
/// mutex around both). Costs: all memory is allocated at construction (max_messages_per_answer
/// * max_payload bytes for packets, 16 bytes per requester slot); handle() copies the answered
/// messages once and neither allocates nor throws.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <signet/md/message_store.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/nasdaq/moldudp64_request.hpp>

namespace signet::md::nasdaq {

struct rerequest_server_options {
    /// The session id served (space padded to 10); requests for another are ignored.
    std::string_view session{};
    /// Messages per answer, 1 to 65535; larger requests are clamped.
    std::uint32_t max_messages_per_answer = 1000;
    /// Bytes per answer packet, header included (22 to 65507).
    std::size_t max_payload = 1400;
    /// Requests per second per requester, (0, 1e9].
    double requests_per_second = 100;
    /// Requests a requester may send at once; 0 = requests_per_second rounded up (at least 1).
    std::uint32_t burst = 0;
    /// Requester slots (rounded up to a power of two, at least 8).
    std::size_t max_requesters = 4096;
};

enum class rerequest_outcome : std::uint8_t {
    answered,
    malformed,           ///< not 20 bytes
    wrong_session,       ///< another session id
    zero_sequence,       ///< sequence 0 (MoldUDP64 sequences start at 1)
    zero_count,          ///< count 0
    rate_limited,        ///< the requester's bucket is empty
    too_many_requesters, ///< no slot for a new requester (every one in its window is active)
    evicted,             ///< the first message wanted is no longer stored
    not_yet_sent,        ///< the first message wanted is not stored yet
    oversized,           ///< the first message wanted does not fit a packet
};

/// Counters, one per outcome, plus what the answers held. requests = the sum of the outcomes.
struct rerequest_stats {
    std::uint64_t requests = 0;
    std::uint64_t answered = 0;
    std::uint64_t messages_resent = 0;
    std::uint64_t packets_resent = 0;
    std::uint64_t malformed = 0;
    std::uint64_t wrong_session = 0;
    std::uint64_t zero_sequence = 0;
    std::uint64_t zero_count = 0;
    std::uint64_t rate_limited = 0;
    std::uint64_t too_many_requesters = 0;
    std::uint64_t evicted = 0;
    std::uint64_t not_yet_sent = 0;
    std::uint64_t oversized = 0;
    std::uint64_t clamped = 0; ///< answered requests whose count exceeded the answer limit
    std::uint64_t partial = 0; ///< answered requests cut short (store's end, oversized message)
};

/// What handle() decided. The packets are views into the server, valid until the next handle().
struct rerequest_answer {
    rerequest_outcome outcome = rerequest_outcome::malformed;
    std::span<std::span<std::byte const> const> packets{};
    std::uint64_t first_sequence = 0; ///< of the first message answered
    std::uint32_t messages = 0;       ///< messages answered, over all packets
    bool clamped = false;
    bool partial = false;

    [[nodiscard]] bool answered() const noexcept { return outcome == rerequest_outcome::answered; }
};

class rerequest_server {
public:
    /// Throws std::invalid_argument on options out of range. The store must outlive the server.
    rerequest_server(message_store const& store, rerequest_server_options const& options);
    rerequest_server(rerequest_server const&) = delete;
    rerequest_server& operator=(rerequest_server const&) = delete;

    /// Decides on one request (algorithm above). `now_ns`: any monotonic clock in nanoseconds.
    [[nodiscard]] rerequest_answer handle(std::span<std::byte const> request,
                                          std::uint64_t requester, std::uint64_t now_ns) noexcept;

    /// Serves another session id from now on (space padded to 10).
    void set_session(std::string_view session) noexcept;
    [[nodiscard]] moldudp64_session_id const& session() const noexcept { return session_; }
    [[nodiscard]] rerequest_stats const& stats() const noexcept { return stats_; }
    /// Requester slots in use.
    [[nodiscard]] std::size_t requesters() const noexcept { return requesters_; }

private:
    struct requester_slot {
        std::uint64_t key = 0;
        std::uint64_t tat = 0; // theoretical arrival time (GCRA); 0 = free slot
    };
    static constexpr std::size_t probe_window = 8;

    rerequest_outcome admit(std::uint64_t requester, std::uint64_t now_ns) noexcept;
    rerequest_outcome count(rerequest_outcome outcome) noexcept;
    rerequest_answer build(moldudp64_request const& request) noexcept;

    message_store const& store_;
    moldudp64_session_id session_{};
    std::uint32_t max_messages_;
    std::size_t max_payload_;
    std::uint64_t interval_ns_;  // GCRA emission interval: 1 s / requests_per_second
    std::uint64_t tolerance_ns_; // (burst - 1) * interval_ns_
    std::vector<requester_slot> slots_;
    std::size_t requesters_ = 0;
    std::unique_ptr<std::byte[]> packet_bytes_;
    std::unique_ptr<std::span<std::byte const>[]> packets_;
    rerequest_stats stats_{};
};

} // namespace signet::md::nasdaq
