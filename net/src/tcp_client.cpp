#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/net/tcp_client.hpp>

namespace signet::net {

namespace {

std::string_view describe(tcp_failure why) noexcept {
    switch (why) {
    case tcp_failure::none:
        return "no failure";
    case tcp_failure::refused:
        return "connect failed";
    case tcp_failure::connect_timeout:
        return "connect timed out";
    case tcp_failure::peer_closed:
        return "the peer closed the connection";
    case tcp_failure::reset:
        return "connection error";
    case tcp_failure::frame_too_large:
        return "a frame larger than the receive buffer";
    case tcp_failure::closed:
        return "closed";
    }
    return "?";
}

} // namespace

tcp_client::tcp_client(tcp_client_options options, detail::readiness_set& readiness,
                       work_contract& owner)
    : options_(std::move(options))
    , readiness_(readiness)
    , buffer_(options_.receive_buffer)
    , backoff_(options_.backoff_initial) {
    if (options_.peer.port() == 0 || options_.peer.is_any()) {
        throw std::invalid_argument("tcp client '" + options_.name +
                                    "': needs a peer address and port");
    }
    if (options_.receive_buffer < 64 || options_.connect_timeout.count() <= 0 ||
        options_.backoff_initial.count() <= 0 || options_.backoff_max < options_.backoff_initial) {
        throw std::invalid_argument(
            "tcp client '" + options_.name +
            "': receive_buffer >= 64, connect_timeout > 0 and 0 < backoff_initial <= "
            "backoff_max are required");
    }
    flag_.contract = &owner;
}

void tcp_client::connect(clock::time_point now) noexcept {
    if (state_ == tcp_state::connecting || state_ == tcp_state::connected) {
        return;
    }
    ++stats_.attempts;
    filled_ = 0;
    failure_ = tcp_failure::none;
    socket_.reset(::socket(options_.peer.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket_.is_open()) {
        fail(tcp_failure::refused, errno, now);
        return;
    }
    int const one = 1;
    (void)::setsockopt(socket_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (options_.socket_receive_buffer > 0) {
        (void)::setsockopt(socket_.get(), SOL_SOCKET, SO_RCVBUF, &options_.socket_receive_buffer,
                           sizeof options_.socket_receive_buffer);
    }
    try {
        readiness_.add(socket_.get(), flag_);
    } catch (std::system_error const& e) {
        fail(tcp_failure::refused, e.code().value(), now);
        return;
    }
    if (::connect(socket_.get(), options_.peer.data(), options_.peer.size()) != 0 &&
        errno != EINPROGRESS) {
        fail(tcp_failure::refused, errno, now);
        return;
    }
    state_ = tcp_state::connecting;
    deadline_ = now + options_.connect_timeout;
    flag_.again(); // an immediate connect (loopback) raises no edge after add()
}

tcp_event tcp_client::finish_connect(clock::time_point now) noexcept {
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(socket_.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
        error = errno;
    }
    if (error == 0) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        if (::getpeername(socket_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0) {
            state_ = tcp_state::connected;
            deadline_ = clock::time_point::max();
            ++stats_.connections;
            SPDLOG_LOGGER_INFO(logger(), "{}: connected to {}", options_.name,
                               options_.peer.to_string());
            flag_.again(); // data that came with the connection raised its edge already
            return tcp_event::connected;
        }
        if (now < deadline_) {
            return tcp_event::none; // still in progress (a spurious edge)
        }
        fail(tcp_failure::connect_timeout, ETIMEDOUT, now);
    } else {
        fail(tcp_failure::refused, error, now);
    }
    failed_unreported_ = false;
    return tcp_event::disconnected;
}

long tcp_client::read_once(clock::time_point now) noexcept {
    std::size_t const space = buffer_.size() - filled_;
    ssize_t const n = ::recv(socket_.get(), buffer_.data() + filled_, space, 0);
    if (n > 0) {
        filled_ += static_cast<std::size_t>(n);
        stats_.bytes_in += static_cast<std::uint64_t>(n);
        ++stats_.reads;
        if (static_cast<std::size_t>(n) == space) {
            flag_.again(); // maybe more: no new edge comes for it
        }
        return n;
    }
    if (n == 0 && space > 0) {
        fail(tcp_failure::peer_closed, 0, now);
        return -1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return 0;
    }
    if (n == 0) {
        return 0; // no space: consume() runs on what is buffered
    }
    fail(tcp_failure::reset, errno, now);
    return -1;
}

std::size_t tcp_client::send(std::span<std::byte const> bytes, clock::time_point now) noexcept {
    if (state_ != tcp_state::connected || bytes.empty()) {
        return 0;
    }
    ssize_t const n = ::send(socket_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n >= 0) {
        stats_.bytes_out += static_cast<std::uint64_t>(n);
        return static_cast<std::size_t>(n);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        fail(tcp_failure::reset, errno, now);
    }
    return 0;
}

void tcp_client::disconnect(clock::time_point now, bool retry) noexcept {
    if (retry) {
        fail(tcp_failure::closed, 0, now);
        failed_unreported_ = false; // the owner knows
        return;
    }
    socket_.reset();
    filled_ = 0;
    state_ = tcp_state::idle;
    deadline_ = clock::time_point::max();
}

tcp_client::clock::time_point tcp_client::next_deadline() const noexcept {
    return state_ == tcp_state::connecting || state_ == tcp_state::backoff
               ? deadline_
               : clock::time_point::max();
}

void tcp_client::fail(tcp_failure why, int error, clock::time_point now) noexcept {
    socket_.reset(); // closing removes it from the readiness set
    filled_ = 0;
    failure_ = why;
    switch (why) {
    case tcp_failure::refused:
        ++stats_.refused;
        break;
    case tcp_failure::connect_timeout:
        ++stats_.connect_timeouts;
        break;
    case tcp_failure::peer_closed:
        ++stats_.peer_closed;
        break;
    case tcp_failure::reset:
        ++stats_.resets;
        break;
    case tcp_failure::frame_too_large:
        ++stats_.frames_too_large;
        break;
    case tcp_failure::closed:
        ++stats_.closed;
        break;
    case tcp_failure::none:
        break;
    }
    state_ = tcp_state::backoff;
    deadline_ = now + backoff_;
    auto const wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(backoff_).count();
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
    if (error != 0) {
        SPDLOG_LOGGER_WARN(logger(), "{}: {} ({}): {}; retrying in {} ms", options_.name,
                           describe(why), options_.peer.to_string(), std::strerror(error), wait_ms);
    } else {
        SPDLOG_LOGGER_WARN(logger(), "{}: {} ({}); retrying in {} ms", options_.name, describe(why),
                           options_.peer.to_string(), wait_ms);
    }
    failed_unreported_ = true;
    flag_.again(); // the owner learns it from service() and re-arms its timer
}

} // namespace signet::net
