#pragma once

// Writes benchmark results as a JSON array with one object per line (diff-friendly, and what
// bench/run-* and the plot scripts read). nlohmann-json does the escaping and number formatting.

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace signet::bench {

/// JSON has no NaN or infinity: a measurement that produced one is written as 0.
inline double finite_or_zero(double value) noexcept {
    return std::isfinite(value) ? value : 0.0;
}

/// Throws std::runtime_error when the file cannot be written.
inline void write_json_array(std::string const& path,
                             std::vector<nlohmann::ordered_json> const& rows) {
    std::ofstream out(path);
    if (!out) {
        throw std::runtime_error("cannot open " + path + " for writing");
    }
    out << "[\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        out << "  " << rows[i].dump() << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    out << "]\n";
    if (!out.flush()) {
        throw std::runtime_error("cannot write " + path);
    }
}

} // namespace signet::bench
