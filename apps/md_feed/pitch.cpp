// md_feed --protocol pitch: a Cboe Multicast PITCH feed from the generator — units of symbols,
// their blocks on --to (and --to-b).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include <signet/md/little_endian.hpp>
#include <signet/publisher/cboe/pitch_generator.hpp>
#include <signet/publisher/cboe/pitch_publisher.hpp>
#include <signet/publisher/cboe/pitch_recovery_service.hpp>
#include <signet/publisher/udp_lines.hpp>

#include "cli.hpp"
#include "feed_protocol.hpp"
#include "run.hpp"
#include "truth_writer.hpp"
#include <fmt/format.h>

namespace signet::md_feed {

namespace {

namespace pub = publisher;

class pitch_feed final : public feed_protocol {
public:
    std::string_view name() const noexcept override { return "pitch"; }
    std::string_view description() const noexcept override {
        return "Cboe Multicast PITCH (--to/--to-b carry the units' blocks; --count and --rate "
               "count messages)";
    }

    void add_options(CLI::Option_group& g) override {
        g.add_option("--units", generation_.units, "units (each numbers its messages)")
            ->check(CLI::Range(1, 64));
        g.add_option("--symbols", generation_.symbols, "symbols, spread over the units")
            ->check(CLI::Range(1, 4096));
        g.add_option("--max-orders", generation_.max_orders, "live orders per symbol")
            ->check(CLI::Range(2, 10000));
        g.add_option("--block-messages", block_messages_, "messages per block, at most")
            ->check(CLI::Range(1, 255));
        g.add_option("--heartbeat", heartbeat_s_, "seconds without data before a heartbeat")
            ->check(cli::number_in(0.001, 60, "s"));
        auto const ip_port =
            cli::parses(net::udp_endpoint::try_parse, "ip:port, e.g. 127.0.0.1:30001");
        serve_grp_o_ = g.add_option("--serve-grp", grp_port_,
                                    "serve gap requests (a Gap Request Proxy) on this TCP port; "
                                    "the answers go to --gap-to")
                           ->check(CLI::Range(1, 65535));
        gap_to_o_ =
            g.add_option("--gap-to", gap_to_, "the gap line's destination ip:port")->check(ip_port);
        g.add_option("--serve-spin", spin_port_,
                     "serve spins (a Spin server per unit) on this TCP port + unit - 1")
            ->check(CLI::Range(1, 65535));
        g.add_option("--login", login_,
                     "the credentials GRP and Spin logins must carry: SUBID:USER:PASSWORD "
                     "(default: any)");
        g.add_flag("--mute-grp", mute_grp_, "accept gap requests and never answer them (tests)");
        g.add_option("--await-login", await_login_s_,
                     "with --serve-grp or --serve-spin: wait this long for a first login before "
                     "publishing (a receiver's session up before the first gap, as a production "
                     "GRP session is); 0: do not wait")
            ->check(cli::number_in(0, 600, "s"));
        g.add_option("--tail-heartbeats", tail_,
                     "seconds of heartbeats after each unit's End of Session")
            ->check(cli::number_in(0, 3600, "s"));
        linger_o_ = g.add_option("--linger", linger_,
                                 "with --serve-grp or --serve-spin: seconds of serving after the "
                                 "tail heartbeats (SIGINT ends it early)")
                        ->check(cli::number_in(0, 3600, "s"));
    }

    std::string check(common_options const&) const override {
        if ((serve_grp_o_->count() != 0) != (gap_to_o_->count() != 0)) {
            return "--serve-grp and --gap-to go together";
        }
        if (linger_o_->count() != 0 && grp_port_ == 0 && spin_port_ == 0) {
            return "--linger requires --serve-grp or --serve-spin";
        }
        if (!login_.empty() && std::count(login_.begin(), login_.end(), ':') != 2) {
            return "--login is SUBID:USER:PASSWORD";
        }
        return {};
    }

    int run(common_options const& common) override {
        pub::cboe::pitch_publisher_options options;
        options.stop_flag = &interrupted;
        options.rate = common.rate;
        options.messages = common.count;
        options.duration = cli::seconds(common.duration_s);
        options.max_block_messages = block_messages_;
        options.heartbeat_interval = cli::seconds(heartbeat_s_);
        options.tail = cli::seconds(tail_);
        options.on_tail = [tail = tail_] {
            std::fprintf(stderr,
                         "md_feed: the messages are sent; heartbeats alone for %g s "
                         "(--tail-heartbeats)\n",
                         tail);
        };
        options.faults = common.faults;
        pub::cboe::pitch_generator_options generation = generation_;
        generation.seed = common.seed;
        try {
            std::ofstream report_file = open_report(common.report_path);
            truth_writer truth(common.truth_path);
            std::vector<pub::cboe::pitch_book_change> pending; // of the block being built
            if (truth.enabled()) {
                generation.on_book_change = [&pending](pub::cboe::pitch_book_change const& c) {
                    pending.push_back(c);
                };
            }
            pub::cboe::pitch_generator generator(generation);
            if (truth.enabled()) {
                std::vector<std::pair<std::string, unsigned>> symbols;
                for (std::size_t i = 0; i < generator.symbols(); ++i) {
                    symbols.emplace_back(generator.symbol(i), 1 + i % generation.units);
                }
                truth.start("pitch", std::move(symbols));
            }
            pub::udp_lines lines(common.lines, common.socket);
            std::optional<pub::udp_lines> gap_line;
            std::unique_ptr<pub::cboe::pitch_recovery_service> recovery;
            if (grp_port_ != 0 || spin_port_ != 0) {
                pub::cboe::pitch_recovery_options r;
                r.units = generation.units;
                r.grp = grp_port_ != 0;
                r.grp_port = grp_port_;
                r.spin = spin_port_ != 0;
                r.spin_port = spin_port_;
                r.mute_grp = mute_grp_;
                if (!login_.empty()) {
                    std::size_t const a = login_.find(':');
                    std::size_t const b = login_.find(':', a + 1);
                    r.credentials = md::cboe::session_credentials::of(
                        login_.substr(0, a), login_.substr(a + 1, b - a - 1), login_.substr(b + 1));
                }
                if (r.grp) {
                    gap_line.emplace(std::vector{*net::udp_endpoint::try_parse(gap_to_)},
                                     common.socket);
                }
                recovery = std::make_unique<pub::cboe::pitch_recovery_service>(
                    r, gap_line ? &*gap_line : nullptr);
                options.on_block = [&recovery](std::span<std::byte const> block) {
                    recovery->record(block);
                };
            }
            if (truth.enabled()) {
                options.on_block =
                    [&, record = std::move(options.on_block)](std::span<std::byte const> block) {
                        if (record) {
                            record(block);
                        }
                        write_truth(truth, generator, pending, block);
                    };
            }
            if (recovery && await_login_s_ > 0) {
                await_login(*recovery);
            }
            pub::cboe::pitch_publisher publisher(options, generator, lines);
            auto const start = std::chrono::steady_clock::now();
            pub::run_result const result = publisher.run();
            std::string const report = publisher.report_json(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            pub::cboe::pitch_counts const& c = publisher.counts();
            std::fprintf(stderr,
                         "md_feed: pitch: sent %llu blocks of %llu messages (dropped %llu, one "
                         "line %llu, duplicated %llu, reordered %llu), %llu heartbeats\n",
                         static_cast<unsigned long long>(c.packets),
                         static_cast<unsigned long long>(c.messages),
                         static_cast<unsigned long long>(c.dropped_packets),
                         static_cast<unsigned long long>(c.dropped_one_line_packets),
                         static_cast<unsigned long long>(c.duplicated_packets),
                         static_cast<unsigned long long>(c.reordered_packets),
                         static_cast<unsigned long long>(c.heartbeats));
            std::string full = report;
            if (recovery) {
                linger(linger_);
                recovery->stop();
                pub::cboe::pitch_recovery_counts const r = recovery->counts();
                // The fields md-verdict reads of a feed that re-sends (as MoldUDP64's).
                full.pop_back();
                full += fmt::format(",\"dropped_messages\":{},\"spins\":{},\"spin_orders\":{}",
                                    c.dropped_messages, r.spins, r.spin_orders);
                if (grp_port_ != 0) {
                    full += fmt::format(",\"rerequests\":{{\"requests\":{},\"accepted\":{},"
                                        "\"rejected\":{},\"packets_resent\":{},"
                                        "\"messages_resent\":{}}}",
                                        r.gap_requests, r.gap_accepted, r.gap_rejected,
                                        r.packets_resent, r.messages_resent);
                }
                full += "}";
            }
            truth.finish();
            finish_run(full, report_file, common.report_path, result);
        } catch (std::exception const& e) {
            std::fprintf(stderr, "md_feed: %s\n", cli::describe(e).c_str());
            return 1;
        }
        return 0;
    }

private:
    /// --truth-out: the changes `pending` of the generated messages of `block` (just built),
    /// each under its sequence in the block's unit.
    static void write_truth(truth_writer& truth, pub::cboe::pitch_generator const& generator,
                            std::vector<pub::cboe::pitch_book_change>& pending,
                            std::span<std::byte const> block) {
        namespace mt = md::cboe::message_type;
        auto const unit = static_cast<unsigned>(block[3]);
        std::uint64_t sequence = md::load_le<std::uint32_t>(block.data() + 4);
        std::vector<std::uint64_t> generated; // their sequences, in order
        for (std::size_t at = 8; at + 2 <= block.size(); ++sequence) {
            auto const length = static_cast<std::size_t>(block[at]);
            auto const type = static_cast<std::uint8_t>(block[at + 1]);
            if (type != mt::time && type != mt::end_of_session) {
                generated.push_back(sequence);
            }
            at += std::max<std::size_t>(length, 2);
        }
        std::uint64_t const first = generator.messages() - generated.size() + 1;
        std::uint64_t message = first;
        for (pub::cboe::pitch_book_change const& c : pending) {
            if (c.message != message) {
                truth.end_sequence(generated[message - first], unit);
                message = c.message;
            }
            truth.change(static_cast<std::uint32_t>(c.symbol), c.side, c.price, c.quantity,
                         c.orders);
        }
        if (!pending.empty()) {
            truth.end_sequence(generated[message - first], unit);
        }
        pending.clear();
    }

    /// --await-login: until a client logged in, the deadline passed or SIGINT; says which.
    void await_login(pub::cboe::pitch_recovery_service const& recovery) const {
        auto const start = std::chrono::steady_clock::now();
        auto const deadline = start + cli::seconds(await_login_s_);
        while (recovery.counts().logins == 0 && !interrupted.load(std::memory_order_relaxed) &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5)); // a polling period
        }
        auto const waited = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
        if (recovery.counts().logins != 0) {
            std::fprintf(stderr, "md_feed: pitch: a client logged in after %lld ms: publishing\n",
                         static_cast<long long>(waited.count()));
        } else {
            std::fprintf(stderr, "md_feed: pitch: no login within %lld ms: publishing anyway\n",
                         static_cast<long long>(waited.count()));
        }
    }

    double await_login_s_ = 0;
    pub::cboe::pitch_generator_options generation_{};
    std::size_t block_messages_ = 4;
    double heartbeat_s_ = 1;
    double tail_ = 1;
    std::uint16_t grp_port_ = 0;
    std::uint16_t spin_port_ = 0;
    std::string gap_to_;
    std::string login_;
    bool mute_grp_ = false;
    double linger_ = 0;
    CLI::Option* serve_grp_o_ = nullptr;
    CLI::Option* linger_o_ = nullptr;
    CLI::Option* gap_to_o_ = nullptr;
};

} // namespace

std::unique_ptr<feed_protocol> make_pitch() {
    return std::make_unique<pitch_feed>();
}

} // namespace signet::md_feed
