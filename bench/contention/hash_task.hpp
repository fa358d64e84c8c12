#pragma once

// hash_task<N>: the benchmark's task body, as in the work-contracts talk. It hashes a short
// string N times (FNV-1a, each round seeded with the previous result so nothing can be hoisted
// or folded). N = 0 is the empty body (maximum contention on the scheduler).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace signet::bench {

template <unsigned N>
struct hash_task {
    static constexpr std::string_view text = "signet";

    [[nodiscard]] static std::uint64_t run(std::uint64_t seed) noexcept {
        std::uint64_t h = seed;
        for (unsigned round = 0; round < N; ++round) {
            h ^= 14695981039346656037ULL;
            for (char const c : text) {
                h ^= static_cast<unsigned char>(c);
                h *= 1099511628211ULL;
            }
        }
        return h;
    }
};

} // namespace signet::bench
