#pragma once

#include <thread>

namespace signet {

/// One spin-wait step: the pause instruction on x86 (tells the core we spin, saves power and a
/// pipeline flush on exit), a yield elsewhere. For idle loops that poll, never for waiting on a
/// condition without a bound.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
}

} // namespace signet
