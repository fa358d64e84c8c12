#pragma once

// Shared helpers for the stress tests: a scale factor from the environment, a start gate, a
// watchdog that aborts a hung test instead of letting CI time out, and a printed random seed.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>

namespace signet::test {

/// Multiplier for stress-test iteration counts: SIGNET_STRESS_SCALE (default 1; nightly runs use
/// more). Sanitizer builds are ~10x slower, so the default stays short.
inline std::uint64_t stress_scale() {
    char const* env = std::getenv("SIGNET_STRESS_SCALE");
    if (env == nullptr) {
        return 1;
    }
    auto value = std::strtoull(env, nullptr, 10);
    return value == 0 ? 1 : value;
}

/// Random seed for a randomised test: SIGNET_SEED if set, else random; printed for replay.
inline std::uint64_t test_seed() {
    std::uint64_t seed = 0;
    if (char const* env = std::getenv("SIGNET_SEED"); env != nullptr) {
        seed = std::strtoull(env, nullptr, 10);
    } else {
        seed = std::random_device{}();
    }
    std::printf("[ seed     ] SIGNET_SEED=%llu\n", static_cast<unsigned long long>(seed));
    return seed;
}

/// All threads wait on the gate, then start at once.
class start_gate {
public:
    void wait() const noexcept {
        // acquire pairs with the release in open(): whatever the opener set up is visible.
        while (!open_.load(std::memory_order_acquire)) {
            std::this_thread::yield();
        }
    }
    void open() noexcept { open_.store(true, std::memory_order_release); }

private:
    std::atomic<bool> open_{false};
};

/// Polls `done` every millisecond until it returns true (then true) or `limit` passes (false).
template <typename Predicate>
bool eventually(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    auto const deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

/// Aborts the process if not disarmed (destroyed) within the limit: a hung test fails loudly.
class watchdog {
public:
    explicit watchdog(std::chrono::seconds limit, std::string what = "test")
        : what_(std::move(what))
        , thread_([this, limit] {
            std::unique_lock lock(mutex_);
            if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
                std::fprintf(stderr, "watchdog: %s still running after %llds, aborting\n",
                             what_.c_str(), static_cast<long long>(limit.count()));
                std::abort();
            }
        }) {}
    watchdog(watchdog const&) = delete;
    watchdog& operator=(watchdog const&) = delete;
    ~watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

private:
    std::string what_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

} // namespace signet::test
