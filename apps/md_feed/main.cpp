// md_feed: sends ITCH 5.0 over MoldUDP64 to md_receiver (or any MoldUDP64 consumer): generated
// (system events, a stock directory, then adds/executes/cancels/deletes/replaces/trades on live
// orders) or replayed from a Nasdaq BinaryFILE. Paced to --rate messages per second, heartbeats
// when idle, end-of-session packets at exit, optional fault injection. Prints what it sent as
// JSON (last line of stdout, and --report-json) so tests can compare with the receiver.
//
// A message waits in the packer at most --heartbeat seconds: at a low --rate a packet leaves
// with fewer than --batch messages rather than hold them longer than the MoldUDP64 heartbeat
// interval. A zero-length record in a --replay file is not a message: it is skipped, counted
// (replay_malformed_records in the report) and reported on stderr, and the replay goes on.
//
// Exit codes: 0 ok, 1 runtime error (also: unreadable --replay, unwritable --report-json),
// 2 bad command line.
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
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

#include "cli_support.hpp"
#include "json_text.hpp"
#include <net/if.h>

namespace {

using namespace signet;
using clock_type = std::chrono::steady_clock;

std::atomic<bool> interrupted{false};
extern "C" void on_signal(int) {
    interrupted.store(true, std::memory_order_relaxed);
}

/// Messages per type byte: all 256 values, so replayed bytes >= 0x80 are counted too.
using type_counts = std::array<std::uint64_t, 256>;

struct counts {
    std::uint64_t packets = 0;
    std::uint64_t messages = 0;
    type_counts by_type{};

    void add(std::uint64_t packet_count, type_counts const& types) {
        packets += packet_count;
        for (std::size_t i = 0; i < by_type.size(); ++i) {
            messages += types[i] * packet_count;
            by_type[i] += types[i] * packet_count;
        }
    }
};

nlohmann::ordered_json types_json(type_counts const& by_type) {
    auto j = nlohmann::ordered_json::object();
    for (std::size_t c = 0; c < by_type.size(); ++c) {
        if (by_type[c] != 0) {
            j[apps::wire_text(std::string(1, static_cast<char>(c)))] = by_type[c];
        }
    }
    return j;
}

/// One UDP socket for every line. Multicast: TTL, loopback and (with --interface) the outgoing
/// interface are set for the targets' family. With --source the socket is bound to that local
/// address first, so datagrams carry it: a source-specific (SSM, 232.0.0.0/8) receiver accepts
/// nothing else, and an unbound socket on a `dev lo` route without `src` sends from 0.0.0.0.
class sender {
public:
    sender(std::vector<net::udp_endpoint> targets, std::optional<net::udp_endpoint> const& source,
           int ttl, bool loop, std::string const& interface)
        : targets_(std::move(targets)) {
        fd_ = ::socket(targets_.front().family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) {
            throw std::system_error(errno, std::generic_category(), "socket");
        }
        int sndbuf = 4 << 20;
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
        if (source && ::bind(fd_, source->data(), source->size()) != 0) {
            int const error = errno;
            std::string text = source->to_string();
            if (source->port() == 0) {
                text.erase(text.rfind(':')); // "127.0.0.1", as the user wrote it
            }
            throw std::system_error(error, std::generic_category(),
                                    "--source " + text +
                                        ": cannot bind the sending socket (it takes an address "
                                        "of this host, e.g. 127.0.0.1)");
        }
        bool const multicast = std::any_of(targets_.begin(), targets_.end(),
                                           [](auto const& t) { return t.is_multicast(); });
        if (multicast) {
            set_multicast_options(ttl, loop, interface);
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
            throw std::system_error(errno, std::generic_category(), "sendto " + to.to_string());
        }
    }

private:
    void set(int level, int name, int value, std::string const& what) {
        if (::setsockopt(fd_, level, name, &value, sizeof(value)) != 0) {
            throw std::system_error(errno, std::generic_category(), what);
        }
    }

    void set_multicast_options(int ttl, bool loop, std::string const& interface) {
        int index = 0;
        if (!interface.empty()) {
            index = static_cast<int>(::if_nametoindex(interface.c_str()));
            if (index == 0) {
                throw std::system_error(errno, std::generic_category(),
                                        "--interface '" + interface + "'");
            }
        }
        if (targets_.front().is_v6()) {
            set(IPPROTO_IPV6, IPV6_MULTICAST_HOPS, ttl, "multicast hop limit (--ttl)");
            set(IPPROTO_IPV6, IPV6_MULTICAST_LOOP, loop ? 1 : 0, "multicast loopback (--loop)");
            if (index != 0) {
                set(IPPROTO_IPV6, IPV6_MULTICAST_IF, index, "--interface '" + interface + "'");
            }
            return;
        }
        set(IPPROTO_IP, IP_MULTICAST_TTL, ttl, "multicast TTL (--ttl)");
        set(IPPROTO_IP, IP_MULTICAST_LOOP, loop ? 1 : 0, "multicast loopback (--loop)");
        if (index != 0) {
            ip_mreqn request{};
            request.imr_ifindex = index;
            if (::setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_IF, &request, sizeof(request)) != 0) {
                throw std::system_error(errno, std::generic_category(),
                                        "--interface '" + interface + "'");
            }
        }
    }

    std::vector<net::udp_endpoint> targets_;
    int fd_ = -1;
};

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"md_feed: ITCH 5.0 over MoldUDP64 feed generator"};
    cli.option_defaults()->always_capture_default();
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
    std::string source;
    double heartbeat_s = 1.0;
    std::uint64_t drop_every = 0;
    std::uint64_t dup_every = 0;
    std::uint64_t reorder_every = 0;
    std::string drop_line = "both";
    std::string replay;
    std::string report_path;
    auto* to_option =
        cli.add_option("--to", to, "line A destination ip:port (unicast or multicast); required");
    cli.add_option("--to-b", to_b, "line B destination ip:port (A/B: every packet sent to both)");
    cli.add_option("--rate", rate, "messages per second; 0 = as fast as possible")
        ->check(apps::number_in(0, 1e9, "messages/s"));
    cli.add_option("--duration", duration_s,
                   "seconds of data, then close (at most one year); 0 = until --count or a signal")
        ->check(apps::number_in(0, apps::max_duration_s, "s"));
    cli.add_option("--count", count, "body messages, then close (generator); 0 = no limit")
        ->check(apps::whole_number());
    cli.add_option("--batch", batch, "messages per packet (at most; packets stay <= 1400 bytes)")
        ->check(CLI::Range(1U, 1000U));
    cli.add_option("--session", session, "MoldUDP64 session name (10 characters, space padded)");
    cli.add_option("--seed", seed, "generator seed (same seed, same stream)")
        ->check(apps::whole_number());
    cli.add_option("--symbols", symbols, "stocks in the directory")->check(CLI::Range(1, 65535));
    cli.add_option("--ttl", ttl, "multicast TTL")->check(CLI::Range(0, 255));
    cli.add_option("--loop", loop, "multicast loopback (true/false)");
    cli.add_option("--interface", interface, "multicast interface name")->default_str("none");
    cli.add_option("--source", source,
                   "local IP to send from (the socket binds to it): a source-specific (232/8) "
                   "receiver accepts only its configured source; none = the route's source "
                   "address (0.0.0.0 on a `dev lo` route without `src`)")
        ->type_name("IP")
        ->default_str("none");
    cli.add_option("--heartbeat", heartbeat_s,
                   "MoldUDP64 heartbeat interval: a heartbeat after this much silence, and no "
                   "message waits longer than this for its packet")
        ->check(apps::number_in(0.001, 3600, "s"));
    cli.add_option("--drop-every", drop_every, "fault injection: do not send every Nth packet")
        ->check(apps::whole_number());
    cli.add_option("--drop-line", drop_line, "which line --drop-every affects: a, b or both")
        ->check(CLI::IsMember({"a", "b", "both"}));
    cli.add_option("--dup-every", dup_every, "fault injection: send every Nth packet twice")
        ->check(apps::whole_number());
    cli.add_option("--reorder-every", reorder_every,
                   "fault injection: send every Nth packet after the one that follows it")
        ->check(apps::whole_number());
    cli.add_option("--replay", replay, "send a Nasdaq BinaryFILE (2-byte length-prefixed ITCH)");
    cli.add_option("--report-json", report_path, "also write the report to this file");
    if (auto const code = apps::parse_command_line(cli, argc, argv, "md_feed", {to_option})) {
        return *code;
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
    std::optional<net::udp_endpoint> source_address;
    if (!source.empty()) {
        source_address = net::udp_endpoint::try_parse_address(source);
        if (!source_address) {
            source_address = net::udp_endpoint::try_parse(source);
        }
        if (!source_address) {
            std::fprintf(stderr, "md_feed: --source must be an IP address (or ip:port), e.g. "
                                 "127.0.0.1\n");
            return 2;
        }
    }
    for (auto const& [name, other] :
         {std::pair{"--to-b", target_b}, {"--source", source_address}}) {
        if (other && other->family() != target_a->family()) {
            std::fprintf(stderr, "md_feed: %s and --to are different address families\n", name);
            return 2;
        }
    }
    if (drop_line != "both" && !target_b) {
        std::fprintf(stderr, "md_feed: --drop-line %s needs --to-b\n", drop_line.c_str());
        return 2;
    }
    // Open the report first: an unwritable path is an error before anything is sent.
    std::ofstream report_file;
    if (!report_path.empty()) {
        errno = 0;
        report_file.open(report_path, std::ios::trunc);
        if (!report_file) {
            std::fprintf(stderr, "md_feed: cannot write the report to %s: %s\n",
                         report_path.c_str(), std::strerror(errno != 0 ? errno : EIO));
            return 1;
        }
    }
    ::signal(SIGINT, on_signal);
    ::signal(SIGTERM, on_signal);

    try {
        std::vector<net::udp_endpoint> targets{*target_a};
        if (target_b) {
            targets.push_back(*target_b);
        }
        sender out(targets, source_address, ttl, loop, interface);

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
        std::uint64_t replay_malformed = 0; // zero-length records: skipped
        std::uint64_t index = 0;            // data packets built
        std::vector<std::byte> held;
        int held_copies = 1;
        bool holding = false;

        auto const start = clock_type::now();
        auto last_send = start;
        auto oldest_pending = start; // when the packer's first message went in
        auto const heartbeat = std::chrono::duration<double>(heartbeat_s);
        // --duration is at most a year (checked above), so this cannot overflow.
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

        auto emit = [&](std::span<std::byte const> bytes, type_counts const& types) {
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

        type_counts packet_types{};
        auto flush = [&] {
            emit(packer.finish(), packet_types);
            packet_types = {};
        };
        for (;;) {
            if (!closing &&
                (interrupted.load(std::memory_order_relaxed) || clock_type::now() >= stop_at)) {
                closing = true;
                if (generator) {
                    generator->close();
                }
            }
            // No message waits longer than the heartbeat interval for its packet.
            if (!packer.empty() && clock_type::now() - oldest_pending >= heartbeat) {
                flush();
            }
            // Pace by messages: wait while ahead of rate * elapsed.
            if (rate > 0 && !closing) {
                double const elapsed =
                    std::chrono::duration<double>(clock_type::now() - start).count();
                if (static_cast<double>(messages_built) >= rate * elapsed) {
                    if (clock_type::now() - last_send >= heartbeat && packer.empty()) {
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
                if (n == 0) {
                    break; // finished: the closing events went out
                }
            } else {
                std::optional<std::span<std::byte const>> record;
                if (!closing) {
                    record = reader->next();
                }
                if (!record) {
                    break; // end of file (or interrupted)
                }
                if (record->empty()) {
                    ++replay_malformed;
                    if (replay_malformed == 1) {
                        std::fprintf(stderr,
                                     "md_feed: %s: record %llu has length 0 (not a message): "
                                     "skipped, counted as replay_malformed_records; the replay "
                                     "goes on\n",
                                     replay.c_str(),
                                     static_cast<unsigned long long>(reader->messages()));
                    }
                    continue;
                }
                message = *record;
            }
            if (!packer.append(message)) {
                flush();
                if (!packer.append(message)) {
                    std::fprintf(stderr, "md_feed: a %zu-byte message does not fit a packet\n",
                                 message.size());
                    return 1;
                }
            }
            if (packer.message_count() == 1) {
                oldest_pending = clock_type::now();
            }
            ++messages_built;
            ++packet_types[static_cast<unsigned char>(message[0])];
            if (packer.message_count() >= batch) {
                flush();
            }
        }
        if (!packer.empty()) {
            flush();
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

        nlohmann::ordered_json j;
        j["elapsed_s"] = std::chrono::duration<double>(clock_type::now() - start).count();
        j["session"] = apps::wire_text(session);
        j["packets"] = sent.packets;
        j["messages"] = sent.messages;
        j["messages_by_type"] = types_json(sent.by_type);
        j["dropped_packets"] = dropped.packets;
        j["dropped_messages"] = dropped.messages;
        j["dropped_by_type"] = types_json(dropped.by_type);
        j["dropped_one_line_packets"] = dropped_one_line;
        j["duplicated_packets"] = duplicated;
        j["reordered_packets"] = reordered;
        j["heartbeats"] = heartbeats;
        j["end_of_session_packets"] = end_packets;
        j["next_sequence"] = packer.next_sequence();
        if (reader) {
            j["replay_truncated"] = reader->truncated();
            j["replay_malformed_records"] = replay_malformed;
        }
        std::string const report = apps::dump_json(j);
        if (replay_malformed != 0) {
            std::fprintf(stderr, "md_feed: %s: %llu zero-length record(s) skipped\n",
                         replay.c_str(), static_cast<unsigned long long>(replay_malformed));
        }
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
        std::printf("%s\n", report.c_str());
        if (report_file.is_open()) {
            report_file << report << '\n';
            report_file.close();
            if (!report_file) {
                std::fprintf(stderr, "md_feed: cannot write the report to %s\n",
                             report_path.c_str());
                return 1;
            }
        }
    } catch (std::exception const& e) {
        std::fprintf(stderr, "md_feed: %s\n", apps::describe(e).c_str());
        return 1;
    }
    return 0;
}
