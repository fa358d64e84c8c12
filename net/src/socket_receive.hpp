#pragma once

// The readiness backends' receive side (epoll, Asio): a line's receive contract drains its
// socket with recvmmsg into pool buffers and delivers them (delivery.hpp). Under
// full_policy::backpressure it reads only as many datagrams as the queue has room for and
// pauses the line when there is none (pause protocol: feed_state.hpp).

#include <signet/net/detail/feed_state.hpp>

namespace signet::net::detail {

enum class receive_result {
    drained,      ///< the socket is empty: wait for the next readiness
    budget_spent, ///< more may be waiting: run again (fairness bound per run)
    paused,       ///< no room: the parser side resumes the line (line_state::resume)
    stopping,     ///< the runtime stops: read nothing more
};
receive_result receive_from_socket(line_state& line) noexcept;

} // namespace signet::net::detail
