#include <signet/receiver/raw_protocol.hpp>

#include "config_reader.hpp"

namespace signet::receiver {

namespace {

constexpr std::string_view keys[] = {"parser"};

std::shared_ptr<protocol_settings const> parse(config_reader const& feed) {
    (void)feed.get_enum("parser", 0, {{"count", 0}});
    return std::make_shared<raw_settings>();
}

} // namespace

protocol_registration raw_settings::registration() {
    return {"raw",  "counting datagrams, whatever they carry (no sequence, no book)",
            keys,   false,
            &parse, {}};
}

std::unique_ptr<feed_protocol> raw_settings::make(feed_config const& feed) const {
    return std::make_unique<raw_protocol>(feed);
}

raw_protocol::raw_protocol(feed_config const& feed)
    : feed_(feed) {}

std::vector<line_spec> raw_protocol::lines() const {
    std::vector<line_spec> lines = ab_lines(feed_);
    for (line_spec& line : lines) {
        line.role = line_role::side; // counted by the parser contract, nothing to sequence
    }
    return lines;
}

std::optional<md::sequence_unit> raw_protocol::frame(std::span<std::byte const>) const noexcept {
    return std::nullopt; // never called: no sequenced line
}

void raw_protocol::deliver(delivery const&) {}

} // namespace signet::receiver
