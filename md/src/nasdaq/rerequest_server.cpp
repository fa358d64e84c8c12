#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <signet/core/saturating.hpp>
#include <signet/md/nasdaq/rerequest_server.hpp>

namespace signet::md::nasdaq {

namespace {

constexpr std::uint32_t max_burst = 1'000'000;
constexpr std::size_t max_requester_slots = std::size_t{1} << 24;
constexpr std::size_t max_udp_payload = 65507;

// splitmix64's finaliser: keys that differ in a few bits (ports) land far apart.
std::uint64_t mix(std::uint64_t key) noexcept {
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebULL;
    key ^= key >> 31;
    return key;
}

} // namespace

rerequest_server::rerequest_server(message_store const& store,
                                   rerequest_server_options const& options)
    : store_(store)
    , session_(make_moldudp64_session_id(options.session))
    , max_messages_(options.max_messages_per_answer)
    , max_payload_(options.max_payload) {
    if (max_messages_ == 0 || max_messages_ > 0xFFFF) {
        throw std::invalid_argument("rerequest_server: max_messages_per_answer must be 1 to 65535");
    }
    if (max_payload_ < moldudp64_header_size + 2 || max_payload_ > max_udp_payload) {
        throw std::invalid_argument("rerequest_server: max_payload must be 22 to 65507 bytes");
    }
    double const rate = options.requests_per_second;
    if (!std::isfinite(rate) || rate < 0.001 || rate > 1e9) {
        throw std::invalid_argument("rerequest_server: requests_per_second must be 0.001 to 1e9");
    }
    if (options.burst > max_burst) {
        throw std::invalid_argument("rerequest_server: burst must be at most 1000000");
    }
    if (options.max_requesters == 0 || options.max_requesters > max_requester_slots) {
        throw std::invalid_argument("rerequest_server: max_requesters must be 1 to 2^24");
    }
    interval_ns_ = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(1e9 / rate)));
    std::uint32_t const burst =
        options.burst != 0
            ? options.burst
            : static_cast<std::uint32_t>(std::clamp(std::ceil(rate), 1.0, double{max_burst}));
    // interval_ns_ <= 1e12 and burst <= 1e6: the product stays below 2^64.
    tolerance_ns_ = std::uint64_t{burst - 1} * interval_ns_;
    slots_.resize(std::bit_ceil(std::max(options.max_requesters, probe_window)));
    // Not zeroed: only the pages that answers use get touched.
    packet_bytes_ =
        std::make_unique_for_overwrite<std::byte[]>(std::size_t{max_messages_} * max_payload_);
    packets_ = std::make_unique<std::span<std::byte const>[]>(max_messages_);
}

void rerequest_server::set_session(std::string_view session) noexcept {
    session_ = make_moldudp64_session_id(session);
}

rerequest_outcome rerequest_server::count(rerequest_outcome outcome) noexcept {
    switch (outcome) {
    case rerequest_outcome::answered:
        ++stats_.answered;
        break;
    case rerequest_outcome::malformed:
        ++stats_.malformed;
        break;
    case rerequest_outcome::wrong_session:
        ++stats_.wrong_session;
        break;
    case rerequest_outcome::zero_sequence:
        ++stats_.zero_sequence;
        break;
    case rerequest_outcome::zero_count:
        ++stats_.zero_count;
        break;
    case rerequest_outcome::rate_limited:
        ++stats_.rate_limited;
        break;
    case rerequest_outcome::too_many_requesters:
        ++stats_.too_many_requesters;
        break;
    case rerequest_outcome::evicted:
        ++stats_.evicted;
        break;
    case rerequest_outcome::not_yet_sent:
        ++stats_.not_yet_sent;
        break;
    case rerequest_outcome::oversized:
        ++stats_.oversized;
        break;
    }
    return outcome;
}

rerequest_outcome rerequest_server::admit(std::uint64_t requester, std::uint64_t now_ns) noexcept {
    // Step 3. The key's slot, if any, is in the window; so is every slot it may take.
    std::size_t const mask = slots_.size() - 1;
    std::size_t const home = static_cast<std::size_t>(mix(requester)) & mask;
    requester_slot* slot = nullptr;
    requester_slot* vacant = nullptr;
    for (std::size_t i = 0; i < probe_window; ++i) {
        requester_slot& s = slots_[(home + i) & mask];
        if (s.tat != 0 && s.key == requester) {
            slot = &s;
            break;
        }
        // Free, or its bucket has refilled: a fresh entry would be the same.
        if (vacant == nullptr && s.tat <= now_ns) {
            vacant = &s;
        }
    }
    if (slot == nullptr) {
        if (vacant == nullptr) {
            return rerequest_outcome::too_many_requesters;
        }
        if (vacant->tat == 0) {
            ++requesters_;
        }
        slot = vacant;
        slot->key = requester;
        slot->tat = now_ns;
    }
    // GCRA: conforming while the theoretical arrival time is at most `tolerance` ahead of now.
    if (slot->tat > saturating_add(now_ns, tolerance_ns_)) {
        return rerequest_outcome::rate_limited;
    }
    slot->tat = saturating_add(std::max(slot->tat, now_ns), interval_ns_);
    return rerequest_outcome::answered;
}

rerequest_answer rerequest_server::handle(std::span<std::byte const> request,
                                          std::uint64_t requester, std::uint64_t now_ns) noexcept {
    ++stats_.requests;
    rerequest_answer answer;
    std::optional<moldudp64_request> const parsed = parse_moldudp64_request(request);
    if (!parsed) {
        answer.outcome = count(rerequest_outcome::malformed);
    } else if (parsed->session != session_) {
        answer.outcome = count(rerequest_outcome::wrong_session);
    } else if (parsed->sequence == 0) {
        answer.outcome = count(rerequest_outcome::zero_sequence);
    } else if (parsed->count == 0) {
        answer.outcome = count(rerequest_outcome::zero_count);
    } else if (rerequest_outcome const admitted = admit(requester, now_ns);
               admitted != rerequest_outcome::answered) {
        answer.outcome = count(admitted);
    } else if (parsed->sequence < store_.first_sequence()) {
        answer.outcome = count(rerequest_outcome::evicted);
    } else if (parsed->sequence >= store_.next_sequence()) {
        answer.outcome = count(rerequest_outcome::not_yet_sent);
    } else {
        answer = build(*parsed);
        count(answer.outcome);
    }
    return answer;
}

rerequest_answer rerequest_server::build(moldudp64_request const& request) noexcept {
    // Step 5; the caller checked that request.sequence is stored.
    rerequest_answer answer;
    answer.outcome = rerequest_outcome::answered;
    answer.first_sequence = request.sequence;
    std::uint64_t wanted = request.count;
    if (wanted > max_messages_) {
        wanted = max_messages_;
        answer.clamped = true;
    }
    std::uint64_t const available = store_.next_sequence() - request.sequence;
    if (available < wanted) {
        wanted = available;
        answer.partial = true;
    }
    std::string_view const session(session_.data(), session_.size());
    std::size_t packets = 0;
    std::uint32_t messages = 0;
    while (messages < wanted) {
        // At most one region per message: max_messages_ regions of max_payload_ bytes.
        std::span<std::byte> const region(packet_bytes_.get() + packets * max_payload_,
                                          max_payload_);
        moldudp64_packer packer(region, session, request.sequence + messages,
                                {.max_payload = max_payload_});
        while (messages < wanted) {
            std::optional<std::span<std::byte const>> const message =
                store_.find(request.sequence + messages);
            if (!message || !packer.append(*message)) {
                break;
            }
            ++messages;
        }
        if (packer.empty()) {
            break; // a message longer than an empty packet takes
        }
        packets_[packets++] = packer.finish();
    }
    if (messages < wanted) {
        if (messages == 0) {
            answer.outcome = rerequest_outcome::oversized;
            return answer;
        }
        answer.partial = true;
    }
    answer.messages = messages;
    answer.packets = {packets_.get(), packets};
    stats_.messages_resent += messages;
    stats_.packets_resent += packets;
    stats_.clamped += answer.clamped ? 1 : 0;
    stats_.partial += answer.partial ? 1 : 0;
    return answer;
}

} // namespace signet::md::nasdaq
