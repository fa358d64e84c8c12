#include "port_holder.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace signet::net {

namespace {

/// The open-file names ("socket:[inode]") of the sockets bound to `port` in /proc/net/udp or
/// udp6. A line: "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid
/// timeout inode ...", the local address "0100007F:1F90" (the port in hex after the colon).
void sockets_of(char const* table, std::uint16_t port, std::vector<std::string>& names) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
        fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
            timeout >> inode;
        std::size_t const colon = local.rfind(':');
        if (!fields || colon == std::string::npos || inode == "0") {
            continue;
        }
        unsigned long local_port = 0; // a line that does not parse is no socket of the port
        char const* const last = local.data() + local.size();
        auto const [end, error] = std::from_chars(local.data() + colon + 1, last, local_port, 16);
        if (error != std::errc{} || end != last || local_port != port) {
            continue;
        }
        names.push_back("socket:[" + inode + "]");
    }
}

} // namespace

bool udp_port_held_by_a_process(std::uint16_t port) noexcept {
    namespace fs = std::filesystem;
    try {
        std::vector<std::string> names;
        sockets_of("/proc/net/udp", port, names);
        sockets_of("/proc/net/udp6", port, names);
        if (names.empty()) {
            return false;
        }
        std::error_code ec; // a process that ended, or another user's: skipped
        for (fs::directory_entry const& process : fs::directory_iterator("/proc", ec)) {
            for (fs::directory_entry const& file :
                 fs::directory_iterator(process.path() / "fd", ec)) {
                std::string const target = fs::read_symlink(file.path(), ec).string();
                for (std::string const& name : names) {
                    if (target == name) {
                        return true;
                    }
                }
            }
            ec.clear();
        }
        return false;
    } catch (...) { // out of memory: say not found, the caller waits (bounded)
        return false;
    }
}

} // namespace signet::net
