// Cboe Multicast PITCH framing and messages, byte exact: each message below is a real one (the
// bytes of ../shared/realdata/cboe captures, written out here so that the test runs without
// them; provenance in docs/pitch.md), with its fields as Cboe's layout gives them and as an
// outside decoder (tshark with the Open Markets Initiative's PITCH 2.41 dissector) read them.
// encode() must give the same bytes back; validate_block() must refuse every block that lies.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cboe/pitch.hpp>

namespace {

namespace cb = signet::md::cboe;
namespace mt = cb::message_type;
using bytes = std::vector<std::byte>;

bytes hex(std::string_view text) {
    auto const nibble = [](char c) {
        return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    };
    bytes out;
    int high = -1;
    for (char const c : text) {
        if (c == ' ') {
            continue;
        }
        if (high < 0) {
            high = nibble(c);
        } else {
            out.push_back(static_cast<std::byte>(high << 4 | nibble(c)));
            high = -1;
        }
    }
    return out;
}

cb::message decoded(std::string_view text) {
    bytes const b = hex(text);
    std::optional<cb::message> const m = cb::decode(b);
    EXPECT_TRUE(m.has_value()) << text;
    return m.value_or(cb::message{});
}

/// encode(decode(bytes)) == bytes.
void expect_round_trip(std::string_view text) {
    bytes const b = hex(text);
    std::optional<cb::message> const m = cb::decode(b);
    ASSERT_TRUE(m.has_value()) << text;
    bytes out(b.size() + 8);
    ASSERT_EQ(cb::encode(*m, out), b.size()) << text;
    out.resize(b.size());
    EXPECT_EQ(out, b) << text;
}

TEST(Pitch, AddOrderShortAsCaptured) {
    // BATS realtime capture, unit 1, sequence 4.
    cb::message const m = decoded("1a22f0527920011074e9ea9e6803426400412020202020d00701");
    EXPECT_EQ(m.type, mt::add_order_short);
    EXPECT_EQ(m.time_offset, 544822000U);
    EXPECT_EQ(m.order_id, 245620911467925505ULL);
    EXPECT_EQ(m.side, 'B');
    EXPECT_EQ(m.quantity, 100U);
    EXPECT_EQ(cb::trimmed(m.symbol), "A");
    EXPECT_EQ(m.price, 200000); // 20.00: short prices scale to 1/10000
    EXPECT_EQ(m.flags, 1);
    // Cboe BYX production, unit 15: a sell.
    cb::message const s = decoded("1a22b8c30b001bcccb5daadeca1b53640049574f202020e65b01");
    EXPECT_EQ(s.order_id, 2002657807619050523ULL);
    EXPECT_EQ(s.side, 'S');
    EXPECT_EQ(cb::trimmed(s.symbol), "IWO");
    EXPECT_EQ(s.price, 2352600);
}

TEST(Pitch, AddOrderLongAsCaptured) {
    cb::message const m =
        decoded("2221c0415c29071074e9ea9e68034264000000412020202020190000000000000001");
    EXPECT_EQ(m.type, mt::add_order_long);
    EXPECT_EQ(m.time_offset, 693912000U);
    EXPECT_EQ(m.order_id, 245620911467925511ULL);
    EXPECT_EQ(m.side, 'B');
    EXPECT_EQ(m.quantity, 100U);
    EXPECT_EQ(cb::trimmed(m.symbol), "A");
    EXPECT_EQ(m.price, 25); // 0.0025
    EXPECT_EQ(m.flags, 1);
}

TEST(Pitch, ExecutionsReductionsModifiesDeletesAndTradesAsCaptured) {
    cb::message const e = decoded("1a239804a310011074e9ea9e68036400000001b8e03522000000");
    EXPECT_EQ(e.type, mt::order_executed);
    EXPECT_EQ(e.time_offset, 279119000U);
    EXPECT_EQ(e.order_id, 245620911467925505ULL);
    EXPECT_EQ(e.quantity, 100U);
    EXPECT_EQ(e.execution_id, 146932807681ULL);

    cb::message const r = decoded("10263077b205131074e9ea9e68036400");
    EXPECT_EQ(r.type, mt::reduce_size_short);
    EXPECT_EQ(r.order_id, 245620911467925523ULL);
    EXPECT_EQ(r.quantity, 100U);

    cb::message const ml = decoded("1b278015af1f121074e9ea9e6803e80300001a0000000000000001");
    EXPECT_EQ(ml.type, mt::modify_order_long);
    EXPECT_EQ(ml.order_id, 245620911467925522ULL);
    EXPECT_EQ(ml.quantity, 1000U);
    EXPECT_EQ(ml.price, 26);
    EXPECT_EQ(ml.flags, cb::modify_flag::display);

    cb::message const ms = decoded("1328a063af1f111074e9ea9e68039001d50701");
    EXPECT_EQ(ms.type, mt::modify_order_short);
    EXPECT_EQ(ms.quantity, 400U);
    EXPECT_EQ(ms.price, 200500);

    cb::message const d = decoded("0e2970df3200111074e9ea9e6803");
    EXPECT_EQ(d.type, mt::delete_order);
    EXPECT_EQ(d.time_offset, 3334000U);
    EXPECT_EQ(d.order_id, 245620911467925521ULL);

    cb::message const tl = decoded(
        "292ae8d0b6170f1074e9ea9e68034264000000412020202020190000000000000005b8e03522000000");
    EXPECT_EQ(tl.type, mt::trade_long);
    EXPECT_EQ(tl.order_id, 245620911467925519ULL);
    EXPECT_EQ(tl.quantity, 100U);
    EXPECT_EQ(tl.price, 25);
    EXPECT_EQ(tl.execution_id, 146932807685ULL);

    cb::message const ts =
        decoded("212bf02ba624061074e9ea9e6803426400412020202020d10702b8e03522000000");
    EXPECT_EQ(ts.type, mt::trade_short);
    EXPECT_EQ(ts.order_id, 245620911467925510ULL);
    EXPECT_EQ(ts.price, 200100);
    EXPECT_EQ(ts.execution_id, 146932807682ULL);
}

TEST(Pitch, SessionMessagesAsCaptured) {
    cb::message const login = decoded("1601303030364d4b4441202020202020202020202020");
    EXPECT_EQ(login.type, mt::login);
    EXPECT_EQ(std::string_view(login.session_sub_id.data(), 4), "0006");
    EXPECT_EQ(std::string_view(login.username.data(), 4), "MKDA");
    cb::message const request = decoded("0903010e0000000100");
    EXPECT_EQ(request.type, mt::gap_request);
    EXPECT_EQ(request.unit, 1);
    EXPECT_EQ(request.sequence, 14U);
    EXPECT_EQ(request.count, 1U);
    cb::message const response = decoded("0a04010e000000010041");
    EXPECT_EQ(response.status, 'A');
    cb::message const spin = decoded("0b82380100000000000041");
    EXPECT_EQ(spin.type, mt::spin_response);
    EXPECT_EQ(spin.sequence, 312U);
    EXPECT_EQ(spin.count, 0U);
    EXPECT_EQ(spin.status, 'A');
    EXPECT_EQ(decoded("068338010000").sequence, 312U); // spin finished
    EXPECT_EQ(decoded("062013290100").time, 76051U);   // time
}

TEST(Pitch, EncodeGivesTheCapturedBytesBack) {
    for (std::string_view const m : {
             "1a22f0527920011074e9ea9e6803426400412020202020d00701",
             "2221c0415c29071074e9ea9e68034264000000412020202020190000000000000001",
             "1a239804a310011074e9ea9e68036400000001b8e03522000000",
             "10263077b205131074e9ea9e68036400",
             "1b278015af1f121074e9ea9e6803e80300001a0000000000000001",
             "1328a063af1f111074e9ea9e68039001d50701",
             "0e2970df3200111074e9ea9e6803",
             "292ae8d0b6170f1074e9ea9e68034264000000412020202020190000000000000005b8e03522000000",
             "212bf02ba624061074e9ea9e6803426400412020202020d10702b8e03522000000",
             "1601303030364d4b4441202020202020202020202020",
             "030241",
             "0903010e0000000100",
             "0a04010e000000010041",
             "068038010000",
             "0b82380100000000000041",
             "068338010000",
             "062013290100",
         }) {
        expect_round_trip(m);
    }
}

TEST(Pitch, ValidatesACapturedBlockAndWalksItsMessages) {
    // BYX production, unit 31, sequence 35742: Time, two Add Order Short.
    bytes const block = hex("4200031f9e8b0000"
                            "062098850000"
                            "1a2250810b00d9c2cdc18ab2043942082059414e4720206d0401"
                            "1a22a0c70b00dac2cdc18ab204394264005853564e20203b1201");
    std::optional<cb::block_check> const check = cb::validate_block(block);
    ASSERT_TRUE(check.has_value());
    EXPECT_EQ(check->header, (cb::block_header{66, 3, 31, 35742}));
    EXPECT_EQ(check->unknown, 0);
    std::vector<std::uint8_t> types;
    cb::for_each_message(block, [&](std::span<std::byte const> m) {
        types.push_back(static_cast<std::uint8_t>(m[1]));
    });
    EXPECT_EQ(types,
              (std::vector<std::uint8_t>{mt::time, mt::add_order_short, mt::add_order_short}));
}

TEST(Pitch, RefusesBlocksThatLie) {
    bytes const good = hex("1a00010107000000 1228a063af1f111074e9ea9e68039001d50701");
    // (a modify short cut to 18 bytes: shorter than its layout)
    EXPECT_FALSE(cb::validate_block(good).has_value());
    bytes ok = hex("1b00010107000000 1328a063af1f111074e9ea9e68039001d50701");
    ASSERT_TRUE(cb::validate_block(ok).has_value());
    bytes longer = ok;
    longer.push_back(std::byte{0}); // a byte past the header's length
    EXPECT_FALSE(cb::validate_block(longer).has_value());
    bytes count = ok;
    count[2] = std::byte{2}; // two messages claimed, one there
    EXPECT_FALSE(cb::validate_block(count).has_value());
    bytes zero = ok;
    zero[8] = std::byte{0}; // a message of length 0 would never end
    EXPECT_FALSE(cb::validate_block(zero).has_value());
    bytes past = ok;
    past[8] = std::byte{0x20}; // a message past the block
    EXPECT_FALSE(cb::validate_block(past).has_value());
    EXPECT_FALSE(cb::validate_block(hex("0800")).has_value());
    // A heartbeat: no messages, the next sequence.
    std::optional<cb::block_check> const heartbeat = cb::validate_block(hex("0800000105000000"));
    ASSERT_TRUE(heartbeat.has_value());
    EXPECT_EQ(heartbeat->header, (cb::block_header{8, 0, 1, 5}));
}

TEST(Pitch, SkipsUnknownTypesByTheirLengthAndReadsLongerMessagesByTheirLayout) {
    // An unknown type 0x77 of 5 bytes, then an options Order Executed with its trade condition
    // (27 bytes: one past the equities layout).
    bytes const block = hex("2800020107000000 0577000000"
                            "1b239804a310011074e9ea9e68036400000001b8e0352200000053");
    std::optional<cb::block_check> const check = cb::validate_block(block);
    ASSERT_TRUE(check.has_value());
    EXPECT_EQ(check->unknown, 1);
    std::vector<cb::message> decoded_messages;
    cb::for_each_message(block, [&](std::span<std::byte const> m) {
        if (auto d = cb::decode(m)) {
            decoded_messages.push_back(*d);
        }
    });
    ASSERT_EQ(decoded_messages.size(), 1U);
    EXPECT_EQ(decoded_messages[0].execution_id, 146932807681ULL);
}

TEST(Pitch, EncodeRefusesWhatAShortFormCannotCarry) {
    cb::message m;
    m.type = mt::add_order_short;
    m.symbol = cb::make_symbol("ABC");
    m.quantity = 70'000; // above u16
    m.price = 100;
    std::byte out[64];
    EXPECT_EQ(cb::encode(m, out), 0U);
    m.quantity = 100;
    m.price = 150; // not a whole cent
    EXPECT_EQ(cb::encode(m, out), 0U);
    m.price = 200;
    EXPECT_EQ(cb::encode(m, out), 26U);
    m.symbol = cb::make_symbol("ABCDEFG"); // 7 characters: the expanded form's
    EXPECT_EQ(cb::encode(m, out), 0U);
}

TEST(Pitch, BlockWriterBuildsWhatValidateAccepts) {
    std::byte buffer[128];
    cb::block_writer w(buffer);
    w.begin(3, 41);
    cb::message t;
    t.type = mt::time;
    t.time = 34200;
    ASSERT_TRUE(w.add(t));
    cb::message d;
    d.type = mt::delete_order;
    d.order_id = 7;
    ASSERT_TRUE(w.add(d));
    auto const block = w.finish();
    std::optional<cb::block_check> const check = cb::validate_block(block);
    ASSERT_TRUE(check.has_value());
    EXPECT_EQ(check->header, (cb::block_header{8 + 6 + 14, 2, 3, 41}));
    // Full: nothing written past the buffer.
    cb::message big;
    big.type = mt::trade_expanded;
    int added = 0;
    w.begin(3, 43);
    while (w.add(big)) {
        ++added;
    }
    EXPECT_EQ(added, (128 - 8) / 43);
}

} // namespace
