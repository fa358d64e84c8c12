// md_receiver --events: the receiver's market events as JSON lines (docs/events.md).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <signet/receiver/receiver.hpp>

namespace signet::md_receiver {

/// A queued subscriber printing each event of `symbols` ("all": every one) of the kinds in
/// `kinds` (empty: every kind) as a JSON line to `out`, on its own event worker: a slow terminal
/// drops events, counted in the summary's subscribers, never stalls a feed.
void subscribe_json_lines(receiver::receiver& feeds, std::vector<std::string> symbols,
                          std::string const& kinds, std::FILE* out);

/// The summary's fields as a Markdown table (docs/md_receiver.md holds this output).
void print_summary_fields();

} // namespace signet::md_receiver
