// libFuzzer target: a rerequest_server over a small message_store, fed arbitrary request bytes.
//
// Input: 5 option bytes — max_messages_per_answer (1 + b % 16), store messages (1 + b % 32),
// store bytes (1 + 4b), packet max_payload (22 + b), rate (1 + b % 8 per second; burst
// (b / 8) % 4, 0 = default) — then operations until the input ends:
//   0 LEN           append a LEN % 80 byte message (LEN % 80 > store bytes: append must fail)
//   1 KEY DT N ...  a raw request of N bytes from requester KEY, DT ms later
//   2 KEY DT F S C  a request built from F (bit 0: another session; bit 1: sequence 0),
//                   S (i8, relative to the store's first sequence) and C (u16 big-endian)
//   3 HI LO         clear the store; the next append starts at sequence (HI << 8 | LO) + 1
//   4               serve the other session id ("FUZZ" <-> "OTHER")
// Any other byte is skipped. The store has at most 32 messages, so inputs stay fast.
//
// Invariants: the store agrees with a shadow copy of its newest messages and never exceeds its
// bounds; every request has exactly one outcome and the counters add up; an answer holds 1 to
// max_messages_per_answer messages starting at the requested sequence, in valid MoldUDP64
// packets of the served session within max_payload, whose messages are the stored bytes; only
// answers carry packets; validation outcomes match an independent reading of the request;
// evicted / not-yet-sent agree with the store's range; the requester table stays bounded.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <signet/md/message_store.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/nasdaq/moldudp64_request.hpp>
#include <signet/md/nasdaq/rerequest_server.hpp>

#include "fuzz_check.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;

class input {
public:
    input(std::uint8_t const* data, std::size_t size)
        : data_(data)
        , size_(size) {}
    [[nodiscard]] bool done() const { return offset_ >= size_; }
    std::uint8_t byte() { return offset_ < size_ ? data_[offset_++] : 0; }
    std::span<std::uint8_t const> take(std::size_t n) {
        n = std::min(n, size_ - std::min(offset_, size_));
        std::span<std::uint8_t const> const out(data_ + offset_, n);
        offset_ += n;
        return out;
    }

private:
    std::uint8_t const* data_;
    std::size_t size_;
    std::size_t offset_ = 0;
};

moldudp64_session_id padded(std::string_view name) {
    moldudp64_session_id id;
    id.fill(' ');
    std::copy(name.begin(), name.end(), id.begin());
    return id;
}

std::uint64_t sum_of_outcomes(rerequest_stats const& s) {
    return s.answered + s.malformed + s.wrong_session + s.zero_sequence + s.zero_count +
           s.rate_limited + s.too_many_requesters + s.evicted + s.not_yet_sent + s.oversized;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    input in(data, size);
    std::uint32_t const max_answer = 1U + in.byte() % 16U;
    std::size_t const store_messages = 1U + in.byte() % 32U;
    std::size_t const store_bytes = 1U + 4U * in.byte();
    std::size_t const max_payload = 22U + in.byte();
    std::uint8_t const rate_byte = in.byte();

    message_store store(store_messages, store_bytes);
    std::string_view session_name = "FUZZ";
    rerequest_server server(store, {.session = session_name,
                                    .max_messages_per_answer = max_answer,
                                    .max_payload = max_payload,
                                    .requests_per_second = 1.0 + rate_byte % 8U,
                                    .burst = static_cast<std::uint32_t>((rate_byte / 8U) % 4U),
                                    .max_requesters = 8});
    std::deque<std::pair<std::uint64_t, std::vector<std::byte>>> shadow; // newest, oldest first
    std::uint64_t next_sequence = 1;
    std::uint64_t now_ns = 1'000'000'000;
    std::uint64_t requests = 0;

    while (!in.done()) {
        std::uint8_t const op = in.byte();
        if (op == 0) {
            std::size_t const length = in.byte() % 80U;
            std::vector<std::byte> message(length);
            for (std::size_t i = 0; i < length; ++i) {
                message[i] = static_cast<std::byte>(next_sequence + i);
            }
            bool const ok = store.append(next_sequence, message);
            SIGNET_FUZZ_CHECK(ok == (length <= store_bytes));
            if (ok) {
                shadow.emplace_back(next_sequence, std::move(message));
                ++next_sequence;
            }
            SIGNET_FUZZ_CHECK(store.size() <= store_messages);
            SIGNET_FUZZ_CHECK(store.bytes_used() <= store_bytes);
            SIGNET_FUZZ_CHECK(store.size() <= shadow.size());
            // The store holds a suffix of the shadow, intact.
            for (std::size_t i = 0; i < store.size(); ++i) {
                auto const& [sequence, bytes] = shadow[shadow.size() - store.size() + i];
                auto const found = store.find(sequence);
                SIGNET_FUZZ_CHECK(found.has_value());
                SIGNET_FUZZ_CHECK(
                    std::equal(found->begin(), found->end(), bytes.begin(), bytes.end()));
            }
            if (!store.empty()) {
                SIGNET_FUZZ_CHECK(!store.find(store.first_sequence() - 1).has_value());
                SIGNET_FUZZ_CHECK(store.next_sequence() == next_sequence);
            }
            while (shadow.size() > store_messages) {
                shadow.pop_front();
            }
            continue;
        }
        if (op == 3) {
            store.clear();
            shadow.clear();
            SIGNET_FUZZ_CHECK(store.empty());
            std::uint64_t const high = in.byte();
            next_sequence = ((high << 8) | in.byte()) + 1;
            continue;
        }
        if (op == 4) {
            session_name = session_name == "FUZZ" ? "OTHER" : "FUZZ";
            server.set_session(session_name);
            continue;
        }
        if (op != 1 && op != 2) {
            continue;
        }
        std::uint64_t const requester = in.byte();
        now_ns += std::uint64_t{in.byte()} * 1'000'000;
        std::vector<std::byte> datagram;
        if (op == 1) {
            std::span<std::uint8_t const> const raw = in.take(in.byte());
            datagram.assign(reinterpret_cast<std::byte const*>(raw.data()),
                            reinterpret_cast<std::byte const*>(raw.data() + raw.size()));
        } else {
            std::uint8_t const flags = in.byte();
            auto const offset = static_cast<std::int8_t>(in.byte());
            unsigned const high = in.byte();
            std::uint16_t const count = static_cast<std::uint16_t>((high << 8) | in.byte());
            moldudp64_request r;
            r.session = padded((flags & 1U) != 0 ? "ELSEWHERE" : session_name);
            r.sequence = (flags & 2U) != 0
                             ? 0
                             : static_cast<std::uint64_t>(
                                   static_cast<std::int64_t>(store.first_sequence()) + offset);
            r.count = count;
            datagram.resize(moldudp64_request_size);
            write_moldudp64_request(
                r, std::span<std::byte, moldudp64_request_size>(datagram.data(), datagram.size()));
        }
        // Exactly its size, so ASan flags a read past the datagram.
        std::vector<std::byte> const exact(datagram);

        rerequest_stats const before = server.stats();
        rerequest_answer const answer = server.handle(exact, requester, now_ns);
        ++requests;
        rerequest_stats const& after = server.stats();
        SIGNET_FUZZ_CHECK(after.requests == requests);
        SIGNET_FUZZ_CHECK(sum_of_outcomes(after) == requests);
        SIGNET_FUZZ_CHECK(server.requesters() <= 8);

        // Validation, read independently of parse_moldudp64_request.
        rerequest_outcome expected = rerequest_outcome::answered; // "past validation"
        std::uint64_t sequence = 0;
        std::uint16_t count = 0;
        if (exact.size() != 20) {
            expected = rerequest_outcome::malformed;
        } else {
            for (int i = 0; i < 8; ++i) {
                sequence = (sequence << 8) | static_cast<std::uint8_t>(exact[10 + i]);
            }
            count = static_cast<std::uint16_t>((static_cast<unsigned>(exact[18]) << 8) |
                                               static_cast<unsigned>(exact[19]));
            moldudp64_session_id const id = padded(session_name);
            if (!std::equal(id.begin(), id.end(), reinterpret_cast<char const*>(exact.data()))) {
                expected = rerequest_outcome::wrong_session;
            } else if (sequence == 0) {
                expected = rerequest_outcome::zero_sequence;
            } else if (count == 0) {
                expected = rerequest_outcome::zero_count;
            }
        }
        if (expected != rerequest_outcome::answered) {
            SIGNET_FUZZ_CHECK(answer.outcome == expected);
        }
        if (!answer.answered()) {
            SIGNET_FUZZ_CHECK(answer.packets.empty());
            SIGNET_FUZZ_CHECK(after.messages_resent == before.messages_resent);
        }
        if (answer.outcome == rerequest_outcome::evicted) {
            SIGNET_FUZZ_CHECK(sequence < store.first_sequence());
        }
        if (answer.outcome == rerequest_outcome::not_yet_sent) {
            SIGNET_FUZZ_CHECK(sequence >= store.next_sequence());
        }
        if (answer.outcome == rerequest_outcome::oversized) {
            SIGNET_FUZZ_CHECK(store.contains(sequence));
            SIGNET_FUZZ_CHECK(store.find(sequence)->size() + 22 > max_payload);
        }
        if (!answer.answered()) {
            continue;
        }
        SIGNET_FUZZ_CHECK(expected == rerequest_outcome::answered);
        SIGNET_FUZZ_CHECK(answer.first_sequence == sequence);
        SIGNET_FUZZ_CHECK(answer.messages >= 1 && answer.messages <= max_answer);
        SIGNET_FUZZ_CHECK(answer.messages <= count);
        SIGNET_FUZZ_CHECK(answer.clamped == (count > max_answer));
        if (!answer.partial) {
            SIGNET_FUZZ_CHECK(answer.messages == std::min<std::uint32_t>(count, max_answer));
        }
        SIGNET_FUZZ_CHECK(!answer.packets.empty() && answer.packets.size() <= answer.messages);
        SIGNET_FUZZ_CHECK(after.messages_resent == before.messages_resent + answer.messages);
        moldudp64_session check(
            {.first_sequence = sequence, .max_sequence_jump = 1 << 20, .session = session_name});
        std::uint64_t delivered = 0;
        for (std::span<std::byte const> const packet : answer.packets) {
            SIGNET_FUZZ_CHECK(packet.size() <= max_payload);
            packet_result const result = check.on_packet(packet, [&](std::uint64_t s,
                                                                     std::span<std::byte const> m) {
                SIGNET_FUZZ_CHECK(s == sequence + delivered);
                auto const stored = store.find(s);
                SIGNET_FUZZ_CHECK(stored.has_value());
                SIGNET_FUZZ_CHECK(std::equal(m.begin(), m.end(), stored->begin(), stored->end()));
                ++delivered;
            });
            SIGNET_FUZZ_CHECK(result.kind == packet_kind::data);
            SIGNET_FUZZ_CHECK(!result.gap() && result.skipped == 0);
        }
        SIGNET_FUZZ_CHECK(delivered == answer.messages);
    }
    return 0;
}
