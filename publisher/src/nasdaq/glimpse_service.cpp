#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <signet/md/nasdaq/glimpse.hpp>
#include <signet/md/nasdaq/itch_snapshot.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/nasdaq/soupbintcp_server.hpp>
#include <signet/publisher/detail/tcp_listen.hpp>
#include <signet/publisher/nasdaq/glimpse_service.hpp>

namespace signet::publisher::nasdaq {

namespace {

namespace soup = md::nasdaq::soupbintcp;

constexpr int poll_ms = 5;
constexpr std::size_t input_bytes = 4096; // client packets: logins, heartbeats, logouts
// The session named in Login Accepted: GLIMPSE serves the current state, not a replayable
// sequenced stream.
constexpr std::string_view served_session = "GLIMPSE";

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// One sequenced packet carrying `message`, appended to `out`.
void append_sequenced(std::vector<std::byte>& out, std::span<std::byte const> message) {
    std::size_t const at = out.size();
    out.resize(at + soup::length_prefix + 1 + message.size());
    (void)soup::write_packet(std::span(out).subspan(at), soup::packet_type::sequenced_data,
                             message);
}

} // namespace

struct glimpse_service::connection {
    connection(net::unique_fd socket, soup::server_options const& options, std::int64_t now)
        : fd(std::move(socket))
        , server(options)
        , input(input_bytes)
        , last_progress_ns(now) {
        server.start(now);
    }
    net::unique_fd fd;
    soup::server server;
    std::vector<std::byte> input;
    std::size_t input_filled = 0;
    std::vector<std::byte> snapshot; // whole sequenced packets, End of Snapshot last; empty
                                     // once sent
    std::size_t snapshot_sent = 0;
    [[nodiscard]] bool snapshot_pending() const noexcept { return !snapshot.empty(); }
    bool close_counted = false;
    std::int64_t last_progress_ns;
};

glimpse_service::glimpse_service(glimpse_service_options const& options)
    : options_(options)
    , listener_(detail::listen_tcp(options.family, options.port, "glimpse service"))
    , port_(detail::bound_port(listener_.get()))
    , ring_(options.handoff_bytes)
    , record_buffer_(std::make_unique<std::byte[]>(detail::record_ring::max_record_size))
    , parser_(options.book)
    , state_(options.book.max_orders) {
    if (options.max_clients == 0 || options.heartbeat.count() <= 0 ||
        options.client_timeout.count() <= 0) {
        throw std::invalid_argument(
            "glimpse service: max_clients, heartbeat and client_timeout must be positive");
    }
    thread_ = std::thread([this] { run(); });
}

glimpse_service::~glimpse_service() {
    stop();
}

void glimpse_service::stop() noexcept {
    // release: pairs with the acquire load in run().
    stopping_.store(true, std::memory_order_release);
    if (thread_.joinable()) {
        thread_.join();
    }
}

void glimpse_service::record(std::span<std::byte const> datagram) noexcept {
    if (md::nasdaq::moldudp64_data_header(datagram)) {
        (void)ring_.push(datagram); // false only beyond 65535 bytes: not a UDP payload
    }
}

glimpse_counts glimpse_service::counts() const {
    std::lock_guard const lock(counts_mutex_);
    return published_;
}

void glimpse_service::run() noexcept {
    std::vector<pollfd> fds;
    // acquire: pairs with the release store in stop().
    while (!stopping_.load(std::memory_order_acquire)) {
        fds.clear();
        fds.push_back({.fd = listener_.get(), .events = POLLIN, .revents = 0});
        for (auto const& c : connections_) {
            bool const output = c->snapshot_pending() || !c->server.output().empty();
            fds.push_back({.fd = c->fd.get(),
                           .events = static_cast<short>(POLLIN | (output ? POLLOUT : 0)),
                           .revents = 0});
        }
        (void)::poll(fds.data(), fds.size(), poll_ms);
        drain();
        // Connections first (their pollfds are in this order), then new ones.
        std::size_t kept = 0;
        for (std::size_t i = 0; i < connections_.size(); ++i) {
            if (serve(*connections_[i], fds[i + 1].revents)) {
                connections_[kept++] = std::move(connections_[i]);
            }
        }
        connections_.resize(kept);
        if ((fds[0].revents & POLLIN) != 0) {
            accept_connections();
        }
        publish();
    }
    connections_.clear();
    publish();
}

void glimpse_service::drain() noexcept {
    counts_.handoff_lost_bytes += ring_.read_all(
        ring_position_,
        std::span<std::byte>(record_buffer_.get(), detail::record_ring::max_record_size),
        [this](std::span<std::byte const> datagram) { apply(datagram); });
}

void glimpse_service::apply(std::span<std::byte const> datagram) noexcept {
    std::optional<md::nasdaq::moldudp64_header> const header =
        md::nasdaq::moldudp64_data_header(datagram);
    if (!header || broken_) {
        return;
    }
    md::nasdaq::for_each_moldudp64_message(
        datagram, *header, [&](std::uint64_t sequence, auto message) {
            if (broken_ || (next_sequence_ != 0 && sequence < next_sequence_)) {
                return; // broken (below), or applied already
            }
            if (next_sequence_ != 0 && sequence > next_sequence_) {
                broken_ = true; // the ring lost packets: this book would be wrong from here on
                ++counts_.sequence_breaks;
                SPDLOG_ERROR("glimpse service: published messages {} to {} never reached the "
                             "snapshot book (the hand-off ring overflowed); logins are rejected "
                             "from now on",
                             next_sequence_, sequence - 1);
                return;
            }
            parser_.on_message(message);
            state_.on_message(message);
            next_sequence_ = sequence + 1;
            ++counts_.applied_messages;
        });
    counts_.next_sequence = next_sequence_;
}

void glimpse_service::accept_connections() noexcept {
    for (;;) {
        net::unique_fd fd(
            ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd.is_open()) {
            return; // EAGAIN, or an error the next poll reports again
        }
        if (connections_.size() >= options_.max_clients) {
            ++counts_.refused_connections;
            continue; // closed at once
        }
        int const one = 1;
        (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ++counts_.connections;
        soup::server_options const server{.username = options_.username,
                                          .password = options_.password,
                                          .session = served_session,
                                          .heartbeat_ns = options_.heartbeat.count(),
                                          .client_timeout_ns = options_.client_timeout.count()};
        connections_.push_back(std::make_unique<connection>(std::move(fd), server, now_ns()));
    }
}

bool glimpse_service::serve(connection& c, short revents) noexcept {
    std::int64_t const now = now_ns();
    // A closed session, counted once by its reason (the connection may go before or after).
    auto const count_close = [&] {
        if (c.server.state() != soup::server_state::closed || c.close_counted) {
            return;
        }
        c.close_counted = true;
        if (c.server.close_reason() == soup::server_close::rejected) {
            ++counts_.rejected_logins;
        } else if (c.server.close_reason() != soup::server_close::logout) {
            ++counts_.dropped_clients;
        }
    };
    if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        for (;;) {
            ssize_t const n = ::recv(c.fd.get(), c.input.data() + c.input_filled,
                                     c.input.size() - c.input_filled, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                count_close();
                return false; // gone (a logout closes too)
            }
            if (n < 0) {
                break;
            }
            c.input_filled += static_cast<std::size_t>(n);
            std::size_t const used = c.server.on_bytes(
                std::span<std::byte const>(c.input.data(), c.input_filled), now,
                [](std::span<std::byte const>) {}); // GLIMPSE clients send no data
            std::memmove(c.input.data(), c.input.data() + used, c.input_filled - used);
            c.input_filled -= used;
        }
    }
    if (c.server.state() == soup::server_state::login_received) {
        drain(); // the snapshot holds everything published until now
        if (broken_) {
            c.server.reject(soup::reject_reason::session_not_available);
        } else {
            try {
                build_snapshot(c);
            } catch (std::bad_alloc const&) {
                SPDLOG_ERROR("glimpse service: no memory for a snapshot; connection dropped");
                ++counts_.dropped_clients;
                return false;
            }
            c.server.accept(1, now);
            ++counts_.logins;
        }
    }
    count_close();
    if (c.server.state() == soup::server_state::closed && c.server.output().empty()) {
        return false;
    }
    // The server's packets (login answer, heartbeats) first, then the snapshot: whole packets
    // each, so the stream stays framed. No heartbeats while a snapshot is under way.
    if (!c.snapshot_pending()) {
        c.server.on_time(now);
    }
    while (!c.server.output().empty()) {
        auto const out = c.server.output();
        ssize_t const n = ::send(c.fd.get(), out.data(), out.size(), MSG_NOSIGNAL);
        if (n <= 0) {
            break;
        }
        c.server.sent(static_cast<std::size_t>(n), now);
    }
    if (c.snapshot_pending() && c.server.output().empty()) {
        while (c.snapshot_sent < c.snapshot.size()) {
            ssize_t const n = ::send(c.fd.get(), c.snapshot.data() + c.snapshot_sent,
                                     c.snapshot.size() - c.snapshot_sent, MSG_NOSIGNAL);
            if (n <= 0) {
                if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    ++counts_.dropped_clients;
                    return false;
                }
                break;
            }
            c.snapshot_sent += static_cast<std::size_t>(n);
            c.last_progress_ns = now;
        }
        if (c.snapshot_sent == c.snapshot.size()) {
            c.snapshot = {}; // the memory goes back at once: no longer pending
            ++counts_.snapshots_sent;
            c.server.sent(0, now); // the data counted as the server's last send
        } else if (now - c.last_progress_ns > options_.client_timeout.count()) {
            ++counts_.dropped_clients; // the client takes nothing
            return false;
        }
    }
    return true;
}

void glimpse_service::build_snapshot(connection& c) {
    md::nasdaq::itch_order_book const& book = parser_.book();
    constexpr std::size_t packet_overhead = soup::length_prefix + 1;
    c.snapshot.clear();
    // An add is 36 bytes, a directory 39: room for every order and a few thousand stocks.
    c.snapshot.reserve((book.size() + 4096) * (packet_overhead + 39) + packet_overhead +
                       md::nasdaq::glimpse::end_of_snapshot_length);
    std::size_t messages = 0;
    std::size_t const orders =
        md::nasdaq::write_itch_snapshot(book, &state_, [&](std::span<std::byte const> m) {
            append_sequenced(c.snapshot, m);
            ++messages;
        });
    std::array<std::byte, md::nasdaq::glimpse::end_of_snapshot_length> end{};
    (void)md::nasdaq::glimpse::write_end_of_snapshot(end, next_sequence_ == 0 ? 1 : next_sequence_);
    append_sequenced(c.snapshot, end);
    c.snapshot_sent = 0;
    c.last_progress_ns = now_ns();
    counts_.snapshot_messages += messages + 1;
    counts_.orders_sent += orders;
}

void glimpse_service::publish() noexcept {
    std::lock_guard const lock(counts_mutex_);
    published_ = counts_;
}

} // namespace signet::publisher::nasdaq
