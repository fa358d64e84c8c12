// md_receiver: receives market data on the feeds of a TOML config — ITCH 5.0 over MoldUDP64, CME
// MDP 3.0, Cboe PITCH, or raw counting, each feed by its protocol — with
// signet::receiver::receiver: logs a stats line per feed and interval (or a live view with --top),
// warns when a feed goes silent, stops cleanly on SIGINT/SIGTERM or after --duration, then prints
// and writes a summary. docs/md_receiver.md describes the config, the stats lines, the metrics and
// the summary.
//
// Exit codes: 0 ok, 1 runtime error (e.g. a port in use), 2 bad command line or config.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/async.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <signet/md/events.hpp>
#include <signet/net/log.hpp>
#include <signet/receiver/config.hpp>
#include <signet/receiver/receiver.hpp>
#include <signet/receiver/summary.hpp>

#include "cli.hpp"
#include "event_lines.hpp"
#include "stop_signals.hpp"

using namespace signet;

int main(int argc, char** argv) {
    CLI::App cli{"md_receiver: market-data receiver on signet (ITCH 5.0 over MoldUDP64, CME MDP "
                 "3.0, Cboe PITCH, raw counting: each feed's protocol in the config)"};
    cli.option_defaults()->always_capture_default();
    std::string config_path;
    double duration_s = 0;
    std::string summary_path;
    receiver::receiver_options options;
    std::string log_level = "info";
    auto* config_option =
        cli.add_option("--config", config_path, "TOML configuration file (see config/); required");
    cli.add_option("--duration", duration_s,
                   "seconds to run, at most one year; 0 = until SIGINT/SIGTERM")
        ->check(cli::number_in(0, cli::max_duration_s, "s"));
    cli.add_option("--summary-json", summary_path, "write the summary to this JSON file");
    cli.add_option("--top", options.top,
                   "live view on a terminal: redraw a table per feed every interval with the N "
                   "busiest instruments' top of book (0: plain stats lines)")
        ->check(CLI::Range(0, 100))
        ->default_val(0);
    cli.add_option("--record", options.record_path,
                   "write what each feed delivered, in sequence, where its protocol records "
                   "(moldudp64: a BinaryFILE of ITCH messages; FILE, with several feeds "
                   "FILE.<feed name>)");
    cli.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    std::vector<std::string> event_symbols;
    cli.add_option("--events", event_symbols,
                   "print the market events of these symbols as JSON lines (one per event; "
                   "'all': every instrument); see docs/events.md")
        ->delimiter(',');
    std::string event_kinds;
    cli.add_option("--event-kinds", event_kinds,
                   "with --events: only these kinds, comma-separated (bbo, trade, level_update, "
                   "order_add, ...)")
        ->check([](std::string const& list) {
            std::string_view bad;
            return md::parse_event_kinds(list, &bad) ? std::string()
                                                     : "no event kind '" + std::string(bad) + "'";
        });
    std::string events_out;
    cli.add_option("--events-out", events_out,
                   "write the --events lines to this file (default: "
                   "stdout, before the summary)");
    bool fields = false;
    cli.add_flag("--summary-fields", fields, "print the summary JSON's fields and exit");
    if (argc == 2 && std::string(argv[1]) == "--summary-fields") {
        md_receiver::print_summary_fields();
        return 0;
    }
    if (auto const code =
            cli::parse_command_line(cli, argc, argv, "md_receiver", {config_option})) {
        return *code;
    }

    receiver::receiver_config config;
    try {
        config = receiver::load_receiver_config(config_path);
    } catch (receiver::config_error const& e) {
        std::fprintf(stderr, "md_receiver: config error: %s\n", e.what());
        return 2;
    }

    md_receiver::stop_signals signals; // before the logger's and the runtime's threads start
    spdlog::init_thread_pool(8192, 1);
    auto logger = std::make_shared<spdlog::async_logger>(
        "md_receiver", std::make_shared<spdlog::sinks::stderr_color_sink_mt>(),
        spdlog::thread_pool(), spdlog::async_overflow_policy::block);
    logger->set_level(spdlog::level::from_str(log_level));
    spdlog::set_default_logger(logger);
    net::set_logger(logger);

    if (options.top > 0 && ::isatty(STDOUT_FILENO) == 0) {
        SPDLOG_WARN("md_receiver: --top needs a terminal on stdout; logging plain stats lines");
        options.top = 0;
    }
    std::unique_ptr<receiver::receiver> feeds;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> events_file(nullptr, &std::fclose);
    try {
        feeds = std::make_unique<receiver::receiver>(config, options);
        if (!event_symbols.empty()) {
            std::FILE* out = stdout;
            if (!events_out.empty()) {
                events_file.reset(std::fopen(events_out.c_str(), "w"));
                if (!events_file) {
                    throw std::runtime_error("cannot write the events to " + events_out);
                }
                out = events_file.get();
            }
            md_receiver::subscribe_json_lines(*feeds, event_symbols, event_kinds, out);
        }
        feeds->start();
    } catch (std::exception const& e) {
        SPDLOG_ERROR("md_receiver: {}", cli::describe(e));
        spdlog::shutdown();
        return 1;
    }
    SPDLOG_INFO("md_receiver: ready: {} feed(s), stats every {} s; SIGINT or SIGTERM stops",
                feeds->feed_count(), config.stats_interval_s);

    // Timers, stats lines and the live view run on the receiver's runtime: this thread only
    // waits for a signal, or for --duration (in slices, so that a year cannot overflow).
    auto const stop_at = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(duration_s));
    for (;;) {
        auto const left = duration_s > 0
                              ? stop_at - std::chrono::steady_clock::now()
                              : std::chrono::steady_clock::duration(std::chrono::hours(1));
        if (left <= std::chrono::steady_clock::duration::zero() ||
            signals.wait(std::min<std::chrono::nanoseconds>(left, std::chrono::hours(1)))) {
            break;
        }
    }

    feeds->stop(); // drain: every received packet is parsed or counted
    std::fflush(events_file ? events_file.get() : stdout);
    std::string const text = receiver::summary_text(*feeds);
    std::string const json = summary_path.empty() ? std::string() : receiver::summary_json(*feeds);
    feeds.reset();      // its publishers may log while they close: before the logger goes
    spdlog::shutdown(); // flush the async log before the summary goes to stdout
    std::fputs(text.c_str(), stdout);
    if (!summary_path.empty()) {
        std::ofstream out(summary_path);
        out << json << '\n';
        out.close();
        if (!out) {
            std::fprintf(stderr, "md_receiver: cannot write the summary to %s\n",
                         summary_path.c_str());
            return 1;
        }
    }
    return 0;
}
