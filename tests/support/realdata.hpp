#pragma once

// Real exchange captures for tests: shared/realdata/ beside the checkout (provenance in its
// PROVENANCE.md). They are test input only and never part of the repository: a test that needs
// one skips when it is absent. The folder is SIGNET_REALDATA_DIR from the environment, else the
// first shared/realdata/ beside an ancestor of the test executable's folder (the checkout's
// build/<preset>/... is under it).

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <signet/publisher/pcap_source.hpp>

namespace signet::test {

/// The real-data folder, or "" when there is none.
inline std::filesystem::path const& realdata_dir() {
    static std::filesystem::path const dir = [] {
        if (char const* given = std::getenv("SIGNET_REALDATA_DIR"); given != nullptr) {
            return std::filesystem::path(given);
        }
        std::error_code error;
        std::filesystem::path at = std::filesystem::read_symlink("/proc/self/exe", error);
        for (; !error && at.has_relative_path(); at = at.parent_path()) {
            std::error_code absent;
            if (std::filesystem::is_directory(at / "shared" / "realdata", absent)) {
                return at / "shared" / "realdata";
            }
        }
        return std::filesystem::path();
    }();
    return dir;
}

/// The path of `relative` under the real-data folder, or "" when it is not there.
inline std::string realdata(std::string const& relative) {
    if (realdata_dir().empty()) {
        return {};
    }
    std::error_code error;
    std::filesystem::path const path = realdata_dir() / relative;
    return std::filesystem::exists(path, error) ? path.string() : std::string();
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
