#include <algorithm>
#include <cstring>
#include <string_view>

#include <signet/md/ascii_field.hpp>
#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/itch_snapshot.hpp>

namespace signet::md::nasdaq::detail {

namespace {

namespace f = itch50::field;

// Type, locate, tracking number 0, timestamp 0.
void put_header(std::byte* m, char type, std::uint16_t locate) noexcept {
    m[0] = static_cast<std::byte>(type);
    store_be16(m + f::stock_locate, locate);
    store_be16(m + f::tracking_number, 0);
    std::fill(m + f::timestamp, m + itch50::header_length, std::byte{0});
}

void put_symbol(std::byte* p, std::string_view symbol) noexcept {
    alpha<itch_order_book::max_symbol_length> const field =
        make_alpha<itch_order_book::max_symbol_length>(symbol);
    std::memcpy(p, field.chars.data(), field.chars.size());
}

} // namespace

void put_snapshot_directory(std::span<std::byte, 39> out, std::uint16_t locate,
                            std::string_view symbol) noexcept {
    std::byte* const m = out.data();
    std::fill(m, m + out.size(), std::byte{' '});
    put_header(m, 'R', locate);
    put_symbol(m + f::stock, symbol);
    store_be32(m + 21, 0); // round lot size: not kept by the book
    store_be32(m + 34, 0); // ETP leverage factor
}

std::size_t put_snapshot_add(std::span<std::byte> out, std::uint64_t ref, order_record const& order,
                             std::string_view symbol, std::array<char, 4> const* mpid) noexcept {
    std::byte* const m = out.data();
    put_header(m, mpid != nullptr ? 'F' : 'A', order.locate);
    store_be64(m + f::order_ref, ref);
    m[f::side] = static_cast<std::byte>(order.side);
    store_be32(m + f::shares, order.shares);
    put_symbol(m + f::order_stock, symbol);
    store_be32(m + f::price, order.price);
    if (mpid == nullptr) {
        return itch50::message_length('A');
    }
    std::memcpy(m + f::attribution, mpid->data(), mpid->size());
    return itch50::message_length('F');
}

} // namespace signet::md::nasdaq::detail

namespace signet::md::nasdaq {

namespace {

constexpr std::size_t locates = itch_order_book::max_locates;

std::size_t kept_length(char type) noexcept {
    return type == 'R' || type == 'H' || type == 'Y' || type == 'S' ? itch50::message_length(type)
                                                                    : 0;
}

void keep(std::byte* slot, std::span<std::byte const> message) noexcept {
    slot[0] = static_cast<std::byte>(message.size());
    std::memcpy(slot + 1, message.data(), message.size());
}

std::span<std::byte const> kept(std::byte const* slot) noexcept {
    return {slot + 1, static_cast<std::size_t>(slot[0])};
}

} // namespace

itch_snapshot_state::itch_snapshot_state(std::size_t max_orders)
    : directory_(locates * slot)
    , trading_(locates * slot)
    , reg_sho_(locates * slot)
    , keep_origins_(max_orders != 0)
    , origins_(std::max<std::size_t>(max_orders, 1)) {}

void itch_snapshot_state::on_message(std::span<std::byte const> message) noexcept {
    if (message.empty()) {
        return;
    }
    char const type = static_cast<char>(message[0]);
    std::size_t const length = kept_length(type);
    if (length == 0) {
        if (keep_origins_) {
            on_order_message(type, message);
        }
        return;
    }
    if (message.size() != length) {
        return;
    }
    if (type == 'S') {
        keep(system_.data(), message);
        return;
    }
    std::size_t const at =
        std::size_t{load_be16(message.data() + itch50::field::stock_locate)} * slot;
    std::vector<std::byte>& table = type == 'R' ? directory_ : type == 'H' ? trading_ : reg_sho_;
    keep(table.data() + at, message);
}

void itch_snapshot_state::on_order_message(char type, std::span<std::byte const> message) noexcept {
    namespace f = itch50::field;
    if (type != 'A' && type != 'F' && type != 'E' && type != 'C' && type != 'X' && type != 'D' &&
        type != 'U') {
        return;
    }
    if (message.size() < itch50::message_length(type)) {
        return; // malformed: the book counts it and changes nothing either
    }
    std::byte const* const m = message.data();
    std::uint64_t const ref = load_be64(m + f::order_ref);
    switch (type) {
    case 'A':
    case 'F': {
        itch_order_origin o{.priority = next_priority_++, .shares = load_be32(m + f::shares)};
        if (type == 'F') {
            std::memcpy(o.mpid.data(), m + f::attribution, o.mpid.size());
            o.attributed = true;
        }
        if (o.shares != 0 && !origins_.insert(ref, o) && origins_.find(ref) == nullptr) {
            ++untracked_; // no room (a duplicate reference keeps the first, as the book does)
        }
        return;
    }
    case 'E':
    case 'C':
        reduce(ref, load_be32(m + f::executed_shares));
        return;
    case 'X':
        reduce(ref, load_be32(m + f::cancelled_shares));
        return;
    case 'D':
        (void)origins_.erase(ref);
        return;
    default: { // 'U': a new order in place of the old, at the back of its level's queue
        itch_order_origin const* const old = origins_.find(ref);
        itch_order_origin o{.priority = next_priority_++, .shares = load_be32(m + f::new_shares)};
        if (old != nullptr) {
            o.mpid = old->mpid;
            o.attributed = old->attributed;
            (void)origins_.erase(ref);
        }
        if (o.shares != 0 && !origins_.insert(load_be64(m + f::new_ref), o) &&
            origins_.find(load_be64(m + f::new_ref)) == nullptr) {
            ++untracked_;
        }
        return;
    }
    }
}

void itch_snapshot_state::reduce(std::uint64_t ref, std::uint32_t shares) noexcept {
    itch_order_origin* const o = origins_.find(ref);
    if (o == nullptr) {
        return;
    }
    if (shares >= o->shares) {
        (void)origins_.erase(ref);
    } else {
        o->shares -= shares;
    }
}

itch_order_origin const* itch_snapshot_state::origin(std::uint64_t ref) const noexcept {
    return keep_origins_ ? origins_.find(ref) : nullptr;
}

std::span<std::byte const> itch_snapshot_state::stock_message(char type,
                                                              std::uint16_t locate) const noexcept {
    std::vector<std::byte> const& table = type == 'R'   ? directory_
                                          : type == 'H' ? trading_
                                                        : reg_sho_;
    return kept(table.data() + std::size_t{locate} * slot);
}

std::span<std::byte const> itch_snapshot_state::system_event() const noexcept {
    return kept(system_.data());
}

} // namespace signet::md::nasdaq
