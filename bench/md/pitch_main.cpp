// signet_pitch_bench: the cost of Cboe Multicast PITCH framing, decoding and book building, per
// message and per block: pitch_generator's blocks (the publisher's framing: 1 to 4 messages a
// block, Time messages aside) are built in memory first (untimed), then each is validated
// (validate_block) and applied to one cboe::pitch_book (timed). The process is pinned (--cpu).
// bench/run-mdp3-bench runs it in interleaved rounds beside the ITCH and MDP 3.0 paths.
//
//   signet_pitch_bench [--messages 5000000] [--units 4] [--symbols 1000] [--max-orders 500]
//                      [--cpu 0] [--json OUT]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <signet/core/cpu_affinity.hpp>
#include <signet/md/cboe/pitch_book.hpp>
#include <signet/publisher/cboe/pitch_generator.hpp>

#include "machine_info.hpp"
#include <nlohmann/json.hpp>

int main(int argc, char** argv) {
    using namespace signet;
    namespace cb = md::cboe;
    CLI::App app{"signet_pitch_bench: Cboe PITCH decode + book cost"};
    std::size_t messages = 5'000'000;
    std::size_t units = 4;
    std::size_t symbols = 1000;
    std::size_t max_orders = 500;
    int cpu = 0;
    std::string json_path;
    app.add_option("--messages", messages, "generated messages");
    app.add_option("--units", units, "units (1 to 64)");
    app.add_option("--symbols", symbols, "symbols (1 to 4096)");
    app.add_option("--max-orders", max_orders, "live orders per symbol (2 to 10000)");
    app.add_option("--cpu", cpu, "pin to this CPU (-1: no pinning)");
    app.add_option("--json", json_path, "write the run here (a JSON array of one row)");
    CLI11_PARSE(app, argc, argv);
    try {
        if (cpu >= 0) {
            signet::pin_this_thread(cpu, "signet_pitch_bench");
        }
        publisher::cboe::pitch_generator generator(
            {.units = units, .symbols = symbols, .max_orders = max_orders});
        // Untimed: the blocks, back to back, with their ends; the units take turns.
        std::vector<std::byte> stream;
        std::vector<std::size_t> ends;
        stream.reserve(messages * 30);
        std::vector<std::uint32_t> next(units + 1, 1);
        std::mt19937_64 random(7);
        std::vector<std::byte> buffer(1400);
        std::size_t made = 0;
        for (std::size_t turn = 0; made < messages; ++turn) {
            auto const unit = static_cast<std::uint8_t>(1 + turn % units);
            cb::block_writer w(buffer);
            w.begin(unit, next[unit]);
            std::size_t const n = std::min<std::size_t>(1 + random() % 4, messages - made);
            for (std::size_t i = 0; i < n; ++i) {
                cb::message m;
                generator.next(unit, m);
                (void)w.add(m);
            }
            made += n;
            next[unit] += w.count();
            auto const block = w.finish();
            stream.insert(stream.end(), block.begin(), block.end());
            ends.push_back(stream.size());
        }
        cb::pitch_book book({.max_orders = symbols * max_orders, .max_instruments = symbols});
        auto const start = std::chrono::steady_clock::now();
        std::size_t from = 0;
        std::size_t malformed = 0;
        for (std::size_t const end : ends) {
            std::span<std::byte const> const block(stream.data() + from, end - from);
            if (cb::validate_block(block)) {
                book.apply_block(block, 0, 0);
            } else {
                ++malformed;
            }
            from = end;
        }
        double const seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        cb::pitch_book_stats const& s = book.stats();
        std::size_t live = 0;
        for (std::size_t u = 1; u <= units; ++u) {
            live += generator.orders(static_cast<std::uint8_t>(u));
        }
        if (malformed != 0 || s.messages != messages || s.unknown_orders != 0 ||
            book.orders().size() != live) {
            std::fprintf(stderr, "signet_pitch_bench: the book disagrees with the generator\n");
            return 1;
        }
        double const ns_per_msg = seconds * 1e9 / static_cast<double>(messages);
        double const ns_per_block = seconds * 1e9 / static_cast<double>(ends.size());
        std::printf("pitch    %6.1f ns/msg  %6.1f ns/block  %zu messages in %zu blocks, %zu units, "
                    "%zu symbols, %zu live orders at the end\n",
                    ns_per_msg, ns_per_block, messages, ends.size(), units, symbols, live);
        if (!json_path.empty()) {
            nlohmann::ordered_json row;
            row["mode"] = "pitch";
            row["machine"] = bench::cpu_model();
            row["cpu"] = cpu;
            row["messages"] = messages;
            row["blocks"] = ends.size();
            row["units"] = units;
            row["symbols"] = symbols;
            row["live_orders"] = live;
            row["seconds"] = seconds;
            row["ns_per_msg"] = ns_per_msg;
            row["ns_per_block"] = ns_per_block;
            std::ofstream(json_path) << nlohmann::ordered_json::array({row}).dump(1) << "\n";
        }
    } catch (std::exception const& e) {
        std::fprintf(stderr, "signet_pitch_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
