// Writes the committed seed corpora under tests/fuzz/corpus/ (run by hand when the input
// formats of the fuzz targets change; scripts/run-fuzz only reads them):
//   g++ -std=c++20 -Imd/include -Icore/include tests/fuzz/make_seed_corpus.cpp md/src/*.cpp \
//       core/src/*.cpp \
//       -lgtest -o build/make_seed_corpus && build/make_seed_corpus tests/fuzz/corpus
// Formats: moldudp64 — byte 0 (odd: late join), then datagrams as (u16 big-endian length,
// bytes); itch50 — byte 0 (order capacity - 1), then messages as (u8 length, bytes);
// rerequest_server — 5 option bytes, then operations (see rerequest_server_fuzz.cpp);
// snapshot_sync — byte 0 (join point), then records (u8 header: length and flags, bytes);
// mdp3 — byte 0 (book depth), then one MDP 3.0 packet.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

#include "../md/md_test_support.hpp"

namespace {

namespace t = signet::md::test;
using namespace signet::md;
using namespace signet::md::nasdaq;
using signet::publisher::nasdaq::itch_generator;
using signet::publisher::nasdaq::itch_generator_options;
using t::bytes;

void write(std::filesystem::path const& path, bytes const& b) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<char const*>(b.data()), static_cast<std::streamsize>(b.size()));
    std::printf("%s: %zu bytes\n", path.c_str(), b.size());
}

bytes mold_input(bool late_join, std::vector<bytes> const& datagrams) {
    bytes in{static_cast<std::byte>(late_join ? 1 : 0)};
    for (bytes const& d : datagrams) {
        in.push_back(static_cast<std::byte>(d.size() >> 8));
        in.push_back(static_cast<std::byte>(d.size() & 0xFF));
        in.insert(in.end(), d.begin(), d.end());
    }
    return in;
}

bytes raw(std::initializer_list<std::uint8_t> values) {
    bytes b;
    for (std::uint8_t const v : values) {
        b.push_back(static_cast<std::byte>(v));
    }
    return b;
}

bytes cat(std::initializer_list<bytes> parts) {
    bytes b;
    for (bytes const& part : parts) {
        b.insert(b.end(), part.begin(), part.end());
    }
    return b;
}

bytes itch_input(std::size_t capacity, std::vector<bytes> const& messages) {
    bytes in{static_cast<std::byte>(capacity - 1)};
    for (bytes const& m : messages) {
        in.push_back(static_cast<std::byte>(m.size()));
        in.insert(in.end(), m.begin(), m.end());
    }
    return in;
}

std::vector<bytes> generated(std::uint64_t seed, std::size_t count) {
    itch_generator gen({.seed = seed, .symbols = 3, .target_live_orders = 20});
    std::vector<bytes> out;
    std::array<std::byte, itch50::max_message_length> buffer{};
    for (std::size_t i = 0; i < count; ++i) {
        std::size_t const n = gen.next(buffer);
        out.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    std::filesystem::path const root = argc > 1 ? argv[1] : "tests/fuzz/corpus";
    std::filesystem::create_directories(root / "moldudp64");
    std::filesystem::create_directories(root / "itch50");
    std::filesystem::create_directories(root / "rerequest_server");
    std::filesystem::create_directories(root / "itch_snapshot_sync");
    std::filesystem::create_directories(root / "mdp3");
    std::filesystem::create_directories(root / "xdp_frame");

    // ---- moldudp64 ----
    std::vector<bytes> const msgs = generated(1, 12);
    auto slice = [&](std::size_t from, std::size_t to) {
        return std::vector<bytes>(msgs.begin() + static_cast<std::ptrdiff_t>(from),
                                  msgs.begin() + static_cast<std::ptrdiff_t>(to));
    };
    bytes const p1 = t::mold_packet("SEED", 1, slice(0, 4));
    bytes const p2 = t::mold_packet("SEED", 5, slice(4, 8));
    bytes const p3 = t::mold_packet("SEED", 9, slice(8, 12));
    write(root / "moldudp64" / "in_order", mold_input(false, {p1, p2, p3}));
    write(root / "moldudp64" / "heartbeat_end",
          mold_input(false, {p1, t::mold_header("SEED", 5, 0), t::mold_header("SEED", 7, 0),
                             t::mold_header("SEED", 7, 0xFFFF)}));
    write(root / "moldudp64" / "gap_duplicate_overlap",
          mold_input(false, {p1, p3, p1, t::mold_packet("SEED", 3, slice(2, 6)), p2}));
    write(root / "moldudp64" / "late_join",
          mold_input(true, {t::mold_packet("SEED", 1000, slice(0, 3)),
                            t::mold_packet("SEED", 1003, slice(3, 5))}));
    write(root / "moldudp64" / "ab_lines", mold_input(false, {p1, p1, p2, p3, p2, p3}));
    bytes cut = p2;
    cut.resize(cut.size() - 3);
    bytes other = t::mold_packet("OTHER", 5, slice(4, 5));
    write(root / "moldudp64" / "malformed",
          mold_input(false, {p1, bytes(19), cut, other, t::mold_packet("SEED", 5, {bytes{}})}));

    // ---- itch50 ----
    write(root / "itch50" / "generated", itch_input(64, generated(2, 120)));
    write(root / "itch50" / "book_rules",
          itch_input(64, {t::directory(1, "AAPL"), t::add(1, 1, 'B', 100, 1'500'000),
                          t::add_mpid(1, 2, 'S', 200, 1'510'000), t::add(1, 3, 'B', 300, 1'490'000),
                          t::executed(1, 40), t::executed_with_price(2, 50, 1'505'000),
                          t::cancel(3, 100), t::replace(3, 4, 10, 1'495'000), t::delete_order(1),
                          t::executed(2, 150), t::trade(1, 0, 'B', 10, 1'500'000),
                          t::delete_order(77)}));
    write(root / "itch50" / "book_full",
          itch_input(1, {t::add(1, 1, 'B', 100, 10'000), t::add(1, 2, 'S', 100, 20'000),
                         t::delete_order(1), t::add(1, 2, 'S', 100, 20'000)}));
    std::vector<bytes> every_type;
    for (char const type : itch50::message_types) {
        bytes m = t::itch_message(type, itch50::message_length(type));
        if (type == 'A' || type == 'F') {
            m[19] = std::byte{'S'};
        }
        every_type.push_back(m);
    }
    every_type.push_back(t::itch_message('Z', 9));
    every_type.push_back(t::itch_message('A', 20));
    write(root / "itch50" / "every_type", itch_input(8, every_type));

    // ---- snapshot_sync: the live stream of snapshot_sync_fuzz.cpp, a snapshot after 150 ----
    {
        itch_generator generator(
            {.seed = 4, .symbols = 8, .messages = 2000, .target_live_orders = 300});
        std::vector<bytes> stream;
        bytes buffer(itch50::max_message_length);
        while (std::size_t const n = generator.next(buffer)) {
            stream.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
        }
        auto snapshot_input = [&](std::uint8_t join, std::size_t at, std::uint64_t resume) {
            bytes in{static_cast<std::byte>(join)};
            auto record = [&](bytes const& m, std::uint8_t flags) {
                in.push_back(static_cast<std::byte>(m.size() | flags));
                in.insert(in.end(), m.begin(), m.end());
            };
            std::size_t i = 0;
            for (bytes const& m : t::snapshot_after(stream, at, {.max_orders = 1 << 12})) {
                record(m, ++i % 16 == 0 ? 0x40 : 0); // live traffic now and then
            }
            bytes end = t::text_bytes("G");
            std::string digits = std::to_string(resume);
            end.resize(21, std::byte{' '});
            for (std::size_t d = 0; d < digits.size(); ++d) {
                end[21 - digits.size() + d] = static_cast<std::byte>(digits[d]);
            }
            record(end, 0);
            return in;
        };
        write(root / "itch_snapshot_sync" / "synchronizes", snapshot_input(50, 150, 151));
        write(root / "itch_snapshot_sync" / "too_old", snapshot_input(120, 100, 101));
    }

    // ---- mdp3: little-endian by shifting; MsgSize counts itself ----
    {
        auto le = [](bytes& b, std::uint64_t v, std::size_t width) {
            for (std::size_t i = 0; i < width; ++i) {
                b.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
            }
        };
        auto message = [&](std::uint16_t id, std::uint16_t block, bytes body) {
            bytes m;
            le(m, 10 + body.size(), 2);
            le(m, block, 2);
            le(m, id, 2);
            le(m, 1, 2);
            le(m, 13, 2);
            m.insert(m.end(), body.begin(), body.end());
            return m;
        };
        auto level = [&](bytes& b, std::int64_t price, std::uint8_t lvl, std::uint8_t action,
                         char type) {
            le(b, static_cast<std::uint64_t>(price), 8);
            le(b, 10, 4);  // size
            le(b, 991, 4); // security
            le(b, 1, 4);   // RptSeq
            le(b, 2, 4);   // orders
            le(b, lvl, 1);
            le(b, action, 1);
            le(b, static_cast<std::uint8_t>(type), 1);
            le(b, 0, 5); // TradeableSize, padding
        };
        bytes book(11, std::byte{0});
        le(book, 32, 2);
        le(book, 3, 1);
        level(book, 4'500'000'000'000, 1, 0, '0');
        level(book, 4'500'250'000'000, 1, 0, '1');
        level(book, 4'499'750'000'000, 2, 0, '0');
        le(book, 24, 2);
        le(book, 0, 5);
        le(book, 0, 1);
        bytes snapshot(59, std::byte{0});
        le(snapshot, 22, 2);
        le(snapshot, 1, 1);
        le(snapshot, 4'500'000'000'000, 8);
        le(snapshot, 10, 4);
        le(snapshot, 2, 4);
        le(snapshot, 1, 1);
        le(snapshot, 0, 3);
        le(snapshot, 0, 1);
        le(snapshot, '0', 1);
        bytes orders(11, std::byte{0}); // 47: one new order
        le(orders, 40, 2);
        le(orders, 1, 1);
        le(orders, 77, 8);
        le(orders, 1, 8);
        le(orders, 4'500'000'000'000, 8);
        le(orders, 5, 4);
        le(orders, 991, 4);
        le(orders, 0, 1);
        le(orders, '0', 1);
        le(orders, 0, 6);
        bytes order_snapshot; // 53: one chunk of one order
        le(order_snapshot, 1, 4);
        le(order_snapshot, 1, 4);
        le(order_snapshot, 991, 4);
        le(order_snapshot, 1, 4);
        le(order_snapshot, 1, 4);
        le(order_snapshot, 0, 8);
        le(order_snapshot, 29, 2);
        le(order_snapshot, 1, 1);
        le(order_snapshot, 78, 8);
        le(order_snapshot, 2, 8);
        le(order_snapshot, 4'500'000'000'000, 8);
        le(order_snapshot, 3, 4);
        le(order_snapshot, '1', 1);
        bytes definition(224, std::byte{0});
        for (std::uint64_t const block : {9, 4, 4, 5}) {
            le(definition, block, 2);
            le(definition, 0, 1);
        }
        bytes packet{std::byte{10}}; // depth
        le(packet, 1, 4);
        le(packet, 1'700'000'000'000'000'000ULL, 8);
        for (bytes const& m : {message(46, 11, book), message(12, 0, {}), message(47, 11, orders),
                               message(52, 59, snapshot), message(53, 28, order_snapshot),
                               message(54, 224, definition)}) {
            packet.insert(packet.end(), m.begin(), m.end());
        }
        write(root / "mdp3" / "book_snapshot_definition", packet);
    }

    // ---- rerequest_server ----
    // Options: 10 messages per answer, a store of 20 messages / 801 bytes, 200-byte packets,
    // 8 requests/s (burst 8).
    bytes const options = raw({9, 19, 200, 178, 7});
    auto appends = [](std::size_t count, std::uint8_t length) {
        bytes b;
        for (std::size_t i = 0; i < count; ++i) {
            b.push_back(std::byte{0});
            b.push_back(static_cast<std::byte>(length));
        }
        return b;
    };
    // op 2: requester, ms later, flags (1: another session, 2: sequence 0), i8 offset from the
    // store's first sequence, u16 count.
    auto request = [](std::uint8_t key, std::uint8_t dt, std::uint8_t flags, std::int8_t offset,
                      std::uint16_t count) {
        return raw({2, key, dt, flags, static_cast<std::uint8_t>(offset),
                    static_cast<std::uint8_t>(count >> 8), static_cast<std::uint8_t>(count)});
    };
    write(root / "rerequest_server" / "answers",
          cat({options, appends(25, 30), request(1, 0, 0, 0, 5), request(1, 0, 0, 18, 10),
               request(1, 0, 0, 3, 65535), request(1, 0, 0, -1, 1), request(1, 0, 0, 20, 1),
               request(1, 0, 1, 0, 1), request(1, 0, 2, 0, 1), request(1, 0, 0, 0, 0)}));
    bytes limited =
        cat({options, appends(5, 12), raw({1, 1, 0, 0}), raw({1, 1, 0, 19}), bytes(19),
             raw({1, 1, 0, 21}), bytes(21), raw({1, 1, 0, 20}), t::mold_header("FUZZ", 1, 1)});
    for (std::uint8_t i = 0; i < 12; ++i) {
        limited = cat({limited, request(7, 0, 0, 0, 1)}); // beyond the burst of 8
    }
    for (std::uint8_t key = 20; key < 32; ++key) {
        limited = cat({limited, request(key, 0, 0, 1, 2)}); // more requesters than slots
    }
    limited = cat({limited, request(40, 250, 0, 0, 1), request(7, 0, 0, 0, 1)});
    write(root / "rerequest_server" / "malformed_and_rate_limited", limited);
    // Tiny packets (22 bytes: only empty messages fit), a cleared store, a session switch.
    write(root / "rerequest_server" / "clear_session_oversized",
          cat({raw({3, 3, 40, 0, 1}), appends(2, 0), appends(1, 5), appends(2, 0),
               request(1, 0, 0, 0, 3), request(1, 0, 0, 2, 1), raw({3, 1, 0}), appends(4, 2),
               raw({4}), request(2, 0, 0, 0, 2), request(2, 0, 1, 0, 2)}));
    // ---- xdp_frame: a buffer-size byte, then an Ethernet frame (xdp_frame_fuzz.cpp) ----
    auto frame = [](bool vlan, std::size_t options, std::size_t payload) {
        bytes f{std::byte{24}}; // buffer size 64 + 8 * 24
        for (int i = 0; i < 12; ++i) {
            f.push_back(std::byte{0x02});
        }
        if (vlan) {
            for (unsigned v : {0x81U, 0x00U, 0x00U, 0x05U}) {
                f.push_back(static_cast<std::byte>(v));
            }
        }
        f.push_back(std::byte{0x08});
        f.push_back(std::byte{0x00});
        std::size_t const header = 20 + options;
        std::size_t const total = header + 8 + payload;
        bytes ip(header, std::byte{0});
        ip[0] = static_cast<std::byte>(0x40 | header / 4);
        ip[2] = static_cast<std::byte>(total >> 8);
        ip[3] = static_cast<std::byte>(total & 0xFF);
        ip[8] = std::byte{64};
        ip[9] = std::byte{17};
        ip[12] = std::byte{10};
        ip[15] = std::byte{2};
        ip[16] = std::byte{10};
        ip[19] = std::byte{1};
        std::uint32_t sum = 0;
        for (std::size_t i = 0; i < header; i += 2) {
            sum += static_cast<std::uint32_t>(std::to_integer<unsigned>(ip[i]) << 8 |
                                              std::to_integer<unsigned>(ip[i + 1]));
        }
        while ((sum >> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        ip[10] = static_cast<std::byte>((~sum >> 8) & 0xFF);
        ip[11] = static_cast<std::byte>(~sum & 0xFF);
        f.insert(f.end(), ip.begin(), ip.end());
        std::size_t const length = 8 + payload;
        for (unsigned v : {0x30U, 0x39U, 0x75U, 0x31U, static_cast<unsigned>(length >> 8),
                           static_cast<unsigned>(length & 0xFF), 0U, 0U}) {
            f.push_back(static_cast<std::byte>(v));
        }
        for (std::size_t i = 0; i < payload; ++i) {
            f.push_back(static_cast<std::byte>(i));
        }
        return f;
    };
    write(root / "xdp_frame" / "udp", frame(false, 0, 64));
    write(root / "xdp_frame" / "vlan_options", frame(true, 12, 300));

    return 0;
}
