#pragma once

// Wire bytes as text for JSON output (summaries, reports). Symbols, type letters and session
// names need not be UTF-8, and JSON text must be, so wire_text() maps every byte to the code
// point of the same value (Latin-1): bytes below 0x80 stay as they are, others become
// U+0080..U+00FF in UTF-8. No byte is lost: a reader gets the bytes back as the code points of
// the decoded string. (With nlohmann-json, dump with ensure_ascii to write them as \u00XX.)

#include <string>
#include <string_view>

namespace signet::md {

/// Arbitrary bytes as UTF-8 text: bytes below 0x80 as they are, others as U+0080..U+00FF.
inline std::string wire_text(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (char const c : bytes) {
        auto const b = static_cast<unsigned char>(c);
        if (b < 0x80) {
            out += c;
        } else {
            out += static_cast<char>(0xC0 | (b >> 6));
            out += static_cast<char>(0x80 | (b & 0x3F));
        }
    }
    return out;
}

} // namespace signet::md
