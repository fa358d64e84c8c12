#include "text.hpp"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

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

std::string symbol_text(book_row const& row) {
    auto const length = static_cast<std::size_t>(
        std::find(row.symbol.begin(), row.symbol.end(), '\0') - row.symbol.begin());
    return printable(std::string_view(row.symbol.data(), length));
}

std::string price_text(std::int64_t price, int exponent) {
    // Four decimals at least; as many as the exponent needs, up to nine.
    int const decimals = std::clamp(-exponent, 4, 9);
    double scale = 1;
    for (int e = exponent; e < 0; ++e) {
        scale /= 10;
    }
    for (int e = 0; e < exponent; ++e) {
        scale *= 10;
    }
    char text[64];
    std::snprintf(text, sizeof(text), "%.*f", decimals, static_cast<double>(price) * scale);
    return text;
}

std::string format_book_line(book_row const& row) {
    char line[256];
    std::snprintf(line, sizeof(line), "    %-8s bid %s x %-7llu ask %s x %-7llu orders %u\n",
                  symbol_text(row).c_str(), price_text(row.bid_price, row.price_exponent).c_str(),
                  static_cast<unsigned long long>(row.bid_size),
                  price_text(row.ask_price, row.price_exponent).c_str(),
                  static_cast<unsigned long long>(row.ask_size), row.orders);
    return line;
}

std::string recovery_line(std::string_view feed, feed_counters const& live) {
    return fmt::format("recovery {} | {}: {} msgs recovered, {} lost", feed,
                       live.recovering ? "recovering" : "synchronized", live.recovered, live.lost);
}

std::string micros(std::uint64_t ns) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(ns) / 1000.0);
    return text;
}

} // namespace signet::receiver
