// md_feed --protocol pitch: a Cboe Multicast PITCH feed from the generator — units of symbols,
// their blocks on --to (and --to-b).
#include <chrono>
#include <cstdio>

#include <signet/publisher/cboe/pitch_generator.hpp>
#include <signet/publisher/cboe/pitch_publisher.hpp>
#include <signet/publisher/udp_lines.hpp>

#include "cli.hpp"
#include "feed_protocol.hpp"
#include "run.hpp"

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
        g.add_option("--tail-heartbeats", tail_,
                     "seconds of heartbeats after each unit's End of Session")
            ->check(cli::number_in(0, 3600, "s"));
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
        options.faults = common.faults;
        pub::cboe::pitch_generator_options generation = generation_;
        generation.seed = common.seed;
        try {
            std::ofstream report_file = open_report(common.report_path);
            pub::cboe::pitch_generator generator(generation);
            pub::udp_lines lines(common.lines, common.socket);
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
            finish_run(report, report_file, common.report_path, result);
        } catch (std::exception const& e) {
            std::fprintf(stderr, "md_feed: %s\n", cli::describe(e).c_str());
            return 1;
        }
        return 0;
    }

private:
    pub::cboe::pitch_generator_options generation_{};
    std::size_t block_messages_ = 4;
    double heartbeat_s_ = 1;
    double tail_ = 1;
};

} // namespace

std::unique_ptr<feed_protocol> make_pitch() {
    return std::make_unique<pitch_feed>();
}

} // namespace signet::md_feed
