// signet_mdp3_bench: the cost of CME MDP 3.0 decoding + book building, per book update (an
// MBP level entry of template 46 or an MBO order entry of 47) and per packet: mdp3_generator's
// incremental packets are built in memory first (untimed), then one cme::mdp3_channel takes them
// all (timed: framing, SBE decoding, RptSeq checks, book updates). The process is pinned (--cpu).
// bench/run-mdp3-bench runs it in interleaved rounds beside the ITCH path of signet_md_bench.
//
//   signet_mdp3_bench [--packets 2000000] [--instruments 20] [--depth 10] [--cpu 0] [--json OUT]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <signet/core/cpu_affinity.hpp>
#include <signet/md/cme/mdp3_channel.hpp>
#include <signet/publisher/cme/mdp3_generator.hpp>

#include "machine_info.hpp"
#include <nlohmann/json.hpp>

int main(int argc, char** argv) {
    using namespace signet;
    CLI::App app{"signet_mdp3_bench: MDP 3.0 decode + MBP book cost"};
    std::size_t packets = 2'000'000;
    std::size_t instruments = 20;
    std::size_t depth = 10;
    int cpu = 0;
    std::string json_path;
    app.add_option("--packets", packets, "incremental packets");
    app.add_option("--instruments", instruments, "instruments of the channel (1 to 200)");
    app.add_option("--depth", depth, "book depth");
    app.add_option("--cpu", cpu, "pin to this CPU (-1: no pinning)");
    app.add_option("--json", json_path, "write the run here (a JSON array of one row)");
    CLI11_PARSE(app, argc, argv);
    try {
        if (cpu >= 0) {
            signet::pin_this_thread(cpu, "signet_mdp3_bench");
        }
        signet::publisher::cme::mdp3_generator generator(
            {.instruments = instruments, .depth = depth});
        md::cme::mdp3_channel channel;
        std::vector<std::byte> buffer(signet::publisher::cme::mdp3_generator::max_packet);
        for (std::size_t i = 0; i < instruments; ++i) {
            std::size_t const n =
                generator.definition(buffer, i, static_cast<std::uint32_t>(i + 1));
            channel.on_definition(std::span(buffer).first(n), 0);
        }
        // Untimed: the packets, back to back, with their offsets.
        std::vector<std::byte> stream;
        std::vector<std::size_t> ends;
        stream.reserve(packets * 120);
        ends.reserve(packets);
        for (std::size_t k = 0; k < packets; ++k) {
            std::size_t const n = generator.next_incremental(buffer);
            stream.insert(stream.end(), buffer.begin(),
                          buffer.begin() + static_cast<std::ptrdiff_t>(n));
            ends.push_back(stream.size());
        }
        auto const start = std::chrono::steady_clock::now();
        std::size_t from = 0;
        for (std::size_t const end : ends) {
            channel.on_incremental(std::span(stream).subspan(from, end - from), 0);
            from = end;
        }
        double const seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        md::cme::mdp3_channel_stats const& s = channel.stats();
        if (s.book_entries != generator.book_entries() ||
            s.order_entries != generator.order_entries() || s.inconsistent_updates != 0 ||
            s.rpt_seq_gaps != 0) {
            std::fprintf(stderr, "signet_mdp3_bench: the channel's books disagree with the "
                                 "generator's\n");
            return 1;
        }
        std::uint64_t const updates = s.book_entries + s.order_entries;
        double const ns_per_entry = seconds * 1e9 / static_cast<double>(updates);
        double const ns_per_packet = seconds * 1e9 / static_cast<double>(packets);
        std::printf("mdp3     %6.1f ns/update  %6.1f ns/packet  %llu level + %llu order entries  "
                    "%llu trades  %zu packets  %zu instruments, depth %zu\n",
                    ns_per_entry, ns_per_packet, static_cast<unsigned long long>(s.book_entries),
                    static_cast<unsigned long long>(s.order_entries),
                    static_cast<unsigned long long>(generator.trades()), packets, instruments,
                    depth);
        if (!json_path.empty()) {
            nlohmann::ordered_json row;
            row["mode"] = "mdp3";
            row["machine"] = bench::cpu_model();
            row["cpu"] = cpu;
            row["packets"] = packets;
            row["instruments"] = instruments;
            row["depth"] = depth;
            row["book_entries"] = s.book_entries;
            row["order_entries"] = s.order_entries;
            row["trades"] = generator.trades();
            row["seconds"] = seconds;
            row["ns_per_entry"] = ns_per_entry;
            row["ns_per_packet"] = ns_per_packet;
            std::ofstream(json_path) << nlohmann::ordered_json::array({row}).dump(1) << "\n";
        }
    } catch (std::exception const& e) {
        std::fprintf(stderr, "signet_mdp3_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
