// md_receiver: receives ITCH 5.0 over MoldUDP64 (or raw UDP) on the feeds of a TOML config,
// with one parser contract per feed on signet's runtime. Logs a stats line per interval, stops
// cleanly on SIGINT/SIGTERM or after --duration, then prints and writes a summary.
//
// Exit codes: 0 ok, 1 runtime error (e.g. a port in use), 2 bad command line or config.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <spdlog/async.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/net/runtime.hpp>

#include "config.hpp"
#include "feed_processor.hpp"
#include "json_writer.hpp"
#include "latency_histogram.hpp"

namespace {

using namespace signet;
using apps::feed_processor;
using apps::latency_histogram;

struct feed_entry {
    std::size_t id = 0;
    std::unique_ptr<feed_processor> processor;
};

std::string format_symbol_books(md::order_book const& book, std::size_t limit) {
    std::string out;
    std::size_t shown = 0;
    book.for_each_stock([&](md::stock_view const& s) {
        if (shown++ >= limit) {
            return;
        }
        char line[160];
        std::snprintf(line, sizeof(line),
                      "    %-8.*s bid %8.4f x %-7llu ask %8.4f x %-7llu orders %u\n",
                      static_cast<int>(s.symbol.size()), s.symbol.data(), s.top.bid_price / 10000.0,
                      static_cast<unsigned long long>(s.top.bid_shares), s.top.ask_price / 10000.0,
                      static_cast<unsigned long long>(s.top.ask_shares), s.orders);
        out += line;
    });
    return out;
}

std::string summary_json(double elapsed_s, latency_histogram::snapshot const& latency,
                         net::runtime const& rt, std::vector<feed_entry> const& feeds) {
    apps::json_writer j;
    j.begin_object();
    j.field("elapsed_s", elapsed_s);
    j.key("latency_ns").begin_object();
    j.field("p50", latency.percentile(0.50));
    j.field("p99", latency.percentile(0.99));
    j.field("p999", latency.percentile(0.999));
    j.field("max", latency.max);
    j.end_object();
    j.key("feeds").begin_array();
    for (auto const& f : feeds) {
        auto const net_stats = rt.stats(f.id);
        auto const session = f.processor->session_stats();
        auto const* itch = f.processor->itch_stats();
        j.begin_object();
        j.field("name", f.processor->config().name);
        j.field("packets", net_stats.packets);
        j.field("bytes", net_stats.bytes);
        j.field("messages", session.messages);
        j.key("messages_by_type").begin_object();
        if (itch != nullptr) {
            for (std::size_t c = 0; c < itch->messages_by_type.size(); ++c) {
                if (itch->messages_by_type[c] != 0) {
                    j.field(std::string(1, static_cast<char>(c)), itch->messages_by_type[c]);
                }
            }
        }
        j.end_object();
        j.field("gaps", session.gaps);
        j.field("missing_messages", session.missing_messages);
        j.field("duplicate_packets", session.duplicate_packets);
        j.field("malformed_packets", session.malformed_packets);
        j.field("malformed_messages", itch != nullptr ? itch->malformed_messages : 0);
        j.field("unknown_messages", itch != nullptr ? itch->unknown_messages : 0);
        j.field("heartbeats", session.heartbeats);
        j.field("end_of_session", session.end_of_session);
        j.field("next_sequence", session.next_sequence);
        j.field("queue_drops", net_stats.dropped);
        j.field("kernel_drops", net_stats.kernel_drops);
        j.field("truncated", net_stats.truncated);
        j.key("books").begin_object();
        if (auto const* book = f.processor->book()) {
            book->for_each_stock([&](md::stock_view const& s) {
                j.key(s.symbol).begin_object();
                j.field("bid_price", std::uint64_t{s.top.bid_price});
                j.field("bid_shares", s.top.bid_shares);
                j.field("ask_price", std::uint64_t{s.top.ask_price});
                j.field("ask_shares", s.top.ask_shares);
                j.field("orders", std::uint64_t{s.orders});
                j.end_object();
            });
        }
        j.end_object();
        j.end_object();
    }
    j.end_array();
    j.end_object();
    return j.str();
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"md_receiver: ITCH 5.0 over MoldUDP64 market-data receiver on signet"};
    std::string config_path;
    double duration_s = 0;
    std::string summary_path;
    std::string log_level = "info";
    cli.add_option("--config", config_path, "TOML configuration file (see config/)")->required();
    cli.add_option("--duration", duration_s, "seconds to run; 0 = until SIGINT/SIGTERM")
        ->check(CLI::NonNegativeNumber);
    cli.add_option("--summary-json", summary_path, "write the summary to this JSON file");
    cli.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    try {
        cli.parse(argc, argv);
    } catch (CLI::ParseError const& e) {
        int const code = cli.exit(e);
        return code == 0 ? 0 : 2;
    }

    apps::receiver_config config;
    try {
        config = apps::load_receiver_config(config_path);
    } catch (apps::config_error const& e) {
        std::fprintf(stderr, "md_receiver: config error: %s\n", e.what());
        return 2;
    }

    // Signals are taken synchronously by the main thread: block them before any thread starts.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    spdlog::init_thread_pool(8192, 1);
    auto logger = std::make_shared<spdlog::async_logger>(
        "md_receiver", std::make_shared<spdlog::sinks::stderr_color_sink_mt>(),
        spdlog::thread_pool(), spdlog::async_overflow_policy::block);
    logger->set_level(spdlog::level::from_str(log_level));
    spdlog::set_default_logger(logger);
    net::set_logger(logger);

    std::vector<feed_entry> feeds;
    std::unique_ptr<net::runtime> rt;
    try {
        rt = std::make_unique<net::runtime>(
            net::runtime_options{.backend = config.backend,
                                 .workers = config.workers,
                                 .cpus = config.cpus,
                                 .poller_cpu = -1,
                                 .idle = config.idle,
                                 .contract_capacity = 64 + 4 * config.feeds.size(),
                                 .drain_timeout = std::chrono::milliseconds(5000)});
        for (auto const& feed : config.feeds) {
            net::feed_options options;
            options.name = feed.name;
            options.lines = apps::line_options(feed);
            options.queue_capacity = feed.queue_capacity;
            options.on_full = feed.on_full;
            auto processor = std::make_unique<feed_processor>(feed);
            auto* p = processor.get();
            std::size_t const id =
                rt->add_feed(options, [p](net::packet const& packet) { (*p)(packet); });
            spdlog::info("feed {}: {} line(s), first on {}", feed.name, options.lines.size(),
                         rt->local_endpoint(id).to_string());
            feeds.push_back({id, std::move(processor)});
        }
        rt->start();
    } catch (std::exception const& e) {
        spdlog::error("md_receiver: {}", e.what());
        spdlog::shutdown();
        return 1;
    }

    using clock = std::chrono::steady_clock;
    auto const start = clock::now();
    auto const interval = std::chrono::duration<double>(config.stats_interval_s);
    auto next_stats = start + std::chrono::duration_cast<clock::duration>(interval);
    auto const stop_at = duration_s > 0 ? start + std::chrono::duration_cast<clock::duration>(
                                                      std::chrono::duration<double>(duration_s))
                                        : clock::time_point::max();
    std::vector<feed_processor::live_counters> last(feeds.size());
    latency_histogram::snapshot last_latency;
    auto last_time = start;
    for (;;) {
        auto const now = clock::now();
        auto const wake = std::min(next_stats, stop_at);
        if (now < wake) {
            auto const wait = std::chrono::duration_cast<std::chrono::nanoseconds>(wake - now);
            timespec timeout{static_cast<time_t>(wait.count() / 1'000'000'000),
                             static_cast<long>(wait.count() % 1'000'000'000)};
            int const sig = sigtimedwait(&signals, nullptr, &timeout);
            if (sig == SIGINT || sig == SIGTERM) {
                spdlog::info("md_receiver: {} received, stopping",
                             sig == SIGINT ? "SIGINT" : "SIGTERM");
                break;
            }
            continue;
        }
        if (now >= stop_at) {
            break;
        }
        // The stats line: rates over the interval, totals so far.
        double const seconds = std::chrono::duration<double>(now - last_time).count();
        std::uint64_t packets = 0;
        std::uint64_t messages = 0;
        std::uint64_t gaps = 0;
        std::uint64_t drops = 0;
        latency_histogram::snapshot latency;
        for (std::size_t i = 0; i < feeds.size(); ++i) {
            auto const live = feeds[i].processor->live();
            packets += live.packets - last[i].packets;
            messages += live.messages - last[i].messages;
            gaps += live.gaps;
            drops += rt->stats(feeds[i].id).dropped + rt->stats(feeds[i].id).kernel_drops;
            last[i] = live;
            latency += feeds[i].processor->latency().take();
        }
        auto const window = latency - last_latency;
        last_latency = latency;
        last_time = now;
        spdlog::info("stats: {:.0f} packets/s, {:.0f} msgs/s, gaps {}, drops {}, latency p50 {} "
                     "ns p99 {} ns",
                     static_cast<double>(packets) / seconds,
                     static_cast<double>(messages) / seconds, gaps, drops, window.percentile(0.50),
                     window.percentile(0.99));
        next_stats += std::chrono::duration_cast<clock::duration>(interval);
    }

    rt->stop(); // drain: every received packet is parsed or counted
    for (auto& f : feeds) {
        f.processor->finish();
    }
    double const elapsed = std::chrono::duration<double>(clock::now() - start).count();
    latency_histogram::snapshot latency;
    for (auto const& f : feeds) {
        latency += f.processor->latency().take();
    }
    spdlog::shutdown(); // flush the async log before the summary goes to stdout

    std::printf("md_receiver summary after %.1f s (backend %s)\n", elapsed,
                std::string(to_string(rt->backend())).c_str());
    for (auto const& f : feeds) {
        auto const n = rt->stats(f.id);
        auto const s = f.processor->session_stats();
        std::printf("  feed %s: %llu packets, %llu messages, %llu gaps (%llu missing), %llu "
                    "duplicates, %llu malformed, %llu queue drops, %llu kernel drops%s\n",
                    f.processor->config().name.c_str(), static_cast<unsigned long long>(n.packets),
                    static_cast<unsigned long long>(s.messages),
                    static_cast<unsigned long long>(s.gaps),
                    static_cast<unsigned long long>(s.missing_messages),
                    static_cast<unsigned long long>(s.duplicate_packets),
                    static_cast<unsigned long long>(s.malformed_packets),
                    static_cast<unsigned long long>(n.dropped),
                    static_cast<unsigned long long>(n.kernel_drops),
                    s.end_of_session ? ", end of session" : "");
        if (auto const* book = f.processor->book()) {
            std::printf("%s", format_symbol_books(*book, 5).c_str());
        }
    }
    std::printf("  latency (kernel rx -> parsed): p50 %llu ns, p99 %llu ns, p99.9 %llu ns, max "
                "%llu ns\n",
                static_cast<unsigned long long>(latency.percentile(0.50)),
                static_cast<unsigned long long>(latency.percentile(0.99)),
                static_cast<unsigned long long>(latency.percentile(0.999)),
                static_cast<unsigned long long>(latency.max));
    if (!summary_path.empty()) {
        std::ofstream out(summary_path);
        out << summary_json(elapsed, latency, *rt, feeds) << '\n';
        if (!out) {
            std::fprintf(stderr, "md_receiver: cannot write %s\n", summary_path.c_str());
            return 1;
        }
    }
    return 0;
}
