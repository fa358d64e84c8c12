// libFuzzer target: the GRP and Spin client (md::cboe::session_client) fed an arbitrary byte
// stream as its server, and the server side (md::cboe::session_server) the same bytes as its
// client, in arbitrary read sizes.
//
// Input: byte 0 sets the read size (1 to 16 bytes); byte 1 its low bit: prefix the stream with
// an accepted login (so that the messages after it flow); the rest is the stream. Time moves by
// 100 ms per read, with on_time() between reads, and the client asks for a gap after each read
// it is logged in for.
//
// Invariants: on_bytes() never uses more than it was given, and uses whole blocks only (the
// rest is a partial block, shorter than its stated length) while the session lasts; messages
// are handed over only once logged in; the output always frames as whole valid blocks; the
// server hands over nothing before an accepted login and uses no more than it was given.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <signet/md/cboe/pitch_session.hpp>
#include <signet/md/cboe/pitch_session_server.hpp>

#include "fuzz_check.hpp"

namespace cb = signet::md::cboe;

namespace {

void check_output(std::span<std::byte const> out) {
    bool invalid = false;
    std::size_t const used = cb::for_each_block(out, invalid, [](auto const&, auto) {});
    SIGNET_FUZZ_CHECK(!invalid && used == out.size());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size < 2) {
        return 0;
    }
    std::size_t const read_size = 1 + data[0] % 16;
    std::vector<std::byte> stream;
    if ((data[1] & 1) != 0) {
        cb::message accepted;
        accepted.type = cb::message_type::login_response;
        accepted.status = 'A';
        SIGNET_FUZZ_CHECK(cb::append_session_block(stream, accepted));
    }
    for (std::size_t i = 2; i < size; ++i) {
        stream.push_back(static_cast<std::byte>(data[i]));
    }
    cb::session_client client({.credentials = cb::session_credentials::of("1", "u", "p")});
    std::int64_t now = 0;
    client.start(now);
    std::vector<std::byte> pending;
    for (std::size_t at = 0; at < stream.size(); at += read_size) {
        std::size_t const n = std::min(read_size, stream.size() - at);
        pending.insert(pending.end(), stream.begin() + static_cast<std::ptrdiff_t>(at),
                       stream.begin() + static_cast<std::ptrdiff_t>(at + n));
        bool const live = client.state() == cb::session_state::logging_in ||
                          client.state() == cb::session_state::logged_in;
        std::size_t const used = client.on_bytes(pending, now, [&](cb::message const&) {
            SIGNET_FUZZ_CHECK(client.state() == cb::session_state::logged_in);
        });
        SIGNET_FUZZ_CHECK(used <= pending.size());
        if (live && client.state() != cb::session_state::failed && used < pending.size()) {
            // What is left is a partial block: shorter than the length it states.
            std::size_t const left = pending.size() - used;
            if (left >= 2) {
                std::size_t const stated = static_cast<std::size_t>(pending[used]) |
                                           static_cast<std::size_t>(pending[used + 1]) << 8;
                SIGNET_FUZZ_CHECK(stated > left);
            }
        }
        pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(used));
        now += 100'000'000;
        client.on_time(now);
        if (client.state() == cb::session_state::logged_in) {
            cb::message request;
            request.type = cb::message_type::gap_request;
            request.unit = 1;
            request.sequence = static_cast<std::uint32_t>(at);
            request.count = 1;
            (void)client.send(request, now);
        }
        check_output(client.output());
        client.sent(client.output().size(), now);
    }
    // The server: the same bytes as its client's (any login is accepted).
    cb::session_server server({});
    server.start(0);
    pending.clear();
    now = 0;
    for (std::size_t at = 0; at < stream.size(); at += read_size) {
        std::size_t const n = std::min(read_size, stream.size() - at);
        pending.insert(pending.end(), stream.begin() + static_cast<std::ptrdiff_t>(at),
                       stream.begin() + static_cast<std::ptrdiff_t>(at + n));
        std::size_t const used = server.on_bytes(pending, now, [&](cb::message const& m) {
            SIGNET_FUZZ_CHECK(server.state() == cb::server_state::logged_in);
            (void)server.send(m); // echo whatever it asked: output must stay framed
        });
        SIGNET_FUZZ_CHECK(used <= pending.size());
        pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(used));
        now += 100'000'000;
        server.on_time(now);
        check_output(server.output());
        server.sent(server.output().size(), now);
    }
    return 0;
}
