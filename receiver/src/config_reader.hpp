#pragma once

// config_reader: one TOML table of the receiver's config file, read with typed getters that
// validate and throw config_error naming the file, the line and the key ("FILE:LINE: key 'KEY':
// PROBLEM"). config.cpp reads the shared keys with it and each protocol its own
// (receiver/src/protocols.hpp).

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include <signet/net/udp_endpoint.hpp>
#include <signet/receiver/config.hpp>

namespace signet::receiver {

/// The items of a comma-separated list ("a,b" -> a, b; "" -> one empty item): config values
/// that hold several (nats servers, nats_subjects).
[[nodiscard]] std::vector<std::string> comma_list(std::string_view list);

class config_reader {
public:
    config_reader(std::string file, toml::table const& table)
        : file_(std::move(file))
        , table_(table) {}

    [[nodiscard]] std::string const& file() const noexcept { return file_; }
    [[nodiscard]] toml::table const& table() const noexcept { return table_; }
    [[nodiscard]] bool has(std::string_view key) const { return table_.get(key) != nullptr; }

    /// Throws config_error: "FILE:LINE: key 'KEY': PROBLEM", the line of the key's value (or of
    /// the table when the key is absent).
    [[noreturn]] void fail(std::string_view key, std::string const& problem) const;
    /// "FILE:LINE" of the table.
    [[nodiscard]] std::string where() const;

    [[nodiscard]] std::string get_string(std::string_view key) const;
    [[nodiscard]] std::size_t get_size(std::string_view key, std::size_t fallback, std::size_t min,
                                       std::size_t max) const;
    [[nodiscard]] bool get_bool(std::string_view key, bool fallback) const;
    /// Seconds within [min, max]; with allow_zero, 0 too (it means "off").
    [[nodiscard]] double get_seconds(std::string_view key, double fallback, double min, double max,
                                     bool allow_zero) const;
    /// "ip:port"; with address_only, an address alone is taken too (port 0).
    [[nodiscard]] std::optional<net::udp_endpoint> get_endpoint(std::string_view key,
                                                                bool address_only) const;
    /// A unicast "ip:port" of a server (not any-address, port 0 or multicast); `what` names it.
    [[nodiscard]] std::optional<net::udp_endpoint> get_server(std::string_view key,
                                                              std::string_view what) const;
    template <typename Enum>
    [[nodiscard]] Enum
    get_enum(std::string_view key, Enum fallback,
             std::initializer_list<std::pair<std::string_view, Enum>> choices) const;

    /// Throws for the first key that is not in `allowed` (listing them); `table_name` for the
    /// message ("[runtime]").
    void reject_unknown_keys(std::string_view table_name,
                             std::set<std::string_view> const& allowed) const;

private:
    [[noreturn]] void fail_at(toml::node const& node, std::string_view key,
                              std::string const& problem) const;

    std::string file_;
    toml::table const& table_;
};

/// "FILE:LINE" of a source region.
[[nodiscard]] std::string where(std::string const& file, toml::source_region const& region);

template <typename Enum>
Enum config_reader::get_enum(
    std::string_view key, Enum fallback,
    std::initializer_list<std::pair<std::string_view, Enum>> choices) const {
    auto const* node = table_.get(key);
    if (node == nullptr) {
        return fallback;
    }
    auto const text = node->value<std::string>();
    std::string names;
    for (auto const& [name, value] : choices) {
        if (text && *text == name) {
            return value;
        }
        names += (names.empty() ? "\"" : ", \"") + std::string(name) + "\"";
    }
    fail_at(*node, key, "expected one of " + names);
}

} // namespace signet::receiver
