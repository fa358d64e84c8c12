// libFuzzer target: a SoupBinTCP client and a server, each fed an arbitrary byte stream as
// their peer, in arbitrary read sizes.
//
// Input: byte 0 sets the read size (1 to 16 bytes); byte 1 its low bit: prefix the stream with
// a valid login accepted (so that sequenced data flows); the rest is the stream. The same bytes
// go to the client (after start()) and to a server (after start(), which then accepts whatever
// login arrives). Time moves by 1 ms per read, with on_time() between reads.
//
// Invariants: on_bytes() never uses more than it was given and uses nothing once the session
// failed, ended or closed; delivered sequence numbers count up by one from the accepted one,
// and next_sequence() is one past the last; a delivered payload lies inside the bytes given;
// the client and server outputs always frame as whole packets.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <signet/md/nasdaq/soupbintcp.hpp>
#include <signet/md/nasdaq/soupbintcp_client.hpp>
#include <signet/md/nasdaq/soupbintcp_server.hpp>

#include "fuzz_check.hpp"

namespace {

using namespace signet::md::nasdaq::soupbintcp;

// The output holds whole packets only (what a peer would frame).
void check_output(std::span<std::byte const> out) {
    while (!out.empty()) {
        frame_result const f = frame(out, 0xFFFF);
        SIGNET_FUZZ_CHECK(f.status == frame_status::complete);
        out = out.subspan(f.size);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size < 2) {
        return 0;
    }
    std::size_t const read_size = 1 + data[0] % 16;
    std::vector<std::byte> stream;
    if ((data[1] & 1) != 0) {
        outbox accepted(64);
        SIGNET_FUZZ_CHECK(accepted.append_login_accepted({make_alpha<session_length>("FUZZ"), 7}));
        stream.assign(accepted.output().begin(), accepted.output().end());
    }
    for (std::size_t i = 2; i < size; ++i) {
        stream.push_back(static_cast<std::byte>(data[i]));
    }

    client cl({.username = "u", .password = "p", .max_length = 300, .outbox_bytes = 512});
    server sv({.max_length = 300, .outbox_bytes = 512});
    std::int64_t now = 0;
    SIGNET_FUZZ_CHECK(cl.start(now));
    sv.start(now);
    std::vector<std::byte> to_client;
    std::vector<std::byte> to_server;
    std::uint64_t expected = 0; // the next sequence the client should deliver, once known
    for (std::size_t at = 0; at < stream.size(); at += read_size) {
        now += 1'000'000;
        std::size_t const n = std::min(read_size, stream.size() - at);
        to_client.insert(to_client.end(), stream.begin() + static_cast<std::ptrdiff_t>(at),
                         stream.begin() + static_cast<std::ptrdiff_t>(at + n));
        to_server.insert(to_server.end(), stream.begin() + static_cast<std::ptrdiff_t>(at),
                         stream.begin() + static_cast<std::ptrdiff_t>(at + n));

        bool const client_live =
            cl.state() == client_state::logging_in || cl.state() == client_state::logged_in;
        std::size_t const used_c =
            cl.on_bytes(to_client, now, [&](std::uint64_t seq, std::span<std::byte const> p) {
                if (expected == 0) {
                    expected = seq; // the first delivery follows the accepted sequence
                }
                SIGNET_FUZZ_CHECK(seq == expected);
                ++expected;
                SIGNET_FUZZ_CHECK(p.data() >= to_client.data() &&
                                  p.data() + p.size() <= to_client.data() + to_client.size());
            });
        SIGNET_FUZZ_CHECK(used_c <= to_client.size());
        SIGNET_FUZZ_CHECK(client_live || used_c == 0);
        if (expected != 0) {
            SIGNET_FUZZ_CHECK(cl.next_sequence() == expected);
        }
        to_client.erase(to_client.begin(), to_client.begin() + static_cast<std::ptrdiff_t>(used_c));

        bool const server_live = sv.state() != server_state::closed;
        std::size_t const used_s = sv.on_bytes(to_server, now, [&](std::span<std::byte const> p) {
            SIGNET_FUZZ_CHECK(p.data() >= to_server.data() &&
                              p.data() + p.size() <= to_server.data() + to_server.size());
        });
        SIGNET_FUZZ_CHECK(used_s <= to_server.size());
        SIGNET_FUZZ_CHECK(server_live || used_s == 0);
        to_server.erase(to_server.begin(), to_server.begin() + static_cast<std::ptrdiff_t>(used_s));
        if (sv.state() == server_state::login_received) {
            sv.accept(sv.login()->sequence, now);
        }
        if (sv.state() == server_state::serving) {
            std::byte const payload[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
            (void)sv.send_sequenced(payload);
        }
        cl.on_time(now);
        sv.on_time(now);
        check_output(cl.output());
        check_output(sv.output());
        cl.sent(cl.output().size(), now);
        sv.sent(sv.output().size(), now);
    }
    return 0;
}
