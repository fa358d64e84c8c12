// libFuzzer target: a moldudp64_session fed arbitrary datagrams.
//
// Input: byte 0 chooses the session's first sequence (even: 1, odd: late join); the rest is a
// list of datagrams, each a u16 big-endian length then that many bytes (a short last one is
// taken as it is). Each datagram is copied into a buffer of exactly its size, so ASan flags any
// read past it.
//
// Invariants: delivered sequences strictly increase across the run, step by one inside a
// packet, and stay below next_sequence(); delivered messages lie inside their datagram; a
// malformed packet delivers nothing and changes no sequence state; the counters agree with what
// was delivered; the peek helpers agree with each other. The delivered messages, re-packed by
// moldudp64_packer and fed to a second session, come out identical (packer round trip).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <signet/core/saturating.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>

#include "fuzz_check.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;

struct delivered_message {
    std::uint64_t sequence;
    std::string bytes;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    std::uint64_t const first = (data[0] & 1U) != 0 ? moldudp64_session::late_join : 1;
    moldudp64_session session(first);
    std::vector<delivered_message> delivered;
    // Index in `delivered` of the first delivery after the last resync.
    std::size_t since_resync = 0;
    std::uint64_t packets = 0;

    std::size_t offset = 1;
    while (offset < size) {
        std::size_t length = size - offset;
        if (length >= 2) {
            length = std::min<std::size_t>((std::size_t{data[offset]} << 8) | data[offset + 1],
                                           size - offset - 2);
            offset += 2;
        }
        std::vector<std::byte> datagram(length);
        for (std::size_t i = 0; i < length; ++i) {
            datagram[i] = static_cast<std::byte>(data[offset + i]);
        }
        offset += length;

        std::span<std::byte const> const view(datagram.data(), datagram.size());
        std::optional<moldudp64_header> const header = moldudp64_peek_header(view);
        SIGNET_FUZZ_CHECK(header.has_value() == (datagram.size() >= moldudp64_header_size));
        SIGNET_FUZZ_CHECK(moldudp64_sequence(view) == (header ? header->sequence : 0));

        moldudp64_stats const before = session.stats();
        std::size_t const delivered_before = delivered.size();
        std::uint64_t in_packet = 0;
        packet_result const result =
            session.on_packet(view, [&](std::uint64_t sequence, std::span<std::byte const> m) {
                // Across packets the order is checked below (a resync may move it back).
                SIGNET_FUZZ_CHECK(in_packet == 0 || sequence == delivered.back().sequence + 1);
                SIGNET_FUZZ_CHECK(m.data() >= view.data() &&
                                  m.data() + m.size() <= view.data() + view.size());
                // next_sequence() moved past the whole packet before its messages are delivered.
                SIGNET_FUZZ_CHECK(session.next_sequence() > sequence);
                delivered.push_back(
                    {sequence, std::string(reinterpret_cast<char const*>(m.data()), m.size())});
                ++in_packet;
            });
        ++packets;
        moldudp64_stats const after = session.stats();
        SIGNET_FUZZ_CHECK(after.packets == packets);
        SIGNET_FUZZ_CHECK(result.delivered == in_packet);
        SIGNET_FUZZ_CHECK(after.messages == delivered.size());
        // Strictly in sequence, once each, between resyncs (a resync re-anchors the session:
        // moldudp64.hpp, step 2).
        SIGNET_FUZZ_CHECK(after.resyncs == before.resyncs + (result.resynced ? 1 : 0));
        if (result.resynced) {
            since_resync = delivered_before; // this packet's deliveries start a new run
        } else {
            SIGNET_FUZZ_CHECK(after.next_sequence >= before.next_sequence);
            // The run since the last resync (which may have been a packet that delivered
            // nothing, a heartbeat) only goes up.
            if (in_packet != 0 && delivered_before > since_resync) {
                SIGNET_FUZZ_CHECK(delivered[delivered_before].sequence >
                                  delivered[delivered_before - 1].sequence);
            }
        }
        SIGNET_FUZZ_CHECK(header.has_value() || result.kind == packet_kind::malformed);
        if (header && header->sequence == 0) {
            SIGNET_FUZZ_CHECK(result.kind == packet_kind::malformed); // numbered from 1
        }
        if (in_packet != 0) {
            SIGNET_FUZZ_CHECK(delivered.back().sequence + 1 == session.next_sequence());
        }
        if (result.kind == packet_kind::malformed || result.kind == packet_kind::ignored) {
            bool const malformed = result.kind == packet_kind::malformed;
            SIGNET_FUZZ_CHECK(delivered.size() == delivered_before);
            SIGNET_FUZZ_CHECK(after.malformed_packets ==
                              before.malformed_packets + (malformed ? 1 : 0));
            SIGNET_FUZZ_CHECK(after.foreign_session_packets + after.implausible_packets ==
                              before.foreign_session_packets + before.implausible_packets +
                                  (malformed ? 0 : 1));
            SIGNET_FUZZ_CHECK(after.next_sequence == before.next_sequence);
            SIGNET_FUZZ_CHECK(after.gaps == before.gaps);
        } else {
            SIGNET_FUZZ_CHECK(header.has_value());
            SIGNET_FUZZ_CHECK(!session.session().empty());
            if (result.resynced) { // a confirmed jump may also count the jump itself as a gap
                SIGNET_FUZZ_CHECK(after.gaps >= before.gaps + (result.gap() ? 1 : 0));
                SIGNET_FUZZ_CHECK(after.missing_messages >=
                                  signet::saturating_add(before.missing_messages, result.missing));
            } else {
                SIGNET_FUZZ_CHECK(result.gap() == (after.gaps == before.gaps + 1));
                SIGNET_FUZZ_CHECK(after.missing_messages ==
                                  signet::saturating_add(before.missing_messages, result.missing));
            }
            if (result.kind == packet_kind::data) {
                SIGNET_FUZZ_CHECK(result.delivered + result.skipped == header->count);
            } else {
                SIGNET_FUZZ_CHECK(in_packet == 0);
            }
        }
    }

    // Packer round trip: re-pack what was delivered, from its first sequence, into small packets.
    if (!delivered.empty()) {
        std::vector<std::byte> buffer(512);
        moldudp64_packer packer(buffer, "REPACK", delivered.front().sequence);
        moldudp64_session replay(delivered.front().sequence);
        std::size_t next = 0;
        auto check = [&](std::uint64_t sequence, std::span<std::byte const> m) {
            SIGNET_FUZZ_CHECK(next < delivered.size());
            SIGNET_FUZZ_CHECK(sequence == delivered.front().sequence + next);
            SIGNET_FUZZ_CHECK(std::string(reinterpret_cast<char const*>(m.data()), m.size()) ==
                              delivered[next].bytes);
            ++next;
        };
        for (delivered_message const& d : delivered) {
            // Gaps are not repacked: only a contiguous prefix is compared.
            if (d.sequence != packer.next_sequence() + packer.message_count()) {
                break;
            }
            std::span<std::byte const> const m(reinterpret_cast<std::byte const*>(d.bytes.data()),
                                               d.bytes.size());
            if (m.size() > packer.max_message_size()) {
                break;
            }
            if (!packer.append(m)) {
                (void)replay.on_packet(packer.finish(), check);
                SIGNET_FUZZ_CHECK(packer.append(m));
            }
        }
        (void)replay.on_packet(packer.finish(), check);
        SIGNET_FUZZ_CHECK(replay.stats().malformed_packets == 0);
        SIGNET_FUZZ_CHECK(replay.stats().gaps == 0);
    }
    return 0;
}
