// A parser for a protocol of your own, plugged into the runtime as a contract. "SEQ" (made up):
// a u64 sequence and a u32 value per packet, on lines A and B that each lose some packets.
// md::sequence_arbiter merges the lines (one fills the other's losses), md::sequence_tracker
// counts gaps and duplicates. The memory backend stands in for the sockets.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include <signet/core/realtime_clock.hpp>
#include <signet/md/sequence_arbiter.hpp>
#include <signet/md/sequence_tracker.hpp>
#include <signet/net/runtime.hpp>

struct seq_packet {
    std::uint64_t sequence;
    std::uint32_t value;
};

// The parser contract: never runs concurrently with itself, so no member needs a lock.
struct seq_parser {
    signet::md::sequence_arbiter arbiter{2}; // two lines: A/B arbitration
    signet::md::sequence_tracker tracker;
    std::uint64_t sum = 0;
    std::atomic<std::uint64_t> next{1}; // main waits on it

    static seq_packet decode(std::span<std::byte const> bytes) {
        seq_packet p{};
        std::memcpy(&p, bytes.data(), std::min(bytes.size(), sizeof p)); // short: sequence 0
        return p;
    }
    void deliver(std::span<std::byte const> bytes) { // in sequence, each packet once
        seq_packet const p = decode(bytes);
        sum += tracker.track(p.sequence, 1).fresh * p.value;
        next.store(tracker.next(), std::memory_order_release); // pairs with main's acquire
    }
    void operator()(signet::net::packet const& p) {
        arbiter.on_packet(
            p.payload(), decode(p.payload()).sequence, p.line, p.user_rx_ns,
            [this](auto bytes) { deliver(bytes); }, [this] { return tracker.next(); });
    }
};

int main() {
    using namespace signet::net;
    runtime rt({.backend = backend_kind::memory, .workers = 1});
    seq_parser parser;
    std::size_t const feed = rt.add_feed({.name = "seq", .lines = {{}, {}}}, std::ref(parser));
    rt.start();
    constexpr std::uint64_t count = 10'000;
    memory_line lines[] = {rt.memory_line(feed, 0), rt.memory_line(feed, 1)};
    auto const put = [&](memory_line& line, seq_packet const& p) {
        while (!line.write(std::as_bytes(std::span(&p, 1)), signet::realtime_clock::now_ns())) {
            line.flush(); // the queue is full: let the parser catch up
            std::this_thread::yield();
        }
        line.flush();
    };
    for (std::uint64_t s = 1; s <= count; ++s) {
        seq_packet const p{s, static_cast<std::uint32_t>(s)};
        if (s % 7 != 0) { // line A loses every 7th packet, line B others: never both
            put(lines[0], p);
        }
        if (s % 7 != 3) {
            put(lines[1], p);
        }
    }
    while (parser.next.load(std::memory_order_acquire) <= count) {
        std::this_thread::yield();
    }
    rt.stop(); // the parser ran on the runtime's worker; main may read it now
    auto const& s = parser.tracker.stats();
    std::printf("seq: %llu packets in order, %llu gaps, %llu duplicates (A/B copies), sum %llu\n",
                static_cast<unsigned long long>(s.items), static_cast<unsigned long long>(s.gaps),
                static_cast<unsigned long long>(s.duplicates),
                static_cast<unsigned long long>(parser.sum));
    return s.items == count && s.gaps == 0 && parser.sum == count * (count + 1) / 2 ? 0 : 1;
}
