#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <signet/md/cboe/pitch_session_server.hpp>
#include <signet/md/little_endian.hpp>
#include <signet/publisher/cboe/pitch_recovery_service.hpp>
#include <signet/publisher/detail/tcp_listen.hpp>

namespace signet::publisher::cboe {

namespace {

namespace cb = md::cboe;
namespace mt = cb::message_type;

constexpr int poll_ms = 5;
constexpr std::size_t input_bytes = 4096;
constexpr std::size_t resend_block_bytes = 1400;

/// Whether the `count`th drop of a kind is logged: the 1st, 10th, 100th...
bool logged(std::uint64_t count) noexcept {
    while (count != 0 && count % 10 == 0) {
        count /= 10;
    }
    return count == 1;
}

std::string server_name(std::uint8_t spin_unit) {
    return spin_unit == 0 ? "the gap request proxy"
                          : "unit " + std::to_string(spin_unit) + "'s spin server";
}

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

struct pitch_recovery_service::connection {
    connection(net::unique_fd socket, std::uint8_t unit, cb::session_server_options const& options,
               std::int64_t now)
        : fd(std::move(socket))
        , spin_unit(unit)
        , server(options)
        , input(input_bytes) {
        server.start(now);
    }
    net::unique_fd fd;
    std::uint8_t spin_unit; // 0: a GRP connection
    cb::session_server server;
    std::vector<std::byte> input;
    std::size_t input_filled = 0;
    bool counted_login = false;
    bool spinning = false; // a spin is queued and not all sent
    std::int64_t last_image = 0;
};

pitch_recovery_service::pitch_recovery_service(pitch_recovery_options const& options,
                                               line_output* gap_line)
    : options_(options)
    , gap_line_(gap_line)
    , ring_(options.handoff_bytes)
    , record_buffer_(std::make_unique<std::byte[]>(detail::record_ring::max_record_size))
    , book_(cb::pitch_book_options{.max_orders = options.max_orders}) {
    if (options.units < 1 || options.units > 64 || options.max_clients == 0 ||
        options.heartbeat.count() <= 0 || options.client_timeout.count() <= 0 ||
        options.login_timeout.count() <= 0 || options.store_messages == 0 ||
        (options.grp && gap_line == nullptr) || (options.spin && options.spin_port == 0) ||
        (options.spin && options.spin_port + options.units - 1 > 0xFFFF)) {
        throw std::invalid_argument("pitch recovery service: 1 to 64 units, a gap line with "
                                    "grp, a spin port with spin, positive limits");
    }
    if (options.grp) {
        grp_listener_ = detail::listen_tcp(options.family, options.grp_port, "gap request proxy");
        grp_port_ = detail::bound_port(grp_listener_.get());
    }
    if (options.spin) {
        for (std::size_t u = 0; u < options.units; ++u) {
            spin_listeners_.push_back(detail::listen_tcp(
                options.family, static_cast<std::uint16_t>(options.spin_port + u),
                "spin server of unit " + std::to_string(u + 1)));
        }
    }
    for (std::size_t u = 0; u < options.units; ++u) {
        // Messages are at most 255 bytes; most are under 44.
        stores_.push_back(std::make_unique<md::message_store>(options.store_messages,
                                                              options.store_messages * 48 + 256));
    }
    next_.assign(options.units, 1);
    resend_.resize(resend_block_bytes);
    thread_ = std::thread([this] { run(); });
}

pitch_recovery_service::~pitch_recovery_service() {
    stop();
}

void pitch_recovery_service::stop() noexcept {
    // release: pairs with the acquire load in run().
    stopping_.store(true, std::memory_order_release);
    if (thread_.joinable()) {
        thread_.join();
    }
}

void pitch_recovery_service::record(std::span<std::byte const> block) noexcept {
    (void)ring_.push(block); // false only beyond 65535 bytes: not a block
}

pitch_recovery_counts pitch_recovery_service::counts() const {
    std::lock_guard const lock(counts_mutex_);
    return published_;
}

void pitch_recovery_service::publish() noexcept {
    std::lock_guard const lock(counts_mutex_);
    published_ = counts_;
}

void pitch_recovery_service::run() noexcept {
    std::vector<pollfd> fds;
    std::size_t const listeners = (grp_listener_.is_open() ? 1 : 0) + spin_listeners_.size();
    // acquire: pairs with the release store in stop().
    while (!stopping_.load(std::memory_order_acquire)) {
        fds.clear();
        if (grp_listener_.is_open()) {
            fds.push_back({.fd = grp_listener_.get(), .events = POLLIN, .revents = 0});
        }
        for (auto const& l : spin_listeners_) {
            fds.push_back({.fd = l.get(), .events = POLLIN, .revents = 0});
        }
        for (auto const& c : connections_) {
            bool const output = !c->server.output().empty();
            fds.push_back({.fd = c->fd.get(),
                           .events = static_cast<short>(POLLIN | (output ? POLLOUT : 0)),
                           .revents = 0});
        }
        (void)::poll(fds.data(), fds.size(), poll_ms);
        drain();
        std::int64_t const now = now_ns();
        std::size_t kept = 0;
        for (std::size_t i = 0; i < connections_.size(); ++i) {
            if (serve(*connections_[i], fds[listeners + i].revents, now)) {
                connections_[kept++] = std::move(connections_[i]);
            } else {
                connections_[i].reset(); // closed now: no session of a later one's in_use()
            }
        }
        connections_.resize(kept);
        std::size_t at = 0;
        if (grp_listener_.is_open() && (fds[at++].revents & POLLIN) != 0) {
            accept_connections(grp_listener_.get(), 0);
        }
        for (std::size_t u = 0; u < spin_listeners_.size(); ++u) {
            if ((fds[at++].revents & POLLIN) != 0) {
                accept_connections(spin_listeners_[u].get(), static_cast<std::uint8_t>(u + 1));
            }
        }
        publish();
    }
    connections_.clear();
    publish();
}

void pitch_recovery_service::drain() noexcept {
    (void)ring_.read_all(
        ring_position_,
        std::span<std::byte>(record_buffer_.get(), detail::record_ring::max_record_size),
        [this](std::span<std::byte const> block) { apply(block); });
}

void pitch_recovery_service::apply(std::span<std::byte const> block) noexcept {
    std::optional<cb::block_check> const check = cb::validate_block(block);
    if (!check || broken_ || check->header.count == 0 || check->header.unit == 0 ||
        check->header.unit > options_.units) {
        return;
    }
    std::size_t const u = check->header.unit - 1U;
    if (check->header.sequence != next_[u]) {
        broken_ = true; // the ring lost blocks: the stores and the book are wrong from here on
        ++counts_.sequence_breaks;
        SPDLOG_ERROR("pitch recovery service: unit {} jumped from {} to {} (the hand-off ring "
                     "overflowed); gap requests and spins are refused from now on",
                     u + 1, next_[u], check->header.sequence);
        return;
    }
    std::uint32_t sequence = check->header.sequence;
    cb::for_each_message(block, [&](std::span<std::byte const> message) {
        (void)stores_[u]->append(sequence++, message);
    });
    try {
        book_.apply_block(block, 0, 0);
    } catch (std::bad_alloc const&) {
        broken_ = true;
    }
    next_[u] = sequence;
    ++counts_.applied_blocks;
}

void pitch_recovery_service::accept_connections(int listener, std::uint8_t spin_unit) noexcept {
    for (;;) {
        net::unique_fd fd(::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd.is_open()) {
            return;
        }
        if (!make_room(spin_unit)) {
            if (logged(++counts_.refused_connections)) {
                SPDLOG_WARN("pitch recovery service: {} has {} sessions logged in: a new "
                            "connection refused ({} so far)",
                            server_name(spin_unit), options_.max_clients,
                            counts_.refused_connections);
            }
            continue; // closed at once
        }
        int const one = 1;
        (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ++counts_.connections;
        try {
            connections_.push_back(std::make_unique<connection>(
                std::move(fd), spin_unit,
                cb::session_server_options{.credentials = options_.credentials,
                                           .heartbeat_ns = options_.heartbeat.count(),
                                           .client_timeout_ns = options_.client_timeout.count(),
                                           .login_timeout_ns = options_.login_timeout.count(),
                                           .max_block_bytes = input_bytes},
                now_ns()));
        } catch (std::bad_alloc const&) {
            return;
        }
    }
}

bool pitch_recovery_service::make_room(std::uint8_t spin_unit) noexcept {
    std::size_t used = 0;
    auto oldest = connections_.end(); // accepted in order: the first one found
    for (auto at = connections_.begin(); at != connections_.end(); ++at) {
        if ((*at)->spin_unit != spin_unit) {
            continue;
        }
        ++used;
        if (oldest == connections_.end() && (*at)->server.state() != cb::server_state::logged_in) {
            oldest = at;
        }
    }
    if (used < options_.max_clients) {
        return true;
    }
    if (oldest == connections_.end()) {
        return false;
    }
    connections_.erase(oldest);
    if (logged(++counts_.evicted_clients)) {
        SPDLOG_WARN("pitch recovery service: {} is full: its oldest connection not logged in "
                    "was closed for a new one ({} so far)",
                    server_name(spin_unit), counts_.evicted_clients);
    }
    return true;
}

bool pitch_recovery_service::in_use(connection const& c, cb::message const& login) const noexcept {
    if (options_.credentials == cb::session_credentials{}) {
        return false; // any login is accepted: sessions are not told apart
    }
    return std::any_of(connections_.begin(), connections_.end(), [&](auto const& other) {
        // null: closed, or moved by run()'s compaction, while it serves `c`
        return other && other.get() != &c && other->spin_unit == c.spin_unit &&
               other->server.state() == cb::server_state::logged_in &&
               other->server.login().session_sub_id == login.session_sub_id &&
               other->server.login().username == login.username;
    });
}

void pitch_recovery_service::answer_gap(connection& c, cb::message const& request) {
    ++counts_.gap_requests;
    if (options_.mute_grp) {
        return;
    }
    cb::message response = request;
    response.type = mt::gap_response;
    std::uint64_t const first = request.sequence;
    std::uint64_t const end = first + request.count;
    std::size_t const u = request.unit - 1U;
    if (request.unit == 0 || request.unit > options_.units) {
        response.status = 'I';
    } else if (broken_) {
        response.status = 'U';
    } else if (request.count > options_.max_gap_count) {
        response.status = 'C';
    } else if (request.count == 0 || first < stores_[u]->first_sequence() ||
               end > stores_[u]->next_sequence() || !stores_[u]->contains(first)) {
        response.status = 'O';
    } else {
        response.status = 'A';
    }
    (void)c.server.send(response);
    if (response.status != 'A') {
        ++counts_.gap_rejected;
        return;
    }
    ++counts_.gap_accepted;
    // The messages, in blocks of their unit with their own sequences, on the gap line.
    std::uint64_t sequence = first;
    while (sequence < end) {
        std::size_t size = cb::header_size;
        std::uint8_t count = 0;
        std::uint64_t const block_first = sequence;
        while (sequence < end && count < 255) {
            std::optional<std::span<std::byte const>> const m = stores_[u]->find(sequence);
            if (!m || size + m->size() > resend_.size()) {
                break;
            }
            std::memcpy(resend_.data() + size, m->data(), m->size());
            size += m->size();
            ++count;
            ++sequence;
        }
        md::store_le<std::uint16_t>(resend_.data(), static_cast<std::uint16_t>(size));
        resend_[2] = std::byte{count};
        resend_[3] = static_cast<std::byte>(request.unit);
        md::store_le<std::uint32_t>(resend_.data() + 4, static_cast<std::uint32_t>(block_first));
        if (gap_line_->send(0, std::span(resend_).first(size))) {
            ++counts_.send_errors;
            return;
        }
        ++counts_.packets_resent;
        counts_.messages_resent += count;
    }
}

void pitch_recovery_service::answer_spin(connection& c, cb::message const& request) {
    std::size_t const u = c.spin_unit - 1U;
    std::uint32_t const current = next_[u] - 1;
    cb::message response;
    response.type = mt::spin_response;
    response.sequence = current;
    if (c.spinning || broken_ || request.sequence > current || request.sequence == 0) {
        response.status = c.spinning ? 'S' : 'O'; // 'S': one spin at a time
        response.sequence = request.sequence;
        (void)c.server.send(response);
        ++counts_.spin_refused;
        return;
    }
    // The image is the book as of `current` (at or past the sequence asked for).
    std::uint32_t orders = 0;
    book_.orders().order_store().for_each(
        [&](std::uint64_t, md::nasdaq::detail::order_record const& o) {
            orders += book_.instrument(o.locate)->unit == c.spin_unit ? 1U : 0U;
        });
    response.count = orders;
    response.status = 'A';
    (void)c.server.send(response);
    cb::message time;
    time.type = mt::time;
    time.time = book_.unit(c.spin_unit).time;
    (void)c.server.send(time);
    book_.orders().order_store().for_each(
        [&](std::uint64_t id, md::nasdaq::detail::order_record const& o) {
            cb::pitch_instrument const& i = *book_.instrument(o.locate);
            if (i.unit != c.spin_unit) {
                return;
            }
            cb::message add;
            add.type = i.symbol[6] == ' ' ? mt::add_order_long : mt::add_order_expanded;
            add.order_id = id;
            add.side = static_cast<char>(o.side);
            add.quantity = o.shares;
            add.price = o.price;
            add.symbol = i.symbol;
            add.flags = 1;
            add.participant = {' ', ' ', ' ', ' '};
            add.customer = ' ';
            (void)c.server.send(add);
        });
    cb::message finished;
    finished.type = mt::spin_finished;
    finished.sequence = current;
    (void)c.server.send(finished);
    c.spinning = true; // until the outbox drained
    ++counts_.spins;
    counts_.spin_orders += orders;
}

void pitch_recovery_service::on_request(connection& c, cb::message const& m) {
    if (c.spin_unit == 0 && m.type == mt::gap_request) {
        // The answer covers everything recorded until now: a request read in the same receive
        // loop as an earlier one may name blocks recorded after the loop's first drain.
        drain();
        answer_gap(c, m);
    } else if (c.spin_unit != 0 && m.type == mt::spin_request) {
        drain(); // the image holds everything published until now
        answer_spin(c, m);
    }
}

bool pitch_recovery_service::serve(connection& c, short revents, std::int64_t now) noexcept {
    // A session that ended, counted once by its reason (the connection then closes).
    auto const ended = [&] {
        switch (c.server.close_reason()) {
        case cb::server_close::refused:
        case cb::server_close::in_use:
            ++counts_.rejected_logins;
            break;
        case cb::server_close::login_timeout:
            if (logged(++counts_.login_timeouts)) {
                SPDLOG_WARN("pitch recovery service: a connection to {} did not log in within "
                            "{} ms: dropped ({} so far)",
                            server_name(c.spin_unit), options_.login_timeout.count() / 1'000'000,
                            counts_.login_timeouts);
            }
            break;
        case cb::server_close::none:
            break;
        default: // silent, invalid blocks, not a login
            ++counts_.dropped_clients;
            break;
        }
        return false;
    };
    try {
        if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            for (;;) {
                ssize_t const n = ::recv(c.fd.get(), c.input.data() + c.input_filled,
                                         c.input.size() - c.input_filled, 0);
                if (n == 0 ||
                    (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                    return false; // gone
                }
                if (n < 0) {
                    break;
                }
                c.input_filled += static_cast<std::size_t>(n);
                std::size_t const used = c.server.on_bytes(
                    std::span<std::byte const>(c.input.data(), c.input_filled), now,
                    [&](cb::message const& m) { on_request(c, m); },
                    [&](cb::message const& login) { return in_use(c, login); });
                std::memmove(c.input.data(), c.input.data() + used, c.input_filled - used);
                c.input_filled -= used;
            }
        }
        if (c.server.state() == cb::server_state::logged_in && !c.counted_login) {
            c.counted_login = true;
            ++counts_.logins;
        }
        if (c.server.state() == cb::server_state::logged_in && c.spin_unit != 0 &&
            now - c.last_image >= options_.heartbeat.count()) {
            cb::message image;
            image.type = mt::spin_image_available;
            image.sequence = next_[c.spin_unit - 1U] - 1;
            if (image.sequence != 0) {
                (void)c.server.send(image);
            }
            c.last_image = now;
        }
        c.server.on_time(now);
    } catch (std::bad_alloc const&) {
        ++counts_.dropped_clients;
        return false;
    }
    if (c.server.state() == cb::server_state::closed && c.server.output().empty()) {
        return ended();
    }
    while (!c.server.output().empty()) {
        auto const out = c.server.output();
        ssize_t const n = ::send(c.fd.get(), out.data(), out.size(), MSG_NOSIGNAL);
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                ++counts_.dropped_clients;
                return false;
            }
            break;
        }
        c.server.sent(static_cast<std::size_t>(n), now);
    }
    c.spinning = c.spinning && !c.server.output().empty();
    return c.server.state() == cb::server_state::closed ? ended() : true;
}

} // namespace signet::publisher::cboe
