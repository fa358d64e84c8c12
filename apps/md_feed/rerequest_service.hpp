#pragma once

// rerequest_service: md_feed's MoldUDP64 re-request server. A UDP socket bound to any address
// of one family on a port, a thread that answers requests from any client through
// md::rerequest_server, and the message_store that the send loop fills.
//
// Threading: record() is called by the send loop (one thread); the service thread reads the
// store under the same mutex, once per request; each record() takes it once per datagram.
// stats() and store_counts() may be called from any thread.
//
// Costs: the store and the server's answer buffers are allocated at construction; record()
// and the service thread allocate nothing per datagram.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include <signet/md/message_store.hpp>
#include <signet/md/rerequest_server.hpp>

namespace signet::apps {

struct rerequest_service_options {
    int family = 0;         ///< AF_INET or AF_INET6
    std::uint16_t port = 0; ///< 0: any free port (port() tells which)
    std::size_t store_messages = 1'000'000;
    std::size_t store_bytes = 50'000'000;
    /// The served session; empty: the first data packet record() sees sets it.
    std::string session;
    std::uint32_t max_messages_per_answer = 1000;
    double requests_per_second = 100;
    std::size_t max_requesters = 4096;
};

struct rerequest_store_counts {
    std::uint64_t stored = 0;      ///< messages appended
    std::uint64_t evicted = 0;     ///< messages the store's bounds (or a gap) pushed out
    std::uint64_t restarts = 0;    ///< the recorded stream jumped ahead: the store started anew
    std::uint64_t send_errors = 0; ///< answer packets the socket refused
};

class rerequest_service {
public:
    /// Binds the socket and starts the service thread. Throws std::system_error (bind: the
    /// port and why), std::invalid_argument (bad options), std::bad_alloc (store too large).
    explicit rerequest_service(rerequest_service_options const& options);
    /// Stops the thread.
    ~rerequest_service();
    rerequest_service(rerequest_service const&) = delete;
    rerequest_service& operator=(rerequest_service const&) = delete;

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

    /// Send-loop side: stores the messages of one MoldUDP64 datagram (data packets of the
    /// served session only). Messages already stored are skipped; a jump ahead clears the
    /// store first (it holds consecutive sequences only). Never throws or allocates.
    void record(std::span<std::byte const> datagram) noexcept;

    /// Stops answering and joins the thread (idempotent).
    void stop() noexcept;

    [[nodiscard]] md::rerequest_stats stats() const;
    [[nodiscard]] rerequest_store_counts store_counts() const;
    /// The session served (space padded), empty while still unknown.
    [[nodiscard]] std::string session() const;

private:
    void run() noexcept;

    int fd_ = -1;
    std::uint16_t port_ = 0;
    mutable std::mutex mutex_; // guards store_, server_, counts_, session_known_
    md::message_store store_;
    md::rerequest_server server_;
    rerequest_store_counts counts_{};
    bool session_known_ = false;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

} // namespace signet::apps
