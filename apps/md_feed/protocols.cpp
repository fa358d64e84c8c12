#include "feed_protocol.hpp"

namespace signet::md_feed {

std::unique_ptr<feed_protocol> make_moldudp64(); // moldudp64.cpp
std::unique_ptr<feed_protocol> make_mdp3();      // mdp3.cpp
std::unique_ptr<feed_protocol> make_pitch();     // pitch.cpp

std::vector<std::unique_ptr<feed_protocol>> protocols() {
    // One line per protocol (and its declaration above); the first is the default.
    std::vector<std::unique_ptr<feed_protocol>> all;
    all.push_back(make_moldudp64()); // ITCH 5.0 over MoldUDP64 (Nasdaq)
    all.push_back(make_mdp3());      // CME MDP 3.0
    all.push_back(make_pitch());     // Cboe Multicast PITCH
    return all;
}

} // namespace signet::md_feed
