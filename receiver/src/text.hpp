#pragma once

// Text for a terminal or a log line: wire bytes made printable, book rows, microseconds.

#include <cstdint>
#include <string>
#include <string_view>

#include <signet/receiver/feed_protocol.hpp>

namespace signet::receiver {

/// Wire bytes for a terminal: printable ASCII as is, anything else as \xNN.
std::string printable(std::string_view bytes);

/// A book row's symbol, up to its first NUL, made printable.
std::string symbol_text(book_row const& row);

/// A price of 10^exponent units as a decimal ("12.3400" for 123400 at -4).
std::string price_text(std::int64_t price, int exponent);

/// "    SYMBOL   bid 12.3400 x 100     ask 12.3500 x 200     orders 4\n" (summary text).
std::string format_book_line(book_row const& row);

/// A re-requesting feed's stats line: "recovery NAME | synchronized: N msgs recovered, M lost"
/// ("recovering" while live.recovering).
std::string recovery_line(std::string_view feed, feed_counters const& live);

/// Nanoseconds as microseconds with one decimal: "12.3".
std::string micros(std::uint64_t ns);

} // namespace signet::receiver
