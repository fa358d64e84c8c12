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

void put_snapshot_add(std::span<std::byte, 36> out, std::uint64_t ref, order_record const& order,
                      std::string_view symbol) noexcept {
    std::byte* const m = out.data();
    put_header(m, 'A', order.locate);
    store_be64(m + f::order_ref, ref);
    m[f::side] = static_cast<std::byte>(order.side);
    store_be32(m + f::shares, order.shares);
    put_symbol(m + f::order_stock, symbol);
    store_be32(m + f::price, order.price);
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

itch_snapshot_state::itch_snapshot_state()
    : directory_(locates * slot)
    , trading_(locates * slot)
    , reg_sho_(locates * slot) {}

void itch_snapshot_state::on_message(std::span<std::byte const> message) noexcept {
    if (message.empty()) {
        return;
    }
    char const type = static_cast<char>(message[0]);
    std::size_t const length = kept_length(type);
    if (length == 0 || message.size() != length) {
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
