#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include <netinet/in.h>
#include <sys/socket.h>

namespace signet::net {

/// An IPv4 or IPv6 address and port. Parses "1.2.3.4:5", "[::1]:5"; the address may be "*" or
/// empty for "any" ("*:5" or ":5").
class udp_endpoint {
public:
    udp_endpoint() noexcept;
    /// Throws std::invalid_argument with a message naming the bad text.
    static udp_endpoint parse(std::string_view text);
    static std::optional<udp_endpoint> try_parse(std::string_view text) noexcept;
    /// Parses an address alone (no port): "239.1.1.1", "::1".
    static std::optional<udp_endpoint> try_parse_address(std::string_view text,
                                                         std::uint16_t port = 0) noexcept;
    static udp_endpoint from_sockaddr(sockaddr const* address, socklen_t length) noexcept;

    [[nodiscard]] int family() const noexcept { return storage_.ss_family; }
    [[nodiscard]] bool is_v6() const noexcept { return family() == AF_INET6; }
    [[nodiscard]] std::uint16_t port() const noexcept;
    void set_port(std::uint16_t port) noexcept;
    [[nodiscard]] bool is_multicast() const noexcept;
    [[nodiscard]] bool is_any() const noexcept;
    [[nodiscard]] sockaddr const* data() const noexcept {
        return reinterpret_cast<sockaddr const*>(&storage_);
    }
    [[nodiscard]] socklen_t size() const noexcept;
    [[nodiscard]] std::string to_string() const;

    friend bool operator==(udp_endpoint const& a, udp_endpoint const& b) noexcept;

private:
    sockaddr_storage storage_;
};

} // namespace signet::net
