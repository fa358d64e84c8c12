#include <algorithm>
#include <thread>

#include <signet/publisher/pacing_clock.hpp>

namespace signet::publisher {

namespace {

class steady_pacing_clock final : public pacing_clock {
public:
    time_point now() noexcept override { return std::chrono::steady_clock::now(); }

    void sleep_until(time_point due) noexcept override {
        using namespace std::chrono_literals;
        duration const remaining = due - now();
        if (remaining <= duration::zero()) {
            return;
        }
        // Long waits wake 100 µs early (sleeps overshoot by the timer slack) and at least every
        // 50 ms (stop requests); short ones sleep their length.
        std::this_thread::sleep_for(remaining > 200us ? std::min<duration>(remaining - 100us, 50ms)
                                                      : remaining);
    }
};

} // namespace

pacing_clock& pacing_clock::steady() noexcept {
    static steady_pacing_clock clock;
    return clock;
}

void wait_unless_interrupted(std::chrono::nanoseconds how_long,
                             std::atomic<bool> const* interrupt) noexcept {
    pacing_clock& clock = pacing_clock::steady();
    auto const end = clock.now() + how_long;
    // relaxed: a plain request flag (a signal handler's), nothing is published with it.
    while (clock.now() < end &&
           (interrupt == nullptr || !interrupt->load(std::memory_order_relaxed))) {
        clock.sleep_until(end);
    }
}

} // namespace signet::publisher
