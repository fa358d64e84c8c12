#pragma once

// CPU pinning: the one helper the worker pool, the net runtime, the benchmarks and the tests use.

#include <thread>

namespace signet {

/// Pins `thread` to CPU `cpu`; a negative `cpu` means "no pinning" (no-op). Throws
/// std::invalid_argument for an id at or above CPU_SETSIZE and std::system_error (naming `what`
/// and the CPU) when the kernel refuses, e.g. a CPU outside this process's affinity mask.
void pin_thread(std::thread& thread, int cpu, char const* what = "thread");

/// As pin_thread(), for the calling thread.
void pin_this_thread(int cpu, char const* what = "thread");

/// Whether `cpu` is a valid id for pin_thread() (0 <= cpu < CPU_SETSIZE).
[[nodiscard]] bool valid_cpu_id(int cpu) noexcept;

} // namespace signet
