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
// --replay-pcap re-sends the UDP payloads of a capture (pcap_source.hpp) at their captured
// timing scaled by --speed, or at a fixed --rate in packets per second, with the same fault
// injection; nothing is added (no heartbeats, no end-of-session packets).
//
// --serve-rerequests answers MoldUDP64 re-requests (rerequest_service.hpp) from a store of
// every message built or replayed, those that fault injection dropped included; after sending
// it keeps serving for --linger seconds so that receivers can recover the tail.
//
// Exit codes: 0 ok, 1 runtime error (also: unreadable --replay or --replay-pcap, a damaged
// capture, unwritable --report-json, --serve-rerequests port taken), 2 bad command line.
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

#include <arpa/inet.h>
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

#include "cli.hpp"
#include "json_text.hpp"
#include "pcap_source.hpp"
#include "rerequest_service.hpp"
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

/// Adds the messages of a MoldUDP64 data packet to `types` (by type byte) and returns the
/// sequence after its last message; 0 (nothing added) if the datagram is not a well-formed data
/// packet. For replayed captures, whose payloads md_feed did not build.
std::uint64_t count_messages(std::span<std::byte const> datagram, type_counts& types) {
    std::optional<md::moldudp64_header> const header = md::moldudp64_peek_header(datagram);
    if (!header || header->count == 0 || header->count == md::moldudp64_end_of_session_count) {
        return 0;
    }
    if (!md::moldudp64_blocks_fill(datagram, header->count)) { // validate before counting
        return 0;
    }
    std::size_t offset = md::moldudp64_header_size;
    for (std::uint32_t i = 0; i < header->count; ++i) {
        std::size_t const length = md::load_be16(datagram.data() + offset);
        if (length != 0) {
            ++types[std::to_integer<unsigned char>(datagram[offset + 2])];
        }
        offset += 2 + length;
    }
    return header->sequence + header->count;
}

/// Messages and their bytes in a BinaryFILE: the store's size for --serve-rerequests with
/// --replay and no --store-messages.
struct file_extent {
    std::size_t messages = 0;
    std::size_t bytes = 0;
};

file_extent scan_binary_file(std::string const& path) {
    md::binary_file_reader reader(path);
    file_extent extent;
    while (auto const record = reader.next()) {
        if (!record->empty()) {
            ++extent.messages;
            extent.bytes += record->size();
        }
    }
    return extent;
}

/// Sleeps until `due` (in steps of at most 50 ms, then yields for the last 200 µs); false if
/// interrupted or `stop_at` came first.
bool wait_until(clock_type::time_point due, clock_type::time_point stop_at) {
    for (;;) {
        if (interrupted.load(std::memory_order_relaxed)) {
            return false;
        }
        auto const now = clock_type::now();
        if (now >= stop_at) {
            return false;
        }
        if (now >= due) {
            return true;
        }
        auto const remaining = std::min(due, stop_at) - now;
        if (remaining > std::chrono::microseconds(200)) {
            std::this_thread::sleep_for(std::min<clock_type::duration>(
                remaining - std::chrono::microseconds(100), std::chrono::milliseconds(50)));
        } else {
            std::this_thread::yield();
        }
    }
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
    std::string replay_pcap;
    double speed = 1;
    int pcap_port = -1;
    std::string pcap_group;
    int serve_port = -1;
    std::size_t store_messages = 1'000'000;
    double rerequest_rate = 5000;
    unsigned rerequest_max_messages = 1000;
    double linger_s = 2;
    auto* to_option =
        cli.add_option("--to", to, "line A destination ip:port (unicast or multicast); required");
    cli.add_option("--to-b", to_b, "line B destination ip:port (A/B: every packet sent to both)");
    auto* rate_option =
        cli.add_option("--rate", rate,
                       "messages per second; 0 = as fast as possible (--replay-pcap: packets "
                       "per second, instead of the captured timing)")
            ->check(cli::number_in(0, 1e9, "messages/s"));
    cli.add_option("--duration", duration_s,
                   "seconds of data, then close (at most one year); 0 = until --count or a signal")
        ->check(cli::number_in(0, cli::max_duration_s, "s"));
    cli.add_option("--count", count, "body messages, then close (generator); 0 = no limit")
        ->check(cli::whole_number());
    cli.add_option("--batch", batch, "messages per packet (at most; packets stay <= 1400 bytes)")
        ->check(CLI::Range(1U, 1000U));
    auto* session_option =
        cli.add_option("--session", session,
                       "MoldUDP64 session name (10 characters, space padded); --replay-pcap with "
                       "--serve-rerequests: the session served (default: the capture's first)");
    cli.add_option("--seed", seed, "generator seed (same seed, same stream)")
        ->check(cli::whole_number());
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
        ->check(cli::number_in(0.001, 3600, "s"));
    cli.add_option("--drop-every", drop_every, "fault injection: do not send every Nth packet")
        ->check(cli::whole_number());
    cli.add_option("--drop-line", drop_line, "which line --drop-every affects: a, b or both")
        ->check(CLI::IsMember({"a", "b", "both"}));
    cli.add_option("--dup-every", dup_every, "fault injection: send every Nth packet twice")
        ->check(cli::whole_number());
    cli.add_option("--reorder-every", reorder_every,
                   "fault injection: send every Nth packet after the one that follows it")
        ->check(cli::whole_number());
    cli.add_option("--replay", replay, "send a Nasdaq BinaryFILE (2-byte length-prefixed ITCH)");
    cli.add_option("--report-json", report_path, "also write the report to this file");
    auto* pcap_option = cli.add_option("--replay-pcap", replay_pcap,
                                       "re-send the UDP payloads of a capture (pcap/pcapng; "
                                       "Ethernet, Linux cooked SLL/SLL2 or raw IPv4 frames) at "
                                       "the captured timing scaled by --speed, or at --rate "
                                       "packets/s")
                            ->type_name("FILE");
    auto* speed_option =
        cli.add_option("--speed", speed,
                       "--replay-pcap: the captured timing sped up this many times; 0 = as fast "
                       "as possible")
            ->check(cli::number_in(0, 1e6, "x"));
    auto* pcap_port_option =
        cli.add_option("--pcap-port", pcap_port,
                       "--replay-pcap: only datagrams to this destination port")
            ->check(CLI::Range(0, 65535))
            ->default_str("any");
    auto* pcap_group_option =
        cli.add_option("--pcap-group", pcap_group,
                       "--replay-pcap: only datagrams to this destination IPv4 address "
                       "(a multicast group, say)")
            ->type_name("IP")
            ->default_str("any");
    auto* serve_option =
        cli.add_option("--serve-rerequests", serve_port,
                       "answer MoldUDP64 re-requests from any client on this UDP port (any "
                       "address of --to's family; 0 = a free port, printed on stderr)")
            ->check(CLI::Range(0, 65535))
            ->type_name("PORT")
            ->default_str("off");
    auto* store_option =
        cli.add_option("--store-messages", store_messages,
                       "--serve-rerequests: the last N messages are kept to answer from (N x 50 "
                       "bytes: ITCH messages; longer ones, fewer)")
            ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32))
            ->default_str("1000000, --replay: the whole file");
    auto* rerequest_rate_option =
        cli.add_option("--rerequest-rate", rerequest_rate,
                       "--serve-rerequests: requests per second per client (token bucket, "
                       "burst of one second)")
            ->check(cli::number_in(0.001, 1e9, "requests/s"));
    auto* rerequest_max_option =
        cli.add_option("--rerequest-max-messages", rerequest_max_messages,
                       "--serve-rerequests: messages per answer at most (larger requests are "
                       "clamped)")
            ->check(CLI::Range(1U, 65535U));
    auto* linger_option =
        cli.add_option("--linger", linger_s,
                       "--serve-rerequests: keep answering this many seconds after sending "
                       "ends, so receivers can recover the tail")
            ->check(cli::number_in(0, 3600, "s"))
            ->default_str("2 when serving, else 0");
    if (auto const code = cli::parse_command_line(cli, argc, argv, "md_feed", {to_option})) {
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
    bool const pcap_mode = pcap_option->count() > 0;
    if (pcap_mode && !replay.empty()) {
        std::fprintf(stderr, "md_feed: --replay and --replay-pcap cannot be combined\n");
        return 2;
    }
    for (auto const* option : {speed_option, pcap_port_option, pcap_group_option}) {
        if (option->count() > 0 && !pcap_mode) {
            std::fprintf(stderr, "md_feed: %s needs --replay-pcap\n", option->get_name().c_str());
            return 2;
        }
    }
    if (pcap_mode && speed_option->count() > 0 && rate_option->count() > 0) {
        std::fprintf(stderr, "md_feed: --speed and --rate cannot be combined (--replay-pcap "
                             "keeps the captured timing scaled by --speed, or sends at --rate "
                             "packets/s)\n");
        return 2;
    }
    std::optional<std::uint32_t> pcap_address;
    if (!pcap_group.empty()) {
        in_addr address{};
        if (::inet_pton(AF_INET, pcap_group.c_str(), &address) != 1) {
            std::fprintf(stderr, "md_feed: --pcap-group must be an IPv4 address, e.g. "
                                 "239.1.1.1\n");
            return 2;
        }
        pcap_address = ntohl(address.s_addr);
    }
    bool const serving = serve_option->count() > 0;
    for (auto const* option :
         {store_option, rerequest_rate_option, rerequest_max_option, linger_option}) {
        if (option->count() > 0 && !serving) {
            std::fprintf(stderr, "md_feed: %s needs --serve-rerequests\n",
                         option->get_name().c_str());
            return 2;
        }
    }
    if (!serving) {
        linger_s = 0;
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

        // A capture that cannot be read is an error before anything is sent.
        std::optional<apps::pcap_source> capture;
        if (pcap_mode) {
            std::optional<std::uint16_t> port;
            if (pcap_port >= 0) {
                port = static_cast<std::uint16_t>(pcap_port);
            }
            capture.emplace(replay_pcap, apps::pcap_filter{.destination_port = port,
                                                           .destination_address = pcap_address});
        }
        std::optional<apps::rerequest_service> service;
        if (serving) {
            // Room for the last N messages of up to 50 bytes (ITCH), plus one that wraps.
            std::size_t store_bytes = store_messages * md::itch50::max_message_length +
                                      md::message_store::max_message_size;
            if (!replay.empty() && store_option->count() == 0) {
                file_extent const extent = scan_binary_file(replay); // the whole file
                store_messages = std::max<std::size_t>(extent.messages, 1);
                store_bytes = std::max<std::size_t>(extent.bytes, 1);
            }
            service.emplace(apps::rerequest_service_options{
                .family = target_a->family(),
                .port = static_cast<std::uint16_t>(serve_port),
                .store_messages = store_messages,
                .store_bytes = store_bytes,
                .session = pcap_mode && session_option->count() == 0 ? std::string() : session,
                .max_messages_per_answer = rerequest_max_messages,
                .requests_per_second = rerequest_rate});
            std::string const served = service->session();
            std::fprintf(stderr,
                         "md_feed: serving re-requests on port %u (any %s address), session "
                         "%s, store of %zu messages / %zu bytes\n",
                         static_cast<unsigned>(service->port()),
                         target_a->is_v6() ? "IPv6" : "IPv4",
                         served.empty() ? "of the capture's first data packet" : served.c_str(),
                         store_messages, store_bytes);
        }

        std::optional<md::itch_generator> generator;
        std::optional<md::binary_file_reader> reader;
        if (pcap_mode) {
            // the capture is the source
        } else if (replay.empty()) {
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
        held.reserve(65536); // a held packet never reallocates in the send loop
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
            std::span<std::byte const> const packet = packer.finish();
            if (service) {
                service->record(packet); // dropped packets too: recovery needs them
            }
            emit(packet, packet_types);
            packet_types = {};
        };

        // --replay-pcap: each datagram at its captured time after the first, scaled by --speed,
        // or at --rate packets per second.
        std::uint64_t pcap_next_sequence = 0; // after the last message of the capture
        std::string pcap_error;
        if (capture) {
            bool const fixed_rate = rate_option->count() > 0;
            std::optional<std::int64_t> first_ns;
            clock_type::time_point first_due{};
            std::uint64_t replayed = 0;
            // Offsets beyond a year (a tiny --speed) are clamped, so time points cannot overflow.
            double const max_offset_ns = cli::max_duration_s * 1e9;
            for (;;) {
                if (interrupted.load(std::memory_order_relaxed) || clock_type::now() >= stop_at) {
                    break;
                }
                std::optional<apps::pcap_source::datagram> datagram;
                try {
                    datagram = capture->next();
                } catch (std::exception const& e) {
                    pcap_error = e.what(); // what came before it was sent
                    break;
                }
                if (!datagram) {
                    break;
                }
                if (!first_ns) {
                    first_ns = datagram->time_ns;
                    first_due = clock_type::now();
                }
                double offset_ns = -1; // -1: now
                if (fixed_rate) {
                    if (rate > 0) {
                        offset_ns = static_cast<double>(replayed) / rate * 1e9;
                    }
                } else if (speed > 0) {
                    offset_ns = static_cast<double>(datagram->time_ns - *first_ns) / speed;
                }
                if (offset_ns > 0) {
                    auto const due = first_due + std::chrono::duration_cast<clock_type::duration>(
                                                     std::chrono::duration<double, std::nano>(
                                                         std::min(offset_ns, max_offset_ns)));
                    if (!wait_until(due, stop_at)) {
                        break;
                    }
                }
                type_counts types{};
                pcap_next_sequence =
                    std::max(pcap_next_sequence, count_messages(datagram->payload, types));
                if (service) {
                    service->record(datagram->payload);
                }
                emit(datagram->payload, types);
                ++replayed;
            }
        }

        while (!pcap_mode) { // the generator or the BinaryFILE
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
        std::uint64_t const end_packets = pcap_mode ? 0 : 3; // a capture has its own
        for (std::uint64_t i = 0; i < end_packets; ++i) {
            send_on_lines(packer.end_of_session(), false, false, 1);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        if (service) {
            // Serve the tail: a receiver learns of its last gap from the end of session. A
            // signal ends the wait.
            auto const linger_until =
                clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(linger_s));
            (void)wait_until(clock_type::time_point::max(), linger_until);
            service->stop();
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
        j["next_sequence"] = pcap_mode ? pcap_next_sequence : packer.next_sequence();
        if (reader) {
            j["replay_truncated"] = reader->truncated();
            j["replay_malformed_records"] = replay_malformed;
        }
        if (capture) {
            apps::pcap_counts const& c = capture->counts();
            nlohmann::ordered_json p;
            p["file"] = apps::wire_text(replay_pcap);
            p["link_type"] = capture->link_name();
            p["frames"] = c.frames;
            p["datagrams"] = c.datagrams;
            p["filtered"] = c.filtered;
            p["other"] = c.other;
            p["fragments"] = c.fragments;
            p["truncated"] = c.truncated;
            p["error"] = apps::wire_text(pcap_error);
            j["pcap"] = p;
        }
        if (service) {
            md::rerequest_stats const r = service->stats();
            apps::rerequest_store_counts const store = service->store_counts();
            nlohmann::ordered_json q;
            q["port"] = service->port();
            q["session"] = apps::wire_text(service->session());
            q["requests"] = r.requests;
            q["answered"] = r.answered;
            q["messages_resent"] = r.messages_resent;
            q["packets_resent"] = r.packets_resent;
            q["malformed"] = r.malformed;
            q["wrong_session"] = r.wrong_session;
            q["zero_sequence"] = r.zero_sequence;
            q["zero_count"] = r.zero_count;
            q["rate_limited"] = r.rate_limited;
            q["too_many_requesters"] = r.too_many_requesters;
            q["evicted"] = r.evicted;
            q["not_yet_sent"] = r.not_yet_sent;
            q["oversized"] = r.oversized;
            q["clamped"] = r.clamped;
            q["partial"] = r.partial;
            q["send_errors"] = store.send_errors;
            q["stored_messages"] = store.stored;
            q["store_evictions"] = store.evicted;
            q["store_restarts"] = store.restarts;
            j["rerequests"] = q;
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
        if (service) {
            md::rerequest_stats const r = service->stats();
            std::fprintf(stderr,
                         "md_feed: re-requests: %llu received, %llu answered (%llu messages in "
                         "%llu packets), %llu ignored\n",
                         static_cast<unsigned long long>(r.requests),
                         static_cast<unsigned long long>(r.answered),
                         static_cast<unsigned long long>(r.messages_resent),
                         static_cast<unsigned long long>(r.packets_resent),
                         static_cast<unsigned long long>(r.requests - r.answered));
        }
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
        if (!pcap_error.empty()) {
            std::fprintf(stderr, "md_feed: %s\n", pcap_error.c_str());
            return 1;
        }
    } catch (std::exception const& e) {
        std::fprintf(stderr, "md_feed: %s\n", cli::describe(e).c_str());
        return 1;
    }
    return 0;
}
