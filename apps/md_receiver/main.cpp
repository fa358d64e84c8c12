// md_receiver: receives ITCH 5.0 over MoldUDP64 (or raw UDP) on the feeds of a TOML config,
// with one parser contract per feed on signet's runtime. Logs a stats line per feed and interval,
// warns when a feed goes silent, stops cleanly on SIGINT/SIGTERM or after --duration, then
// prints and writes a summary.
//
// Exit codes: 0 ok, 1 runtime error (e.g. a port in use), 2 bad command line or config.
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/async.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/net/runtime.hpp>

#include "cli.hpp"
#include "config.hpp"
#include "feed_processor.hpp"
#include "json_text.hpp"
#include "latency_histogram.hpp"
#include "metrics_endpoint.hpp"

namespace {

using namespace signet;
using apps::feed_processor;
using apps::latency_histogram;
using clock_type = std::chrono::steady_clock;

/// The main loop waits for signals at most this long, whatever the stats interval: a stop
/// request is seen within it even if the timers were wrong.
constexpr std::chrono::milliseconds max_wait{100};
/// After the first silence warning of a feed, the next one comes this much later at the soonest.
constexpr std::chrono::seconds silence_repeat{60};

/// The parser contract's callable: the feed's processor, with its timers (on_idle).
struct parser_of {
    feed_processor* processor;
    void operator()(net::packet const& packet) { (*processor)(packet); }
    void on_batch() { processor->on_batch(); }
    void on_idle() { processor->on_idle(); }
};

struct feed_entry {
    std::size_t id = 0;
    std::unique_ptr<feed_processor> processor;
    std::unique_ptr<md::binary_file_writer> recording; // --record
    // Main thread only: the previous stats line and the silence watch.
    feed_processor::live_counters last{};
    latency_histogram::snapshot last_latency{};
    std::array<latency_histogram::snapshot, 5> top_last{}; // --top: stage windows
    std::uint64_t last_received = 0;
    clock_type::time_point last_change{};
    clock_type::time_point next_silence_warning{};
};

/// "239.1.1.1" for an address-only endpoint (port 0), "ip:port" otherwise.
std::string address_text(net::udp_endpoint const& e) {
    std::string text = e.to_string();
    if (text.ends_with(":0")) {
        text.resize(text.size() - 2);
        if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
            text = text.substr(1, text.size() - 2);
        }
    }
    return text;
}

/// "line A on 127.0.0.1:31001 (unicast)", "line B on 0.0.0.0:31102 (group 232.1.1.1, source
/// 127.0.0.1, interface lo)".
std::string describe_line(char const* label, net::udp_socket_options const& line,
                          net::udp_endpoint const& local) {
    std::string text = std::string("line ") + label + " on " + local.to_string();
    if (!line.group) {
        return text + " (unicast)";
    }
    text += " (group " + address_text(*line.group);
    text += line.source ? ", source " + address_text(*line.source) : ", any source";
    if (!line.interface.empty()) {
        text += ", interface " + line.interface;
    }
    return text + ")";
}

/// Wire bytes for a terminal: printable ASCII as is, anything else as \xNN.
std::string printable(std::string_view bytes) {
    std::string out;
    for (char const c : bytes) {
        auto const b = static_cast<unsigned char>(c);
        if (b >= 0x20 && b < 0x7F && c != '\\') {
            out += c;
        } else {
            char escaped[8];
            std::snprintf(escaped, sizeof(escaped), "\\x%02X", static_cast<unsigned>(b));
            out += escaped;
        }
    }
    return out;
}

std::string format_symbol_books(md::order_book const& book, std::size_t limit) {
    std::string out;
    std::size_t shown = 0;
    book.for_each_stock([&](md::stock_view const& s) {
        if (shown++ >= limit) {
            return;
        }
        std::string const symbol = printable(s.symbol);
        char line[200];
        std::snprintf(line, sizeof(line),
                      "    %-8s bid %8.4f x %-7llu ask %8.4f x %-7llu orders %u\n", symbol.c_str(),
                      s.top.bid_price / 10000.0, static_cast<unsigned long long>(s.top.bid_shares),
                      s.top.ask_price / 10000.0, static_cast<unsigned long long>(s.top.ask_shares),
                      s.orders);
        out += line;
    });
    return out;
}

std::string summary_json(double elapsed_s, latency_histogram::snapshot const& latency,
                         net::runtime const& rt, std::vector<feed_entry> const& feeds) {
    using json = nlohmann::ordered_json;
    json j;
    j["elapsed_s"] = elapsed_s;
    j["latency_ns"] = {{"p50", latency.percentile(0.50)},
                       {"p99", latency.percentile(0.99)},
                       {"p999", latency.percentile(0.999)},
                       {"max", latency.max}};
    j["feeds"] = json::array();
    for (auto const& f : feeds) {
        auto const net_stats = rt.stats(f.id);
        auto const session = f.processor->session_stats();
        auto const* itch = f.processor->itch_stats();
        json feed;
        feed["name"] = f.processor->config().name;
        feed["packets"] = net_stats.packets;
        feed["bytes"] = net_stats.bytes;
        feed["messages"] = session.messages;
        feed["messages_by_type"] = json::object();
        if (itch != nullptr) {
            for (std::size_t c = 0; c < itch->messages_by_type.size(); ++c) {
                if (itch->messages_by_type[c] != 0) {
                    feed["messages_by_type"]
                        [apps::wire_text(std::string(1, static_cast<char>(c)))] =
                            itch->messages_by_type[c];
                }
            }
        }
        feed["gaps"] = session.gaps;
        feed["missing_messages"] = session.missing_messages;
        feed["duplicate_packets"] = session.duplicate_packets;
        feed["malformed_packets"] = session.malformed_packets;
        feed["foreign_session_packets"] = session.foreign_session_packets;
        feed["implausible_packets"] = session.implausible_packets;
        feed["resyncs"] = session.resyncs;
        feed["malformed_messages"] = itch != nullptr ? itch->malformed_messages : 0;
        feed["unknown_messages"] = itch != nullptr ? itch->unknown_messages : 0;
        feed["heartbeats"] = session.heartbeats;
        feed["end_of_session"] = session.end_of_session;
        feed["next_sequence"] = session.next_sequence;
        feed["queue_drops"] = net_stats.dropped;
        feed["kernel_drops"] = net_stats.kernel_drops;
        feed["truncated"] = net_stats.truncated;
        feed["rearms"] = net_stats.rearms; // io_uring receives re-armed (ring_buffers)
        feed["hardware_timestamps"] = net_stats.hardware_timestamps;
        feed["books"] = json::object();
        if (auto const* book = f.processor->book()) {
            book->for_each_stock([&](md::stock_view const& s) {
                feed["books"][apps::wire_text(s.symbol)] = {
                    {"bid_price", std::uint64_t{s.top.bid_price}},
                    {"bid_shares", s.top.bid_shares},
                    {"ask_price", std::uint64_t{s.top.ask_price}},
                    {"ask_shares", s.top.ask_shares},
                    {"orders", std::uint64_t{s.orders}}};
            });
        }
        // Added after the fields above (which external tools read): the order book's counters.
        feed["unknown_order_refs"] = itch != nullptr ? itch->unknown_order_refs : 0;
        feed["duplicate_order_refs"] = itch != nullptr ? itch->duplicate_order_refs : 0;
        feed["book_full_drops"] = itch != nullptr ? itch->book_full_drops : 0;
        feed["book_max_orders"] = f.processor->config().max_orders;
        // Percentiles, and the exact cumulative buckets (upper bound ns, samples at or below)
        // that scripts/plot-latency draws as a CDF.
        auto const distribution = [](latency_histogram::snapshot const& h) {
            json buckets = json::array();
            h.for_each_cumulative([&](std::uint64_t le, std::uint64_t cumulative) {
                buckets.push_back({le, cumulative});
            });
            return json{{"p50", h.percentile(0.50)},
                        {"p99", h.percentile(0.99)},
                        {"p999", h.percentile(0.999)},
                        {"max", h.max},
                        {"count", h.count},
                        {"buckets", std::move(buckets)}};
        };
        auto const& stages = f.processor->stages();
        feed["stage_latency_ns"] = {
            {"receive", distribution(stages.receive().take())},
            {"queue", distribution(stages.queue().take())},
            {"parse", distribution(stages.parse().take())},
            {"total", distribution(stages.total().take())},
            {"sequence", distribution(f.processor->sequence_latency().take())}};
        if (auto const* r = f.processor->recovery_stats()) {
            // Gap recovery (config rerequest): the gaps above are those finally lost.
            auto const took = f.processor->recovery_latency().take();
            feed["recovery"] = {{"state", md::to_string(f.processor->recovery_state())},
                                {"gaps", r->gaps},
                                {"gaps_recovered", r->gaps_recovered},
                                {"gaps_lost", r->gaps_lost},
                                {"recovered_messages", r->recovered_messages},
                                {"lost_messages", r->lost_messages},
                                {"rerequests_sent", r->rerequests_sent},
                                {"rerequest_timeouts", r->rerequest_timeouts},
                                {"rerequest_answers", f.processor->rerequest_answers()},
                                {"request_send_errors", f.processor->request_send_errors()},
                                {"recovering_s", static_cast<double>(r->recovering_ns) / 1e9},
                                {"latency_ns",
                                 {{"p50", took.percentile(0.50)},
                                  {"p99", took.percentile(0.99)},
                                  {"max", took.max}}}};
        }
        if (f.recording) {
            auto const r = f.recording->snapshot();
            feed["record"] = {{"path", f.recording->path()},
                              {"messages", r.messages},
                              {"bytes", r.bytes},
                              {"drops", r.drops},
                              {"write_errors", r.write_errors}};
        }
        j["feeds"].push_back(std::move(feed));
    }
    return apps::dump_json(j);
}

std::string micros(std::uint64_t ns) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(ns) / 1000.0);
    return text;
}

/// One line per feed: rates over the last interval, then running totals since the start.
void log_stats(net::runtime const& rt, feed_entry& f, double seconds) {
    auto const live = f.processor->live();
    auto const net_stats = rt.stats(f.id);
    auto const latency = f.processor->stages().total().take();
    auto const window = latency - f.last_latency;
    std::string const latency_text =
        window.count == 0 ? std::string("latency -")
                          : "latency p50 " + micros(window.percentile(0.50)) + " µs, p99 " +
                                micros(window.percentile(0.99)) + " µs";
    SPDLOG_INFO("stats {} | last {:.2f} s: {:.0f} pkts/s, {:.0f} msgs/s, {} | totals: {} pkts, "
                "{} msgs, {} gaps, {} missing msgs, {} dup pkts, {} malformed pkts, {} ignored "
                "pkts, {} queue drops, {} kernel drops, {} truncated",
                f.processor->config().name, seconds,
                static_cast<double>(live.packets - f.last.packets) / seconds,
                static_cast<double>(live.messages - f.last.messages) / seconds, latency_text,
                live.packets, live.messages, live.gaps, live.missing_messages,
                live.duplicate_packets, live.malformed_packets, live.ignored_packets,
                net_stats.dropped, net_stats.kernel_drops, net_stats.truncated);
    if (f.processor->config().rerequest) {
        SPDLOG_INFO("recovery {} | {}: {} msgs recovered, {} lost", f.processor->config().name,
                    live.recovering ? "recovering" : "synchronized", live.recovered_messages,
                    live.lost_messages);
    }
    f.last = live;
    f.last_latency = latency;
}

/// md_receiver --top: one screen, redrawn every interval (stdout, a terminal): per feed its
/// rates, gaps, recovery state, stage latencies (µs over the interval) and the busiest stocks.
void draw_top(net::runtime const& rt, std::vector<feed_entry>& feeds, double seconds) {
    std::string screen = "\x1b[H\x1b[2J"; // home, clear
    for (auto& f : feeds) {
        auto const live = f.processor->live();
        auto const net_stats = rt.stats(f.id);
        auto const& config = f.processor->config();
        auto const stage = [](latency_histogram const& h, latency_histogram::snapshot& last) {
            auto const now = h.take();
            auto const window = now - last;
            last = now;
            return window.count == 0
                       ? std::string("     -/-     ")
                       : micros(window.percentile(0.50)) + "/" + micros(window.percentile(0.99));
        };
        char line[256];
        std::snprintf(line, sizeof(line),
                      "feed %-12s %9.0f pkts/s %10.0f msgs/s  gaps %llu (missing %llu)  ignored "
                      "%llu  drops %llu+%llu  %s\n",
                      config.name.c_str(),
                      static_cast<double>(live.packets - f.last.packets) / seconds,
                      static_cast<double>(live.messages - f.last.messages) / seconds,
                      static_cast<unsigned long long>(live.gaps),
                      static_cast<unsigned long long>(live.missing_messages),
                      static_cast<unsigned long long>(live.ignored_packets),
                      static_cast<unsigned long long>(net_stats.dropped),
                      static_cast<unsigned long long>(net_stats.kernel_drops),
                      !config.rerequest ? ""
                      : live.recovering ? "RECOVERING"
                                        : "synchronized");
        screen += line;
        auto const& stages = f.processor->stages();
        screen += "  latency p50/p99 µs: receive " + stage(stages.receive(), f.top_last[0]) +
                  "  queue " + stage(stages.queue(), f.top_last[1]) + "  parse " +
                  stage(stages.parse(), f.top_last[2]) + "  total " +
                  stage(stages.total(), f.top_last[3]) + "  sequence " +
                  stage(f.processor->sequence_latency(), f.top_last[4]) + "\n";
        screen += "  symbol        bid price x shares       ask price x shares   orders\n";
        for (auto const& row : f.processor->top_rows()) {
            auto const length = static_cast<std::size_t>(
                std::find(row.symbol.begin(), row.symbol.end(), '\0') - row.symbol.begin());
            std::string const symbol = printable(std::string_view(row.symbol.data(), length));
            std::snprintf(line, sizeof(line), "  %-8s %10.4f x %-9llu %10.4f x %-9llu %6u\n",
                          symbol.c_str(), row.top.bid_price / 10000.0,
                          static_cast<unsigned long long>(row.top.bid_shares),
                          row.top.ask_price / 10000.0,
                          static_cast<unsigned long long>(row.top.ask_shares), row.orders);
            screen += line;
        }
        screen += "\n";
        f.last = live;
    }
    std::fwrite(screen.data(), 1, screen.size(), stdout);
    std::fflush(stdout);
}

/// Warns when a feed that has not ended its session received nothing for `silent` seconds; then
/// at most once per silence_repeat while it stays silent.
void watch_silence(net::runtime const& rt, feed_entry& f, clock_type::time_point now,
                   clock_type::time_point start, clock_type::duration silent) {
    std::uint64_t const received = rt.stats(f.id).packets;
    if (received != f.last_received) {
        f.last_received = received;
        f.last_change = now;
        f.next_silence_warning = now + silent;
        return;
    }
    if (now < f.next_silence_warning || f.processor->live().end_of_session) {
        return;
    }
    auto const repeat = std::max<clock_type::duration>(silent, silence_repeat);
    SPDLOG_WARN("feed {}: nothing received for {:.1f} s{} ([stats] silent_warning_s; repeated "
                "at most every {} s while silent)",
                f.processor->config().name,
                std::chrono::duration<double>(now - f.last_change).count(),
                f.last_change == start ? " since start" : "",
                std::chrono::duration_cast<std::chrono::seconds>(repeat).count());
    f.next_silence_warning = now + repeat;
}

template <typename Duration>
clock_type::duration to_clock(Duration d) {
    return std::chrono::duration_cast<clock_type::duration>(d);
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"md_receiver: ITCH 5.0 over MoldUDP64 market-data receiver on signet"};
    cli.option_defaults()->always_capture_default();
    std::string config_path;
    double duration_s = 0;
    std::string summary_path;
    std::string record_path;
    std::size_t top = 0;
    std::string log_level = "info";
    auto* config_option =
        cli.add_option("--config", config_path, "TOML configuration file (see config/); required");
    cli.add_option("--duration", duration_s,
                   "seconds to run, at most one year; 0 = until SIGINT/SIGTERM")
        ->check(cli::number_in(0, cli::max_duration_s, "s"));
    cli.add_option("--summary-json", summary_path, "write the summary to this JSON file");
    cli.add_option("--top", top,
                   "live view on a terminal: redraw a table per feed every interval with the N "
                   "busiest stocks' top of book (0: plain stats lines)")
        ->check(CLI::Range(0, 100))
        ->default_val(0);
    cli.add_option("--record", record_path,
                   "write what each MoldUDP64 feed delivered, in sequence, as a BinaryFILE "
                   "(FILE; with several feeds FILE.<feed name>)");
    cli.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    if (auto const code =
            cli::parse_command_line(cli, argc, argv, "md_receiver", {config_option})) {
        return *code;
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

    if (top > 0 && ::isatty(STDOUT_FILENO) == 0) {
        SPDLOG_WARN("md_receiver: --top needs a terminal on stdout; logging plain stats lines");
        top = 0;
    }
    std::vector<feed_entry> feeds;
    std::unique_ptr<net::runtime> rt;
    std::unique_ptr<apps::metrics_endpoint> endpoint; // [metrics] listen; goes before rt
    bool starting = false;
    try {
        rt = std::make_unique<net::runtime>(
            net::runtime_options{.backend = config.backend,
                                 .workers = config.workers,
                                 .cpus = config.cpus,
                                 .poller_cpu = -1,
                                 .idle = config.idle,
                                 .poller = config.poller,
                                 .contract_capacity = 64 + 4 * config.feeds.size(),
                                 .drain_timeout = std::chrono::milliseconds(5000)});
        for (auto const& feed : config.feeds) {
            net::feed_options options;
            options.name = feed.name;
            options.lines = apps::line_options(feed);
            options.queue_capacity = feed.queue_capacity;
            options.on_full = feed.on_full;
            options.buffer_size = feed.buffer_size;
            options.ring_buffers = feed.ring_buffers;
            auto processor = std::make_unique<feed_processor>(feed);
            processor->set_top(top);
            auto* p = processor.get();
            std::size_t const id = rt->add_feed(options, parser_of{p});
            if (feed.rerequest) {
                std::size_t const request = options.lines.size() - 1;
                p->attach_request_line(rt->line_socket(id, request),
                                       static_cast<std::uint16_t>(request));
            }
            // Line labels: A (and B), then R, the re-request line.
            auto const label = [&](std::size_t i) { // "A", "B", "R" (line_name, upper case)
                return std::string(1, static_cast<char>(std::toupper(*apps::line_name(feed, i))));
            };
            std::string lines;
            for (std::size_t i = 0; i < options.lines.size(); ++i) {
                lines +=
                    (i == 0 ? "" : "; ") +
                    describe_line(label(i).c_str(), options.lines[i], rt->local_endpoint(id, i)) +
                    ", timestamps " + std::string(net::to_string(rt->timestamps(id, i)));
            }
            if (feed.rerequest) {
                lines += "; re-requests to " + feed.rerequest->to_string();
            }
            SPDLOG_INFO("feed {}: {}", feed.name, lines);
            for (std::size_t i = 0; i < options.lines.size(); ++i) {
                if (feed.timestamps == net::timestamping::hardware &&
                    rt->timestamps(id, i) != net::timestamping::hardware) {
                    SPDLOG_WARN("feed {}: line {}: {}", feed.name, label(i),
                                rt->timestamp_note(id, i));
                }
            }
            std::unique_ptr<md::binary_file_writer> recording;
            if (!record_path.empty() && feed.protocol == apps::protocol_kind::moldudp64) {
                recording = std::make_unique<md::binary_file_writer>(
                    config.feeds.size() == 1 ? record_path : record_path + "." + feed.name);
                recording->attach(rt->group());
                p->attach_recorder(*recording);
                SPDLOG_INFO("feed {}: recording delivered messages to {}", feed.name,
                            recording->path());
            }
            feeds.push_back(
                {.id = id, .processor = std::move(processor), .recording = std::move(recording)});
        }
        if (config.metrics_listen) {
            std::vector<apps::metrics_feed> views;
            for (auto const& f : feeds) {
                views.push_back({.id = f.id, .processor = f.processor.get()});
            }
            endpoint = std::make_unique<apps::metrics_endpoint>(config.metrics_listen->to_string(),
                                                                *rt, std::move(views));
            SPDLOG_INFO("md_receiver: Prometheus metrics at http://{}/metrics",
                        config.metrics_listen->to_string());
        }
        starting = true;
        rt->start();
    } catch (std::exception const& e) {
        SPDLOG_ERROR("md_receiver: {}", cli::describe(e));
        spdlog::shutdown();
        if (starting) {
            // runtime::start() marks the runtime started before it creates the worker pool, so
            // when the pool's constructor throws (a CPU it cannot pin to) ~runtime() would call
            // stop() on a pool that does not exist. Leave it to process exit instead.
            (void)rt.release();
        }
        return 1;
    }

    auto const start = clock_type::now();
    auto const interval = to_clock(std::chrono::duration<double>(config.stats_interval_s));
    auto const silent = to_clock(std::chrono::duration<double>(config.silent_warning_s));
    // Both bounded (config and --duration checks), so these time points cannot overflow.
    auto next_stats = start + interval;
    auto const stop_at = duration_s > 0
                             ? start + to_clock(std::chrono::duration<double>(duration_s))
                             : clock_type::time_point::max();
    for (auto& f : feeds) {
        f.last_change = start;
        f.next_silence_warning = start + silent;
    }
    auto last_stats = start;
    // The loop's period: max_wait, or half the shortest re-request timeout (its timers).
    auto tick = to_clock(max_wait);
    if (!record_path.empty()) {
        tick = std::min(tick, to_clock(std::chrono::milliseconds(50)));
    }
    for (auto const& feed : config.feeds) {
        if (feed.rerequest) {
            tick = std::min(tick, to_clock(std::chrono::milliseconds(
                                      std::max<std::uint64_t>(1, feed.rerequest_timeout_ms / 2))));
        }
    }
    SPDLOG_INFO("md_receiver: ready: {} feed(s), stats every {} s; SIGINT or SIGTERM stops",
                feeds.size(), config.stats_interval_s);
    for (;;) {
        // Every pass polls for a stop request, however the timers stand.
        auto const wait = std::clamp(std::min(next_stats, stop_at) - clock_type::now(),
                                     clock_type::duration::zero(), tick);
        auto const ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
        timespec const timeout{static_cast<time_t>(ns / 1'000'000'000),
                               static_cast<long>(ns % 1'000'000'000)};
        int const sig = sigtimedwait(&signals, nullptr, &timeout);
        if (sig == SIGINT || sig == SIGTERM) {
            SPDLOG_INFO("md_receiver: {} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
            break;
        }
        auto const now = clock_type::now();
        if (now >= stop_at) {
            break;
        }
        for (auto const& f : feeds) {
            if (f.processor->config().rerequest || f.recording || top > 0) {
                // Timers: re-request timeouts, the reorder hold's expiry, the recorder's flush.
                rt->wake_parser(f.id);
            }
        }
        if (config.silent_warning_s > 0) {
            for (auto& f : feeds) {
                watch_silence(*rt, f, now, start, silent);
            }
        }
        if (now < next_stats) {
            continue;
        }
        double const seconds = std::chrono::duration<double>(now - last_stats).count();
        if (top > 0) {
            draw_top(*rt, feeds, seconds);
        } else {
            for (auto& f : feeds) {
                log_stats(*rt, f, seconds);
            }
        }
        last_stats = now;
        next_stats += interval;
        if (next_stats <= now) {
            next_stats = now + interval; // fell behind (a stalled process): skip, never burst
        }
    }

    rt->stop(); // drain: every received packet is parsed or counted
    for (auto& f : feeds) {
        f.processor->finish();
        if (f.recording) {
            f.recording->finish();
        }
    }
    double const elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
    latency_histogram::snapshot latency;
    for (auto const& f : feeds) {
        latency += f.processor->stages().total().take();
    }
    spdlog::shutdown(); // flush the async log before the summary goes to stdout

    std::printf("md_receiver summary after %.1f s (backend %s)\n", elapsed,
                std::string(to_string(rt->backend())).c_str());
    for (auto const& f : feeds) {
        auto const n = rt->stats(f.id);
        auto const s = f.processor->session_stats();
        std::printf(
            "  feed %s: %llu packets, %llu messages, %llu gaps (%llu missing), %llu "
            "duplicates, %llu malformed, %llu ignored (%llu resyncs), %llu queue drops, "
            "%llu kernel drops%s\n",
            f.processor->config().name.c_str(), static_cast<unsigned long long>(n.packets),
            static_cast<unsigned long long>(s.messages), static_cast<unsigned long long>(s.gaps),
            static_cast<unsigned long long>(s.missing_messages),
            static_cast<unsigned long long>(s.duplicate_packets),
            static_cast<unsigned long long>(s.malformed_packets),
            static_cast<unsigned long long>(s.foreign_session_packets + s.implausible_packets),
            static_cast<unsigned long long>(s.resyncs), static_cast<unsigned long long>(n.dropped),
            static_cast<unsigned long long>(n.kernel_drops),
            s.end_of_session ? ", end of session" : "");
        if (auto const* itch = f.processor->itch_stats()) {
            std::printf("    order book: %llu unknown order refs, %llu duplicate order refs, %llu "
                        "adds dropped at max_orders %zu\n",
                        static_cast<unsigned long long>(itch->unknown_order_refs),
                        static_cast<unsigned long long>(itch->duplicate_order_refs),
                        static_cast<unsigned long long>(itch->book_full_drops),
                        f.processor->config().max_orders);
        }
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
        out.close();
        if (!out) {
            std::fprintf(stderr, "md_receiver: cannot write the summary to %s\n",
                         summary_path.c_str());
            return 1;
        }
    }
    return 0;
}
