#include "rerequest_service.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <system_error>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signet/md/big_endian.hpp>
#include <signet/md/moldudp64.hpp>

namespace signet::apps {

namespace {

// FNV-1a over the requester's address and port: the server's key (it mixes it further).
std::uint64_t requester_key(sockaddr_storage const& from) noexcept {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    auto add = [&](void const* p, std::size_t n) {
        auto const* bytes = static_cast<unsigned char const*>(p);
        for (std::size_t i = 0; i < n; ++i) {
            hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
        }
    };
    add(&from.ss_family, sizeof(from.ss_family));
    if (from.ss_family == AF_INET) {
        auto const& in = reinterpret_cast<sockaddr_in const&>(from);
        add(&in.sin_addr, sizeof(in.sin_addr));
        add(&in.sin_port, sizeof(in.sin_port));
    } else if (from.ss_family == AF_INET6) {
        auto const& in6 = reinterpret_cast<sockaddr_in6 const&>(from);
        add(&in6.sin6_addr, sizeof(in6.sin6_addr));
        add(&in6.sin6_port, sizeof(in6.sin6_port));
        add(&in6.sin6_scope_id, sizeof(in6.sin6_scope_id));
    }
    return hash;
}

int open_bound_socket(int family, std::uint16_t port) {
    int const fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw std::system_error(errno, std::generic_category(), "re-request server: socket");
    }
    int sndbuf = 4 << 20;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    sockaddr_storage address{};
    socklen_t length = 0;
    if (family == AF_INET6) {
        auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
        in6.sin6_family = AF_INET6;
        in6.sin6_addr = in6addr_any;
        in6.sin6_port = htons(port);
        length = sizeof(in6);
    } else {
        auto& in = reinterpret_cast<sockaddr_in&>(address);
        in.sin_family = AF_INET;
        in.sin_addr.s_addr = htonl(INADDR_ANY);
        in.sin_port = htons(port);
        length = sizeof(in);
    }
    if (::bind(fd, reinterpret_cast<sockaddr const*>(&address), length) != 0) {
        int const error = errno;
        ::close(fd);
        throw std::system_error(error, std::generic_category(),
                                "re-request server: cannot bind UDP port " + std::to_string(port) +
                                    " (any address)");
    }
    return fd;
}

std::uint16_t bound_port(int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        return 0;
    }
    return ntohs(address.ss_family == AF_INET6
                     ? reinterpret_cast<sockaddr_in6 const&>(address).sin6_port
                     : reinterpret_cast<sockaddr_in const&>(address).sin_port);
}

// True if `datagram` is a MoldUDP64 data packet whose blocks exactly fill it.
bool well_formed_data(std::span<std::byte const> datagram, md::moldudp64_header const& header) {
    if (header.count == 0 || header.count == md::moldudp64_end_of_session_count ||
        header.sequence == 0 ||
        header.sequence > std::numeric_limits<std::uint64_t>::max() - header.count) {
        return false;
    }
    return md::moldudp64_blocks_fill(datagram, header.count);
}

} // namespace

rerequest_service::rerequest_service(rerequest_service_options const& options)
    : store_(options.store_messages, options.store_bytes)
    , server_(store_, {.session = options.session,
                       .max_messages_per_answer = options.max_messages_per_answer,
                       .requests_per_second = options.requests_per_second,
                       .max_requesters = options.max_requesters})
    , session_known_(!options.session.empty()) {
    fd_ = open_bound_socket(options.family, options.port);
    port_ = bound_port(fd_);
    thread_ = std::thread([this] { run(); });
}

rerequest_service::~rerequest_service() {
    stop();
    ::close(fd_);
}

void rerequest_service::stop() noexcept {
    // relaxed: the flag only ends the loop; join() orders the thread's work before what
    // follows it.
    stopping_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) {
        thread_.join();
    }
}

void rerequest_service::record(std::span<std::byte const> datagram) noexcept {
    std::optional<md::moldudp64_header> const header = md::moldudp64_peek_header(datagram);
    if (!header || !well_formed_data(datagram, *header)) {
        return;
    }
    std::lock_guard const lock(mutex_);
    if (!session_known_) {
        server_.set_session({header->session.data(), header->session.size()});
        session_known_ = true;
    } else if (header->session != server_.session()) {
        return;
    }
    std::size_t offset = md::moldudp64_header_size;
    for (std::uint32_t i = 0; i < header->count; ++i) {
        std::size_t const length = md::load_be16(datagram.data() + offset);
        std::span<std::byte const> const message = datagram.subspan(offset + 2, length);
        offset += 2 + length;
        std::uint64_t const sequence = header->sequence + i;
        if (!store_.empty()) {
            if (sequence < store_.next_sequence()) {
                continue; // stored already (a duplicate, or a line's copy)
            }
            if (sequence > store_.next_sequence()) {
                ++counts_.restarts; // the store holds consecutive sequences only
                store_.clear();
            }
        }
        if (store_.append(sequence, message)) {
            ++counts_.stored;
        }
    }
}

void rerequest_service::run() noexcept {
    std::array<std::byte, 2048> buffer{};
    // relaxed: see stop().
    while (!stopping_.load(std::memory_order_relaxed)) {
        pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
        if (::poll(&ready, 1, 20) <= 0) {
            continue;
        }
        for (;;) {
            sockaddr_storage from{};
            socklen_t from_length = sizeof(from);
            // MSG_TRUNC: the datagram's real length, so an oversized request stays malformed.
            ssize_t const received =
                ::recvfrom(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC,
                           reinterpret_cast<sockaddr*>(&from), &from_length);
            if (received < 0) {
                if (errno == EINTR) {
                    continue;
                }
                break; // drained (EAGAIN), or an error the next poll reports again
            }
            std::size_t const size = std::min(static_cast<std::size_t>(received), buffer.size());
            auto const now = std::chrono::steady_clock::now().time_since_epoch();
            md::rerequest_answer answer;
            {
                std::lock_guard const lock(mutex_);
                answer = server_.handle(
                    {buffer.data(), size}, requester_key(from),
                    static_cast<std::uint64_t>(
                        std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
            }
            // The packets live in server_'s buffers, which only this thread writes.
            for (std::span<std::byte const> const packet : answer.packets) {
                bool sent = false;
                for (int attempt = 0; attempt < 1000 && !sent; ++attempt) {
                    if (::sendto(fd_, packet.data(), packet.size(), 0,
                                 reinterpret_cast<sockaddr const*>(&from), from_length) >= 0) {
                        sent = true;
                    } else if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
                        std::this_thread::yield(); // the local queue is full: wait
                    } else {
                        break;
                    }
                }
                if (!sent) {
                    std::lock_guard const lock(mutex_);
                    ++counts_.send_errors;
                    break;
                }
            }
        }
    }
}

md::rerequest_stats rerequest_service::stats() const {
    std::lock_guard const lock(mutex_);
    return server_.stats();
}

rerequest_store_counts rerequest_service::store_counts() const {
    std::lock_guard const lock(mutex_);
    rerequest_store_counts counts = counts_;
    counts.evicted = store_.evicted();
    return counts;
}

std::string rerequest_service::session() const {
    std::lock_guard const lock(mutex_);
    if (!session_known_) {
        return {};
    }
    return {server_.session().data(), server_.session().size()};
}

} // namespace signet::apps
