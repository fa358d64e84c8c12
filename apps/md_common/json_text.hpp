#pragma once

// JSON output of the apps (nlohmann-json). Wire bytes (symbols, type letters, session names)
// need not be UTF-8, and nlohmann's dump() throws on invalid UTF-8, so they go in as
// wire_text(): every byte becomes the code point of the same value (Latin-1), and dump_json()
// writes every non-ASCII code point as \u00XX. The output is ASCII, hence valid UTF-8, and no
// byte is lost: a reader gets the bytes back as the code points of the decoded string.

#include <string>
#include <string_view>

#include <signet/md/wire_text.hpp>

#include <nlohmann/json.hpp>

namespace signet::apps {

using md::wire_text;

/// One line of ASCII JSON. Strings must be UTF-8 (config text is; wire bytes go through
/// wire_text()); a stray invalid byte becomes U+FFFD instead of an exception.
inline std::string dump_json(nlohmann::ordered_json const& j) {
    return j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace signet::apps
