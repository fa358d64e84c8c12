// md_feed: sends ITCH 5.0 over MoldUDP64 to md_receiver (or any MoldUDP64 consumer): generated
// (system events, a stock directory, then adds/executes/cancels/deletes/replaces/trades on live
// orders) or replayed from a Nasdaq BinaryFILE. Paced to --rate messages per second, heartbeats
// when idle, end-of-session packets at exit, optional fault injection. Prints what it sent as
// JSON (last line of stdout, and --report-json) so tests can compare with the receiver.
//
// Exit codes: 0 ok, 1 runtime error, 2 bad command line.
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <signet/md/binary_file_reader.hpp>
#include <signet/md/itch50.hpp>
#include <signet/md/itch_generator.hpp>
#include <signet/md/moldudp64.hpp>
#include <signet/net/udp_endpoint.hpp>

#include "json_writer.hpp"
#include <net/if.h>

namespace {

using namespace signet;
using clock_type = std::chrono::steady_clock;

std::atomic<bool> interrupted{false};
extern "C" void on_signal(int) {
    interrupted.store(true, std::memory_order_relaxed);
}

struct counts {
    std::uint64_t packets = 0;
    std::uint64_t messages = 0;
    std::array<std::uint64_t, 128> by_type{};

    void add(std::uint64_t packet_count, std::array<std::uint64_t, 128> const& types) {
        packets += packet_count;
        for (std::size_t i = 0; i < by_type.size(); ++i) {
            messages += types[i] * packet_count;
            by_type[i] += types[i] * packet_count;
        }
    }
};

void write_types(apps::json_writer& j, std::array<std::uint64_t, 128> const& by_type) {
    j.begin_object();
    for (std::size_t c = 0; c < by_type.size(); ++c) {
        if (by_type[c] != 0) {
            j.field(std::string(1, static_cast<char>(c)), by_type[c]);
        }
    }
    j.end_object();
}

class sender {
public:
    sender(std::vector<net::udp_endpoint> targets, int ttl, bool loop, std::string const& interface)
        : targets_(std::move(targets)) {
        fd_ = ::socket(targets_.front().family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) {
            throw std::system_error(errno, std::generic_category(), "md_feed: socket");
        }
        int sndbuf = 4 << 20;
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
        if (targets_.front().is_multicast() && !targets_.front().is_v6()) {
            ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl));
            int const on = loop ? 1 : 0;
            ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_LOOP, &on, sizeof(on));
            if (!interface.empty()) {
                ip_mreqn request{};
                request.imr_ifindex = static_cast<int>(if_nametoindex(interface.c_str()));
                if (request.imr_ifindex == 0 || ::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_IF,
                                                             &request, sizeof(request)) != 0) {
                    throw std::system_error(errno, std::generic_category(),
                                            "md_feed: multicast interface '" + interface + "'");
                }
            }
        }
    }
    sender(sender const&) = delete;
    sender& operator=(sender const&) = delete;
    ~sender() { ::close(fd_); }

    [[nodiscard]] std::size_t lines() const noexcept { return targets_.size(); }

    void send(std::size_t line, std::span<std::byte const> bytes) {
        for (;;) {
            auto const& to = targets_[line];
            if (::sendto(fd_, bytes.data(), bytes.size(), 0, to.data(), to.size()) >= 0) {
                return;
            }
            if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
                std::this_thread::yield(); // the local queue is full: wait, never drop silently
                continue;
            }
            throw std::system_error(errno, std::generic_category(),
                                    "md_feed: sendto " + to.to_string());
        }
    }

private:
    std::vector<net::udp_endpoint> targets_;
    int fd_ = -1;
};

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"md_feed: ITCH 5.0 over MoldUDP64 feed generator"};
    std::string to;
    std::string to_b;
    double rate = 100'000;
    double duration_s = 0;
    std::uint64_t count = 0;
    unsigned batch = 8;
    std::string session = "SIGNET0001";
    std::uint64_t seed = 1;
    std::size_t symbols = 16;
    int ttl = 1;
    bool loop = true;
    std::string interface;
    double heartbeat_s = 1.0;
    std::uint64_t drop_every = 0;
    std::uint64_t dup_every = 0;
    std::uint64_t reorder_every = 0;
    std::string drop_line = "both";
    std::string replay;
    std::string report_path;
    cli.add_option("--to", to, "line A destination ip:port (unicast or multicast)")->required();
    cli.add_option("--to-b", to_b, "line B destination ip:port (A/B: every packet sent to both)");
    cli.add_option("--rate", rate, "messages per second; 0 = as fast as possible")
        ->check(CLI::NonNegativeNumber);
    cli.add_option("--duration", duration_s, "seconds of data, then close")
        ->check(CLI::NonNegativeNumber);
    cli.add_option("--count", count, "body messages, then close (generator)");
    cli.add_option("--batch", batch, "messages per packet (at most; packets stay <= 1400 bytes)")
        ->check(CLI::Range(1U, 1000U));
    cli.add_option("--session", session, "MoldUDP64 session name (10 characters, space padded)");
    cli.add_option("--seed", seed, "generator seed (same seed, same stream)");
    cli.add_option("--symbols", symbols, "stocks in the directory")->check(CLI::Range(1, 65535));
    cli.add_option("--ttl", ttl, "multicast TTL")->check(CLI::Range(0, 255));
    cli.add_option("--loop", loop, "multicast loopback (true/false)");
    cli.add_option("--interface", interface, "multicast interface name");
    cli.add_option("--heartbeat", heartbeat_s, "seconds of silence before a heartbeat")
        ->check(CLI::PositiveNumber);
    cli.add_option("--drop-every", drop_every, "fault injection: do not send every Nth packet");
    cli.add_option("--drop-line", drop_line, "which line --drop-every affects: a, b or both")
        ->check(CLI::IsMember({"a", "b", "both"}));
    cli.add_option("--dup-every", dup_every, "fault injection: send every Nth packet twice");
    cli.add_option("--reorder-every", reorder_every,
                   "fault injection: send every Nth packet after the one that follows it");
    cli.add_option("--replay", replay, "send a Nasdaq BinaryFILE (2-byte length-prefixed ITCH)");
    cli.add_option("--report-json", report_path, "also write the report to this file");
    try {
        cli.parse(argc, argv);
    } catch (CLI::ParseError const& e) {
        int const code = cli.exit(e);
        return code == 0 ? 0 : 2;
    }
    auto const target_a = net::udp_endpoint::try_parse(to);
    std::optional<net::udp_endpoint> target_b;
    if (!to_b.empty()) {
        target_b = net::udp_endpoint::try_parse(to_b);
    }
    if (!target_a || (!to_b.empty() && !target_b)) {
        std::fprintf(stderr, "md_feed: --to/--to-b must be ip:port, e.g. 127.0.0.1:30001\n");
        return 2;
    }
    if (drop_line != "both" && !target_b) {
        std::fprintf(stderr, "md_feed: --drop-line %s needs --to-b\n", drop_line.c_str());
        return 2;
    }
    ::signal(SIGINT, on_signal);
    ::signal(SIGTERM, on_signal);

    try {
        std::vector<net::udp_endpoint> targets{*target_a};
        if (target_b) {
            targets.push_back(*target_b);
        }
        sender out(targets, ttl, loop, interface);

        std::optional<md::itch_generator> generator;
        std::optional<md::binary_file_reader> reader;
        if (replay.empty()) {
            generator.emplace(
                md::itch_generator_options{.seed = seed, .symbols = symbols, .messages = count});
        } else {
            reader.emplace(replay);
        }
        std::vector<std::byte> buffer(2048);
        md::moldudp64_packer packer(
            buffer, session, 1,
            {.max_payload = 1400, .max_messages = static_cast<std::uint16_t>(batch)});
        std::array<std::byte, md::itch50::max_message_length> scratch{};

        counts sent;    // data packets that left on every line (dups counted once)
        counts dropped; // data packets not sent on any line
        std::uint64_t dropped_one_line = 0;
        std::uint64_t duplicated = 0;
        std::uint64_t reordered = 0;
        std::uint64_t heartbeats = 0;
        std::uint64_t index = 0; // data packets built
        std::vector<std::byte> held;
        int held_copies = 1;
        bool holding = false;

        auto const start = clock_type::now();
        auto last_send = start;
        auto const stop_at = duration_s > 0
                                 ? start + std::chrono::duration_cast<clock_type::duration>(
                                               std::chrono::duration<double>(duration_s))
                                 : clock_type::time_point::max();
        bool closing = false;
        std::uint64_t messages_built = 0;

        auto send_on_lines = [&](std::span<std::byte const> bytes, bool skip_a, bool skip_b,
                                 int copies) {
            for (int c = 0; c < copies; ++c) {
                if (!skip_a) {
                    out.send(0, bytes);
                }
                if (out.lines() > 1 && !skip_b) {
                    out.send(1, bytes);
                }
            }
            last_send = clock_type::now();
        };

        auto emit = [&](std::span<std::byte const> bytes,
                        std::array<std::uint64_t, 128> const& types) {
            ++index;
            bool const drop = drop_every != 0 && index % drop_every == 0;
            bool const drop_a = drop && drop_line != "b";
            bool const drop_b = drop && drop_line != "a";
            bool const all_dropped = drop_a && (out.lines() == 1 || drop_b);
            if (all_dropped) {
                dropped.add(1, types);
            } else {
                if (drop) {
                    ++dropped_one_line;
                }
                sent.add(1, types);
            }
            bool const dup = !all_dropped && dup_every != 0 && index % dup_every == 0;
            duplicated += dup ? 1 : 0;
            bool const reorder =
                !all_dropped && !holding && reorder_every != 0 && index % reorder_every == 0;
            if (reorder) {
                held.assign(bytes.begin(), bytes.end());
                held_copies = dup ? 2 : 1;
                holding = true;
                ++reordered;
                return; // goes out after the next packet
            }
            if (!all_dropped) {
                send_on_lines(bytes, drop_a, drop_b, dup ? 2 : 1);
            }
            if (holding) {
                send_on_lines(held, false, false, held_copies);
                holding = false;
            }
        };

        std::array<std::uint64_t, 128> packet_types{};
        for (;;) {
            if (!closing &&
                (interrupted.load(std::memory_order_relaxed) || clock_type::now() >= stop_at)) {
                closing = true;
                if (generator) {
                    generator->close();
                }
            }
            // Pace by messages: wait while ahead of rate * elapsed.
            if (rate > 0 && !closing) {
                double const elapsed =
                    std::chrono::duration<double>(clock_type::now() - start).count();
                if (static_cast<double>(messages_built) >= rate * elapsed) {
                    if (std::chrono::duration<double>(clock_type::now() - last_send).count() >=
                            heartbeat_s &&
                        packer.empty()) {
                        send_on_lines(packer.heartbeat(), false, false, 1);
                        ++heartbeats;
                    }
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                    continue;
                }
            }
            // Next message from the generator or the file.
            std::span<std::byte const> message;
            if (generator) {
                std::size_t const n = generator->next(scratch);
                message = {scratch.data(), n};
            } else if (!closing) {
                if (auto m = reader->next()) {
                    message = *m;
                }
            }
            if (message.empty()) {
                break; // finished (closing events sent) or end of file
            }
            if (!packer.append(message)) {
                emit(packer.finish(), packet_types);
                packet_types = {};
                if (!packer.append(message)) {
                    std::fprintf(stderr, "md_feed: a %zu-byte message does not fit a packet\n",
                                 message.size());
                    return 1;
                }
            }
            ++messages_built;
            auto const type = static_cast<unsigned char>(message[0]);
            if (type < packet_types.size()) {
                ++packet_types[type];
            }
            if (packer.message_count() >= batch) {
                emit(packer.finish(), packet_types);
                packet_types = {};
            }
        }
        if (!packer.empty()) {
            emit(packer.finish(), packet_types);
        }
        if (holding) {
            send_on_lines(held, false, false, held_copies);
            holding = false;
        }
        std::uint64_t const end_packets = 3;
        for (std::uint64_t i = 0; i < end_packets; ++i) {
            send_on_lines(packer.end_of_session(), false, false, 1);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }

        apps::json_writer j;
        j.begin_object();
        j.field("elapsed_s", std::chrono::duration<double>(clock_type::now() - start).count());
        j.field("session", session);
        j.field("packets", sent.packets);
        j.field("messages", sent.messages);
        j.key("messages_by_type");
        write_types(j, sent.by_type);
        j.field("dropped_packets", dropped.packets);
        j.field("dropped_messages", dropped.messages);
        j.key("dropped_by_type");
        write_types(j, dropped.by_type);
        j.field("dropped_one_line_packets", dropped_one_line);
        j.field("duplicated_packets", duplicated);
        j.field("reordered_packets", reordered);
        j.field("heartbeats", heartbeats);
        j.field("end_of_session_packets", end_packets);
        j.field("next_sequence", packer.next_sequence());
        if (reader) {
            j.field("replay_truncated", reader->truncated());
        }
        j.end_object();
        std::fprintf(stderr,
                     "md_feed: sent %llu packets, %llu messages (dropped %llu packets / %llu "
                     "messages, duplicated %llu, reordered %llu, heartbeats %llu)\n",
                     static_cast<unsigned long long>(sent.packets),
                     static_cast<unsigned long long>(sent.messages),
                     static_cast<unsigned long long>(dropped.packets),
                     static_cast<unsigned long long>(dropped.messages),
                     static_cast<unsigned long long>(duplicated),
                     static_cast<unsigned long long>(reordered),
                     static_cast<unsigned long long>(heartbeats));
        std::printf("%s\n", j.str().c_str());
        if (!report_path.empty()) {
            std::ofstream file(report_path);
            file << j.str() << '\n';
        }
    } catch (std::exception const& e) {
        std::fprintf(stderr, "md_feed: %s\n", e.what());
        return 1;
    }
    return 0;
}
