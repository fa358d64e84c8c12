#pragma once

// Machine facts the benchmark programs print with their results (STYLE.md §7: every published
// number comes with the CPU, kernel and pinning).

#include <cstddef>
#include <fstream>
#include <string>
#include <vector>

#include <sched.h>

namespace signet::bench {

/// The CPUs this process may run on.
inline std::vector<int> affinity_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
            if (CPU_ISSET(static_cast<std::size_t>(cpu), &set)) {
                cpus.push_back(cpu);
            }
        }
    }
    return cpus;
}

/// "model name" from /proc/cpuinfo, or "unknown".
inline std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto const colon = line.find(':');
            return colon == std::string::npos ? line : line.substr(colon + 2);
        }
    }
    return "unknown";
}

/// "0,1,2"; `empty` when there are none.
inline std::string join(std::vector<int> const& values, std::string const& empty = "") {
    std::string out;
    for (auto v : values) {
        out += (out.empty() ? "" : ",") + std::to_string(v);
    }
    return out.empty() ? empty : out;
}

} // namespace signet::bench
