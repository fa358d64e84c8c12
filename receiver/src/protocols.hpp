#pragma once

// The protocols the receiver knows (md_receiver's `protocol = "..."`): a protocol is added with
// its own files and one line in protocols.cpp.

#include <span>
#include <string_view>

#include <signet/receiver/feed_protocol.hpp>

namespace signet::receiver {

/// Every registered protocol, in the order the docs list them.
[[nodiscard]] std::span<protocol_registration const> protocols() noexcept;
/// The protocol of that name; nullptr if none.
[[nodiscard]] protocol_registration const* find_protocol(std::string_view name) noexcept;

} // namespace signet::receiver
