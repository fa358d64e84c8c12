#include "socket_receive.hpp"

#include <algorithm>
#include <array>
#include <cerrno>

#include <sys/socket.h>

#include <signet/core/realtime_clock.hpp>
#include <signet/net/detail/delivery.hpp>

namespace signet::net::detail {

receive_result receive_from_socket(line_state& line) noexcept {
    // recvmmsg batches per run (64 datagrams), then yield the worker, so that a flooded socket
    // does not keep the other feeds' packets waiting behind long runs (measured by
    // bench/run-packet-rate --fairness; docs/benchmarks.md).
    constexpr int budget = 2;
    feed_state& feed = line.feed;
    std::array<mmsghdr, receive_batch> messages{};
    std::array<iovec, receive_batch> vectors{};
    std::array<sockaddr_in6, receive_batch> names{};
    alignas(cmsghdr) std::array<std::array<char, control_buffer_size>, receive_batch> control{};
    std::array<std::uint32_t, receive_batch> taken{};
    for (int round = 0; round < budget; ++round) {
        // acquire: pairs with the release store of the runtime's stop flag.
        if (feed.stopping->load(std::memory_order_acquire)) {
            return receive_result::stopping;
        }
        std::uint32_t index = 0;
        while (line.stash.size() < receive_batch && line.pool.returns().pop(index)) {
            line.stash.push_back(index);
        }
        std::size_t want = std::min<std::size_t>(receive_batch, line.stash.size());
        if (feed.on_full == full_policy::backpressure) {
            want = std::min(want, line.ready.capacity() - line.ready.size());
        }
        if (want == 0) {
            // Backpressure, or every buffer is in flight: leave the data in the kernel until the
            // parser frees space (see the pause protocol in feed_state.hpp).
            line.request_resume();
            bool const space =
                line.ready.size() < line.ready.capacity() && !line.pool.returns().empty();
            if (space && line.withdraw_resume()) {
                continue; // space appeared and nobody resumed us yet: carry on
            }
            return receive_result::paused;
        }
        for (std::size_t i = 0; i < want; ++i) {
            taken[i] = line.stash.back();
            line.stash.pop_back();
            vectors[i] = {line.pool.buffer(taken[i]), line.pool.buffer_size()};
            messages[i].msg_hdr = {};
            messages[i].msg_hdr.msg_name = &names[i];
            messages[i].msg_hdr.msg_namelen = sizeof(sockaddr_in6);
            messages[i].msg_hdr.msg_iov = &vectors[i];
            messages[i].msg_hdr.msg_iovlen = 1;
            messages[i].msg_hdr.msg_control = control[i].data();
            messages[i].msg_hdr.msg_controllen = control[i].size();
        }
        // seq_cst: visible before the datagrams leave the socket (see line_state::receiving).
        line.receiving.store(true, std::memory_order_seq_cst);
        int const n = ::recvmmsg(line.socket.native_handle(), messages.data(),
                                 static_cast<unsigned>(want), MSG_DONTWAIT, nullptr);
        if (n < 0) {
            line.receiving.store(false, std::memory_order_release);
            for (std::size_t i = 0; i < want; ++i) {
                line.stash.push_back(taken[i]);
            }
            if (errno == EINTR) {
                continue;
            }
            return receive_result::drained; // EAGAIN: empty (other errors: see next readiness)
        }
        std::uint64_t const now = realtime_clock::now_ns();
        bool pushed = false;
        for (std::size_t i = 0; i < want; ++i) {
            if (i >= static_cast<std::size_t>(n)) {
                line.stash.push_back(taken[i]);
                continue;
            }
            packet p;
            p.data = line.pool.buffer(taken[i]);
            p.size = std::min<std::uint32_t>(messages[i].msg_len,
                                             static_cast<std::uint32_t>(line.pool.buffer_size()));
            p.buffer = taken[i];
            p.user_rx_ns = now;
            p.line = line.index;
            p.truncated = (messages[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
            store_source(p, &names[i], messages[i].msg_hdr.msg_namelen);
            apply_control_messages(messages[i].msg_hdr, p, line);
            switch (deliver(line, p)) {
            case delivery::queued:
                pushed = true;
                break;
            case delivery::full: // cannot happen: `want` fits the free space of the queue
                line.dropped.add(1);
                [[fallthrough]];
            case delivery::dropped:
                line.stash.push_back(taken[i]); // reuse the buffer
                break;
            }
        }
        // release: pairs with the acquire load in runtime::input_waiting(): the pushes above
        // are visible in `ready` to whoever sees this store.
        line.receiving.store(false, std::memory_order_release);
        if (pushed) {
            feed.parser.schedule();
        }
        if (static_cast<std::size_t>(n) < want) {
            return receive_result::drained; // the kernel had no more
        }
    }
    return receive_result::budget_spent;
}

} // namespace signet::net::detail
