#include "protocols.hpp"

#include <algorithm>

#include <signet/receiver/cboe/pitch_protocol.hpp>
#include <signet/receiver/cme/mdp3_protocol.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>
#include <signet/receiver/raw_protocol.hpp>

namespace signet::receiver {

std::span<protocol_registration const> protocols() noexcept {
    // One line per protocol (and its header above): its registration, from its own files.
    static protocol_registration const all[] = {
        nasdaq::moldudp64_settings::registration(), // ITCH 5.0 over MoldUDP64 (Nasdaq)
        cme::mdp3_settings::registration(),         // CME MDP 3.0
        cboe::pitch_settings::registration(),       // Cboe Multicast PITCH
        raw_settings::registration(),               // packet counting
    };
    return all;
}

protocol_registration const* find_protocol(std::string_view name) noexcept {
    auto const all = protocols();
    auto const it = std::find_if(all.begin(), all.end(),
                                 [&](protocol_registration const& p) { return p.name == name; });
    return it == all.end() ? nullptr : &*it;
}

} // namespace signet::receiver
