#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <sys/socket.h>
#include <time.h>

#include <spdlog/spdlog.h>

#include <signet/net/detail/control_messages.hpp>
#include <signet/net/detail/feed_state.hpp>
#include <signet/net/log.hpp>

namespace signet::net {

std::uint64_t realtime_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

packet_pool::packet_pool(std::size_t count, std::size_t buffer_size, std::size_t headroom)
    : count_(count)
    , buffer_size_(buffer_size)
    , stride_((headroom + buffer_size + 63) / 64 * 64)
    , memory_(std::make_unique_for_overwrite<std::byte[]>(count * stride_))
    , returns_(count) {}

namespace detail {

line_state::line_state(feed_state& owner, std::uint16_t line_index, udp_socket s,
                       std::size_t capacity, std::size_t buffer_size, std::size_t headroom)
    : feed(owner)
    , index(line_index)
    , socket(std::move(s))
    , pool(capacity + receive_batch, buffer_size, headroom)
    , ready(capacity) {
    stash.reserve(pool.count());
}

void apply_control_messages(msghdr const& message, packet& p, line_state& line) noexcept {
    for (cmsghdr const* c = CMSG_FIRSTHDR(const_cast<msghdr*>(&message)); c != nullptr;
         c = CMSG_NXTHDR(const_cast<msghdr*>(&message), const_cast<cmsghdr*>(c))) {
        read_control_message(*c, p, line);
    }
}

void read_control_message(cmsghdr const& c, packet& p, line_state& line) noexcept {
    if (c.cmsg_level != SOL_SOCKET) {
        return;
    }
    if (c.cmsg_type == SCM_TIMESTAMPNS && c.cmsg_len >= CMSG_LEN(sizeof(timespec))) {
        timespec ts{};
        std::memcpy(&ts, CMSG_DATA(&c), sizeof(ts));
        p.kernel_rx_ns = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
                         static_cast<std::uint64_t>(ts.tv_nsec);
    } else if (c.cmsg_type == SO_RXQ_OVFL && c.cmsg_len >= CMSG_LEN(sizeof(std::uint32_t))) {
        std::uint32_t drops = 0;
        std::memcpy(&drops, CMSG_DATA(&c), sizeof(drops));
        line.kernel_drops.set(drops); // cumulative count for the socket
    }
}

void store_source(packet& p, void const* name, std::size_t length) noexcept {
    std::memcpy(&p.source_address, name, std::min(length, sizeof(p.source_address)));
}

bool deliver(line_state& line, packet const& p) noexcept {
    line.packets.add(1);
    line.bytes.add(p.size);
    if (p.truncated) {
        line.truncated.add(1);
    }
    if (line.ready.push(p)) {
        return true;
    }
    line.dropped.add(1);
    return false;
}

receive_result receive_from_socket(line_state& line) noexcept {
    constexpr int budget = 16; // batches per run, then yield the worker (fairness)
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
            line.paused.exchange(true, std::memory_order_acq_rel);
            bool const space =
                line.ready.size() < line.ready.capacity() && !line.pool.returns().empty();
            if (space && line.paused.exchange(false, std::memory_order_acq_rel)) {
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
        int const n = ::recvmmsg(line.socket.native_handle(), messages.data(),
                                 static_cast<unsigned>(want), MSG_DONTWAIT, nullptr);
        if (n < 0) {
            for (std::size_t i = 0; i < want; ++i) {
                line.stash.push_back(taken[i]);
            }
            if (errno == EINTR) {
                continue;
            }
            return receive_result::drained; // EAGAIN: empty (other errors: see next readiness)
        }
        std::uint64_t const now = realtime_ns();
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
            if (deliver(line, p)) {
                pushed = true;
            } else {
                line.stash.push_back(taken[i]); // dropped (full_policy::drop): reuse the buffer
            }
        }
        if (pushed) {
            feed.parser.schedule();
        }
        if (static_cast<std::size_t>(n) < want) {
            return receive_result::drained; // the kernel had no more
        }
    }
    return receive_result::budget_spent;
}

void after_parse_batch(feed_state& feed) noexcept {
    bool more = false;
    for (auto& line : feed.lines) {
        // acq_rel: the pause protocol's RMW pair (feed_state.hpp).
        if (line->paused.exchange(false, std::memory_order_acq_rel) && line->resume != nullptr) {
            line->resume(*line);
        }
        more = more || !line->ready.empty();
    }
    if (more) {
        this_contract::schedule();
    }
}

void report_parser_error(feed_state& feed, std::exception_ptr error) noexcept {
    if (feed.parser_error_logged) {
        return;
    }
    feed.parser_error_logged = true;
    try {
        std::rethrow_exception(std::move(error));
    } catch (std::exception const& e) {
        SPDLOG_LOGGER_ERROR(logger(),
                            "feed {}: parser threw: {} (counted as parser_errors; "
                            "further errors are counted, not logged)",
                            feed.name, e.what());
    } catch (...) {
        SPDLOG_LOGGER_ERROR(logger(), "feed {}: parser threw a non-standard exception", feed.name);
    }
}

} // namespace detail
} // namespace signet::net
