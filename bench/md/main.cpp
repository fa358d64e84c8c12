// signet_md_bench: the cost per message of ITCH 5.0 decoding + order book building, on a
// BinaryFILE from the project's generator, by three paths (one per run, so that each run's peak
// RSS is its own):
//   file      binary_file_reader reading the file (1 MiB blocks) -> itch50_parser
//   memory    the file read into memory first (untimed), then the same reader over the bytes
//   contract  the file packed into MoldUDP64 datagrams first (untimed); timed: an
//             spsc_fixed_queue of datagrams feeding a parser contract (moldudp64_session ->
//             itch50_parser) in a work_contract_group, one thread pushing and running it
// The clock covers the whole stream (the directory and opening messages included); the
// process is pinned (--cpu). bench/run-md-bench runs the standard interleaved rounds.
//
//   signet_md_bench --generate FILE [--messages 20000000 --symbols 8000 --live-orders 500000
//                   --seed 1 --skip-types hO]
//   signet_md_bench --mode file|memory|contract FILE [--cpu 0] [--json OUT] [--dump BOOK.txt]
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <signet/core/cpu_affinity.hpp>
#include <signet/core/spsc_fixed_queue.hpp>
#include <signet/core/work_contract_group.hpp>
#include <signet/md/nasdaq/binary_file_reader.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

#include "json_array.hpp"
#include "machine_info.hpp"
#include <nlohmann/json.hpp>

namespace {

using namespace signet;
using clock_type = std::chrono::steady_clock;

struct generate_options {
    std::uint64_t messages = 20'000'000;
    std::size_t symbols = 8000;
    std::size_t live_orders = 500'000;
    std::uint64_t seed = 1;
    std::string skip_types; // message types left out of the file (the anchor aborts on h, O)
};

void generate(std::string const& path, generate_options const& o) {
    signet::publisher::nasdaq::itch_generator generator({.seed = o.seed,
                                                         .symbols = o.symbols,
                                                         .messages = o.messages,
                                                         .target_live_orders = o.live_orders,
                                                         .max_live_orders = 2 * o.live_orders});
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(path.c_str(), "wb"),
                                                        &std::fclose);
    if (!out) {
        throw std::runtime_error("cannot write " + path);
    }
    std::vector<std::byte> block;
    block.reserve(std::size_t{1} << 20);
    std::byte message[md::nasdaq::itch50::max_message_length];
    std::uint64_t written = 0;
    while (std::size_t const n = generator.next(message)) {
        if (o.skip_types.find(static_cast<char>(message[0])) != std::string::npos) {
            continue;
        }
        block.push_back(static_cast<std::byte>(n >> 8));
        block.push_back(static_cast<std::byte>(n & 0xFF));
        block.insert(block.end(), message, message + n);
        ++written;
        if (block.size() > (std::size_t{1} << 20) - 64) {
            std::fwrite(block.data(), 1, block.size(), out.get());
            block.clear();
        }
    }
    std::fwrite(block.data(), 1, block.size(), out.get());
    if (std::fflush(out.get()) != 0) {
        throw std::runtime_error("cannot write " + path);
    }
    std::printf("generated %s: %llu messages (%llu live orders at the end, %zu symbols)\n",
                path.c_str(), static_cast<unsigned long long>(written),
                static_cast<unsigned long long>(generator.live_orders()), generator.symbols());
}

std::vector<std::byte> read_file(std::string const& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        throw std::runtime_error("cannot read " + path);
    }
    std::vector<std::byte> bytes(static_cast<std::size_t>(in.tellg()));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

struct timed {
    std::uint64_t messages = 0;
    double seconds = 0;
};

timed run_reader(md::nasdaq::binary_file_reader& reader, md::nasdaq::itch50_parser& parser,
                 bool per_message) {
    auto const start = clock_type::now();
    if (per_message) {
        while (std::optional<std::span<std::byte const>> const m = reader.next()) {
            parser.on_message(*m);
        }
    } else {
        std::array<std::span<std::byte const>, 64> batch;
        while (std::size_t const n = reader.next_batch(batch)) {
            parser.on_messages(std::span<std::span<std::byte const> const>(batch.data(), n));
        }
    }
    std::chrono::duration<double> const elapsed = clock_type::now() - start;
    return {reader.messages(), elapsed.count()};
}

/// The file as MoldUDP64 datagrams of up to 1400 bytes (what md_feed sends), in one arena.
struct datagrams {
    std::vector<std::byte> arena;
    std::vector<std::span<std::byte const>> views; // into arena
    std::uint64_t messages = 0;
};

datagrams pack(std::string const& path) {
    datagrams out;
    std::vector<std::pair<std::size_t, std::size_t>> extents; // offset, length in the arena
    std::vector<std::byte> buffer(1400);
    md::nasdaq::moldudp64_packer packer(buffer, "BENCH");
    auto const flush = [&] {
        std::span<std::byte const> const d = packer.finish();
        extents.emplace_back(out.arena.size(), d.size());
        out.arena.insert(out.arena.end(), d.begin(), d.end());
    };
    md::nasdaq::binary_file_reader reader(path);
    while (std::optional<std::span<std::byte const>> const m = reader.next()) {
        if (!packer.append(*m)) {
            flush();
            if (!packer.append(*m)) {
                throw std::runtime_error("a message longer than a datagram");
            }
        }
    }
    flush();
    out.messages = reader.messages();
    for (auto const& [offset, length] : extents) {
        out.views.emplace_back(out.arena.data() + offset, length);
    }
    return out;
}

timed run_contract(datagrams const& input, md::nasdaq::itch50_parser& parser, bool per_message) {
    md::nasdaq::moldudp64_session session;
    work_contract_group group(16);
    spsc_fixed_queue<std::span<std::byte const>> queue(256);
    work_contract contract = group.create_contract([&] {
        while (std::optional<std::span<std::byte const>> const d = queue.pop()) {
            if (per_message) {
                (void)session.on_packet(*d, parser);
            } else {
                (void)session.on_packet(
                    *d, [&](std::uint64_t, std::span<std::byte const> m) { parser.push(m); });
            }
        }
        parser.flush(); // the book is complete whenever the contract is not running
    });
    std::vector<std::span<std::byte const>> const& views = input.views;
    auto const start = clock_type::now();
    std::size_t next = 0;
    while (next < views.size()) {
        while (next < views.size() && queue.push(views[next])) {
            ++next;
        }
        contract.schedule();
        (void)group.execute_next_contract();
    }
    std::chrono::duration<double> const elapsed = clock_type::now() - start;
    return {input.messages, elapsed.count()};
}

/// Peak resident set (VmHWM) of this process, KiB.
std::uint64_t peak_rss_kib() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stoull(line.substr(6));
        }
    }
    return 0;
}

/// The book as `<locate> <symbol> B|S <price> <shares>` per level with shares, bids best first
/// then asks best first, stocks by locate: the format the anchor comparison diffs.
void dump(md::nasdaq::itch_order_book const& book, std::string const& path) {
    std::ofstream out(path);
    for (std::size_t l = 0; l < md::nasdaq::itch_order_book::max_locates; ++l) {
        auto const locate = static_cast<std::uint16_t>(l);
        auto const print = [&](md::nasdaq::book_side const side, char letter) {
            for (std::size_t i = side.size(); i-- > 0;) {
                md::nasdaq::itch_price_level const level = side[i];
                if (level.shares != 0) {
                    out << locate << ' ' << book.symbol(locate) << ' ' << letter << ' '
                        << level.price << ' ' << level.shares << '\n';
                }
            }
        };
        print(book.bids(locate), 'B');
        print(book.asks(locate), 'S');
    }
}

/// FNV-1a over every level of every stock: equal digests, equal books.
std::uint64_t digest(md::nasdaq::itch_order_book const& book) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    auto const mix = [&](std::uint64_t v) {
        for (int i = 0; i < 8; ++i) {
            h = (h ^ ((v >> (8 * i)) & 0xFF)) * 0x100000001b3ULL;
        }
    };
    for (std::size_t l = 0; l < md::nasdaq::itch_order_book::max_locates; ++l) {
        auto const locate = static_cast<std::uint16_t>(l);
        for (md::nasdaq::book_side const side : {book.bids(locate), book.asks(locate)}) {
            for (md::nasdaq::itch_price_level const level : side) {
                mix(l);
                mix(level.price);
                mix(level.shares);
                mix(level.orders);
            }
        }
    }
    return h;
}

// The cheapest subscriber there is: it counts what it is given (events on, nothing done).
struct counting_sink final : md::event_sink {
    std::uint64_t events = 0;
    void on_event(md::event const&) noexcept override { ++events; }
};

nlohmann::ordered_json report(std::string const& mode, bool per_message, std::string const& path,
                              int cpu, timed const& t, md::nasdaq::itch50_parser const& parser) {
    md::nasdaq::itch50_stats const& s = parser.stats();
    md::nasdaq::itch_order_book const& book = parser.book();
    md::nasdaq::detail::order_index const& store = book.order_store();
    nlohmann::ordered_json row;
    row["mode"] = mode;
    row["per_message"] = per_message;
    row["file"] = path;
    row["cpu"] = cpu;
    row["machine"] = bench::cpu_model();
    row["messages"] = t.messages;
    row["seconds"] = t.seconds;
    row["ns_per_msg"] = bench::finite_or_zero(t.seconds * 1e9 / static_cast<double>(t.messages));
    row["peak_rss_mib"] = static_cast<double>(peak_rss_kib()) / 1024.0;
    row["book"] = {{"orders", book.size()},
                   {"levels", book.level_count()},
                   {"index_pages_high_water", store.pages_high_water()},
                   {"table_orders", store.table_size()},
                   {"order_store_mib", static_cast<double>(store.resident_bytes()) / (1 << 20)},
                   {"digest", digest(book)}};
    row["counters"] = {{"decoded", s.messages},
                       {"malformed", s.malformed_messages},
                       {"unknown_types", s.unknown_messages},
                       {"unknown_order_refs", s.unknown_order_refs},
                       {"duplicate_order_refs", s.duplicate_order_refs},
                       {"book_full_drops", s.book_full_drops}};
    return row;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"ITCH 5.0 decode + order book cost per message (file, memory, parser contract)"};
    std::string generate_path;
    generate_options gen;
    std::string mode;
    std::string path;
    int cpu = 0;
    std::string json_path;
    std::string dump_path;
    std::size_t max_orders = std::size_t{1} << 20;
    bool per_message = false;
    bool events = false;
    auto* generate_opt = app.add_option("--generate", generate_path, "write the BinaryFILE");
    app.add_option("--messages", gen.messages, "body messages to generate")->needs(generate_opt);
    app.add_option("--symbols", gen.symbols, "stocks")->needs(generate_opt);
    app.add_option("--live-orders", gen.live_orders, "live orders the stream keeps")
        ->needs(generate_opt);
    app.add_option("--seed", gen.seed, "generator seed")->needs(generate_opt);
    app.add_option("--skip-types", gen.skip_types, "message types left out, e.g. hO")
        ->needs(generate_opt);
    auto* mode_opt = app.add_option("--mode", mode, "file, memory or contract")
                         ->check(CLI::IsMember({"file", "memory", "contract"}))
                         ->excludes(generate_opt);
    app.add_option("file", path, "the BinaryFILE to read")->needs(mode_opt);
    app.add_option("--cpu", cpu, "pin to this CPU (-1: no pinning)");
    app.add_option("--max-orders", max_orders, "the book's max_orders");
    app.add_option("--json", json_path, "write the run here (a JSON array of one row)");
    app.add_option("--dump", dump_path, "write the final book here (anchor format)");
    app.add_flag("--per-message", per_message,
                 "one on_message() per message: no batches, no prefetching");
    app.add_flag("--events", events,
                 "emit market events (md/events.hpp) to a subscriber that only counts them");
    std::string event_kinds;
    app.add_option("--event-kinds", event_kinds,
                   "with --events: only these kinds, comma-separated (bbo,trade,...; default: "
                   "every kind)")
        ->check([](std::string const& list) {
            return md::parse_event_kinds(list) ? std::string() : "not a list of event kinds";
        });
    CLI11_PARSE(app, argc, argv);

    try {
        if (!generate_path.empty()) {
            generate(generate_path, gen);
            return 0;
        }
        if (mode.empty() || path.empty()) {
            std::cerr << "signet_md_bench: --generate FILE or --mode MODE FILE\n";
            return 2;
        }
        pin_this_thread(cpu, "signet_md_bench");
        md::nasdaq::itch50_parser parser({.max_orders = max_orders});
        counting_sink sink;
        if (events) {
            parser.set_event_sink(&sink, event_kinds.empty() ? md::event_mask::all()
                                                             : *md::parse_event_kinds(event_kinds));
        }
        timed t;
        if (mode == "file") {
            md::nasdaq::binary_file_reader reader(path);
            t = run_reader(reader, parser, per_message);
        } else if (mode == "memory") {
            std::vector<std::byte> const bytes = read_file(path);
            md::nasdaq::binary_file_reader reader(bytes);
            t = run_reader(reader, parser, per_message);
        } else {
            datagrams const input = pack(path);
            t = run_contract(input, parser, per_message);
        }
        nlohmann::ordered_json row = report(mode, per_message, path, cpu, t, parser);
        row["events"] = events;
        row["event_kinds"] = event_kinds;
        row["events_emitted"] = sink.events;
        std::printf("%-8s %6.1f ns/msg  %llu messages  peak RSS %.0f MiB  orders %zu levels %zu  "
                    "unknown refs %llu  duplicates %llu  book full %llu  digest %016llx\n",
                    mode.c_str(), row["ns_per_msg"].get<double>(),
                    static_cast<unsigned long long>(t.messages), row["peak_rss_mib"].get<double>(),
                    parser.book().size(), parser.book().level_count(),
                    static_cast<unsigned long long>(parser.stats().unknown_order_refs),
                    static_cast<unsigned long long>(parser.stats().duplicate_order_refs),
                    static_cast<unsigned long long>(parser.stats().book_full_drops),
                    static_cast<unsigned long long>(row["book"]["digest"].get<std::uint64_t>()));
        if (!json_path.empty()) {
            bench::write_json_array(json_path, {row});
        }
        if (!dump_path.empty()) {
            dump(parser.book(), dump_path);
        }
    } catch (std::exception const& e) {
        std::cerr << "signet_md_bench: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
