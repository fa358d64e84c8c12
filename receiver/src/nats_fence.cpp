#include "nats_fence.hpp"

#include <cstring>
#include <string>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace signet::receiver {

namespace {

/// Whether `a` is the IPv4 or IPv6 address `ip` with port `port`.
bool is_address(sockaddr_storage const& a, std::string_view ip, int port) {
    char text[INET6_ADDRSTRLEN] = {};
    int p = 0;
    if (a.ss_family == AF_INET) {
        auto const& in = reinterpret_cast<sockaddr_in const&>(a);
        inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
        p = ntohs(in.sin_port);
    } else if (a.ss_family == AF_INET6) {
        auto const& in6 = reinterpret_cast<sockaddr_in6 const&>(a);
        inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
        p = ntohs(in6.sin6_port);
    } else {
        return false;
    }
    return p == port && ip == text;
}

} // namespace

bool nats_fence::attach(std::string_view local_ip, int local_port) noexcept {
    DIR* const dir = opendir("/proc/self/fd");
    if (dir == nullptr) {
        return false;
    }
    int found = -1;
    sockaddr_storage local{};
    sockaddr_storage peer{};
    socklen_t local_size = sizeof local;
    socklen_t peer_size = sizeof peer;
    while (dirent const* entry = readdir(dir)) {
        char* end = nullptr;
        long const fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) {
            continue;
        }
        local_size = sizeof local;
        peer_size = sizeof peer;
        if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_size) ==
                0 &&
            is_address(local, local_ip, local_port) &&
            getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_size) ==
                0) {
            found = static_cast<int>(fd);
            break;
        }
    }
    closedir(dir);
    if (found < 0) {
        return false;
    }
    linger const reset{.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(found, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    std::lock_guard const lock(mutex_);
    fd_ = found;
    local_ = local;
    peer_ = peer;
    local_size_ = local_size;
    peer_size_ = peer_size;
    return true;
}

bool nats_fence::cut() noexcept {
    std::lock_guard const lock(mutex_);
    if (fd_ < 0) {
        return false;
    }
    sockaddr_storage local{};
    sockaddr_storage peer{};
    socklen_t local_size = sizeof local;
    socklen_t peer_size = sizeof peer;
    bool const same = getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &local_size) == 0 &&
                      getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &peer_size) == 0 &&
                      local_size == local_size_ && peer_size == peer_size_ &&
                      std::memcmp(&local, &local_, local_size) == 0 &&
                      std::memcmp(&peer, &peer_, peer_size) == 0;
    int const fd = fd_;
    fd_ = -1; // once per connection
    if (!same) {
        return false; // closed already (its number may be another socket's now)
    }
    (void)shutdown(fd, SHUT_RDWR); // attach() gave it SO_LINGER 0: the close that follows resets
    return true;
}

} // namespace signet::receiver
