#include "text.hpp"

#include <cstdio>

namespace signet::receiver {

std::string printable(std::string_view bytes) {
    std::string out;
    for (char const c : bytes) {
        auto const b = static_cast<unsigned char>(c);
        if (b >= 0x20 && b < 0x7F && c != '\\') {
            out += c;
        } else {
            char escaped[8];
            std::snprintf(escaped, sizeof(escaped), "\\x%02X", static_cast<unsigned>(b));
            out += escaped;
        }
    }
    return out;
}

std::string format_book_line(std::string_view symbol, md::nasdaq::top_of_book const& top,
                             std::uint64_t orders) {
    char line[200];
    std::snprintf(
        line, sizeof(line), "    %-8s bid %8.4f x %-7llu ask %8.4f x %-7llu orders %llu\n",
        printable(symbol).c_str(), top.bid_price / 10000.0,
        static_cast<unsigned long long>(top.bid_shares), top.ask_price / 10000.0,
        static_cast<unsigned long long>(top.ask_shares), static_cast<unsigned long long>(orders));
    return line;
}

std::string micros(std::uint64_t ns) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(ns) / 1000.0);
    return text;
}

} // namespace signet::receiver
