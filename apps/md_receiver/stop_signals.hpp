// md_receiver's stop: SIGINT and SIGTERM, blocked in every thread and waited for by main.
#pragma once

#include <chrono>

#include <signal.h>
#include <time.h>

#include <spdlog/spdlog.h>

namespace signet::md_receiver {

/// Blocks SIGINT and SIGTERM (construct it before any thread starts, so every thread inherits
/// the mask) and waits for one of them at most `limit`; true if one came.
class stop_signals {
public:
    stop_signals() {
        sigemptyset(&set_);
        sigaddset(&set_, SIGINT);
        sigaddset(&set_, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    }
    bool wait(std::chrono::nanoseconds limit) {
        timespec const timeout{static_cast<time_t>(limit.count() / 1'000'000'000),
                               static_cast<long>(limit.count() % 1'000'000'000)};
        int const sig = sigtimedwait(&set_, nullptr, &timeout);
        if (sig == SIGINT || sig == SIGTERM) {
            SPDLOG_INFO("md_receiver: {} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
            return true;
        }
        return false;
    }

private:
    sigset_t set_{};
};

} // namespace signet::md_receiver
