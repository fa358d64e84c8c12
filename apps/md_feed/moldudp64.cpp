// md_feed --protocol moldudp64 (the default): ITCH 5.0 over MoldUDP64 from the generator, a
// BinaryFILE or a capture, with the re-request and GLIMPSE services.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include <signet/md/nasdaq/binary_file_reader.hpp>
#include <signet/publisher/nasdaq/glimpse_service.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>
#include <signet/publisher/nasdaq/moldudp64_publisher.hpp>
#include <signet/publisher/nasdaq/moldudp64_report.hpp>
#include <signet/publisher/nasdaq/rerequest_service.hpp>
#include <signet/publisher/udp_lines.hpp>

#include "cli.hpp"
#include "feed_protocol.hpp"
#include "run.hpp"
#include "truth_writer.hpp"

namespace signet::md_feed {

namespace {

namespace pub = publisher;
namespace nasdaq = publisher::nasdaq;

class moldudp64_feed final : public feed_protocol {
public:
    std::string_view name() const noexcept override { return "moldudp64"; }
    std::string_view description() const noexcept override {
        return "ITCH 5.0 over MoldUDP64 (--count and --rate count messages)";
    }

    void add_options(CLI::Option_group& g) override {
        auto const opt = [&g](auto&&... args) {
            return g.add_option(args...);
        };
        opt("--batch", feed_.batch, "messages per packet (at most; packets stay <= 1400 bytes)")
            ->check(CLI::Range(1, 1000));
        session_o_ = opt("--session", feed_.session,
                         "MoldUDP64 session (10 characters, space padded; --replay-pcap with "
                         "--serve-rerequests: the one served, default the capture's first)");
        opt("--symbols", generation_.symbols, "stocks in the directory")
            ->check(CLI::Range(1, 65535));
        live_o_ = opt("--live-orders", generation_.target_live_orders,
                      "orders the generator keeps live (it adds more often below this)")
                      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 26));
        opt("--heartbeat", heartbeat_,
            "MoldUDP64 heartbeat interval: no line is silent longer (a heartbeat, or the packet "
            "holding messages, goes out), so no message waits longer for its packet")
            ->check(cli::number_in(0.001, 3600, "s"));
        replay_o_ = opt("--replay", replay_, "send a Nasdaq BinaryFILE (length-prefixed ITCH)");
        pcap_o_ = opt("--replay-pcap", pcap_,
                      "re-send a capture's UDP payloads (pcap/pcapng; Ethernet, Linux SLL/SLL2 "
                      "or raw IPv4) at the captured timing scaled by --speed, or at --rate")
                      ->type_name("FILE")
                      ->excludes(replay_o_);
        speed_o_ = opt("--speed", speed_,
                       "--replay-pcap: the captured timing sped up N times; 0 = at once")
                       ->check(cli::number_in(0, 1e6, "x"))
                       ->needs(pcap_o_);
        port_o_ = opt("--pcap-port", pcap_port_, "--replay-pcap: only datagrams to this port")
                      ->check(CLI::Range(0, 65535))
                      ->needs(pcap_o_)
                      ->default_str("any");
        opt("--pcap-group", group_, "--replay-pcap: only datagrams to this IPv4 address")
            ->check(cli::parses(pub::parse_ipv4, "an IPv4 address, e.g. 239.1.1.1"))
            ->needs(pcap_o_)
            ->type_name("IP")
            ->default_str("any");
        serve_o_ = opt("--serve-rerequests", serving_.port,
                       "answer MoldUDP64 re-requests on this UDP port (any address of --to's "
                       "family; 0 = a free port, printed on stderr)")
                       ->check(CLI::Range(0, 65535))
                       ->type_name("PORT")
                       ->default_str("off");
        store_o_ = opt("--store-messages", store_,
                       "--serve-rerequests: the last N messages are kept to answer from (N x 50 "
                       "bytes: ITCH messages; longer ones, fewer)")
                       ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32))
                       ->needs(serve_o_)
                       ->default_str("1000000, --replay: the whole file");
        opt("--rerequest-rate", serving_.requests_per_second,
            "--serve-rerequests: requests/s per client (burst: one second's)")
            ->check(cli::number_in(0.001, 1e9, "requests/s"))
            ->needs(serve_o_);
        opt("--rerequest-max-messages", serving_.max_messages_per_answer,
            "--serve-rerequests: messages per answer at most (more are clamped)")
            ->check(CLI::Range(1U, 65535U))
            ->needs(serve_o_);
        glimpse_o_ = opt("--serve-glimpse", snapshots_.port,
                         "serve GLIMPSE 5.0 snapshots (SoupBinTCP) on this TCP port (any address "
                         "of --to's family; 0 = a free port, printed on stderr)")
                         ->check(CLI::Range(0, 65535))
                         ->type_name("PORT")
                         ->default_str("off")
                         ->excludes(pcap_o_); // a capture's messages are not generated: no book
        opt("--glimpse-username", snapshots_.username,
            "--serve-glimpse: the login's username (default: any login)")
            ->needs(glimpse_o_)
            ->check(CLI::Validator(
                [](std::string& v) { return v.size() <= 6 ? "" : "at most 6 characters"; },
                "USER"));
        opt("--glimpse-password", snapshots_.password, "--serve-glimpse: the login's password")
            ->needs(glimpse_o_)
            ->check(CLI::Validator(
                [](std::string& v) { return v.size() <= 10 ? "" : "at most 10 characters"; },
                "PASS"));
        linger_o_ = opt("--linger", linger_,
                        "--serve-rerequests, --serve-glimpse: seconds of serving after sending "
                        "ends (the tail)")
                        ->check(cli::number_in(0, 3600, "s"))
                        ->default_str("2 when serving, else 0");
    }

    std::string check(common_options const& common) const override {
        if (speed_o_->count() > 0 && common.rate_given) {
            return "--speed and --rate cannot be combined";
        }
        if (linger_o_->count() > 0 && serve_o_->count() == 0 && glimpse_o_->count() == 0) {
            return "--linger requires --serve-rerequests or --serve-glimpse";
        }
        if (!common.truth_path.empty() && (replay_o_->count() > 0 || pcap_o_->count() > 0)) {
            return "--truth-out needs the generator (not --replay or --replay-pcap)";
        }
        return {};
    }

    int run(common_options const& common) override {
        pub::nasdaq::moldudp64_publisher_options feed = feed_;
        feed.stop_flag = &interrupted;
        feed.rate = common.rate;
        feed.faults = common.faults;
        feed.heartbeat = cli::seconds(heartbeat_);
        feed.duration = cli::seconds(common.duration_s);
        nasdaq::itch_generator_options generation = generation_;
        generation.seed = common.seed;
        generation.messages = common.count;
        if (live_o_->count() > 0) { // the hard cap: room above the target
            generation.max_live_orders = std::max<std::size_t>(
                generation.max_live_orders, generation.target_live_orders / 4 * 5 + 1);
        }
        try {
            std::ofstream report_file = open_report(common.report_path);
            truth_writer truth(common.truth_path);
            std::uint64_t truth_message = 0; // the message whose changes are being collected
            if (truth.enabled()) {           // the MoldUDP64 sequence of generated message k is k
                std::vector<std::pair<std::string, unsigned>> symbols;
                nasdaq::itch_generator const names(generation);
                for (std::size_t i = 0; i < names.symbols(); ++i) {
                    symbols.emplace_back(names.symbol(i), 0);
                }
                truth.start("moldudp64", std::move(symbols));
                generation.on_book_change = [&](nasdaq::itch_book_change const& c) {
                    if (c.message != truth_message) {
                        truth.end_sequence(truth_message);
                        truth_message = c.message;
                    }
                    truth.change(c.locate - 1U, c.side, c.price, c.shares, c.orders);
                };
            }
            pub::udp_lines lines(common.lines, common.socket);
            std::optional<pub::pcap_source> capture; // unreadable: an error before sending
            if (pcap_o_->count() > 0) {
                auto const port = port_o_->count() > 0 ? std::optional(pcap_port_) : std::nullopt;
                capture.emplace(pcap_, pub::pcap_filter{port, pub::parse_ipv4(group_)});
            }
            std::optional<md::nasdaq::binary_file_reader> reader;
            if (!replay_.empty()) {
                reader.emplace(replay_);
            }
            nasdaq::itch_generator generator(generation);
            std::optional<nasdaq::rerequest_service> service;
            if (serve_o_->count() > 0) {
                nasdaq::rerequest_service_options serving = serving_;
                serving.family = common.lines.front().family();
                serving.session = capture && session_o_->count() == 0 ? "" : feed.session;
                serving.store = reader && store_o_->count() == 0
                                    ? nasdaq::store_for_file(replay_)
                                    : nasdaq::store_for_messages(store_);
                service.emplace(serving);
                std::fputs(
                    ("md_feed: serving re-requests on " + service->describe() + "\n").c_str(),
                    stderr);
            }
            std::optional<nasdaq::glimpse_service> glimpse;
            if (glimpse_o_->count() > 0) {
                nasdaq::glimpse_service_options snapshots = snapshots_;
                snapshots.family = common.lines.front().family();
                glimpse.emplace(snapshots);
                std::fprintf(stderr, "md_feed: serving GLIMPSE snapshots on TCP port %u\n",
                             static_cast<unsigned>(glimpse->port()));
            }
            if (service || glimpse) {
                feed.on_packet = [&](std::span<std::byte const> packet) {
                    if (service) {
                        service->record(packet);
                    }
                    if (glimpse) {
                        glimpse->record(packet);
                    }
                };
            }
            auto const fixed_rate = common.rate_given ? std::optional(common.rate) : std::nullopt;
            pub::nasdaq::moldudp64_publisher publisher(feed, lines);
            auto const start = std::chrono::steady_clock::now();
            pub::run_result const result = capture
                                               ? publisher.replay(*capture, {fixed_rate, speed_})
                                           : reader ? publisher.run(*reader)
                                                    : publisher.run(generator);
            nasdaq::moldudp64_report report{0, feed.session, publisher.counts()};
            if (reader) {
                report.add(*reader, replay_);
            }
            if (capture) {
                report.add(*capture, pcap_, result.error);
            }
            if (service || glimpse) {
                linger(linger_);
                if (service) {
                    service->stop();
                    report.add(*service);
                }
                if (glimpse) {
                    glimpse->stop();
                    report.add(*glimpse);
                }
            }
            report.elapsed_s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::fprintf(stderr, "%s", report.summary("md_feed").c_str());
            truth.end_sequence(truth_message);
            truth.finish();
            finish_run(report.text(), report_file, common.report_path, result);
        } catch (std::exception const& e) {
            std::fprintf(stderr, "md_feed: %s\n", cli::describe(e).c_str());
            return 1;
        }
        return 0;
    }

private:
    pub::nasdaq::moldudp64_publisher_options feed_{};
    nasdaq::itch_generator_options generation_{};
    nasdaq::rerequest_service_options serving_{.requests_per_second = 5000};
    nasdaq::glimpse_service_options snapshots_{};
    double heartbeat_ = 1;
    double speed_ = 1;
    double linger_ = 2;
    std::size_t store_ = 1'000'000;
    std::uint16_t pcap_port_ = 0;
    std::string replay_, pcap_, group_;
    CLI::Option* session_o_ = nullptr;
    CLI::Option* live_o_ = nullptr;
    CLI::Option* replay_o_ = nullptr;
    CLI::Option* pcap_o_ = nullptr;
    CLI::Option* speed_o_ = nullptr;
    CLI::Option* port_o_ = nullptr;
    CLI::Option* serve_o_ = nullptr;
    CLI::Option* store_o_ = nullptr;
    CLI::Option* glimpse_o_ = nullptr;
    CLI::Option* linger_o_ = nullptr;
};

} // namespace

std::unique_ptr<feed_protocol> make_moldudp64() {
    return std::make_unique<moldudp64_feed>();
}

} // namespace signet::md_feed
