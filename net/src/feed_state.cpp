#include <signet/net/detail/delivery.hpp>
#include <signet/net/detail/feed_state.hpp>

namespace signet::net::detail {

line_state::line_state(feed_state& owner, std::uint16_t line_index, udp_socket s,
                       udp_socket_options const& socket_options, std::size_t capacity,
                       std::size_t buffer_size, std::size_t headroom, bool pool_memory)
    : feed(owner)
    , index(line_index)
    , socket(std::move(s))
    , options(socket_options)
    , pool(capacity + receive_batch, buffer_size, headroom, pool_memory)
    , ready(capacity) {
    stash.reserve(pool.count());
    for (std::uint32_t b = 0; b < pool.count(); ++b) {
        stash.push_back(b); // every buffer starts on the receive side
    }
}

} // namespace signet::net::detail
