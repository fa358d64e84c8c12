// libFuzzer target: an itch50_parser (and its order_book) fed arbitrary messages.
//
// Input: byte 0 sets the order table's capacity (1 to 64, so book_full is reachable); the rest
// is a list of messages, each a 1-byte length then that many bytes (a short last one is taken
// as it is). Each message is copied into a buffer of exactly its size, so ASan flags any read
// past it.
//
// Invariants: every message is counted exactly once (decoded, malformed or unknown); the
// per-type counts sum to the decoded count; the book never holds more orders than its capacity;
// the book's levels always equal the sums over its orders (so no share count underflows or
// goes "negative"), levels stay sorted, per-stock order counts match; a side with no level
// reports 0/0 at the top of the book. A second parser fed the same messages through push()
// (the prefetching pipeline) ends, once flushed, with the same counters and book.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include <signet/md/nasdaq/itch50.hpp>

#include "fuzz_check.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;

void check_top(itch_order_book const& book, std::uint16_t locate) {
    top_of_book const top = book.top(locate);
    book_side const bids = book.bids(locate);
    book_side const asks = book.asks(locate);
    if (bids.empty()) {
        SIGNET_FUZZ_CHECK(top.bid_price == 0 && top.bid_shares == 0);
    } else {
        SIGNET_FUZZ_CHECK(top.bid_price == bids.back().price);
        SIGNET_FUZZ_CHECK(top.bid_shares == bids.back().shares);
        SIGNET_FUZZ_CHECK(bids.front().price <= bids.back().price);
    }
    if (asks.empty()) {
        SIGNET_FUZZ_CHECK(top.ask_price == 0 && top.ask_shares == 0);
    } else {
        SIGNET_FUZZ_CHECK(top.ask_price == asks.back().price);
        SIGNET_FUZZ_CHECK(top.ask_shares == asks.back().shares);
        SIGNET_FUZZ_CHECK(asks.front().price >= asks.back().price);
    }
    std::uint64_t level_orders = 0;
    for (itch_price_level const l : bids) {
        SIGNET_FUZZ_CHECK(l.orders > 0);
        level_orders += l.orders;
    }
    for (itch_price_level const l : asks) {
        SIGNET_FUZZ_CHECK(l.orders > 0);
        level_orders += l.orders;
    }
    SIGNET_FUZZ_CHECK(level_orders == book.order_count(locate));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    std::size_t const capacity = 1 + data[0] % 64;
    itch_order_book_options const options{.max_orders = capacity,
                                          .index_pages = 2,
                                          .level_reserve = 2,
                                          .level_pool_reserve = 64,
                                          .stock_reserve = 16};
    itch50_parser parser(options);
    itch50_parser pipelined(options); // the same messages through push(): the same end state
    std::vector<std::uint16_t> locates;
    std::uint64_t fed = 0;
    std::size_t offset = 1;
    while (offset < size) {
        std::size_t length = size - offset - 1;
        length = std::min<std::size_t>(data[offset], length);
        offset += 1;
        std::vector<std::byte> message(length);
        for (std::size_t i = 0; i < length; ++i) {
            message[i] = static_cast<std::byte>(data[offset + i]);
        }
        offset += length;

        parser.on_message(std::span<std::byte const>(message.data(), message.size()));
        pipelined.push(std::span<std::byte const>(message.data(), message.size()));
        ++fed;
        itch50_stats const& st = parser.stats();
        SIGNET_FUZZ_CHECK(st.messages + st.malformed_messages + st.unknown_messages == fed);
        SIGNET_FUZZ_CHECK(std::accumulate(st.messages_by_type.begin(), st.messages_by_type.end(),
                                          std::uint64_t{0}) == st.messages);
        SIGNET_FUZZ_CHECK(parser.book().size() <= capacity);
        if (fed % 32 == 0) {
            SIGNET_FUZZ_CHECK(parser.book().check_invariants());
        }
        if (message.size() >= itch50::header_length) {
            std::uint16_t const locate =
                itch50::stock_locate(std::span<std::byte const>(message.data(), length));
            check_top(parser.book(), locate);
            locates.push_back(locate);
        }
    }
    SIGNET_FUZZ_CHECK(parser.book().check_invariants());
    pipelined.flush();
    SIGNET_FUZZ_CHECK(pipelined.book().check_invariants());
    itch50_stats const& a = parser.stats();
    itch50_stats const& b = pipelined.stats();
    SIGNET_FUZZ_CHECK(
        a.messages_by_type == b.messages_by_type && a.malformed_messages == b.malformed_messages &&
        a.unknown_messages == b.unknown_messages && a.unknown_order_refs == b.unknown_order_refs &&
        a.duplicate_order_refs == b.duplicate_order_refs && a.book_full_drops == b.book_full_drops);
    SIGNET_FUZZ_CHECK(parser.book().size() == pipelined.book().size());
    for (std::uint16_t const locate : locates) {
        for (bool const bid : {true, false}) {
            book_side const x = bid ? parser.book().bids(locate) : parser.book().asks(locate);
            book_side const y = bid ? pipelined.book().bids(locate) : pipelined.book().asks(locate);
            SIGNET_FUZZ_CHECK(x.size() == y.size());
            for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
                SIGNET_FUZZ_CHECK(x[i] == y[i]);
            }
        }
    }
    return 0;
}
