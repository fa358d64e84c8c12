#pragma once

// run_result: how a publisher's run ended (every protocol's publisher returns one).

#include <string>

namespace signet::publisher {

struct run_result {
    /// What ended the run early: a send error, a message too long for a packet, a damaged
    /// capture. Empty when the source ended, the duration elapsed or stop() was called.
    std::string error;
    [[nodiscard]] bool ok() const noexcept { return error.empty(); }
};

} // namespace signet::publisher
