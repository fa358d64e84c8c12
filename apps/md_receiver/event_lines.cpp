#include "event_lines.hpp"

#include <algorithm>
#include <utility>

#include <signet/md/events.hpp>
#include <signet/receiver/event_json.hpp>
#include <signet/receiver/summary.hpp>

namespace signet::md_receiver {

void subscribe_json_lines(receiver::receiver& feeds, std::vector<std::string> symbols,
                          std::string const& kinds, std::FILE* out) {
    md::event_mask const mask =
        kinds.empty() ? md::event_mask::all() : *md::parse_event_kinds(kinds);
    if (std::find(symbols.begin(), symbols.end(), "all") != symbols.end()) {
        symbols.clear();
    }
    feeds.subscribe(
        {.name = "events", .symbols = std::move(symbols), .kinds = mask, .queue_capacity = 1 << 20},
        [out, line = std::string()](receiver::event_view const& v) mutable {
            line.clear();
            receiver::append_event_json(line, v);
            line += '\n';
            std::fwrite(line.data(), 1, line.size(), out);
        });
}

void print_summary_fields() {
    std::printf("| field | level | meaning |\n|---|---|---|\n");
    for (auto const& f : receiver::summary_fields()) {
        std::printf("| `%.*s` | %s | %.*s |\n", static_cast<int>(f.name.size()), f.name.data(),
                    f.per_feed ? "feed" : "top", static_cast<int>(f.meaning.size()),
                    f.meaning.data());
    }
}

} // namespace signet::md_receiver
