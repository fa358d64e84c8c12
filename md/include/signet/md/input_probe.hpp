#pragma once

/// input_probe: what a sequence_arbiter asks before it gives up on a gap because time passed:
/// whether input that may fill it is already waiting on one of its lines but has not reached
/// it yet (in the line's queue or its socket — a receiver behind its input on a loaded
/// machine). Such a gap is scheduling delay, not loss: the arbiter keeps holding (bounded).
/// The owner implements it over its sockets (net::runtime::input_waiting).
/// Threading: the arbiter's (its owner's parser contract). Costs: may make a syscall; asked only
/// when a hold is about to expire, never per packet in order.

#include <cstddef>

namespace signet::md {

class input_probe {
public:
    /// Whether input is waiting on the arbiter's line `line` (0: A, 1: B).
    [[nodiscard]] virtual bool waiting(std::size_t line) const noexcept = 0;

protected:
    input_probe() = default;
    input_probe(input_probe const&) = default;
    input_probe& operator=(input_probe const&) = default;
    ~input_probe() = default;
};

} // namespace signet::md
