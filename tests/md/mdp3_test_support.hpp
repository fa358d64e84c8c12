#pragma once

// MDP 3.0 packets built byte by byte for the md tests: little-endian written by shifting,
// independently of the library's loads; MsgSize counts itself.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace signet::md::test::mdp3 {

using bytes = std::vector<std::byte>;

// Little-endian fields appended by shifting.
struct sbe {
    bytes b;
    sbe& le(std::uint64_t v, std::size_t width) {
        for (std::size_t i = 0; i < width; ++i) {
            b.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
        }
        return *this;
    }
    sbe& u8(std::uint64_t v) { return le(v, 1); }
    sbe& u16(std::uint64_t v) { return le(v, 2); }
    sbe& u32(std::uint64_t v) { return le(v, 4); }
    sbe& u64(std::uint64_t v) { return le(v, 8); }
    sbe& i64(std::int64_t v) { return le(static_cast<std::uint64_t>(v), 8); }
    sbe& i32(std::int32_t v) { return le(static_cast<std::uint32_t>(v), 4); }
    sbe& text(std::string_view s, std::size_t width) {
        for (std::size_t i = 0; i < width; ++i) {
            b.push_back(static_cast<std::byte>(i < s.size() ? s[i] : '\0'));
        }
        return *this;
    }
    sbe& pad(std::size_t n) { return le(0, n); }
    sbe& raw(bytes const& other) {
        b.insert(b.end(), other.begin(), other.end());
        return *this;
    }
};

// A group: its dimension (3 or 8 bytes), then the entries (each padded to block_length).
inline bytes group(std::uint16_t block_length, std::vector<bytes> const& entries,
                   bool eight = false) {
    sbe g;
    g.u16(block_length);
    if (eight) {
        g.pad(5);
    }
    g.u8(entries.size());
    for (bytes e : entries) {
        e.resize(block_length);
        g.raw(e);
    }
    return g.b;
}

// A message: MsgSize (counting itself), the SBE header, the root padded to block_length, the
// groups.
inline bytes message(std::uint16_t template_id, std::uint16_t version, std::uint16_t block_length,
                     bytes root, std::initializer_list<bytes> groups = {}) {
    root.resize(block_length);
    sbe body;
    body.raw(root);
    for (bytes const& g : groups) {
        body.raw(g);
    }
    sbe m;
    m.u16(10 + body.b.size()).u16(block_length).u16(template_id).u16(1).u16(version);
    m.raw(body.b);
    return m.b;
}

inline bytes packet(std::uint32_t sequence, std::initializer_list<bytes> messages) {
    sbe p;
    p.u32(sequence).u64(1'700'000'000'123'456'789ULL);
    for (bytes const& msg : messages) {
        p.raw(msg);
    }
    return p.b;
}

inline bytes book_entry(std::int64_t price, std::int32_t size, std::int32_t security,
                        std::uint32_t rpt, std::int32_t orders, std::uint8_t level,
                        std::uint8_t action, char type, std::int32_t tradeable = 0) {
    return sbe{}
        .i64(price)
        .i32(size)
        .i32(security)
        .u32(rpt)
        .i32(orders)
        .u8(level)
        .u8(action)
        .u8(static_cast<std::uint8_t>(type))
        .i32(tradeable)
        .b;
}

// MDInstrumentDefinitionFuture54 (version 13, 224-byte root): a future with this security id,
// symbol, outright ("GBX") depth, security group and asset.
inline bytes definition_message(std::int32_t security_id, std::string_view symbol, int depth,
                                std::string_view security_group = "", std::string_view asset = "") {
    bytes root(224);
    root[5] = std::byte{'A'};
    sbe group_field;
    group_field.text(security_group, 6).text(asset, 6); // SecurityGroup at 23, Asset at 29
    std::copy(group_field.b.begin(), group_field.b.end(), root.begin() + 23);
    sbe fields;
    fields.text(symbol, 20).i32(security_id);
    std::copy(fields.b.begin(), fields.b.end(), root.begin() + 35);
    return message(54, 13, 224, root,
                   {group(9, {}),
                    group(4, {sbe{}.text("GBX", 3).u8(static_cast<std::uint64_t>(depth)).b}),
                    group(4, {}), group(5, {})});
}

inline bytes incremental_book_root() {
    return sbe{}.u64(1'700'000'000'000'000'001ULL).u8(0x84).b;
}

} // namespace signet::md::test::mdp3
