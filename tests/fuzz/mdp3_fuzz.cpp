// libFuzzer target: CME MDP 3.0 packets — the SBE framing, every template's decoder with every
// group entry read, and the MBP book fed the incremental book entries and snapshots.
//
// Input: byte 0 sets the book depth (1 to 16); the rest is one UDP payload. The payload also
// goes to a channel as a definition, an incremental and a snapshot packet (in that order, then
// as an incremental again: a duplicate).
//
// Invariants: the walk hands over at most one message per 10 bytes after the packet header; a
// decoded group's entries lie inside the message (ASan checks every read); a book never holds
// more levels a side than its depth, and a refused update or load leaves it consistent
// (bids strictly better than worse levels is not required of garbage, only the bounds).
#include <cstddef>
#include <cstdint>
#include <span>

#include <signet/md/cme/mdp3.hpp>
#include <signet/md/cme/mdp3_channel.hpp>
#include <signet/md/cme/mdp3_price_book.hpp>

#include "fuzz_check.hpp"

namespace {

namespace m3 = signet::md::cme;

template <typename Group>
void touch(Group const& g) {
    g.for_each([](auto const& entry) { (void)entry; });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size < 1) {
        return 0;
    }
    m3::mdp3_price_book book(1 + data[0] % 16);
    std::span<std::byte const> const packet(reinterpret_cast<std::byte const*>(data + 1), size - 1);
    (void)m3::read_packet_header(packet);
    m3::packet_walk const walk = m3::for_each_message(packet, [&](m3::message const& m) {
        switch (m.template_id) {
        case m3::template_id::channel_reset:
            if (auto r = m3::decode_channel_reset(m)) {
                touch(r->entries);
                book.clear();
            }
            break;
        case m3::template_id::security_status:
            (void)m3::decode_security_status(m);
            break;
        case m3::template_id::incremental_book:
            if (auto b = m3::decode_incremental_book(m)) {
                b->entries.for_each([&](m3::book_entry const& e) { (void)book.apply(e); });
                touch(b->orders);
            }
            break;
        case m3::template_id::incremental_order_book:
            if (auto b = m3::decode_incremental_order_book(m)) {
                touch(b->entries);
            }
            break;
        case m3::template_id::incremental_trade_summary:
            if (auto t = m3::decode_incremental_trade_summary(m)) {
                touch(t->entries);
                touch(t->orders);
            }
            break;
        case m3::template_id::snapshot_full_refresh:
            if (auto s = m3::decode_snapshot_full_refresh(m)) {
                (void)book.assign_snapshot(s->entries);
            }
            break;
        case m3::template_id::snapshot_order_book:
            if (auto s = m3::decode_snapshot_order_book(m)) {
                touch(s->entries);
            }
            break;
        case m3::template_id::instrument_definition_future:
            if (auto d = m3::decode_instrument_definition_future(m)) {
                (void)d->outright_depth();
                touch(d->events);
                touch(d->attributes);
                touch(d->lot_types);
                (void)m3::text(d->symbol);
            }
            break;
        default:
            break;
        }
        SIGNET_FUZZ_CHECK(book.bids().size() <= book.depth());
        SIGNET_FUZZ_CHECK(book.offers().size() <= book.depth());
    });
    m3::mdp3_channel channel({.held_packets = 64, .held_bytes = 1 << 16});
    channel.on_definition(packet, 1);
    channel.on_incremental(packet, 2);
    channel.on_snapshot(packet, 3);
    channel.on_incremental(packet, 4);
    channel.on_time(5'000'000'000);
    channel.for_each_instrument([](m3::mdp3_instrument const& i) {
        SIGNET_FUZZ_CHECK(i.book.bids().size() <= i.book.depth());
        SIGNET_FUZZ_CHECK(i.book.offers().size() <= i.book.depth());
    });
    SIGNET_FUZZ_CHECK(channel.sequencing().duplicates <= 1);
    // A packet that does not frame never claims a MsgSeqNum.
    SIGNET_FUZZ_CHECK(m3::validate_packet(packet).has_value() || channel.sequencing().units == 0);
    if (packet.size() >= m3::packet_header_size) {
        SIGNET_FUZZ_CHECK(walk.messages <=
                          (packet.size() - m3::packet_header_size) / m3::message_header_size);
    }
    return 0;
}
