#include <signet/md/nasdaq/itch_feed_handler.hpp>

namespace signet::md::nasdaq {

itch_feed_handler::itch_feed_handler(itch_feed_handler_options options)
    : session_(options.session)
    , parser_(options.book)
    , pipeline_(options.pipeline) {}

void itch_feed_handler::on_datagram(std::span<std::byte const> datagram) {
    (void)session_.on_packet(
        datagram, [this](std::uint64_t, std::span<std::byte const> message) { apply(message); });
}

} // namespace signet::md::nasdaq
