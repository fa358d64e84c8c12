#include "port_holder.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dirent.h>
#include <unistd.h>

namespace signet::net {

namespace {

/// The inodes of the sockets bound to `port` in one of /proc/net/udp, udp6. A line:
/// "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
/// ...", the local address "0100007F:1F90" (the port in hex after the colon).
void sockets_of(char const* table, std::uint16_t port, std::vector<std::string>& inodes) {
    std::FILE* const f = std::fopen(table, "re");
    if (f == nullptr) {
        return;
    }
    std::array<char, 512> line{};
    bool header = true;
    while (std::fgets(line.data(), static_cast<int>(line.size()), f) != nullptr) {
        if (std::exchange(header, false)) {
            continue;
        }
        std::array<std::string_view, 10> field{};
        std::size_t n = 0;
        std::string_view rest(line.data());
        while (n < field.size()) {
            std::size_t const start = rest.find_first_not_of(" \t\n");
            if (start == std::string_view::npos) {
                break;
            }
            rest.remove_prefix(start);
            std::size_t const end = std::min(rest.find_first_of(" \t\n"), rest.size());
            field[n++] = rest.substr(0, end);
            rest.remove_prefix(end);
        }
        if (n < field.size()) {
            continue;
        }
        std::string_view const local = field[1];
        std::size_t const colon = local.rfind(':');
        unsigned bound = 0;
        if (colon == std::string_view::npos ||
            std::from_chars(local.data() + colon + 1, local.data() + local.size(), bound, 16).ec !=
                std::errc{} ||
            bound != port || field[9] == "0") {
            continue;
        }
        inodes.push_back("socket:[" + std::string(field[9]) + "]");
    }
    std::fclose(f);
}

bool numeric(char const* name) noexcept {
    return *name != 0 && std::strspn(name, "0123456789") == std::strlen(name);
}

} // namespace

bool udp_port_held_by_a_process(std::uint16_t port) noexcept {
    try {
        std::vector<std::string> inodes;
        sockets_of("/proc/net/udp", port, inodes);
        sockets_of("/proc/net/udp6", port, inodes);
        if (inodes.empty()) {
            return false;
        }
        DIR* const processes = ::opendir("/proc");
        if (processes == nullptr) {
            return false;
        }
        bool held = false;
        std::array<char, 64> target{};
        while (dirent const* const p = held ? nullptr : ::readdir(processes)) {
            if (!numeric(p->d_name)) {
                continue;
            }
            std::string const dir = std::string("/proc/") + p->d_name + "/fd";
            DIR* const files = ::opendir(dir.c_str()); // another user's: not ours to see
            if (files == nullptr) {
                continue;
            }
            while (dirent const* const fd = held ? nullptr : ::readdir(files)) {
                if (!numeric(fd->d_name)) {
                    continue;
                }
                std::string const path = dir + "/" + fd->d_name;
                ssize_t const n = ::readlink(path.c_str(), target.data(), target.size());
                if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) {
                    continue;
                }
                std::string_view const file(target.data(), static_cast<std::size_t>(n));
                for (std::string const& inode : inodes) {
                    held = held || file == inode;
                }
            }
            ::closedir(files);
        }
        ::closedir(processes);
        return held;
    } catch (...) { // out of memory: say not found, the caller waits (bounded) as before
        return false;
    }
}

} // namespace signet::net
