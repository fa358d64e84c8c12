#include "config_reader.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace signet::receiver {

namespace {

std::string format_number(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

} // namespace

std::string where(std::string const& file, toml::source_region const& region) {
    return file + ":" + std::to_string(region.begin.line);
}

std::string config_reader::where() const {
    return receiver::where(file_, table_.source());
}

void config_reader::fail_at(toml::node const& node, std::string_view key,
                            std::string const& problem) const {
    throw config_error(receiver::where(file_, node.source()) + ": key '" + std::string(key) +
                       "': " + problem);
}

void config_reader::fail(std::string_view key, std::string const& problem) const {
    auto const* node = table_.get(key);
    fail_at(node != nullptr ? *node : static_cast<toml::node const&>(table_), key, problem);
}

void config_reader::reject_unknown_keys(std::string_view table_name,
                                        std::set<std::string_view> const& allowed) const {
    for (auto const& [key, value] : table_) {
        if (allowed.count(key.str()) == 0) {
            std::string list;
            for (auto const& a : allowed) {
                list += (list.empty() ? "" : ", ") + std::string(a);
            }
            throw config_error(receiver::where(file_, key.source()) + ": key '" +
                               std::string(key.str()) + "': unknown key in " +
                               std::string(table_name) + " (known: " + list + ")");
        }
    }
}

std::string config_reader::get_string(std::string_view key) const {
    auto const* node = table_.get(key);
    if (node == nullptr) {
        return {};
    }
    auto const value = node->value<std::string>();
    if (!value) {
        fail_at(*node, key, "expected a string");
    }
    return *value;
}

std::size_t config_reader::get_size(std::string_view key, std::size_t fallback, std::size_t min,
                                    std::size_t max) const {
    auto const* node = table_.get(key);
    if (node == nullptr) {
        return fallback;
    }
    auto const value = node->value<std::int64_t>();
    if (!node->is_integer() || !value || *value < static_cast<std::int64_t>(min) ||
        static_cast<std::uint64_t>(*value) > max) {
        fail_at(*node, key,
                "expected an integer from " + std::to_string(min) + " to " + std::to_string(max));
    }
    return static_cast<std::size_t>(*value);
}

bool config_reader::get_bool(std::string_view key, bool fallback) const {
    auto const* node = table_.get(key);
    if (node == nullptr) {
        return fallback;
    }
    auto const value = node->value<bool>();
    if (!node->is_boolean() || !value) {
        fail_at(*node, key, "expected true or false");
    }
    return *value;
}

double config_reader::get_seconds(std::string_view key, double fallback, double min, double max,
                                  bool allow_zero) const {
    auto const* node = table_.get(key);
    if (node == nullptr) {
        return fallback;
    }
    auto const value = node->value<double>();
    bool const in_range = value && std::isfinite(*value) &&
                          ((*value >= min && *value <= max) || (allow_zero && *value == 0));
    if (!in_range) {
        std::string expected = "expected a number of seconds from " + format_number(min) + " to " +
                               format_number(max) + (allow_zero ? " (or 0: off)" : "");
        if (value) {
            expected += ", got " + format_number(*value);
        }
        fail_at(*node, key, expected);
    }
    return *value;
}

std::optional<net::udp_endpoint> config_reader::get_endpoint(std::string_view key,
                                                             bool address_only) const {
    auto const* node = table_.get(key);
    if (node == nullptr) {
        return std::nullopt;
    }
    auto const text = node->value<std::string>();
    if (!text) {
        fail_at(*node, key, "expected a string");
    }
    if (address_only) {
        if (auto e = net::udp_endpoint::try_parse_address(*text)) {
            return e;
        }
        if (auto e = net::udp_endpoint::try_parse(*text)) {
            return e;
        }
        fail_at(*node, key, "'" + *text + "' is not an IP address");
    }
    if (auto e = net::udp_endpoint::try_parse(*text)) {
        return e;
    }
    fail_at(*node, key,
            "'" + *text +
                "' is not \"ip:port\" (e.g. \"127.0.0.1:30001\", \"*:30001\", \"[::1]:30001\")");
}

std::optional<net::udp_endpoint> config_reader::get_server(std::string_view key,
                                                           std::string_view what) const {
    auto endpoint = get_endpoint(key, false);
    if (endpoint && (endpoint->is_any() || endpoint->port() == 0 || endpoint->is_multicast())) {
        fail(key, "expected " + std::string(what) + "'s unicast \"ip:port\"");
    }
    return endpoint;
}

std::vector<std::string> comma_list(std::string_view list) {
    std::vector<std::string> items;
    for (std::size_t at = 0; at <= list.size();) {
        std::size_t const end = std::min(list.find(',', at), list.size());
        items.emplace_back(list.substr(at, end - at));
        at = end + 1;
    }
    return items;
}

} // namespace signet::receiver
