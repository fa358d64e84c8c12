#pragma once

// write_points_file: a benchmark program's --json output, {"machine": the CPU model, "points":
// [...]}, which its bench/run-* script reads back to compute the medians.

#include <cstdio>
#include <fstream>
#include <string>

#include "machine_info.hpp"
#include <nlohmann/json.hpp>

namespace signet::bench {

/// Writes the file; false (and a line on stderr) when it cannot.
inline bool write_points_file(std::string const& path, nlohmann::ordered_json const& points) {
    std::ofstream f(path);
    f << nlohmann::ordered_json{{"machine", cpu_model()}, {"points", points}}.dump(1) << '\n';
    if (!f) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return false;
    }
    return true;
}

} // namespace signet::bench
