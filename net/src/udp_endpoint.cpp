#include <charconv>
#include <cstring>
#include <stdexcept>

#include <arpa/inet.h>

#include <signet/net/udp_endpoint.hpp>

namespace signet::net {

udp_endpoint::udp_endpoint() noexcept
    : storage_{} {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage_);
    v4->sin_family = AF_INET;
}

std::optional<udp_endpoint> udp_endpoint::try_parse_address(std::string_view text,
                                                            std::uint16_t port) noexcept {
    udp_endpoint e;
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
        text = text.substr(1, text.size() - 2);
    }
    if (text.empty() || text == "*") {
        e.set_port(port);
        return e; // IPv4 any
    }
    if (text.size() >= INET6_ADDRSTRLEN) {
        return std::nullopt;
    }
    char buffer[INET6_ADDRSTRLEN] = {};
    std::memcpy(buffer, text.data(), text.size());
    auto* v4 = reinterpret_cast<sockaddr_in*>(&e.storage_);
    if (inet_pton(AF_INET, buffer, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        e.set_port(port);
        return e;
    }
    e.storage_ = {};
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&e.storage_);
    if (inet_pton(AF_INET6, buffer, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        e.set_port(port);
        return e;
    }
    return std::nullopt;
}

std::optional<udp_endpoint> udp_endpoint::try_parse(std::string_view text) noexcept {
    auto const colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view host = text.substr(0, colon);
    std::string_view const port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos &&
        !(host.size() >= 2 && host.front() == '[' && host.back() == ']')) {
        return std::nullopt; // bare IPv6 needs brackets: [::1]:5000
    }
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535 ||
        port_text.empty()) {
        return std::nullopt;
    }
    return try_parse_address(host, static_cast<std::uint16_t>(port));
}

udp_endpoint udp_endpoint::parse(std::string_view text) {
    if (auto e = try_parse(text)) {
        return *e;
    }
    throw std::invalid_argument("not an address:port: '" + std::string(text) +
                                "' (expected e.g. 127.0.0.1:5000, *:5000 or [::1]:5000)");
}

udp_endpoint udp_endpoint::from_sockaddr(sockaddr const* address, socklen_t length) noexcept {
    udp_endpoint e;
    if (address != nullptr && length > 0 &&
        static_cast<std::size_t>(length) <= sizeof(sockaddr_storage)) {
        std::memcpy(&e.storage_, address, static_cast<std::size_t>(length));
    }
    return e;
}

std::uint16_t udp_endpoint::port() const noexcept {
    if (is_v6()) {
        return ntohs(reinterpret_cast<sockaddr_in6 const*>(&storage_)->sin6_port);
    }
    return ntohs(reinterpret_cast<sockaddr_in const*>(&storage_)->sin_port);
}

void udp_endpoint::set_port(std::uint16_t port) noexcept {
    if (is_v6()) {
        reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
    } else {
        reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
    }
}

bool udp_endpoint::is_multicast() const noexcept {
    if (is_v6()) {
        return IN6_IS_ADDR_MULTICAST(&reinterpret_cast<sockaddr_in6 const*>(&storage_)->sin6_addr);
    }
    auto const address = ntohl(reinterpret_cast<sockaddr_in const*>(&storage_)->sin_addr.s_addr);
    return (address >> 28) == 0xE;
}

bool udp_endpoint::is_any() const noexcept {
    if (is_v6()) {
        return IN6_IS_ADDR_UNSPECIFIED(
            &reinterpret_cast<sockaddr_in6 const*>(&storage_)->sin6_addr);
    }
    return reinterpret_cast<sockaddr_in const*>(&storage_)->sin_addr.s_addr == INADDR_ANY;
}

socklen_t udp_endpoint::size() const noexcept {
    return is_v6() ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

std::string udp_endpoint::to_string() const {
    char buffer[INET6_ADDRSTRLEN] = {};
    if (is_v6()) {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6 const*>(&storage_)->sin6_addr, buffer,
                  sizeof(buffer));
        return "[" + std::string(buffer) + "]:" + std::to_string(port());
    }
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in const*>(&storage_)->sin_addr, buffer,
              sizeof(buffer));
    return std::string(buffer) + ":" + std::to_string(port());
}

bool operator==(udp_endpoint const& a, udp_endpoint const& b) noexcept {
    return a.family() == b.family() && a.size() == b.size() &&
           std::memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace signet::net
