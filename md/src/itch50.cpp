#include <string_view>

#include <signet/md/itch50.hpp>

namespace signet::md {

namespace {

std::uint64_t u64_at(std::byte const* m, std::size_t offset) noexcept {
    return load_be64(m + offset);
}
std::uint32_t u32_at(std::byte const* m, std::size_t offset) noexcept {
    return load_be32(m + offset);
}

} // namespace

itch50_parser::itch50_parser(order_book_options options)
    : book_(options) {}

void itch50_parser::count(book_result result) noexcept {
    switch (result) {
    case book_result::ok:
        break;
    case book_result::unknown_order:
        ++stats_.unknown_order_refs;
        break;
    case book_result::duplicate_order:
        ++stats_.duplicate_order_refs;
        break;
    case book_result::book_full:
        ++stats_.book_full_drops;
        break;
    }
}

void itch50_parser::on_message(std::span<std::byte const> message) {
    namespace f = itch50::field;
    if (message.empty()) {
        ++stats_.malformed_messages;
        return;
    }
    char const type = itch50::message_type(message);
    std::size_t const length = itch50::message_length(type);
    if (length == 0) {
        ++stats_.unknown_messages;
        return;
    }
    if (message.size() < length) {
        ++stats_.malformed_messages;
        return;
    }
    // From here on every read is below `length`, which the message holds.
    std::byte const* const m = message.data();
    std::uint16_t const locate = itch50::stock_locate(message);
    switch (type) {
    case 'R':
        book_.set_symbol(locate, std::string_view(reinterpret_cast<char const*>(m + f::stock),
                                                  order_book::max_symbol_length));
        break;
    case 'A':
    case 'F': {
        auto const side = static_cast<char>(m[f::side]);
        if (side != 'B' && side != 'S') {
            ++stats_.malformed_messages;
            return;
        }
        count(book_.add(locate, u64_at(m, f::order_ref),
                        side == 'B' ? order_side::buy : order_side::sell, u32_at(m, f::shares),
                        u32_at(m, f::price)));
        break;
    }
    case 'E':
    case 'C':
        count(book_.reduce(u64_at(m, f::order_ref), u32_at(m, f::executed_shares)));
        break;
    case 'X':
        count(book_.reduce(u64_at(m, f::order_ref), u32_at(m, f::cancelled_shares)));
        break;
    case 'D':
        count(book_.remove(u64_at(m, f::order_ref)));
        break;
    case 'U':
        count(book_.replace(u64_at(m, f::original_ref), u64_at(m, f::new_ref),
                            u32_at(m, f::new_shares), u32_at(m, f::new_price)));
        break;
    default:
        // P, Q, B (trades of non-displayed orders, crosses, breaks) and the administrative
        // messages do not change the visible book: counted only.
        break;
    }
    ++stats_.messages_by_type[static_cast<unsigned char>(type)];
    ++stats_.messages;
}

} // namespace signet::md
