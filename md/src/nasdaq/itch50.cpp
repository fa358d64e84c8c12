#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>

#include <signet/md/nasdaq/itch50.hpp>

namespace signet::md::nasdaq {

namespace {

// Copies n <= 64 bytes with at most two fixed-size (overlapping) copies, which compile to a
// few vector moves instead of a call to memmove: ITCH messages are 12 to 50 bytes.
void copy_short(std::byte* to, std::byte const* from, std::size_t n) noexcept {
    auto const two = [&](auto width) {
        std::memcpy(to, from, width);
        std::memcpy(to + n - width, from + n - width, width);
    };
    if (n >= 32) {
        two(std::integral_constant<std::size_t, 32>{});
    } else if (n >= 16) {
        two(std::integral_constant<std::size_t, 16>{});
    } else if (n >= 8) {
        two(std::integral_constant<std::size_t, 8>{});
    } else {
        for (std::size_t i = 0; i < n; ++i) {
            to[i] = from[i];
        }
    }
}

std::uint64_t u64_at(std::byte const* m, std::size_t offset) noexcept {
    return load_be64(m + offset);
}
std::uint32_t u32_at(std::byte const* m, std::size_t offset) noexcept {
    return load_be32(m + offset);
}

// The type letter of a message on_message() would decode, else '\0' (it is empty, of an
// unknown type or too short: on_message() counts it, and there is nothing to prefetch).
char decodable_type(std::span<std::byte const> message) noexcept {
    char const type = message.empty() ? '\0' : itch50::message_type(message);
    std::size_t const length = itch50::message_length(type);
    return length == 0 || message.size() < length ? '\0' : type;
}

} // namespace

itch50_parser::itch50_parser(itch_order_book_options options)
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

void itch50_parser::prefetch_far_ahead(std::span<std::byte const> message) const noexcept {
    namespace f = itch50::field;
    std::byte const* const m = message.data();
    switch (decodable_type(message)) {
    case 'A':
    case 'F':
        book_.prefetch_stock(itch50::stock_locate(message));
        break;
    case 'E':
    case 'C':
    case 'X':
    case 'D':
    case 'U': // original_ref sits where order_ref does
        book_.prefetch_order(u64_at(m, f::order_ref));
        break;
    default:
        break;
    }
}

void itch50_parser::prefetch_near_ahead(std::span<std::byte const> message) const noexcept {
    namespace f = itch50::field;
    std::byte const* const m = message.data();
    switch (decodable_type(message)) {
    case 'A':
    case 'F':
        book_.prefetch_side(itch50::stock_locate(message), static_cast<char>(m[f::side]) == 'B'
                                                               ? order_side::buy
                                                               : order_side::sell);
        break;
    case 'E':
    case 'C':
    case 'X':
    case 'D':
    case 'U':
        book_.prefetch_level(u64_at(m, f::order_ref));
        break;
    default:
        break;
    }
}

void itch50_parser::on_messages(std::span<std::span<std::byte const> const> messages) {
    std::size_t const n = messages.size();
    for (std::size_t i = 0; i < std::min(prefetch_far, n); ++i) {
        prefetch_far_ahead(messages[i]);
    }
    for (std::size_t i = 0; i < std::min(prefetch_near, n); ++i) {
        prefetch_near_ahead(messages[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (i + prefetch_far < n) {
            prefetch_far_ahead(messages[i + prefetch_far]);
        }
        if (i + prefetch_near < n) {
            prefetch_near_ahead(messages[i + prefetch_near]);
        }
        on_message(messages[i]);
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
                                                  itch_order_book::max_symbol_length));
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

void itch50_parser::apply_oldest() {
    if (held_ > prefetch_near) {
        prefetch_near_ahead(held(prefetch_near));
    }
    on_message(held(0));
    oldest_ = (oldest_ + 1) & (slots - 1);
    --held_;
}

void itch50_parser::push(std::span<std::byte const> message) {
    if (message.size() > slot_size) {
        flush(); // everything before it first
        on_message(message);
        return;
    }
    std::size_t const newest = (oldest_ + held_) & (slots - 1);
    copy_short(ring_[newest].data(), message.data(), message.size());
    ring_sizes_[newest] = static_cast<std::uint8_t>(message.size());
    ++held_;
    prefetch_far_ahead(held(held_ - 1));
    if (held_ > prefetch_far) {
        apply_oldest();
    }
}

void itch50_parser::flush() {
    while (held_ != 0) {
        apply_oldest();
    }
}

} // namespace signet::md::nasdaq
