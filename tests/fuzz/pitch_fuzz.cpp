// libFuzzer target: Cboe Multicast PITCH blocks into the validator, the decoders and the book.
//
// Input: a stream of datagrams, each a 2-byte little-endian length then that many bytes (the
// rest, when shorter). Each datagram goes to validate_block(); an accepted block's messages to
// decode() and, whatever its sequence, to one pitch_book (small limits, so that a full book
// and a full instrument table are reached).
//
// Invariants: a block validate_block() accepts has exactly its header's Length and Count, and
// its messages tile it; decode() accepts exactly the known types of at least their layout's
// length, and encode() of a decoded message (where it writes that type) decodes to the same
// message; the book's invariants hold at the end (check_invariants).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <signet/md/cboe/pitch.hpp>
#include <signet/md/cboe/pitch_book.hpp>

#include "fuzz_check.hpp"

namespace cb = signet::md::cboe;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    cb::pitch_book book(
        {.max_orders = 64, .max_instruments = 8, .index_pages = 4, .level_pool_reserve = 64});
    std::span<std::byte const> input(reinterpret_cast<std::byte const*>(data), size);
    while (input.size() >= 2) {
        std::size_t const length = std::min<std::size_t>(
            static_cast<std::size_t>(input[0]) | static_cast<std::size_t>(input[1]) << 8,
            input.size() - 2);
        std::span<std::byte const> const datagram = input.subspan(2, length);
        input = input.subspan(2 + length);
        std::optional<cb::block_check> const check = cb::validate_block(datagram);
        if (!check) {
            continue;
        }
        SIGNET_FUZZ_CHECK(check->header.length == datagram.size());
        std::size_t messages = 0;
        std::size_t bytes = cb::header_size;
        cb::for_each_message(datagram, [&](std::span<std::byte const> m) {
            ++messages;
            bytes += m.size();
            SIGNET_FUZZ_CHECK(m.size() >= 2);
            auto const type = static_cast<std::uint8_t>(m[1]);
            std::optional<cb::message> const decoded = cb::decode(m);
            SIGNET_FUZZ_CHECK(decoded.has_value() == (cb::layout_length(type) != 0));
            if (decoded && cb::encoded_length(*decoded) != 0) {
                std::byte out[256];
                std::size_t const n = cb::encode(*decoded, out);
                if (n != 0) { // 0: a value the form cannot carry (a price above its range)
                    std::optional<cb::message> const again =
                        cb::decode(std::span<std::byte const>(out, n));
                    SIGNET_FUZZ_CHECK(again.has_value() && *again == *decoded);
                }
            }
        });
        SIGNET_FUZZ_CHECK(messages == check->header.count && bytes == datagram.size());
        book.apply_block(datagram, 0, 0);
    }
    SIGNET_FUZZ_CHECK(book.orders().check_invariants());
    return 0;
}
