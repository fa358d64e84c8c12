#pragma once

// Shared pieces of the publisher tests: a simulated clock (sleep_until() moves time at once, so a
// run's schedule is exact and instantaneous), a line_output that records what each line got and
// when, hand-built frames and captures (libpcap's dump API: pcap_open_dead + pcap_dump), and
// generated MoldUDP64 traffic.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/line_output.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>
#include <signet/publisher/pacing_clock.hpp>

#include "md/md_test_support.hpp"
#include <pcap/pcap.h>

namespace signet::publisher::test {

using md::test::bytes;
using md::test::view;
using namespace std::chrono_literals;

/// Time stands still until the publisher waits; a wait moves it to the due time at once.
class fake_clock final : public pacing_clock {
public:
    time_point now() noexcept override { return now_; }
    void sleep_until(time_point due) noexcept override {
        ++sleeps_;
        if (due > now_) {
            now_ = due;
        }
    }
    void advance(duration d) noexcept { now_ += d; }
    [[nodiscard]] time_point start() const noexcept { return start_; }
    [[nodiscard]] std::uint64_t sleeps() const noexcept { return sleeps_; }

private:
    time_point start_ = time_point{} + std::chrono::hours(1);
    time_point now_ = start_;
    std::uint64_t sleeps_ = 0;
};

struct sent_datagram {
    std::size_t line = 0;
    pacing_clock::time_point at{};
    bytes data;
};

/// Records every datagram with its line and the clock's time; optionally fails the Nth send.
class recording_lines final : public line_output {
public:
    recording_lines(pacing_clock& clock, std::size_t lines)
        : clock_(clock)
        , lines_(lines) {}

    [[nodiscard]] std::size_t lines() const noexcept override { return lines_; }
    [[nodiscard]] std::error_code send(std::size_t line,
                                       std::span<std::byte const> datagram) noexcept override {
        if (fail_at_ != 0 && sent_.size() + 1 == fail_at_) {
            return std::make_error_code(std::errc::network_unreachable);
        }
        sent_.push_back({line, clock_.now(), bytes(datagram.begin(), datagram.end())});
        return {};
    }
    [[nodiscard]] std::string describe(std::size_t line) const override {
        return line == 0 ? "line A" : "line B";
    }

    void fail_at(std::size_t n) { fail_at_ = n; }
    [[nodiscard]] std::vector<sent_datagram> const& sent() const { return sent_; }
    /// The datagrams of one line, in order.
    [[nodiscard]] std::vector<bytes> on(std::size_t line) const {
        std::vector<bytes> out;
        for (sent_datagram const& d : sent_) {
            if (d.line == line) {
                out.push_back(d.data);
            }
        }
        return out;
    }

private:
    pacing_clock& clock_;
    std::size_t lines_;
    std::size_t fail_at_ = 0;
    std::vector<sent_datagram> sent_;
};

inline std::uint16_t mold_count(bytes const& d) {
    return static_cast<std::uint16_t>((std::to_integer<unsigned>(d.at(18)) << 8) |
                                      std::to_integer<unsigned>(d.at(19)));
}
inline bool is_heartbeat(bytes const& d) {
    return d.size() == 20 && mold_count(d) == 0;
}
inline bool is_end_of_session(bytes const& d) {
    return d.size() == 20 && mold_count(d) == md::nasdaq::moldudp64_end_of_session_count;
}
inline bool is_data(bytes const& d) {
    return !is_heartbeat(d) && !is_end_of_session(d);
}

/// MoldUDP64 packets of generated ITCH (8 messages each).
inline std::vector<bytes> mold_traffic(std::size_t messages,
                                       std::string_view session = "CAPTURE1") {
    signet::publisher::nasdaq::itch_generator generator(
        {.seed = 7, .symbols = 4, .messages = messages});
    std::array<std::byte, 1400> buffer{};
    md::nasdaq::moldudp64_packer packer(buffer, session, 1, {.max_messages = 8});
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

// ---- frames and captures ------------------------------------------------------------------------

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
inline bytes ipv4_udp(bytes const& payload, std::uint16_t port, ip_options o = {}) {
    using md::test::put_be;
    std::size_t const header = o.header_words * 4;
    bytes b(header + 8 + payload.size());
    b[0] = static_cast<std::byte>(0x40 | o.header_words);
    put_be(b, 2, b.size(), 2);
    put_be(b, 6, o.fragment, 2);
    b[8] = std::byte{64};
    b[9] = static_cast<std::byte>(o.protocol);
    put_be(b, 12, o.source, 4);
    put_be(b, 16, o.destination, 4);
    put_be(b, header, 40000, 2);
    put_be(b, header + 2, port, 2);
    put_be(b, header + 4, 8 + payload.size(), 2);
    std::copy(payload.begin(), payload.end(), b.begin() + static_cast<std::ptrdiff_t>(header + 8));
    return b;
}

inline bytes ethernet(bytes const& network, std::uint16_t ethertype = 0x0800,
                      std::vector<std::uint16_t> const& vlans = {}) {
    using md::test::put_be;
    bytes b(12, std::byte{0x02});
    for (std::uint16_t const vlan : vlans) {
        b.resize(b.size() + 4);
        put_be(b, b.size() - 4, 0x8100, 2);
        put_be(b, b.size() - 2, vlan, 2);
    }
    b.resize(b.size() + 2);
    put_be(b, b.size() - 2, ethertype, 2);
    b.insert(b.end(), network.begin(), network.end());
    if (b.size() < 60) {
        b.resize(60); // Ethernet's minimum frame: padding after the IP packet
    }
    return b;
}

inline bytes linux_sll(bytes const& network, std::uint16_t protocol = 0x0800) {
    using md::test::put_be;
    bytes b(16);
    put_be(b, 0, 4, 2); // sent by us
    put_be(b, 2, 1, 2); // ARPHRD_ETHER
    put_be(b, 4, 6, 2);
    put_be(b, 14, protocol, 2);
    b.insert(b.end(), network.begin(), network.end());
    return b;
}

inline bytes linux_sll2(bytes const& network) {
    bytes b(20);
    md::test::put_be(b, 0, 0x0800, 2);
    b.insert(b.end(), network.begin(), network.end());
    return b;
}

struct frame {
    bytes data;
    std::int64_t time_us = 0;
    std::size_t original_length = 0; // 0: data.size()
};

inline void write_capture(std::filesystem::path const& path, int link,
                          std::vector<frame> const& frames) {
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

/// A directory of its own under the system's temporary directory, removed at the end.
class scratch_dir {
public:
    explicit scratch_dir(std::string const& name) {
        path_ = std::filesystem::temp_directory_path() /
                (name + "_" + std::to_string(::getpid()) + "_" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~scratch_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    scratch_dir(scratch_dir const&) = delete;
    scratch_dir& operator=(scratch_dir const&) = delete;
    std::filesystem::path operator/(std::string const& name) const { return path_ / name; }
    std::filesystem::path const& path() const { return path_; }

private:
    std::filesystem::path path_;
};

} // namespace signet::publisher::test
