#pragma once

// The modes every net runtime test runs in: per backend, the dedicated poller thread, and the
// reactor contract with one worker blocking in the backend, one spinning, and two backing off.

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <signet/net/runtime.hpp>

namespace signet::test {

struct runtime_mode {
    net::backend_kind backend;
    net::poller_mode poller;
    idle_strategy idle;
    std::size_t workers; // 0: the test's own choice
    char const* name;

    /// Options for this mode; `workers` where the mode leaves the choice to the test.
    [[nodiscard]] net::runtime_options options(std::size_t fallback_workers = 2) const {
        return {.backend = backend,
                .workers = workers != 0 ? workers : fallback_workers,
                .idle = idle,
                .poller = poller};
    }
};

/// thread (workers: `thread_workers`, 0 = the test's choice), block1, spin1, backoff2 for each
/// backend.
inline std::vector<runtime_mode> runtime_modes(std::initializer_list<net::backend_kind> backends,
                                               std::size_t thread_workers = 2) {
    std::vector<runtime_mode> modes;
    for (auto backend : backends) {
        modes.push_back(
            {backend, net::poller_mode::thread, idle_strategy::backoff, thread_workers, "thread"});
        modes.push_back({backend, net::poller_mode::contract, idle_strategy::block, 1, "block1"});
        modes.push_back({backend, net::poller_mode::contract, idle_strategy::spin, 1, "spin1"});
        modes.push_back(
            {backend, net::poller_mode::contract, idle_strategy::backoff, 2, "backoff2"});
    }
    return modes;
}

/// Test names: "epoll_block1".
inline std::string runtime_mode_name(::testing::TestParamInfo<runtime_mode> const& info) {
    return std::string(net::to_string(info.param.backend)) + "_" + info.param.name;
}

/// Skips a test whose mode needs io_uring where the kernel lacks it.
#define SIGNET_SKIP_WITHOUT_IO_URING(mode)                                                         \
    do {                                                                                           \
        std::string why_not_;                                                                      \
        if ((mode).backend == ::signet::net::backend_kind::io_uring &&                             \
            !::signet::net::io_uring_available(why_not_)) {                                        \
            GTEST_SKIP() << "io_uring backend unavailable here: " << why_not_;                     \
        }                                                                                          \
    } while (false)

} // namespace signet::test
