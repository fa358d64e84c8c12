#pragma once

// nats_fence: what a standby member's NATS connection has not delivered never arrives after
// another member took over (docs/publishing.md, "Standby groups"; nats_standby.hpp, design 2).
//
// A leader cut off from NATS (a partition, a stalled path) stops publishing at its deadline,
// but what it published before — and what libnats flushed since — sits in its TCP socket's
// send queue. TCP retransmits it for minutes, and the server, whose side of the connection is
// still open, takes it when the path heals: after the follower took over and published the
// same positions (measured: a double at the consumer after a partition healed). Two steps keep
// it from arriving:
// 1. The events' connection (nats_publisher's data connection, one per takeover or resume)
//    gets SO_LINGER with a zero timeout on its socket: whenever libnats closes it, the kernel
//    resets the connection and drops the send queue instead of delivering it later.
// 2. cut(), when the member's deadline passed without a renew, shuts the socket down: libnats
//    sees the connection lost and closes it (a reset, step 1); it does not reconnect, and the
//    member's next takeover or resume makes a new one (nats_standby.hpp, design 2 and 5).
//
// libnats does not hand out its socket: attach() finds it among the process's descriptors by
// the connection's local address and port, and keeps its local and peer addresses; cut()
// acts only on a descriptor whose addresses are still those (a closed descriptor's number may
// have been reused by another socket).
//
// Threading: attach() from the thread that made the connection (the lease thread, under the
// standby gate's mutex), cut() from the lease and fence threads; one mutex guards the
// descriptor (never held across anything but a few non-blocking syscalls; no NATS call).

#include <mutex>
#include <string_view>

#include <sys/socket.h>

namespace signet::receiver {

class nats_fence {
public:
    /// The connection's socket is the TCP socket bound to `local_ip`:`local_port`: found, it
    /// gets SO_LINGER 0. False when no descriptor of the process has that address.
    bool attach(std::string_view local_ip, int local_port) noexcept;
    /// Shuts the attached socket down if it is still that connection. True if it did.
    bool cut() noexcept;

private:
    std::mutex mutex_;
    int fd_ = -1;              // guarded by mutex_
    sockaddr_storage local_{}; // guarded by mutex_
    sockaddr_storage peer_{};  // guarded by mutex_
    socklen_t local_size_ = 0; // guarded by mutex_
    socklen_t peer_size_ = 0;  // guarded by mutex_
};

} // namespace signet::receiver
