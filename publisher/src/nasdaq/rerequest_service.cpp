#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <limits>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/binary_file_reader.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/net/udp_endpoint.hpp>
#include <signet/publisher/nasdaq/rerequest_service.hpp>
#include <signet/publisher/pacing_clock.hpp>

namespace signet::publisher::nasdaq {

namespace {

constexpr std::size_t max_default_handoff = std::size_t{64} << 20;
/// Ring bytes per message beyond its own: the record header (8), padding (7), the MoldUDP64
/// header of a one-message packet (20) and the block length (2), rounded up.
constexpr std::size_t handoff_framing_per_message = 40;

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

net::udp_sender bind_any(int family, std::uint16_t port) {
    if (family != AF_INET && family != AF_INET6) {
        throw std::invalid_argument("rerequest_service: family must be AF_INET or AF_INET6");
    }
    std::optional<net::udp_endpoint> const any =
        net::udp_endpoint::try_parse_address(family == AF_INET6 ? "::" : "0.0.0.0", port);
    std::error_code error;
    std::string what;
    net::udp_sender socket = net::udp_sender::open({.family = family, .source = any}, error, what);
    if (error) {
        throw std::system_error(error, "re-request server: cannot bind UDP port " +
                                           std::to_string(port) + " (any address)");
    }
    return socket;
}

std::size_t handoff_size(rerequest_service_options const& o) {
    if (o.handoff_bytes != 0) {
        return o.handoff_bytes;
    }
    std::size_t const framing = o.store.messages > max_default_handoff / handoff_framing_per_message
                                    ? max_default_handoff
                                    : o.store.messages * handoff_framing_per_message;
    return std::min(max_default_handoff, std::min(o.store.bytes, max_default_handoff) + framing);
}

} // namespace

store_size store_for_messages(std::size_t messages) noexcept {
    return {messages, messages * md::nasdaq::itch50::max_message_length +
                          md::message_store::max_message_size};
}

store_size store_for_file(std::string const& path) {
    md::nasdaq::binary_file_reader reader(path);
    store_size size;
    while (auto const record = reader.next()) {
        if (!record->empty()) {
            ++size.messages;
            size.bytes += record->size();
        }
    }
    return {std::max<std::size_t>(size.messages, 1), std::max<std::size_t>(size.bytes, 1)};
}

rerequest_service::rerequest_service(rerequest_service_options const& options)
    : socket_(bind_any(options.family, options.port))
    , port_(socket_.local_endpoint().port())
    , ring_(handoff_size(options))
    , record_buffer_(std::make_unique<std::byte[]>(detail::record_ring::max_record_size))
    , store_(options.store.messages, options.store.bytes)
    , server_(store_, {.session = options.session,
                       .max_messages_per_answer = options.max_messages_per_answer,
                       .requests_per_second = options.requests_per_second,
                       .max_requesters = options.max_requesters})
    , session_known_(!options.session.empty()) {
    publish();
    thread_ = std::thread([this] { run(); });
}

rerequest_service::~rerequest_service() {
    stop();
}

void rerequest_service::stop() noexcept {
    // release: what record() pushed before this call is visible to the thread's final drain;
    // pairs with the acquire load in run().
    stopping_.store(true, std::memory_order_release);
    if (thread_.joinable()) {
        thread_.join();
    }
}

void rerequest_service::linger(std::chrono::nanoseconds how_long,
                               std::atomic<bool> const* interrupt) noexcept {
    wait_unless_interrupted(how_long, interrupt);
    stop();
}

void rerequest_service::record(std::span<std::byte const> datagram) noexcept {
    std::optional<md::nasdaq::moldudp64_header> const header =
        md::nasdaq::moldudp64_peek_header(datagram);
    if (!header || header->count == 0 ||
        header->count == md::nasdaq::moldudp64_end_of_session_count) {
        return; // heartbeats, ends of session, not MoldUDP64: nothing to store
    }
    (void)ring_.push(datagram); // false only beyond 65535 bytes: not a UDP payload
}

void rerequest_service::run() noexcept {
    // acquire: pairs with the release store in stop().
    while (!stopping_.load(std::memory_order_acquire)) {
        pollfd ready{.fd = socket_.native_handle(), .events = POLLIN, .revents = 0};
        bool const readable = ::poll(&ready, 1, 5) > 0;
        drain();
        if (readable) {
            answer();
        }
        publish();
    }
    drain(); // everything recorded before stop()
    publish();
}

void rerequest_service::drain() noexcept {
    counts_.handoff_lost_bytes += ring_.read_all(
        ring_position_,
        std::span<std::byte>(record_buffer_.get(), detail::record_ring::max_record_size),
        [this](std::span<std::byte const> datagram) { store_datagram(datagram); });
}

void rerequest_service::store_datagram(std::span<std::byte const> datagram) noexcept {
    std::optional<md::nasdaq::moldudp64_header> const header =
        md::nasdaq::moldudp64_data_header(datagram);
    if (!header) {
        return;
    }
    if (!session_known_) {
        server_.set_session({header->session.data(), header->session.size()});
        session_known_ = true;
    } else if (header->session != server_.session()) {
        return;
    }
    md::nasdaq::for_each_moldudp64_message(
        datagram, *header, [&](std::uint64_t sequence, auto message) {
            if (!store_.empty()) {
                if (sequence < store_.next_sequence()) {
                    return; // stored already (a duplicate, or a line's copy)
                }
                if (sequence > store_.next_sequence()) {
                    ++counts_.restarts; // the store holds consecutive sequences only
                    store_.clear();
                }
            }
            if (store_.append(sequence, message)) {
                ++counts_.stored;
            }
        });
}

void rerequest_service::answer() noexcept {
    std::array<std::byte, 2048> request{};
    for (;;) {
        sockaddr_storage from{};
        socklen_t from_length = sizeof(from);
        // MSG_TRUNC: the datagram's real length, so an oversized request stays malformed.
        ssize_t const received =
            ::recvfrom(socket_.native_handle(), request.data(), request.size(),
                       MSG_DONTWAIT | MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &from_length);
        if (received < 0) {
            if (errno == EINTR) {
                continue;
            }
            return; // drained (EAGAIN), or an error the next poll reports again
        }
        drain(); // the answer includes everything recorded so far
        std::size_t const size = std::min(static_cast<std::size_t>(received), request.size());
        auto const now = std::chrono::steady_clock::now().time_since_epoch();
        md::nasdaq::rerequest_answer const answer =
            server_.handle({request.data(), size}, requester_key(from),
                           static_cast<std::uint64_t>(
                               std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
        if (answer.packets.empty()) {
            continue;
        }
        net::udp_endpoint const to =
            net::udp_endpoint::from_sockaddr(reinterpret_cast<sockaddr const*>(&from), from_length);
        // The packets live in server_'s buffers, which only this thread writes.
        for (std::span<std::byte const> const packet : answer.packets) {
            std::error_code error;
            socket_.send(packet, to, error);
            if (error) {
                ++counts_.send_errors;
                break;
            }
        }
    }
}

void rerequest_service::publish() noexcept {
    rerequest_store_counts store = counts_;
    store.evicted = store_.evicted();
    std::lock_guard const lock(snapshot_mutex_);
    snapshot_.stats = server_.stats();
    snapshot_.store = store;
    snapshot_.session = server_.session();
    snapshot_.session_known = session_known_;
}

md::nasdaq::rerequest_stats rerequest_service::stats() const {
    std::lock_guard const lock(snapshot_mutex_);
    return snapshot_.stats;
}

rerequest_store_counts rerequest_service::store_counts() const {
    std::lock_guard const lock(snapshot_mutex_);
    return snapshot_.store;
}

std::string rerequest_service::describe() const {
    std::string const served = session();
    // The store's bounds are fixed at construction: any thread may read them.
    return "port " + std::to_string(port_) + " (any " +
           (socket_.family() == AF_INET6 ? "IPv6" : "IPv4") + " address), session " +
           (served.empty() ? "of the first data packet" : served) + ", store of " +
           std::to_string(store_.max_messages()) + " messages / " +
           std::to_string(store_.max_bytes()) + " bytes";
}

std::string rerequest_service::session() const {
    std::lock_guard const lock(snapshot_mutex_);
    if (!snapshot_.session_known) {
        return {};
    }
    return {snapshot_.session.data(), snapshot_.session.size()};
}

} // namespace signet::publisher::nasdaq
