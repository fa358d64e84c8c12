#pragma once

// line_output: where a publisher's datagrams go — line A (0) and, for A/B feeds, line B (1).
// udp_lines (udp_lines.hpp) sends them over UDP; tests plug in a recorder.
//
// Threading: called by the publisher's thread only. Costs: one virtual call per datagram and
// line, beside the send itself.

#include <cstddef>
#include <span>
#include <string>
#include <system_error>

namespace signet::publisher {

class line_output {
public:
    virtual ~line_output() = default;

    /// 1 or 2.
    [[nodiscard]] virtual std::size_t lines() const noexcept = 0;
    /// Sends one datagram on `line` (< lines()), waiting while the local queue is full: a
    /// datagram is never dropped silently. An error when it could not be sent at all.
    [[nodiscard]] virtual std::error_code send(std::size_t line,
                                               std::span<std::byte const> datagram) noexcept = 0;
    /// Where `line` goes, for messages ("127.0.0.1:31001").
    [[nodiscard]] virtual std::string describe(std::size_t line) const = 0;

protected:
    line_output() = default;
    line_output(line_output const&) = default;
    line_output& operator=(line_output const&) = default;
};

} // namespace signet::publisher
