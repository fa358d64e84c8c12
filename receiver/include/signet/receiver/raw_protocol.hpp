#pragma once

// raw: counting a feed's datagrams, whatever they carry (`protocol = "raw"`): lines A (and B)
// as side lines, no sequencing, no book. For measuring a line or a protocol signet does not
// speak yet.
//
// Threading: feed_protocol's.

#include <memory>

#include <signet/receiver/feed_protocol.hpp>

namespace signet::receiver {

/// A raw feed's own keys: `parser = "count"` (the only value, and the default).
class raw_settings final : public protocol_settings {
public:
    [[nodiscard]] std::string_view protocol() const noexcept override { return "raw"; }
    [[nodiscard]] std::unique_ptr<feed_protocol> make(feed_config const& feed) const override;
    [[nodiscard]] static protocol_registration registration();
};

class raw_protocol final : public feed_protocol {
public:
    explicit raw_protocol(feed_config const& feed);

    [[nodiscard]] std::vector<line_spec> lines() const override;
    [[nodiscard]] std::optional<md::sequence_unit>
    frame(std::span<std::byte const> datagram) const noexcept override;
    void deliver(delivery const& d) override;
    [[nodiscard]] protocol_counters counters() const noexcept override { return {}; }

private:
    feed_config feed_;
};

} // namespace signet::receiver
