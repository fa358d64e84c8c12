#pragma once

#include <cstddef>

namespace signet {

/// The distance that keeps two hot variables from sharing a cache line (false sharing).
///
/// 128 on x86-64 because the adjacent-line prefetcher pulls cache lines in pairs; 64 elsewhere
/// (ARM). A fixed constant instead of std::hardware_destructive_interference_size, whose value
/// GCC warns is not ABI-stable (-Winterference-size).
#if defined(__x86_64__) || defined(_M_X64)
inline constexpr std::size_t destructive_interference_size = 128;
#else
inline constexpr std::size_t destructive_interference_size = 64;
#endif

} // namespace signet
