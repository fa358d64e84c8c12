// Cboe Multicast PITCH framing and messages, byte exact: each message is built here field by
// field from the layout of Cboe's US Equities/Options Multicast PITCH specification (docs/pitch.md,
// "Messages"), independently of the library's readers and writers, with values chosen to
// catch swapped or misplaced fields; decode() must read them back and encode() must give the
// same bytes. validate_block() must refuse every block that lies. (The real captures are
// read by pitch_realdata_test.cpp.)
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

/// A message of `length` bytes: Length and Type, the rest zero; fields go in with put/text.
bytes message(std::uint8_t length, std::uint8_t type) {
    bytes b(length);
    b[0] = std::byte{length};
    b[1] = std::byte{type};
    return b;
}

void put(bytes& b, std::size_t offset, std::uint64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
        b.at(offset + i) = static_cast<std::byte>(value >> (8 * i)); // little-endian
    }
}

void text(bytes& b, std::size_t offset, std::string_view s, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
        b.at(offset + i) = static_cast<std::byte>(i < s.size() ? s[i] : ' ');
    }
}

/// A block of `unit` starting at `sequence` holding `messages`.
bytes block(std::uint8_t unit, std::uint32_t sequence, std::vector<bytes> const& messages) {
    bytes b(8);
    for (bytes const& m : messages) {
        b.insert(b.end(), m.begin(), m.end());
    }
    put(b, 0, b.size(), 2);
    put(b, 2, messages.size(), 1);
    put(b, 3, unit, 1);
    put(b, 4, sequence, 4);
    return b;
}

cb::message decoded(bytes const& b) {
    std::optional<cb::message> const m = cb::decode(b);
    EXPECT_TRUE(m.has_value());
    return m.value_or(cb::message{});
}

void expect_round_trip(bytes const& b) {
    std::optional<cb::message> const m = cb::decode(b);
    ASSERT_TRUE(m.has_value());
    bytes out(b.size() + 8);
    ASSERT_EQ(cb::encode(*m, out), b.size()) << cb::type_name(b[1] == std::byte{} ? 0 : m->type);
    out.resize(b.size());
    EXPECT_EQ(out, b) << cb::type_name(m->type);
}

constexpr std::uint64_t order_id = 0x0102030405060708;
constexpr std::uint64_t execution_id = 0x1112131415161718;
constexpr std::uint32_t offset_ns = 0x21222324;

bytes add_long() { // 34: TO 2, id 6, side 14, qty 15 (4), symbol 19 (6), price 25 (8), flags 33
    bytes b = message(34, 0x21);
    put(b, 2, offset_ns, 4);
    put(b, 6, order_id, 8);
    text(b, 14, "S", 1);
    put(b, 15, 70'000, 4);
    text(b, 19, "ABCD", 6);
    put(b, 25, 1'234'567, 8);
    put(b, 33, 1, 1);
    return b;
}

bytes add_short() { // 26: TO 2, id 6, side 14, qty 15 (2), symbol 17 (6), price 23 (2), flags 25
    bytes b = message(26, 0x22);
    put(b, 2, offset_ns, 4);
    put(b, 6, order_id, 8);
    text(b, 14, "B", 1);
    put(b, 15, 300, 2);
    text(b, 17, "XY", 6);
    put(b, 23, 2066, 2);
    put(b, 25, 1, 1);
    return b;
}

bytes add_expanded() { // 41: ... symbol 19 (8), price 27, flags 35, participant 36, customer 40
    bytes b = message(41, 0x2F);
    put(b, 2, offset_ns, 4);
    put(b, 6, order_id, 8);
    text(b, 14, "B", 1);
    put(b, 15, 500, 4);
    text(b, 19, "LONGSYMB", 8);
    put(b, 27, 99'990'000, 8);
    put(b, 35, 1, 1);
    text(b, 36, "MPID", 4);
    text(b, 40, "R", 1);
    return b;
}

TEST(Pitch, AddOrdersInTheirThreeForms) {
    cb::message const l = decoded(add_long());
    EXPECT_EQ(l.type, mt::add_order_long);
    EXPECT_EQ(l.time_offset, offset_ns);
    EXPECT_EQ(l.order_id, order_id);
    EXPECT_EQ(l.side, 'S');
    EXPECT_EQ(l.quantity, 70'000U);
    EXPECT_EQ(cb::trimmed(l.symbol), "ABCD");
    EXPECT_EQ(l.price, 1'234'567);
    EXPECT_EQ(l.flags, 1);
    cb::message const s = decoded(add_short());
    EXPECT_EQ(s.side, 'B');
    EXPECT_EQ(s.quantity, 300U);
    EXPECT_EQ(cb::trimmed(s.symbol), "XY");
    EXPECT_EQ(s.price, 206'600); // 20.66: short prices (1/100) scale to 1/10000
    cb::message const e = decoded(add_expanded());
    EXPECT_EQ(cb::trimmed(e.symbol), "LONGSYMB");
    EXPECT_EQ(e.price, 99'990'000);
    EXPECT_EQ(std::string_view(e.participant.data(), 4), "MPID");
    EXPECT_EQ(e.customer, 'R');
}

TEST(Pitch, ExecutionsReductionsModifiesDeletesAndTrades) {
    bytes executed = message(26, 0x23); // id 6, executed 14 (4), execution id 18 (8)
    put(executed, 2, offset_ns, 4);
    put(executed, 6, order_id, 8);
    put(executed, 14, 150, 4);
    put(executed, 18, execution_id, 8);
    cb::message const ex = decoded(executed);
    EXPECT_EQ(ex.order_id, order_id);
    EXPECT_EQ(ex.quantity, 150U);
    EXPECT_EQ(ex.execution_id, execution_id);

    bytes at_price = message(38, 0x24); // executed 14, remaining 18, execution id 22, price 30
    put(at_price, 6, order_id, 8);
    put(at_price, 14, 10, 4);
    put(at_price, 18, 90, 4);
    put(at_price, 22, execution_id, 8);
    put(at_price, 30, 205'000, 8);
    cb::message const ap = decoded(at_price);
    EXPECT_EQ(ap.quantity, 10U);
    EXPECT_EQ(ap.remaining, 90U);
    EXPECT_EQ(ap.execution_id, execution_id);
    EXPECT_EQ(ap.price, 205'000);

    bytes reduce_long = message(18, 0x25);
    put(reduce_long, 6, order_id, 8);
    put(reduce_long, 14, 80'000, 4);
    EXPECT_EQ(decoded(reduce_long).quantity, 80'000U);
    bytes reduce_short = message(16, 0x26);
    put(reduce_short, 6, order_id, 8);
    put(reduce_short, 14, 100, 2);
    EXPECT_EQ(decoded(reduce_short).quantity, 100U);

    bytes modify_long = message(27, 0x27); // qty 14 (4), price 18 (8), flags 26
    put(modify_long, 6, order_id, 8);
    put(modify_long, 14, 1000, 4);
    put(modify_long, 18, 26, 8);
    put(modify_long, 26, 3, 1);
    cb::message const ml = decoded(modify_long);
    EXPECT_EQ(ml.quantity, 1000U);
    EXPECT_EQ(ml.price, 26);
    EXPECT_EQ(ml.flags, cb::modify_flag::display | cb::modify_flag::maintain_priority);
    bytes modify_short = message(19, 0x28); // qty 14 (2), price 16 (2), flags 18
    put(modify_short, 6, order_id, 8);
    put(modify_short, 14, 400, 2);
    put(modify_short, 16, 2005, 2);
    put(modify_short, 18, 1, 1);
    cb::message const ms = decoded(modify_short);
    EXPECT_EQ(ms.quantity, 400U);
    EXPECT_EQ(ms.price, 200'500);

    bytes deleted = message(14, 0x29);
    put(deleted, 2, offset_ns, 4);
    put(deleted, 6, order_id, 8);
    EXPECT_EQ(decoded(deleted).order_id, order_id);

    bytes trade_long = message(41, 0x2A); // as Add Order Long, execution id at 33
    put(trade_long, 6, order_id, 8);
    text(trade_long, 14, "B", 1);
    put(trade_long, 15, 200, 4);
    text(trade_long, 19, "ABCD", 6);
    put(trade_long, 25, 250, 8);
    put(trade_long, 33, execution_id, 8);
    cb::message const tl = decoded(trade_long);
    EXPECT_EQ(tl.quantity, 200U);
    EXPECT_EQ(tl.price, 250);
    EXPECT_EQ(tl.execution_id, execution_id);
    bytes trade_short = message(33, 0x2B); // as Add Order Short, execution id at 25
    put(trade_short, 15, 100, 2);
    text(trade_short, 17, "XY", 6);
    put(trade_short, 23, 2001, 2);
    put(trade_short, 25, execution_id, 8);
    EXPECT_EQ(decoded(trade_short).price, 200'100);
    bytes trade_expanded = message(43, 0x30); // symbol 19 (8), price 27, execution id 35
    text(trade_expanded, 19, "LONGSYMB", 8);
    put(trade_expanded, 27, 5, 8);
    put(trade_expanded, 35, execution_id, 8);
    EXPECT_EQ(decoded(trade_expanded).execution_id, execution_id);

    bytes trade_break = message(14, 0x2C);
    put(trade_break, 6, execution_id, 8);
    EXPECT_EQ(decoded(trade_break).execution_id, execution_id);
    bytes status = message(18, 0x31); // symbol 6 (8), status 14, Reg SHO 15
    text(status, 6, "ABCD", 8);
    text(status, 14, "H", 1);
    text(status, 15, "1", 1);
    cb::message const st = decoded(status);
    EXPECT_EQ(cb::trimmed(st.symbol), "ABCD");
    EXPECT_EQ(st.status, 'H');
    EXPECT_EQ(st.reg_sho, '1');
    bytes time = message(6, 0x20);
    put(time, 2, 34'200, 4);
    EXPECT_EQ(decoded(time).time, 34'200U);

    for (bytes const& b : {add_long(), add_short(), add_expanded(), executed, at_price, reduce_long,
                           reduce_short, modify_long, modify_short, deleted, trade_long,
                           trade_short, trade_expanded, trade_break, status, time}) {
        expect_round_trip(b);
    }
}

TEST(Pitch, SessionMessagesOfTheGapRequestProxyAndSpin) {
    bytes login = message(22, 0x01); // session sub id 2 (4), username 6 (4), filler 10, pw 12
    text(login, 2, "0001", 4);
    text(login, 6, "USER", 4);
    text(login, 10, "", 2);
    text(login, 12, "pw", 10);
    cb::message const l = decoded(login);
    EXPECT_EQ(std::string_view(l.session_sub_id.data(), 4), "0001");
    EXPECT_EQ(std::string_view(l.username.data(), 4), "USER");
    EXPECT_EQ(std::string_view(l.password.data(), 10), "pw        ");
    bytes gap_request = message(9, 0x03); // unit 2, sequence 3 (4), count 7 (2)
    put(gap_request, 2, 5, 1);
    put(gap_request, 3, 70'000, 4);
    put(gap_request, 7, 300, 2);
    cb::message const g = decoded(gap_request);
    EXPECT_EQ(g.unit, 5);
    EXPECT_EQ(g.sequence, 70'000U);
    EXPECT_EQ(g.count, 300U);
    bytes gap_response = message(10, 0x04);
    put(gap_response, 2, 5, 1);
    put(gap_response, 3, 70'000, 4);
    put(gap_response, 7, 300, 2);
    text(gap_response, 9, "O", 1);
    EXPECT_EQ(decoded(gap_response).status, 'O');
    bytes spin_response = message(11, 0x82); // sequence 2 (4), count 6 (4), status 10
    put(spin_response, 2, 312, 4);
    put(spin_response, 6, 4000, 4);
    text(spin_response, 10, "A", 1);
    cb::message const sr = decoded(spin_response);
    EXPECT_EQ(sr.sequence, 312U);
    EXPECT_EQ(sr.count, 4000U);
    EXPECT_EQ(sr.status, 'A');
    bytes response = message(3, 0x02);
    text(response, 2, "A", 1);
    bytes image = message(6, 0x80);
    put(image, 2, 312, 4);
    bytes request = message(6, 0x81);
    put(request, 2, 312, 4);
    bytes finished = message(6, 0x83);
    put(finished, 2, 312, 4);
    EXPECT_EQ(decoded(finished).sequence, 312U);
    for (bytes const& b :
         {login, response, gap_request, gap_response, image, request, spin_response, finished}) {
        expect_round_trip(b);
    }
}

TEST(Pitch, ValidatesABlockAndWalksItsMessages) {
    bytes time = message(6, 0x20);
    put(time, 2, 34'200, 4);
    bytes const b = block(31, 35'742, {time, add_short(), add_long()});
    std::optional<cb::block_check> const check = cb::validate_block(b);
    ASSERT_TRUE(check.has_value());
    EXPECT_EQ(check->header, (cb::block_header{8 + 6 + 26 + 34, 3, 31, 35'742}));
    EXPECT_EQ(check->unknown, 0);
    std::vector<std::uint8_t> types;
    cb::for_each_message(
        b, [&](std::span<std::byte const> m) { types.push_back(static_cast<std::uint8_t>(m[1])); });
    EXPECT_EQ(types,
              (std::vector<std::uint8_t>{mt::time, mt::add_order_short, mt::add_order_long}));
}

TEST(Pitch, RefusesBlocksThatLie) {
    bytes modify_short = message(19, 0x28);
    bytes const ok = block(1, 7, {modify_short});
    ASSERT_TRUE(cb::validate_block(ok).has_value());
    bytes cut = modify_short;
    cut.pop_back();
    cut[0] = std::byte{18}; // shorter than its layout: its fields cannot be read
    EXPECT_FALSE(cb::validate_block(block(1, 7, {cut})).has_value());
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
    EXPECT_FALSE(cb::validate_block(bytes(7)).has_value());
    // A heartbeat: no messages, the next sequence.
    std::optional<cb::block_check> const heartbeat = cb::validate_block(block(1, 5, {}));
    ASSERT_TRUE(heartbeat.has_value());
    EXPECT_EQ(heartbeat->header, (cb::block_header{8, 0, 1, 5}));
}

TEST(Pitch, SkipsUnknownTypesByTheirLengthAndReadsLongerMessagesByTheirLayout) {
    // An unknown type 0x77 of 5 bytes, then an options Order Executed with its trade
    // condition (27 bytes: one past the equities layout).
    bytes unknown = message(5, 0x77);
    bytes executed = message(27, 0x23);
    put(executed, 18, execution_id, 8);
    text(executed, 26, "S", 1);
    bytes const b = block(1, 7, {unknown, executed});
    std::optional<cb::block_check> const check = cb::validate_block(b);
    ASSERT_TRUE(check.has_value());
    EXPECT_EQ(check->unknown, 1);
    std::vector<cb::message> got;
    cb::for_each_message(b, [&](std::span<std::byte const> m) {
        if (auto d = cb::decode(m)) {
            got.push_back(*d);
        }
    });
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0].execution_id, execution_id);
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
    auto const written = w.finish();
    std::optional<cb::block_check> const check = cb::validate_block(written);
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
