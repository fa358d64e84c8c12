// md_feed's capture replay and re-request server.
//
// FrameDecoding: the link, IPv4 and UDP layers of pcap_source (Ethernet with VLAN tags, Linux
// cooked SLL/SLL2, raw IPv4; fragments, truncation, padding, other protocols).
// PcapReplay: captures written with libpcap's dump API (pcap_open_dead + pcap_dump) from
// generated MoldUDP64 traffic, replayed by the md_feed binary into a UDP socket of the test:
// the payloads arrive byte for byte and in order, filtered by port and address, at the captured
// timing scaled by --speed or at --rate, with fault injection on top; bad files exit 1.
// RerequestServer: md_feed --serve-rerequests with dropped packets; the test recovers every gap
// as a receiver would and gets the generator's exact stream back; per-client rate limits,
// ignored requests counted in the report, the linger after the end of the session.
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <signet/md/binary_file_reader.hpp>
#include <signet/md/itch50.hpp>
#include <signet/md/itch_generator.hpp>
#include <signet/md/moldudp64.hpp>
#include <signet/md/moldudp64_request.hpp>

#include "md/md_test_support.hpp"
#include "pcap_source.hpp"
#include <nlohmann/json.hpp>
#include <pcap/pcap.h>

extern char** environ;

namespace {

namespace t = signet::md::test;
using t::bytes;
using t::view;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

// ---- frames ----------------------------------------------------------------------------------

constexpr std::uint32_t ip(unsigned a, unsigned b, unsigned c, unsigned d) {
    return (a << 24) | (b << 16) | (c << 8) | d;
}

struct ip_options {
    std::uint32_t source = ip(10, 0, 0, 1);
    std::uint32_t destination = ip(239, 1, 1, 1);
    std::uint8_t protocol = 17;
    std::uint16_t fragment = 0; // flags + offset field
    std::size_t header_words = 5;
};

/// IPv4 + UDP carrying `payload`.
bytes ipv4_udp(bytes const& payload, std::uint16_t port, ip_options o = {}) {
    std::size_t const header = o.header_words * 4;
    bytes b(header + 8 + payload.size());
    b[0] = static_cast<std::byte>(0x40 | o.header_words);
    t::put_be(b, 2, b.size(), 2);
    t::put_be(b, 6, o.fragment, 2);
    b[8] = std::byte{64};
    b[9] = static_cast<std::byte>(o.protocol);
    t::put_be(b, 12, o.source, 4);
    t::put_be(b, 16, o.destination, 4);
    t::put_be(b, header, 40000, 2);
    t::put_be(b, header + 2, port, 2);
    t::put_be(b, header + 4, 8 + payload.size(), 2);
    std::copy(payload.begin(), payload.end(), b.begin() + static_cast<std::ptrdiff_t>(header + 8));
    return b;
}

bytes ethernet(bytes const& network, std::uint16_t ethertype = 0x0800,
               std::vector<std::uint16_t> const& vlans = {}) {
    bytes b(12, std::byte{0x02});
    for (std::uint16_t const vlan : vlans) {
        b.resize(b.size() + 4);
        t::put_be(b, b.size() - 4, 0x8100, 2);
        t::put_be(b, b.size() - 2, vlan, 2);
    }
    b.resize(b.size() + 2);
    t::put_be(b, b.size() - 2, ethertype, 2);
    b.insert(b.end(), network.begin(), network.end());
    if (b.size() < 60) {
        b.resize(60); // Ethernet's minimum frame: padding after the IP packet
    }
    return b;
}

bytes linux_sll(bytes const& network, std::uint16_t protocol = 0x0800) {
    bytes b(16);
    t::put_be(b, 0, 4, 2); // sent by us
    t::put_be(b, 2, 1, 2); // ARPHRD_ETHER
    t::put_be(b, 4, 6, 2);
    t::put_be(b, 14, protocol, 2);
    b.insert(b.end(), network.begin(), network.end());
    return b;
}

bytes linux_sll2(bytes const& network) {
    bytes b(20);
    t::put_be(b, 0, 0x0800, 2);
    b.insert(b.end(), network.begin(), network.end());
    return b;
}

// ---- traffic and captures ---------------------------------------------------------------------

/// MoldUDP64 packets of generated ITCH (8 messages each, then a heartbeat-free end).
std::vector<bytes> mold_traffic(std::size_t messages, std::string_view session = "CAPTURE1") {
    signet::md::itch_generator generator({.seed = 7, .symbols = 4, .messages = messages});
    std::array<std::byte, 1400> buffer{};
    signet::md::moldudp64_packer packer(buffer, session, 1, {.max_messages = 8});
    std::vector<bytes> packets;
    auto flush = [&] {
        auto const p = packer.finish();
        if (!p.empty()) {
            packets.emplace_back(p.begin(), p.end());
        }
    };
    for (;;) {
        std::size_t const n = generator.next(packer.message_space());
        if (n == 0) {
            if (generator.finished()) {
                break;
            }
            flush();
            continue;
        }
        packer.commit(n);
        if (packer.message_count() == 8) {
            flush();
        }
    }
    flush();
    return packets;
}

struct frame {
    bytes data;
    std::int64_t time_us = 0;
    std::size_t original_length = 0; // 0: data.size()
};

void write_capture(std::filesystem::path const& path, int link, std::vector<frame> const& frames) {
    pcap_t* const dead = pcap_open_dead(link, 65535);
    ASSERT_NE(dead, nullptr);
    pcap_dumper_t* const dumper = pcap_dump_open(dead, path.c_str());
    ASSERT_NE(dumper, nullptr) << pcap_geterr(dead);
    for (frame const& f : frames) {
        pcap_pkthdr header{};
        header.ts.tv_sec = static_cast<time_t>(1'700'000'000 + f.time_us / 1'000'000);
        header.ts.tv_usec = static_cast<suseconds_t>(f.time_us % 1'000'000);
        header.caplen = static_cast<bpf_u_int32>(f.data.size());
        header.len =
            static_cast<bpf_u_int32>(f.original_length != 0 ? f.original_length : f.data.size());
        pcap_dump(reinterpret_cast<u_char*>(dumper), &header,
                  reinterpret_cast<u_char const*>(f.data.data()));
    }
    pcap_dump_close(dumper);
    pcap_close(dead);
}

// ---- processes and sockets --------------------------------------------------------------------

class scratch_dir {
public:
    scratch_dir() {
        static std::atomic<int> counter{0};
        path_ = std::filesystem::temp_directory_path() /
                ("md_feed_test_" + std::to_string(::getpid()) + "_" +
                 // relaxed: a unique number, nothing else
                 std::to_string(counter.fetch_add(1, std::memory_order_relaxed)));
        std::filesystem::create_directories(path_);
    }
    ~scratch_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::filesystem::path operator/(std::string const& name) const { return path_ / name; }
    std::filesystem::path const& path() const { return path_; }

private:
    std::filesystem::path path_;
};

std::string read_text(std::filesystem::path const& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

/// md_feed running with stdout and stderr in files.
class feed_process {
public:
    feed_process(std::vector<std::string> const& args, scratch_dir const& dir, std::string tag)
        : out_(dir / (tag + ".out"))
        , err_(dir / (tag + ".err")) {
        std::vector<std::string> all{SIGNET_MD_FEED};
        all.insert(all.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (std::string& a : all) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                         0644);
        posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                         0644);
        int const error = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (error != 0) {
            ADD_FAILURE() << "posix_spawn " << SIGNET_MD_FEED << ": " << std::strerror(error);
            pid_ = -1;
        }
    }
    ~feed_process() {
        if (pid_ > 0 && !exit_code_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    feed_process(feed_process const&) = delete;
    feed_process& operator=(feed_process const&) = delete;

    void interrupt() const { ::kill(pid_, SIGINT); }

    /// The exit code (-1: killed after the timeout, or by a signal).
    int wait(std::chrono::seconds timeout = 60s) {
        if (exit_code_) {
            return *exit_code_;
        }
        auto const deadline = clock_type::now() + timeout;
        for (;;) {
            int status = 0;
            pid_t const done = ::waitpid(pid_, &status, WNOHANG);
            if (done == pid_) {
                exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
                return *exit_code_;
            }
            if (clock_type::now() > deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, nullptr, 0);
                exit_code_ = -1;
                ADD_FAILURE() << "md_feed did not exit within " << timeout.count() << " s";
                return -1;
            }
            std::this_thread::sleep_for(10ms);
        }
    }

    std::string err() const { return read_text(err_); }
    std::string out() const { return read_text(out_); }
    nlohmann::json report() const {
        std::string const text = out();
        auto const last = text.find_last_of('\n', text.size() >= 2 ? text.size() - 2 : 0);
        std::string const line = last == std::string::npos ? text : text.substr(last + 1);
        return nlohmann::json::parse(line, nullptr, false);
    }

    /// Waits for a line of stderr containing `text`; returns it (empty on timeout).
    std::string wait_for_err(std::string const& text, std::chrono::seconds timeout = 30s) const {
        auto const deadline = clock_type::now() + timeout;
        while (clock_type::now() < deadline) {
            std::istringstream lines(err());
            for (std::string line; std::getline(lines, line);) {
                if (line.find(text) != std::string::npos) {
                    return line;
                }
            }
            std::this_thread::sleep_for(10ms);
        }
        return {};
    }

private:
    std::filesystem::path out_;
    std::filesystem::path err_;
    pid_t pid_ = -1;
    std::optional<int> exit_code_;
};

struct received {
    clock_type::time_point at;
    bytes data;
};

/// A UDP socket on 127.0.0.1 with a thread that records every datagram.
class udp_sink {
public:
    udp_sink() {
        fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int rcvbuf = 8 << 20;
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd_, reinterpret_cast<sockaddr const*>(&address), sizeof(address)) != 0) {
            ADD_FAILURE() << "bind: " << std::strerror(errno);
        }
        socklen_t length = sizeof(address);
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] { run(); });
    }
    ~udp_sink() {
        // relaxed: ends the loop; join() orders the rest.
        running_.store(false, std::memory_order_relaxed);
        thread_.join();
        ::close(fd_);
    }
    udp_sink(udp_sink const&) = delete;
    udp_sink& operator=(udp_sink const&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] std::string to() const { return "127.0.0.1:" + std::to_string(port_); }
    [[nodiscard]] std::vector<received> datagrams() const {
        std::lock_guard const lock(mutex_);
        return datagrams_;
    }
    /// Waits until `count` datagrams arrived (or `timeout`); returns them.
    std::vector<received> wait_for(std::size_t count, std::chrono::seconds timeout = 30s) const {
        auto const deadline = clock_type::now() + timeout;
        while (clock_type::now() < deadline) {
            {
                std::lock_guard const lock(mutex_);
                if (datagrams_.size() >= count) {
                    return datagrams_;
                }
            }
            std::this_thread::sleep_for(5ms);
        }
        return datagrams();
    }

private:
    void run() {
        std::vector<std::byte> buffer(65536);
        // relaxed: see the destructor.
        while (running_.load(std::memory_order_relaxed)) {
            pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
            if (::poll(&ready, 1, 20) <= 0) {
                continue;
            }
            ssize_t const n = ::recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
            if (n < 0) {
                continue;
            }
            auto const at = clock_type::now();
            std::lock_guard const lock(mutex_);
            datagrams_.push_back({at, bytes(buffer.begin(), buffer.begin() + n)});
        }
    }

    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> running_{true};
    mutable std::mutex mutex_;
    std::vector<received> datagrams_;
    std::thread thread_;
};

std::vector<bytes> payloads(std::vector<received> const& r) {
    std::vector<bytes> out;
    for (received const& d : r) {
        out.push_back(d.data);
    }
    return out;
}

// ---- FrameDecoding ----------------------------------------------------------------------------

using signet::apps::decode_frame;
using signet::apps::frame_kind;
using signet::apps::udp_frame;

TEST(FrameDecoding, EthernetIpv4UdpWithPaddingAndVlanTags) {
    bytes const payload = t::text_bytes("hello");
    for (auto const& vlans : {std::vector<std::uint16_t>{}, std::vector<std::uint16_t>{10},
                              std::vector<std::uint16_t>{10, 20}}) {
        bytes const f = ethernet(ipv4_udp(payload, 30001), 0x0800, vlans);
        ASSERT_EQ(f.size(), 60U) << "padded to the Ethernet minimum";
        udp_frame out;
        ASSERT_EQ(decode_frame(DLT_EN10MB, view(f), out), frame_kind::udp) << vlans.size();
        EXPECT_EQ(bytes(out.payload.begin(), out.payload.end()), payload); // not the padding
        EXPECT_EQ(out.destination_port, 30001);
        EXPECT_EQ(out.destination_address, ip(239, 1, 1, 1));
    }
    // IP options (a 24-byte header).
    bytes const with_options = ethernet(ipv4_udp(payload, 5, {.header_words = 6}), 0x0800);
    udp_frame out;
    ASSERT_EQ(decode_frame(DLT_EN10MB, view(with_options), out), frame_kind::udp);
    EXPECT_EQ(bytes(out.payload.begin(), out.payload.end()), payload);
}

TEST(FrameDecoding, LinuxCookedAndRawIp) {
    bytes const payload = t::text_bytes("cooked");
    bytes const network = ipv4_udp(payload, 40000, {.destination = ip(127, 0, 0, 1)});
    for (auto const& [link, f] : {std::pair{DLT_LINUX_SLL, linux_sll(network)},
                                  std::pair{DLT_LINUX_SLL2, linux_sll2(network)},
                                  std::pair{DLT_RAW, network}, std::pair{DLT_IPV4, network}}) {
        udp_frame out;
        ASSERT_EQ(decode_frame(link, view(f), out), frame_kind::udp) << link;
        EXPECT_EQ(bytes(out.payload.begin(), out.payload.end()), payload) << link;
        EXPECT_EQ(out.destination_port, 40000);
        EXPECT_EQ(out.destination_address, ip(127, 0, 0, 1));
    }
}

TEST(FrameDecoding, SkipsWhatIsNotAWholeIpv4UdpDatagram) {
    bytes const payload(100, std::byte{7});
    udp_frame out;
    // Other protocols.
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(ethernet(bytes(28), 0x0806)), out), frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(ethernet(bytes(40), 0x86DD)), out), frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(ethernet(ipv4_udp(payload, 1, {.protocol = 6}))), out),
              frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_LINUX_SLL, view(linux_sll(bytes(40), 0x86DD)), out),
              frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_RAW, view(bytes(40, std::byte{0x60})), out), frame_kind::other);
    EXPECT_EQ(decode_frame(DLT_PPP, view(ethernet(ipv4_udp(payload, 1))), out), frame_kind::other);
    // Fragments: more-fragments set, or an offset.
    EXPECT_EQ(
        decode_frame(DLT_EN10MB, view(ethernet(ipv4_udp(payload, 1, {.fragment = 0x2000}))), out),
        frame_kind::fragment);
    EXPECT_EQ(
        decode_frame(DLT_EN10MB, view(ethernet(ipv4_udp(payload, 1, {.fragment = 0x0010}))), out),
        frame_kind::fragment);
    // Don't-fragment is fine.
    EXPECT_EQ(
        decode_frame(DLT_EN10MB, view(ethernet(ipv4_udp(payload, 1, {.fragment = 0x4000}))), out),
        frame_kind::udp);
    // Cut by the snap length, or lengths that do not add up.
    bytes cut = ethernet(ipv4_udp(payload, 1));
    cut.resize(cut.size() - 10);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(cut), out), frame_kind::truncated);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(bytes(10)), out), frame_kind::truncated);
    bytes short_ip = ethernet(ipv4_udp(payload, 1));
    short_ip.resize(14 + 19);
    EXPECT_EQ(decode_frame(DLT_EN10MB, view(short_ip), out), frame_kind::truncated);
    bytes bad_udp_length = ipv4_udp(payload, 1);
    t::put_be(bad_udp_length, 24, 200, 2); // longer than the IP packet
    EXPECT_EQ(decode_frame(DLT_RAW, view(bad_udp_length), out), frame_kind::truncated);
    bytes bad_header = ipv4_udp(payload, 1);
    bad_header[0] = std::byte{0x44}; // a 16-byte header
    EXPECT_EQ(decode_frame(DLT_RAW, view(bad_header), out), frame_kind::truncated);
    EXPECT_EQ(decode_frame(DLT_LINUX_SLL2, view(bytes(12)), out), frame_kind::truncated);
}

// ---- PcapReplay -------------------------------------------------------------------------------

TEST(PcapReplay, ReplaysTheFilteredPayloadsByteForByteInOrder) {
    scratch_dir dir;
    std::vector<bytes> const packets = mold_traffic(2000);
    ASSERT_GT(packets.size(), 200U);
    // The feed to 239.1.1.1:30001, mixed with another port, another group, ARP, TCP, a
    // fragment and a frame cut by the snap length.
    std::vector<frame> frames;
    std::int64_t time_us = 0;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        frames.push_back({ethernet(ipv4_udp(packets[i], 30001)), time_us += 10});
        if (i % 50 == 0) {
            frames.push_back({ethernet(ipv4_udp(packets[i], 30002)), time_us});
            frames.push_back(
                {ethernet(ipv4_udp(packets[i], 30001, {.destination = ip(239, 1, 1, 2)})),
                 time_us});
            frames.push_back({ethernet(bytes(28), 0x0806), time_us});
            frames.push_back({ethernet(ipv4_udp(packets[i], 30001, {.protocol = 6})), time_us});
            frames.push_back(
                {ethernet(ipv4_udp(packets[i], 30001, {.fragment = 0x2000})), time_us});
            bytes cut = ethernet(ipv4_udp(packets[i], 30001));
            std::size_t const original = cut.size();
            cut.resize(100);
            frames.push_back({cut, time_us, original});
        }
    }
    write_capture(dir / "feed.pcap", DLT_EN10MB, frames);
    udp_sink sink;
    feed_process feed({"--to", sink.to(), "--replay-pcap", (dir / "feed.pcap").string(),
                       "--pcap-port", "30001", "--pcap-group", "239.1.1.1", "--speed", "0"},
                      dir, "feed");
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    EXPECT_EQ(payloads(sink.wait_for(packets.size())), packets);
    nlohmann::json const report = feed.report();
    ASSERT_FALSE(report.is_discarded()) << feed.out();
    std::size_t const extras = (packets.size() + 49) / 50;
    EXPECT_EQ(report["packets"], packets.size());
    EXPECT_EQ(report["messages"], 2000U + 3 + 4 + 3); // body, opening, directory, closing
    EXPECT_EQ(report["end_of_session_packets"], 0);
    EXPECT_EQ(report["pcap"]["link_type"], "EN10MB");
    EXPECT_EQ(report["pcap"]["frames"], packets.size() + 6 * extras);
    EXPECT_EQ(report["pcap"]["datagrams"], packets.size());
    EXPECT_EQ(report["pcap"]["filtered"], 2 * extras);
    EXPECT_EQ(report["pcap"]["other"], 2 * extras);
    EXPECT_EQ(report["pcap"]["fragments"], extras);
    EXPECT_EQ(report["pcap"]["truncated"], extras);
    EXPECT_EQ(report["pcap"]["error"], "");
    std::uint64_t next = 0;
    for (bytes const& p : packets) {
        next = signet::md::moldudp64_sequence(view(p)) +
               static_cast<std::uint64_t>((std::to_integer<unsigned>(p[18]) << 8) |
                                          std::to_integer<unsigned>(p[19]));
    }
    EXPECT_EQ(report["next_sequence"], next);
}

TEST(PcapReplay, LinuxCookedCaptureWithoutFiltersSendsEveryUdpPayload) {
    scratch_dir dir;
    std::vector<bytes> const packets = mold_traffic(300);
    std::vector<frame> frames;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        // Two ports, three groups: without filters all go.
        frames.push_back(
            {linux_sll(ipv4_udp(packets[i], static_cast<std::uint16_t>(30001 + i % 2),
                                {.destination = ip(239, 1, 1, static_cast<unsigned>(1 + i % 3))})),
             static_cast<std::int64_t>(i)});
    }
    frames.push_back({linux_sll(bytes(40), 0x86DD), 1000}); // IPv6: skipped
    write_capture(dir / "cooked.pcap", DLT_LINUX_SLL, frames);
    udp_sink sink;
    feed_process feed({"--to", sink.to(), "--replay-pcap", (dir / "cooked.pcap").string()}, dir,
                      "feed");
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    EXPECT_EQ(payloads(sink.wait_for(packets.size())), packets);
    nlohmann::json const report = feed.report();
    EXPECT_EQ(report["pcap"]["link_type"], "LINUX_SLL");
    EXPECT_EQ(report["pcap"]["other"], 1);
    // One port only.
    udp_sink odd;
    feed_process filtered({"--to", odd.to(), "--replay-pcap", (dir / "cooked.pcap").string(),
                           "--pcap-port", "30002", "--speed", "0"},
                          dir, "filtered");
    ASSERT_EQ(filtered.wait(), 0) << filtered.err();
    std::vector<bytes> want;
    for (std::size_t i = 1; i < packets.size(); i += 2) {
        want.push_back(packets[i]);
    }
    EXPECT_EQ(payloads(odd.wait_for(want.size())), want);
    EXPECT_EQ(filtered.report()["pcap"]["filtered"], packets.size() - want.size());
}

TEST(PcapReplay, KeepsTheCapturedTimingScaledBySpeedOrAFixedRate) {
    scratch_dir dir;
    std::vector<bytes> const packets = mold_traffic(40);
    ASSERT_GE(packets.size(), 5U);
    std::vector<frame> frames;
    for (std::size_t i = 0; i < 5; ++i) {
        frames.push_back({ethernet(ipv4_udp(packets[i], 1)),
                          static_cast<std::int64_t>(i) * 150'000}); // 150 ms apart: 600 ms
    }
    write_capture(dir / "slow.pcap", DLT_EN10MB, frames);
    auto span_of = [&](std::vector<std::string> extra, std::string tag) {
        udp_sink sink;
        std::vector<std::string> args{"--to", sink.to(), "--replay-pcap",
                                      (dir / "slow.pcap").string()};
        args.insert(args.end(), extra.begin(), extra.end());
        feed_process feed(args, dir, tag);
        EXPECT_EQ(feed.wait(), 0) << feed.err();
        std::vector<received> const r = sink.wait_for(5);
        EXPECT_EQ(r.size(), 5U) << tag;
        if (r.size() != 5) {
            return 0.0;
        }
        // Each gap keeps its proportion: packet i at about i/4 of the span.
        return std::chrono::duration<double>(r.back().at - r.front().at).count();
    };
    double const original = span_of({}, "speed1");
    double const doubled = span_of({"--speed", "2"}, "speed2");
    double const rate = span_of({"--rate", "20"}, "rate20"); // 4 gaps of 50 ms
    double const fast = span_of({"--speed", "0"}, "speed0");
    std::printf("spans: --speed 1 %.3f s, --speed 2 %.3f s, --rate 20 %.3f s, --speed 0 %.3f s\n",
                original, doubled, rate, fast);
    EXPECT_GE(original, 0.58);
    EXPECT_LT(original, 3.0);
    EXPECT_GE(doubled, 0.28);
    EXPECT_LT(doubled, original);
    EXPECT_GE(rate, 0.19);
    EXPECT_LT(rate, original);
    EXPECT_LT(fast, doubled);
}

TEST(PcapReplay, FaultInjectionAppliesOnTop) {
    scratch_dir dir;
    std::vector<bytes> const packets = mold_traffic(400);
    std::vector<frame> frames;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        frames.push_back({ethernet(ipv4_udp(packets[i], 1)), static_cast<std::int64_t>(i)});
    }
    write_capture(dir / "feed.pcap", DLT_EN10MB, frames);
    udp_sink sink;
    feed_process feed({"--to", sink.to(), "--replay-pcap", (dir / "feed.pcap").string(), "--speed",
                       "0", "--drop-every", "3", "--dup-every", "5"},
                      dir, "feed");
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    std::vector<bytes> want;
    std::size_t dropped = 0;
    std::size_t duplicated = 0;
    for (std::size_t i = 1; i <= packets.size(); ++i) {
        if (i % 3 == 0) {
            ++dropped;
            continue;
        }
        want.push_back(packets[i - 1]);
        if (i % 5 == 0) {
            want.push_back(packets[i - 1]);
            ++duplicated;
        }
    }
    EXPECT_EQ(payloads(sink.wait_for(want.size())), want);
    nlohmann::json const report = feed.report();
    EXPECT_EQ(report["dropped_packets"], dropped);
    EXPECT_EQ(report["duplicated_packets"], duplicated);
    EXPECT_EQ(report["packets"], packets.size() - dropped);
}

TEST(PcapReplay, BadFilesAreOneClearErrorAndExit1) {
    scratch_dir dir;
    udp_sink sink;
    auto run = [&](std::string const& path, std::string tag) {
        feed_process feed({"--to", sink.to(), "--replay-pcap", path, "--speed", "0"}, dir, tag);
        int const code = feed.wait();
        return std::pair{code, feed.err()};
    };
    auto [missing_code, missing] = run((dir / "missing.pcap").string(), "missing");
    EXPECT_EQ(missing_code, 1);
    EXPECT_NE(missing.find("missing.pcap: cannot read as a pcap or pcapng capture"),
              std::string::npos)
        << missing;
    EXPECT_NE(missing.find("No such file"), std::string::npos) << missing;

    auto [directory_code, directory] = run(dir.path().string(), "directory");
    EXPECT_EQ(directory_code, 1);
    EXPECT_NE(directory.find("is a directory"), std::string::npos) << directory;

    std::ofstream(dir / "text.pcap") << "this is not a capture file, just some text\n";
    auto [text_code, text] = run((dir / "text.pcap").string(), "text");
    EXPECT_EQ(text_code, 1);
    EXPECT_NE(text.find("text.pcap: cannot read as a pcap or pcapng capture"), std::string::npos)
        << text;

    write_capture(dir / "ppp.pcap", DLT_PPP, {{bytes(40), 0}});
    auto [ppp_code, ppp] = run((dir / "ppp.pcap").string(), "ppp");
    EXPECT_EQ(ppp_code, 1);
    EXPECT_NE(ppp.find("link type PPP is not supported"), std::string::npos) << ppp;
    EXPECT_TRUE(sink.datagrams().empty()) << "nothing is sent from a file that cannot be read";

    // A capture that ends inside a record: what came before is sent, then exit 1.
    std::vector<bytes> const packets = mold_traffic(100);
    std::vector<frame> frames;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        frames.push_back({ethernet(ipv4_udp(packets[i], 1)), static_cast<std::int64_t>(i)});
    }
    write_capture(dir / "cut.pcap", DLT_EN10MB, frames);
    std::filesystem::resize_file(dir / "cut.pcap",
                                 std::filesystem::file_size(dir / "cut.pcap") - 30);
    feed_process cut(
        {"--to", sink.to(), "--replay-pcap", (dir / "cut.pcap").string(), "--speed", "0"}, dir,
        "cut");
    EXPECT_EQ(cut.wait(), 1);
    EXPECT_NE(
        cut.err().find("cut.pcap: damaged after " + std::to_string(packets.size() - 1) + " frames"),
        std::string::npos)
        << cut.err();
    std::vector<bytes> const want(packets.begin(), packets.end() - 1);
    EXPECT_EQ(payloads(sink.wait_for(want.size())), want);
    nlohmann::json const report = cut.report();
    EXPECT_NE(report["pcap"]["error"].get<std::string>().find("damaged"), std::string::npos);
}

TEST(PcapReplay, CommandLineErrorsExit2) {
    scratch_dir dir;
    std::vector<std::vector<std::string>> const cases{
        {"--replay-pcap", "x.pcap", "--speed", "2", "--rate", "10"},
        {"--speed", "2"},
        {"--pcap-port", "1"},
        {"--replay-pcap", "x.pcap", "--pcap-group", "not-an-ip"},
        {"--replay-pcap", "x.pcap", "--replay", "x.itch"},
        {"--store-messages", "10"},
        {"--linger", "1"},
        {"--rerequest-rate", "5"},
        {"--rerequest-max-messages", "5"},
        {"--serve-rerequests", "70000"},
        {"--serve-rerequests", "0", "--rerequest-max-messages", "0"},
    };
    int i = 0;
    for (auto const& c : cases) {
        std::vector<std::string> args{"--to", "127.0.0.1:9", "--count", "1"};
        args.insert(args.end(), c.begin(), c.end());
        feed_process feed(args, dir, "case" + std::to_string(i++));
        EXPECT_EQ(feed.wait(), 2) << c.front() << ": " << feed.err();
        EXPECT_FALSE(feed.err().empty());
    }
}

// ---- RerequestServer --------------------------------------------------------------------------

/// The generator's stream as md_feed sends it (same options): message i is sequence i + 1.
std::vector<bytes> generated_stream(std::uint64_t count) {
    signet::md::itch_generator generator({.seed = 1, .symbols = 16, .messages = count});
    std::vector<bytes> out;
    std::array<std::byte, signet::md::itch50::max_message_length> buffer{};
    for (;;) {
        std::size_t const n = generator.next(buffer);
        if (n == 0) {
            return out;
        }
        out.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
    }
}

/// A re-requesting client socket.
class requester {
public:
    explicit requester(std::uint16_t server_port) {
        fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int rcvbuf = 8 << 20;
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
        server_.sin_family = AF_INET;
        server_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        server_.sin_port = htons(server_port);
    }
    ~requester() { ::close(fd_); }
    requester(requester const&) = delete;
    requester& operator=(requester const&) = delete;

    void send(bytes const& datagram) const {
        ASSERT_EQ(::sendto(fd_, datagram.data(), datagram.size(), 0,
                           reinterpret_cast<sockaddr const*>(&server_), sizeof(server_)),
                  static_cast<ssize_t>(datagram.size()));
    }
    void request(std::string_view session, std::uint64_t sequence, std::uint16_t count) const {
        send(t::mold_header(session, sequence, count));
    }
    /// Datagrams that arrive within `quiet` of each other.
    std::vector<bytes> receive(std::chrono::milliseconds quiet = 300ms) const {
        std::vector<bytes> out;
        std::vector<std::byte> buffer(65536);
        for (;;) {
            pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
            if (::poll(&ready, 1, static_cast<int>(quiet.count())) <= 0) {
                return out;
            }
            ssize_t const n = ::recv(fd_, buffer.data(), buffer.size(), 0);
            if (n >= 0) {
                out.emplace_back(buffer.begin(), buffer.begin() + n);
            }
        }
    }

private:
    int fd_ = -1;
    sockaddr_in server_{};
};

/// Messages by sequence from MoldUDP64 data packets (end of session: `next` is set).
void collect(std::vector<bytes> const& datagrams, std::map<std::uint64_t, bytes>& messages,
             std::uint64_t* end = nullptr) {
    for (bytes const& d : datagrams) {
        auto const header = signet::md::moldudp64_peek_header(view(d));
        ASSERT_TRUE(header.has_value());
        if (header->count == signet::md::moldudp64_end_of_session_count) {
            if (end != nullptr) {
                *end = header->sequence;
            }
            continue;
        }
        signet::md::moldudp64_session session(header->sequence);
        (void)session.on_packet(view(d), [&](std::uint64_t s, std::span<std::byte const> m) {
            messages[s] = bytes(m.begin(), m.end());
        });
    }
}

std::uint16_t serving_port(feed_process const& feed) {
    std::string const line = feed.wait_for_err("serving re-requests on port ");
    EXPECT_FALSE(line.empty()) << feed.err();
    auto const at = line.find("port ");
    return at == std::string::npos ? 0
                                   : static_cast<std::uint16_t>(std::stoul(line.substr(at + 5)));
}

TEST(RerequestServer, ReceiverRecoversEveryDroppedMessageAndIgnoredRequestsAreCounted) {
    scratch_dir dir;
    udp_sink sink;
    constexpr std::uint64_t body = 3000;
    feed_process feed({"--to", sink.to(), "--count", std::to_string(body), "--rate", "300000",
                       "--drop-every", "40", "--serve-rerequests", "0", "--rerequest-rate", "10",
                       "--linger", "60"},
                      dir, "feed");
    std::uint16_t const port = serving_port(feed);
    ASSERT_NE(port, 0);
    // The live stream, until its end of session.
    std::uint64_t end = 0;
    std::map<std::uint64_t, bytes> messages;
    auto const deadline = clock_type::now() + 60s;
    while (end == 0 && clock_type::now() < deadline) {
        messages.clear();
        collect(payloads(sink.datagrams()), messages, &end);
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_NE(end, 0U) << "no end of session";
    std::vector<bytes> const stream = generated_stream(body);
    ASSERT_EQ(end, stream.size() + 1);
    std::size_t const live = messages.size();
    ASSERT_LT(live, stream.size()) << "--drop-every 40 dropped nothing";

    // Recover the gaps as a receiver would: one request per run of missing sequences (a run
    // the live socket lost too may exceed the burst of 10: then wait for the bucket).
    requester client(port);
    std::size_t requests = 0;
    std::size_t answered_requests = 0;
    for (std::uint64_t s = 1; s < end;) {
        if (messages.contains(s)) {
            ++s;
            continue;
        }
        std::uint64_t run = 0;
        while (s + run < end && !messages.contains(s + run)) {
            ++run;
        }
        ASSERT_LT(requests, 200U) << "no answer for " << s;
        client.request("SIGNET0001", s,
                       static_cast<std::uint16_t>(std::min<std::uint64_t>(run, 1000)));
        ++requests;
        collect(client.receive(), messages);
        answered_requests += messages.contains(s) ? 1U : 0U;
    }
    ASSERT_EQ(messages.size(), stream.size()) << "recovered " << messages.size() - live;
    for (std::uint64_t s = 1; s < end; ++s) {
        ASSERT_EQ(messages[s], stream[s - 1]) << "sequence " << s;
    }

    // Another client: its own budget of 10 requests (burst 10); 30 at once are limited.
    requester flood(port);
    for (int i = 0; i < 30; ++i) {
        flood.request("SIGNET0001", 1, 1);
    }
    std::vector<bytes> const flood_answers = flood.receive();
    EXPECT_GE(flood_answers.size(), 10U);
    EXPECT_LE(flood_answers.size(), 12U);
    // Ignored: malformed, another session, sequence 0, count 0, not sent yet; a huge count is
    // clamped to 1000 messages.
    requester other(port);
    other.send(t::text_bytes("too short"));
    other.request("ELSEWHERE", 1, 1);
    other.request("SIGNET0001", 0, 1);
    other.request("SIGNET0001", 1, 0);
    other.request("SIGNET0001", end, 1);
    other.request("SIGNET0001", 5, 65535);
    std::map<std::uint64_t, bytes> clamped;
    collect(other.receive(), clamped);
    EXPECT_EQ(clamped.size(), 1000U);
    EXPECT_EQ(clamped.begin()->first, 5U);

    feed.interrupt(); // ends the linger
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    nlohmann::json const report = feed.report();
    ASSERT_TRUE(report.contains("rerequests")) << feed.out();
    nlohmann::json const& r = report["rerequests"];
    EXPECT_EQ(r["port"], port);
    EXPECT_EQ(r["session"], "SIGNET0001");
    EXPECT_EQ(r["requests"], requests + 30 + 6);
    EXPECT_EQ(r["answered"], answered_requests + flood_answers.size() + 1);
    EXPECT_EQ(r["rate_limited"], (requests - answered_requests) + (30 - flood_answers.size()));
    EXPECT_EQ(r["malformed"], 1);
    EXPECT_EQ(r["wrong_session"], 1);
    EXPECT_EQ(r["zero_sequence"], 1);
    EXPECT_EQ(r["zero_count"], 1);
    EXPECT_EQ(r["not_yet_sent"], 1);
    EXPECT_EQ(r["evicted"], 0);
    EXPECT_EQ(r["clamped"], 1);
    EXPECT_EQ(r["messages_resent"], (stream.size() - live) + flood_answers.size() + 1000);
    EXPECT_EQ(r["stored_messages"], stream.size()); // dropped ones included
    EXPECT_EQ(report["dropped_messages"].get<std::size_t>() > 0, true);
}

TEST(RerequestServer, LingersAfterTheEndOfSessionThenExits) {
    scratch_dir dir;
    udp_sink sink;
    // No --linger: 2 s when serving.
    feed_process feed(
        {"--to", sink.to(), "--count", "100", "--rate", "0", "--serve-rerequests", "0"}, dir,
        "feed");
    std::uint16_t const port = serving_port(feed);
    std::optional<clock_type::time_point> end_seen;
    auto const deadline = clock_type::now() + 30s;
    while (!end_seen && clock_type::now() < deadline) {
        for (received const& d : sink.datagrams()) {
            if (d.data.size() == 20 && d.data[18] == std::byte{0xFF} &&
                d.data[19] == std::byte{0xFF}) {
                end_seen = d.at;
                break;
            }
        }
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(end_seen.has_value());
    // Still answering after the end of session.
    requester client(port);
    client.request("SIGNET0001", 1, 10);
    std::map<std::uint64_t, bytes> answered;
    collect(client.receive(), answered);
    EXPECT_EQ(answered.size(), 10U);
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    double const lingered = std::chrono::duration<double>(clock_type::now() - *end_seen).count();
    EXPECT_GE(lingered, 1.8);
    EXPECT_LT(lingered, 20.0);
    EXPECT_EQ(feed.report()["rerequests"]["answered"], 1);
}

TEST(RerequestServer, ServesAWholeReplayFileAndACaptureReplay) {
    scratch_dir dir;
    // A BinaryFILE: by default the store holds all of it.
    std::vector<bytes> const stream = generated_stream(5000);
    {
        std::ofstream file(dir / "day.itch", std::ios::binary);
        for (bytes const& m : stream) {
            char const prefix[2] = {static_cast<char>(m.size() >> 8),
                                    static_cast<char>(m.size() & 0xFF)};
            file.write(prefix, 2);
            file.write(reinterpret_cast<char const*>(m.data()),
                       static_cast<std::streamsize>(m.size()));
        }
    }
    udp_sink sink;
    feed_process replay({"--to", sink.to(), "--replay", (dir / "day.itch").string(), "--rate", "0",
                         "--serve-rerequests", "0", "--linger", "60"},
                        dir, "replay");
    std::uint16_t const port = serving_port(replay);
    EXPECT_NE(replay.err().find("store of " + std::to_string(stream.size()) + " messages"),
              std::string::npos)
        << replay.err();
    requester client(port);
    // Wait for the end (the first message stays stored: the store holds the whole file).
    std::map<std::uint64_t, bytes> answered;
    auto const deadline = clock_type::now() + 30s;
    while (answered.size() < 1000 && clock_type::now() < deadline) {
        answered.clear();
        client.request("SIGNET0001", stream.size() - 999, 1000);
        collect(client.receive(100ms), answered);
    }
    ASSERT_EQ(answered.size(), 1000U);
    client.request("SIGNET0001", 1, 3);
    answered.clear();
    collect(client.receive(), answered);
    ASSERT_EQ(answered.size(), 3U);
    EXPECT_EQ(answered[1], stream[0]);
    replay.interrupt();
    ASSERT_EQ(replay.wait(), 0) << replay.err();
    EXPECT_EQ(replay.report()["rerequests"]["store_evictions"], 0);

    // A capture: the session served is the capture's; dropped packets can be recovered.
    std::vector<bytes> const packets = mold_traffic(500, "CAPTURE1");
    std::vector<frame> frames;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        frames.push_back({ethernet(ipv4_udp(packets[i], 1)), static_cast<std::int64_t>(i)});
    }
    write_capture(dir / "feed.pcap", DLT_EN10MB, frames);
    udp_sink capture_sink;
    feed_process capture({"--to", capture_sink.to(), "--replay-pcap", (dir / "feed.pcap").string(),
                          "--speed", "0", "--drop-every", "2", "--serve-rerequests", "0",
                          "--linger", "60"},
                         dir, "capture");
    std::uint16_t const capture_port = serving_port(capture);
    EXPECT_NE(capture.err().find("session of the capture's first data packet"), std::string::npos)
        << capture.err();
    std::size_t const sent = packets.size() - packets.size() / 2;
    ASSERT_EQ(capture_sink.wait_for(sent).size(), sent);
    requester capture_client(capture_port);
    std::uint64_t const second_packet = signet::md::moldudp64_sequence(view(packets[1]));
    capture_client.request("CAPTURE1", second_packet, 8); // packet 2 was dropped
    std::vector<bytes> const answer = capture_client.receive();
    ASSERT_EQ(answer.size(), 1U);
    EXPECT_EQ(answer[0], packets[1]);                       // the same 8 messages, the same packet
    capture_client.request("SIGNET0001", second_packet, 8); // md_feed's default is not served
    EXPECT_TRUE(capture_client.receive(200ms).empty());
    capture.interrupt();
    ASSERT_EQ(capture.wait(), 0) << capture.err();
    nlohmann::json const r = capture.report()["rerequests"];
    EXPECT_EQ(r["session"], "CAPTURE1  ");
    EXPECT_EQ(r["answered"], 1);
    EXPECT_EQ(r["wrong_session"], 1);
    EXPECT_EQ(r["stored_messages"], 500U + 10);
}

} // namespace
