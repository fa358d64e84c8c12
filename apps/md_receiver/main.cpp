// md_receiver: receives market data on the feeds of a TOML config — ITCH 5.0 over MoldUDP64, CME
// MDP 3.0, or raw counting, each feed by its protocol — with signet::receiver::receiver: logs a
// stats line per feed and interval (or a live view with --top), warns when a feed goes silent,
// stops cleanly on SIGINT/SIGTERM or after --duration, then prints and writes a summary.
// docs/md_receiver.md describes the config, the stats lines, the metrics and the summary.
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

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/async.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <signet/md/events.hpp>
#include <signet/net/log.hpp>
#include <signet/receiver/config.hpp>
#include <signet/receiver/event_json.hpp>
#include <signet/receiver/receiver.hpp>
#include <signet/receiver/summary.hpp>

#include "cli.hpp"

namespace {

using namespace signet;

/// Blocks SIGINT and SIGTERM (before any thread starts, so every thread inherits the mask) and
/// waits for one of them at most `limit`; true if one came.
class stop_signals {
public:
    stop_signals() {
        sigemptyset(&set_);
        sigaddset(&set_, SIGINT);
        sigaddset(&set_, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    }
    bool wait(std::chrono::nanoseconds limit) {
        timespec const timeout{static_cast<time_t>(limit.count() / 1'000'000'000),
                               static_cast<long>(limit.count() % 1'000'000'000)};
        int const sig = sigtimedwait(&set_, nullptr, &timeout);
        if (sig == SIGINT || sig == SIGTERM) {
            SPDLOG_INFO("md_receiver: {} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
            return true;
        }
        return false;
    }

private:
    sigset_t set_{};
};

/// The summary's fields as a Markdown table (docs/md_receiver.md holds this output).
void print_summary_fields() {
    std::printf("| field | level | meaning |\n|---|---|---|\n");
    for (auto const& f : receiver::summary_fields()) {
        std::printf("| `%.*s` | %s | %.*s |\n", static_cast<int>(f.name.size()), f.name.data(),
                    f.per_feed ? "feed" : "top", static_cast<int>(f.meaning.size()),
                    f.meaning.data());
    }
}

/// --events: a queued subscriber printing each event of `symbols` ("all": every one) as a JSON
/// line to `out` (on its own event worker: a slow terminal drops events, counted in the
/// summary's subscribers, never stalls a feed).
void subscribe_json_lines(receiver::receiver& feeds, std::vector<std::string> symbols,
                          std::string const& kinds, std::FILE* out) {
    md::event_mask const mask =
        kinds.empty() ? md::event_mask::all() : *md::parse_event_kinds(kinds);
    if (std::find(symbols.begin(), symbols.end(), "all") != symbols.end()) {
        symbols.clear();
    }
    feeds.subscribe(
        {.name = "events", .symbols = std::move(symbols), .kinds = mask, .queue_capacity = 1 << 20},
        [out, line = std::string()](receiver::event_view const& v) mutable {
            line.clear();
            receiver::append_event_json(line, v);
            line += '\n';
            std::fwrite(line.data(), 1, line.size(), out);
        });
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"md_receiver: market-data receiver on signet (ITCH 5.0 over MoldUDP64, CME MDP "
                 "3.0, raw counting: each feed's protocol in the config)"};
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
        print_summary_fields();
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

    stop_signals signals; // before the logger's and the runtime's threads start
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
            subscribe_json_lines(*feeds, event_symbols, event_kinds, out);
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
    spdlog::shutdown(); // flush the async log before the summary goes to stdout
    std::fputs(receiver::summary_text(*feeds).c_str(), stdout);
    if (!summary_path.empty()) {
        std::ofstream out(summary_path);
        out << receiver::summary_json(*feeds) << '\n';
        out.close();
        if (!out) {
            std::fprintf(stderr, "md_receiver: cannot write the summary to %s\n",
                         summary_path.c_str());
            return 1;
        }
    }
    return 0;
}
