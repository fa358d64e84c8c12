#pragma once

/// gap_recovery: what the sequence_arbiter asks of a gap recovery client while it holds packets
/// behind a gap (md::request_recovery implements it for MoldUDP64 re-requests and Cboe gap
/// requests; a snapshot recovery could too). Called only when a gap blocks delivery, never per
/// packet in order.
/// Threading: none; the owner's parser contract calls it.

#include <cstdint>

namespace signet::md {

class gap_recovery {
public:
    /// [first, end) is missing in front of held data. True: keep holding (being recovered);
    /// false: given up, release what is held (the session counts the gap).
    virtual bool want(std::uint64_t first, std::uint64_t end, std::uint64_t now) noexcept = 0;
    /// The holder cannot hold more: give the open gap up now.
    virtual void abandon(std::uint64_t now) noexcept = 0;
    /// A gap is open (want() said true and it was neither filled nor given up): the holder
    /// keeps its packets and waits for the recovery rather than for its own hold time.
    [[nodiscard]] virtual bool recovering() const noexcept = 0;
    /// The earliest time its owner must poll it (a request to send or resend); 0: none.
    [[nodiscard]] virtual std::uint64_t next_deadline() const noexcept = 0;

protected:
    gap_recovery() = default;
    gap_recovery(gap_recovery const&) = default;
    gap_recovery& operator=(gap_recovery const&) = default;
    ~gap_recovery() = default;
};

} // namespace signet::md
