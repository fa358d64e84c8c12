// md_feed --protocol mdp3: a CME MDP 3.0 channel from the generator — the incremental feed on
// --to (and --to-b), the snapshot loop and the instrument definitions on lines of their own.
#include <chrono>
#include <cstdio>

#include <signet/publisher/cme/mdp3_generator.hpp>
#include <signet/publisher/cme/mdp3_publisher.hpp>
#include <signet/publisher/udp_lines.hpp>

#include "cli.hpp"
#include "feed_protocol.hpp"
#include "run.hpp"
#include "truth_writer.hpp"

namespace signet::md_feed {

namespace {

namespace pub = publisher;

class mdp3_feed final : public feed_protocol {
public:
    std::string_view name() const noexcept override { return "mdp3"; }
    std::string_view description() const noexcept override {
        return "CME MDP 3.0 (--to/--to-b carry the incremental feed; --count and --rate count "
               "its packets)";
    }

    void add_options(CLI::Option_group& g) override {
        auto const ip_port =
            cli::parses(net::udp_endpoint::try_parse, "ip:port, e.g. 127.0.0.1:30001");
        snapshot_to_o_ =
            g.add_option("--snapshot-to", snapshot_to_, "the snapshot loop's destination ip:port")
                ->check(ip_port);
        definitions_to_o_ = g.add_option("--definitions-to", definitions_to_,
                                         "the instrument definitions' destination ip:port")
                                ->check(ip_port);
        g.add_option("--instruments", generation_.instruments, "instruments of the channel")
            ->check(CLI::Range(1, 200));
        g.add_option("--depth", generation_.depth, "book depth")->check(CLI::Range(1, 32));
        g.add_option("--snapshot-interval", snapshot_interval_ms_,
                     "ms between instruments of the snapshot loop (each: its levels, then its "
                     "orders' chunks back to back)")
            ->check(cli::number_in(0.001, 60'000, "ms"));
        g.add_option("--definition-interval", definition_interval_ms_,
                     "ms between definition packets")
            ->check(cli::number_in(0.001, 60'000, "ms"));
        g.add_option("--tail", tail_,
                     "seconds of snapshot and definition loops after the last incremental packet")
            ->check(cli::number_in(0, 3600, "s"));
    }

    std::string check(common_options const&) const override {
        if (snapshot_to_o_->count() == 0 || definitions_to_o_->count() == 0) {
            return "--protocol mdp3 needs --snapshot-to and --definitions-to";
        }
        return {};
    }

    int run(common_options const& common) override {
        pub::cme::mdp3_publisher_options options;
        options.stop_flag = &interrupted;
        options.rate = common.rate;
        options.packets = common.count;
        options.duration = cli::seconds(common.duration_s);
        options.snapshot_interval = cli::seconds(snapshot_interval_ms_ / 1000);
        options.definition_interval = cli::seconds(definition_interval_ms_ / 1000);
        options.tail = cli::seconds(tail_);
        options.faults = common.faults;
        pub::cme::mdp3_generator_options generation = generation_;
        generation.seed = common.seed;
        try {
            std::ofstream report_file = open_report(common.report_path);
            pub::cme::mdp3_generator generator(generation);
            truth_writer truth(common.truth_path);
            if (truth.enabled()) { // each incremental packet's MsgSeqNum: the books after it
                std::vector<std::pair<std::string, unsigned>> symbols;
                for (std::size_t i = 0; i < generator.instruments(); ++i) {
                    symbols.emplace_back("SIG" + std::to_string(generator.security_id(i)), 0);
                }
                truth.start("mdp3", std::move(symbols));
                options.on_incremental = [&truth](pub::cme::mdp3_generator const& g) {
                    std::vector<truth_writer::level> levels;
                    for (std::size_t i = 0; i < g.instruments(); ++i) {
                        for (char const side : {'B', 'S'}) {
                            levels.clear();
                            for (md::cme::mdp3_price_level const& l :
                                 side == 'B' ? g.book(i).bids() : g.book(i).offers()) {
                                levels.push_back({l.price, l.size, l.orders});
                            }
                            truth.set_side(static_cast<std::uint32_t>(i), side, levels);
                        }
                    }
                    truth.end_sequence(g.sequence());
                };
            }
            pub::udp_lines lines(common.lines, common.socket);
            pub::udp_lines snapshots({*net::udp_endpoint::try_parse(snapshot_to_)}, common.socket);
            pub::udp_lines definitions({*net::udp_endpoint::try_parse(definitions_to_)},
                                       common.socket);
            pub::cme::mdp3_publisher publisher(options, generator, lines, snapshots, definitions);
            auto const start = std::chrono::steady_clock::now();
            pub::run_result const result = publisher.run();
            std::string const report = publisher.report_json(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            pub::cme::mdp3_counts const& c = publisher.counts();
            std::fprintf(stderr,
                         "md_feed: mdp3: sent %llu incremental packets (dropped %llu, one line "
                         "%llu, duplicated %llu, reordered %llu), %llu snapshot packets, %llu "
                         "definitions\n",
                         static_cast<unsigned long long>(c.packets),
                         static_cast<unsigned long long>(c.dropped_packets),
                         static_cast<unsigned long long>(c.dropped_one_line_packets),
                         static_cast<unsigned long long>(c.duplicated_packets),
                         static_cast<unsigned long long>(c.reordered_packets),
                         static_cast<unsigned long long>(c.snapshot_packets),
                         static_cast<unsigned long long>(c.definition_packets));
            truth.finish();
            finish_run(report, report_file, common.report_path, result);
        } catch (std::exception const& e) {
            std::fprintf(stderr, "md_feed: %s\n", cli::describe(e).c_str());
            return 1;
        }
        return 0;
    }

private:
    pub::cme::mdp3_generator_options generation_{};
    std::string snapshot_to_, definitions_to_;
    double snapshot_interval_ms_ = 1;
    double definition_interval_ms_ = 5;
    double tail_ = 1;
    CLI::Option* snapshot_to_o_ = nullptr;
    CLI::Option* definitions_to_o_ = nullptr;
};

} // namespace

std::unique_ptr<feed_protocol> make_mdp3() {
    return std::make_unique<mdp3_feed>();
}

} // namespace signet::md_feed
