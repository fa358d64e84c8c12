#include "sender.hpp"

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "network_path.hpp"

namespace signet::bench {

sender::sender(sender_options options)
    : options_(std::move(options))
    , socket_(in_sender_namespace(
          [] { return net::udp_sender(net::udp_sender_options{.send_buffer = 16u << 20}); }))
    , cursors_(options_.ports.size()) {
    if (options_.ports.empty() || options_.templates == nullptr || options_.batch == 0) {
        throw std::invalid_argument("sender: needs ports, templates and a batch size");
    }
    // Above net.core.wmem_max where permitted (CAP_NET_ADMIN); else SO_SNDBUF's cap stays.
    int const size = 16 << 20;
    (void)::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
}

sender::~sender() {
    try {
        stop();
    } catch (...) { // NOLINT(bugprone-empty-catch): already reported by the caller's wait()
    }
}

void sender::start() {
    thread_ = std::thread([this] {
        try {
            run();
        } catch (...) {
            error_ = std::current_exception();
        }
    });
}

void sender::stop() {
    // release: pairs with the acquire load in run().
    stop_.store(true, std::memory_order_release);
    wait();
}

void sender::wait() {
    if (thread_.joinable()) {
        thread_.join();
    }
    if (error_) {
        std::rethrow_exception(std::exchange(error_, nullptr));
    }
}

void sender::run() {
    pin_this_thread(options_.cpu);
    packet_templates const& templates = *options_.templates;
    std::size_t const feeds = options_.ports.size();
    std::size_t const batch = options_.batch;
    std::size_t const slot = (templates.max_size() + 63) / 64 * 64;
    std::vector<std::byte> scratch(batch * slot);
    std::vector<sockaddr_in> targets(feeds);
    for (std::size_t f = 0; f < feeds; ++f) {
        targets[f].sin_family = AF_INET;
        targets[f].sin_addr = current_path().receiver;
        targets[f].sin_port = htons(options_.ports[f]);
    }
    std::vector<iovec> vectors(batch);
    std::vector<mmsghdr> messages(batch);

    std::uint64_t const limit = options_.limit;
    double const rate = options_.rate;
    // A paced sender that falls behind (preempted on a shared machine) catches up by at most
    // 20 ms worth of packets, in back-to-back batches.
    auto const max_backlog = static_cast<std::uint64_t>(std::max(1.0, rate * 0.02));
    std::uint64_t sent = 0;
    std::size_t next_feed = 0;
    std::uint64_t const start = monotonic_ns();
    std::uint64_t origin = start;
    std::uint64_t origin_sent = 0;
    // acquire: pairs with the release store in stop().
    while (!stop_.load(std::memory_order_acquire) && (limit == 0 || sent < limit)) {
        std::size_t want = batch;
        if (rate > 0) {
            std::uint64_t const now = monotonic_ns();
            auto const due = origin_sent + static_cast<std::uint64_t>(
                                               static_cast<double>(now - origin) * rate * 1e-9);
            if (due <= sent) {
                cpu_relax(); // the sender owns its CPU
                continue;
            }
            if (due - sent > max_backlog) {
                origin = now;
                origin_sent = sent;
            }
            want = static_cast<std::size_t>(std::min<std::uint64_t>(due - sent, batch));
        }
        if (limit != 0) {
            want = static_cast<std::size_t>(std::min<std::uint64_t>(want, limit - sent));
        }
        for (std::size_t i = 0; i < want; ++i) {
            std::size_t const feed = next_feed;
            next_feed = next_feed + 1 == feeds ? 0 : next_feed + 1;
            std::byte* const out = scratch.data() + i * slot;
            std::size_t const size = produce_packet(templates, cursors_[feed], out);
            vectors[i] = {out, size};
            messages[i].msg_hdr = {};
            messages[i].msg_hdr.msg_name = &targets[feed];
            messages[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
            messages[i].msg_hdr.msg_iov = &vectors[i];
            messages[i].msg_hdr.msg_iovlen = 1;
        }
        std::uint64_t const stamp = monotonic_ns();
        for (std::size_t i = 0; i < want; ++i) {
            stamp_packet(static_cast<std::byte*>(vectors[i].iov_base), stamp);
        }
        std::size_t done = 0;
        while (done < want) {
            int const n = ::sendmmsg(socket_.native_handle(), messages.data() + done,
                                     static_cast<unsigned>(want - done), 0);
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN || errno == ENOBUFS) {
                    continue;
                }
                throw std::system_error(errno, std::generic_category(), "sender: sendmmsg");
            }
            done += static_cast<std::size_t>(n);
        }
        sent += want;
        sent_.store(sent, std::memory_order_relaxed); // relaxed: a progress snapshot
    }
    seconds_ = static_cast<double>(monotonic_ns() - start) * 1e-9;
    cpu_ns_ = thread_cpu_ns(current_tid());
}

} // namespace signet::bench
