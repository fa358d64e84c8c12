// md_feed, the binary: what needs the process — command-line errors (exit 2, one clear line),
// runtime errors before anything is sent (exit 1), a damaged capture (sent up to the damage, the
// report, then exit 1), a smoke run whose report is the last line of stdout and --report-json,
// and the re-request server's port on stderr with a signal ending the linger. The library's
// behaviour (pacing, heartbeats, faults, replay, the request service, the report's fields) is
// tested in process in tests/publisher.
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

#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>

#include "publisher/publisher_test_support.hpp"
#include <nlohmann/json.hpp>

extern char** environ;

namespace {

namespace t = signet::md::test;
using signet::publisher::test::ethernet;
using signet::publisher::test::frame;
using signet::publisher::test::ipv4_udp;
using signet::publisher::test::mold_traffic;
using signet::publisher::test::write_capture;
using t::bytes;
using t::view;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

// ---- processes and sockets --------------------------------------------------------------------

class temp_dir {
public:
    temp_dir() {
        static std::atomic<int> counter{0};
        path_ = std::filesystem::temp_directory_path() /
                ("md_feed_test_" + std::to_string(::getpid()) + "_" +
                 // relaxed: a unique number, nothing else
                 std::to_string(counter.fetch_add(1, std::memory_order_relaxed)));
        std::filesystem::create_directories(path_);
    }
    ~temp_dir() {
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
    feed_process(std::vector<std::string> const& args, temp_dir const& dir, std::string tag)
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

/// A UDP socket on 127.0.0.1 (or [::1]) with a thread that records every datagram.
class udp_sink {
public:
    enum class family { ipv4, ipv6 };
    explicit udp_sink(family f = family::ipv4)
        : ipv6_(f == family::ipv6) {
        fd_ = ::socket(ipv6_ ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int rcvbuf = 8 << 20;
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
        sockaddr_storage storage{};
        socklen_t length = sizeof(sockaddr_in);
        if (ipv6_) {
            auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
            a->sin6_family = AF_INET6;
            a->sin6_addr = in6addr_loopback;
            length = sizeof(sockaddr_in6);
        } else {
            auto* a = reinterpret_cast<sockaddr_in*>(&storage);
            a->sin_family = AF_INET;
            a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
        bound_ = ::bind(fd_, reinterpret_cast<sockaddr const*>(&storage), length) == 0;
        if (!bound_ && !ipv6_) {
            ADD_FAILURE() << "bind: " << std::strerror(errno);
        }
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&storage), &length);
        port_ = ntohs(ipv6_ ? reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
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
    [[nodiscard]] bool bound() const { return bound_; } ///< false: no [::1] on this host
    [[nodiscard]] std::string to() const {
        return (ipv6_ ? "[::1]:" : "127.0.0.1:") + std::to_string(port_);
    }
    [[nodiscard]] std::vector<received> datagrams() const {
        std::lock_guard const lock(mutex_);
        return datagrams_;
    }
    /// Waits until `count` datagrams arrived (or `timeout`); returns them.
    std::vector<received> wait_for(std::size_t count, std::chrono::seconds timeout = 30s) const {
        return wait_until([count](std::vector<received> const& r) { return r.size() >= count; },
                          timeout);
    }
    /// Waits until `done` holds for the datagrams so far (or `timeout`); returns them.
    template <typename Done>
    std::vector<received> wait_until(Done done, std::chrono::seconds timeout = 30s) const {
        auto const deadline = clock_type::now() + timeout;
        while (clock_type::now() < deadline) {
            {
                std::lock_guard const lock(mutex_);
                if (done(datagrams_)) {
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

    bool ipv6_ = false;
    bool bound_ = false;
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
    /// The next `count` datagrams (fewer if none comes for 10 s).
    std::vector<bytes> receive(std::size_t count) const {
        std::vector<bytes> out;
        std::vector<std::byte> buffer(65536);
        while (out.size() < count) {
            pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
            if (::poll(&ready, 1, 10'000) <= 0) {
                break;
            }
            ssize_t const n = ::recv(fd_, buffer.data(), buffer.size(), 0);
            if (n >= 0) {
                out.emplace_back(buffer.begin(), buffer.begin() + n);
            }
        }
        return out;
    }

private:
    int fd_ = -1;
    sockaddr_in server_{};
};

std::uint16_t serving_port(feed_process const& feed) {
    std::string const line = feed.wait_for_err("serving re-requests on port ");
    EXPECT_FALSE(line.empty()) << feed.err();
    auto const at = line.find("port ");
    return at == std::string::npos ? 0
                                   : static_cast<std::uint16_t>(std::stoul(line.substr(at + 5)));
}

// ---- command line -----------------------------------------------------------------------------

TEST(MdFeed, CommandLineErrorsExit2WithOneClearLine) {
    temp_dir dir;
    struct error_case {
        std::vector<std::string> args;
        std::string says;
    };
    std::vector<error_case> const cases{
        {{"--replay-pcap", "x.pcap", "--speed", "2", "--rate", "10"},
         "--speed and --rate cannot be combined"},
        {{"--speed", "2"}, "--speed requires --replay-pcap"},
        {{"--pcap-port", "1"}, "--pcap-port requires --replay-pcap"},
        {{"--pcap-group", "239.1.1.1"}, "--pcap-group requires --replay-pcap"},
        {{"--replay-pcap", "x.pcap", "--pcap-group", "not-an-ip"},
         "--pcap-group: must be an IPv4 address, e.g. 239.1.1.1"},
        {{"--replay-pcap", "x.pcap", "--replay", "x.itch"},
         "--replay and --replay-pcap cannot be combined"},
        {{"--store-messages", "10"}, "--store-messages requires --serve-rerequests"},
        {{"--linger", "1"}, "--linger requires --serve-rerequests or --serve-glimpse"},
        {{"--glimpse-username", "u"}, "--glimpse-username requires --serve-glimpse"},
        // One rule for every protocol's flags: another protocol's is refused, naming both.
        {{"--snapshot-to", "127.0.0.1:9"},
         "--snapshot-to applies to --protocol mdp3, not moldudp64"},
        {{"--protocol", "mdp3", "--snapshot-to", "127.0.0.1:9", "--definitions-to", "127.0.0.1:9",
          "--batch", "4"},
         "--batch applies to --protocol moldudp64, not mdp3"},
        {{"--protocol", "mdp3", "--snapshot-to", "127.0.0.1:9", "--definitions-to", "127.0.0.1:9",
          "--symbols", "4"},
         "--symbols applies to --protocol moldudp64 or pitch, not mdp3"},
        {{"--protocol", "mdp3", "--snapshot-to", "127.0.0.1:9", "--definitions-to", "127.0.0.1:9",
          "--heartbeat", "1"},
         "--heartbeat applies to --protocol moldudp64 or pitch, not mdp3"},
        {{"--protocol", "mdp3"}, "--protocol mdp3 needs --snapshot-to and --definitions-to"},
        {{"--protocol", "mdp3", "--snapshot-to", "127.0.0.1:9", "--definitions-to", "127.0.0.1:9",
          "--serve-glimpse", "0"},
         "--serve-glimpse applies to --protocol moldudp64, not mdp3"},
        {{"--protocol", "fix"}, "--protocol"},
        // A flag of two protocols is checked by the chosen one's rules.
        {{"--protocol", "pitch", "--batch", "4"},
         "--batch applies to --protocol moldudp64, not pitch"},
        {{"--protocol=pitch", "--symbols", "5000"}, "--symbols: Value 5000 not in range 1 to 4096"},
        {{"--protocol", "pitch", "--heartbeat", "61"}, "--heartbeat: "},
        {{"--rerequest-rate", "5"}, "--rerequest-rate requires --serve-rerequests"},
        {{"--rerequest-max-messages", "5"}, "--rerequest-max-messages requires --serve-rerequests"},
        {{"--serve-rerequests", "70000"}, "--serve-rerequests"},
        {{"--serve-rerequests", "0", "--rerequest-max-messages", "0"}, "--rerequest-max-messages"},
        {{"--drop-line", "a"}, "--drop-line requires --to-b"},
        {{"--to-b", "127.0.0.1:9", "--drop-line", "c"}, "--drop-line: must be a, b or both"},
        {{"--to-b", "nowhere"}, "--to-b: must be ip:port, e.g. 127.0.0.1:30001"},
        {{"--to-b", "[::1]:9"}, "--to-b and --to are different address families"},
        {{"--source", "::1"}, "--source and --to are different address families"},
        {{"--source", "not-an-ip"}, "--source: must be an IP address (or ip:port)"},
        {{"--batch", "0"}, "--batch"},
    };
    int i = 0;
    for (error_case const& c : cases) {
        std::vector<std::string> args{"--to", "127.0.0.1:9", "--count", "1"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        feed_process feed(args, dir, "case" + std::to_string(i++));
        EXPECT_EQ(feed.wait(), 2) << c.args.front() << ": " << feed.err();
        std::string const err = feed.err();
        EXPECT_EQ(err.rfind("md_feed: ", 0), 0U) << err;
        EXPECT_NE(err.find(c.says), std::string::npos) << "wanted '" << c.says << "': " << err;
    }
    feed_process missing_to({"--count", "1"}, dir, "missing");
    EXPECT_EQ(missing_to.wait(), 2);
    EXPECT_NE(missing_to.err().find("--to is required"), std::string::npos) << missing_to.err();
}

// ---- runs -------------------------------------------------------------------------------------

TEST(MdFeed, ASmokeRunReportsOnTheLastLineAndInTheReportFile) {
    temp_dir dir;
    udp_sink sink;
    feed_process feed({"--to", sink.to(), "--count", "500", "--rate", "0", "--symbols", "4",
                       "--report-json", (dir / "report.json").string()},
                      dir, "feed");
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    nlohmann::json const report = feed.report();
    ASSERT_FALSE(report.is_discarded()) << feed.out();
    EXPECT_EQ(report["messages"], 500U + 3 + 4 + 3);
    EXPECT_EQ(report["end_of_session_packets"], 3);
    std::size_t const datagrams = report["packets"].get<std::size_t>() + 3;
    EXPECT_EQ(sink.wait_for(datagrams).size(), datagrams);
    std::string line = read_text(dir / "report.json");
    ASSERT_FALSE(line.empty());
    line.pop_back(); // the newline
    EXPECT_EQ(nlohmann::json::parse(line), report);
    EXPECT_NE(feed.err().find("md_feed: sent "), std::string::npos) << feed.err();
}

TEST(MdFeed, TruthOutHoldsTheBooksOfWhatWasSent) {
    // --truth-out (docs/md_feed.md): a head line naming the protocol and the symbols, then one
    // line per sequence that changed a book, sequences increasing, with each changed level as
    // it is after it. Applied in order, its levels are the books of what went out, as an ITCH
    // book built from the datagrams the sink received has them, level by level.
    temp_dir dir;
    udp_sink sink;
    feed_process feed({"--to", sink.to(), "--count", "2000", "--rate", "0", "--symbols", "4",
                       "--truth-out", (dir / "truth.jsonl").string()},
                      dir, "feed");
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    nlohmann::json const report = feed.report();
    ASSERT_FALSE(report.is_discarded()) << feed.out();
    std::size_t const datagrams = report["packets"].get<std::size_t>() + 3; // + end of session
    std::vector<received> const got = sink.wait_for(datagrams);
    ASSERT_EQ(got.size(), datagrams);

    using levels =
        std::map<std::pair<char, std::uint32_t>, std::pair<std::uint64_t, std::uint32_t>>;
    std::map<std::string, levels> truth;
    std::ifstream in(dir / "truth.jsonl");
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    nlohmann::json const head = nlohmann::json::parse(line);
    EXPECT_EQ(head["truth"], "moldudp64");
    ASSERT_EQ(head["symbols"].size(), 4U) << line;
    for (auto const& [symbol, unit] : head["symbols"].items()) {
        EXPECT_EQ(unit, 0) << symbol;
        truth[symbol];
    }
    std::uint64_t last = 0;
    std::size_t lines = 0;
    while (std::getline(in, line)) {
        nlohmann::json const j = nlohmann::json::parse(line);
        std::uint64_t const seq = j["seq"].get<std::uint64_t>();
        EXPECT_GT(seq, last) << line;
        last = seq;
        ++lines;
        EXPECT_EQ(j["unit"], 0);
        for (nlohmann::json const& l : j["levels"]) { // [symbol, side, price, size, orders]
            auto const symbol = l[0].get<std::string>();
            ASSERT_TRUE(truth.contains(symbol)) << line;
            auto const key =
                std::make_pair(l[1].get<std::string>().at(0), l[2].get<std::uint32_t>());
            if (l[3].get<std::uint64_t>() == 0) {
                truth[symbol].erase(key);
            } else {
                truth[symbol][key] = {l[3].get<std::uint64_t>(), l[4].get<std::uint32_t>()};
            }
        }
    }
    EXPECT_GT(lines, 100U);
    EXPECT_LE(last, report["messages"].get<std::uint64_t>());

    // The second source: the ITCH book of the messages received, in sequence.
    std::vector<received> sorted = got;
    std::sort(sorted.begin(), sorted.end(), [](received const& a, received const& b) {
        return signet::md::nasdaq::moldudp64_sequence(a.data) <
               signet::md::nasdaq::moldudp64_sequence(b.data);
    });
    signet::md::nasdaq::itch50_parser parser;
    std::uint64_t next = 1;
    for (received const& d : sorted) {
        std::optional<signet::md::nasdaq::moldudp64_header> const h =
            signet::md::nasdaq::moldudp64_data_header(d.data);
        if (!h) {
            continue; // heartbeat, end of session
        }
        ASSERT_EQ(h->sequence, next) << "a datagram missing";
        next += h->count;
        signet::md::nasdaq::for_each_moldudp64_message(
            d.data, *h, [&](std::uint64_t, std::span<std::byte const> m) { parser.on_message(m); });
    }
    std::size_t stocks = 0;
    parser.book().for_each_stock([&](signet::md::nasdaq::stock_view const& s) {
        std::string symbol(s.symbol);
        symbol.erase(symbol.find_last_not_of(' ') + 1);
        levels want;
        for (auto const& [side, book] : {std::make_pair('B', parser.book().bids(s.locate)),
                                         std::make_pair('S', parser.book().asks(s.locate))}) {
            for (signet::md::nasdaq::itch_price_level const l : book) {
                want[{side, l.price}] = {l.shares, l.orders};
            }
        }
        EXPECT_EQ(truth[symbol], want) << symbol;
        EXPECT_FALSE(want.empty()) << symbol;
        ++stocks;
    });
    EXPECT_EQ(stocks, 4U);
}

TEST(MdFeed, SendsToAnIpv6AddressWithoutASource) {
    // No --source: the route's source address, of the destination's family (an empty --source
    // was once taken for IPv4 any and refused as "different address families").
    temp_dir dir;
    udp_sink sink(udp_sink::family::ipv6);
    if (!sink.bound()) {
        GTEST_SKIP() << "no IPv6 loopback on this host";
    }
    feed_process feed({"--to", sink.to(), "--count", "10", "--rate", "0"}, dir, "feed");
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    nlohmann::json const report = feed.report();
    ASSERT_FALSE(report.is_discarded()) << feed.out();
    std::size_t const datagrams = report["packets"].get<std::size_t>() + 3; // + end of session
    EXPECT_EQ(sink.wait_for(datagrams).size(), datagrams);
}

TEST(MdFeed, PitchTakesTheFlagsItSharesWithMoldudp64) {
    // --symbols and --heartbeat are flags of both protocols: the chosen one's take them.
    temp_dir dir;
    udp_sink sink;
    feed_process feed({"--protocol", "pitch", "--to", sink.to(), "--count", "10", "--rate", "0",
                       "--symbols", "60", "--heartbeat", "0.1", "--tail-heartbeats", "1"},
                      dir, "feed");
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    nlohmann::json const report = feed.report();
    ASSERT_FALSE(report.is_discarded()) << feed.out();
    EXPECT_EQ(report["symbols"], 60);
    EXPECT_EQ(report["generated_messages"], 10);
    // The tail's heartbeats: both units at once, then every 0.1 s for a second (a 1 s interval
    // would make the first two only).
    EXPECT_GT(report["heartbeats"].get<int>(), 6) << report.dump();
}

TEST(MdFeed, UnreadableInputIsAnErrorBeforeAnythingIsSent) {
    temp_dir dir;
    udp_sink sink;
    feed_process capture({"--to", sink.to(), "--replay-pcap", (dir / "missing.pcap").string()}, dir,
                         "capture");
    EXPECT_EQ(capture.wait(), 1);
    EXPECT_NE(capture.err().find("missing.pcap: cannot read as a pcap or pcapng capture"),
              std::string::npos)
        << capture.err();
    feed_process file({"--to", sink.to(), "--replay", dir.path().string()}, dir, "file");
    EXPECT_EQ(file.wait(), 1);
    EXPECT_NE(file.err().find("Is a directory"), std::string::npos) << file.err();
    feed_process report({"--to", sink.to(), "--count", "10", "--report-json",
                         (dir / "no-such-dir" / "feed.json").string()},
                        dir, "report");
    EXPECT_EQ(report.wait(), 1);
    EXPECT_NE(report.err().find("cannot write the report to"), std::string::npos) << report.err();
    EXPECT_TRUE(sink.datagrams().empty()) << "nothing is sent";
}

TEST(MdFeed, ADamagedCaptureIsSentUpToTheDamageThenExits1) {
    temp_dir dir;
    udp_sink sink;
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
    EXPECT_EQ(report["pcap"]["link_type"], "EN10MB");
}

TEST(MdFeed, ServesReRequestsUntilASignalEndsTheLinger) {
    temp_dir dir;
    udp_sink sink;
    feed_process feed({"--to", sink.to(), "--count", "100", "--rate", "0", "--drop-every", "2",
                       "--serve-rerequests", "0", "--linger", "600"},
                      dir, "feed");
    std::uint16_t const port = serving_port(feed);
    ASSERT_NE(port, 0);
    // The end of session, then an answer for a dropped packet's messages.
    std::vector<received> const got = sink.wait_until([](std::vector<received> const& r) {
        return std::any_of(r.begin(), r.end(), [](received const& d) {
            return d.data.size() == 20 && d.data[18] == std::byte{0xFF} &&
                   d.data[19] == std::byte{0xFF};
        });
    });
    ASSERT_FALSE(got.empty()) << "no end of session";
    requester client(port);
    client.request("SIGNET0001", 9, 8);
    std::vector<bytes> const answer = client.receive(1);
    ASSERT_EQ(answer.size(), 1U);
    EXPECT_EQ(signet::md::nasdaq::moldudp64_sequence(view(answer[0])), 9U);
    feed.interrupt(); // ends the linger
    ASSERT_EQ(feed.wait(), 0) << feed.err();
    nlohmann::json const r = feed.report()["rerequests"];
    EXPECT_EQ(r["port"], port);
    EXPECT_EQ(r["answered"], 1);
    EXPECT_EQ(r["stored_messages"], 100U + 3 + 16 + 3);
}

} // namespace
