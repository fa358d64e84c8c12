#pragma once

// Text for a terminal or a log line: wire bytes made printable, book rows, microseconds.

#include <cstdint>
#include <string>
#include <string_view>

#include <signet/md/nasdaq/itch_order_book.hpp>

namespace signet::receiver {

/// Wire bytes for a terminal: printable ASCII as is, anything else as \xNN.
std::string printable(std::string_view bytes);

/// "    SYMBOL   bid 12.3400 x 100     ask 12.3500 x 200     orders 4\n" (summary text).
std::string format_book_line(std::string_view symbol, md::nasdaq::top_of_book const& top,
                             std::uint64_t orders);

/// Nanoseconds as microseconds with one decimal: "12.3".
std::string micros(std::uint64_t ns);

} // namespace signet::receiver
