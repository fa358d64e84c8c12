#pragma once

// Real exchange captures for tests: ../shared/realdata/ beside the checkout (provenance in its
// PROVENANCE.md). They are test input only and never part of the repository: a test that needs
// one skips when it is absent. SIGNET_REALDATA_FROM_BINARY (tests/CMakeLists.txt) is where they
// are, relative to the test executable's folder.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <signet/publisher/pcap_source.hpp>

namespace signet::test {

/// The path of `relative` under the real-data folder, or "" when it is not there.
inline std::string realdata(std::string const& relative) {
    std::error_code error;
    std::filesystem::path const binary = std::filesystem::read_symlink("/proc/self/exe", error);
    std::filesystem::path const path =
        binary.parent_path() / SIGNET_REALDATA_FROM_BINARY / relative;
    return !error && std::filesystem::exists(path, error) ? path.lexically_normal().string()
                                                          : std::string();
}

/// One captured UDP datagram.
struct captured_datagram {
    std::uint32_t destination_address = 0; ///< IPv4, host byte order
    std::uint16_t destination_port = 0;
    std::vector<std::byte> payload;
};

/// Every UDP datagram of a capture, in capture order (pcap_source: Ethernet, SLL, raw IPv4).
inline std::vector<captured_datagram> read_capture(std::string const& path) {
    publisher::pcap_source source(path, {});
    std::vector<captured_datagram> out;
    while (auto d = source.next()) {
        out.push_back(
            {d->destination_address, d->destination_port, {d->payload.begin(), d->payload.end()}});
    }
    return out;
}

} // namespace signet::test
