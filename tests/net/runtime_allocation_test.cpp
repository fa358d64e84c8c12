// The runtime's steady state allocates nothing on any thread: once started and warmed up,
// packets go writer/socket -> receive side -> queue -> parser contract -> buffer back to the
// pool without a heap allocation, in every poller mode, on the memory backend (memory_line) and
// on loopback UDP (epoll; io_uring where the kernel has it). This binary replaces the global
// operator new to count allocations on every thread (support/allocation_counter.hpp).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <signet/net/runtime.hpp>

#include "support/allocation_counter.hpp"
#include "support/runtime_modes.hpp"
#include "support/stress.hpp"
#include "support/udp_sender.hpp"
#include "support/veth.hpp"

namespace {

using namespace std::chrono_literals;
using signet::idle_strategy;
using signet::net::backend_kind;
using signet::net::feed_options;
using signet::net::memory_line;
using signet::net::packet;
using signet::net::poller_mode;
using signet::net::runtime;
using signet::net::runtime_options;
using signet::net::udp_endpoint;
using signet::test::allocations_on_all_threads_in;
using signet::test::eventually;

constexpr std::uint64_t warm_up = 2'000;  // first sleeps, wakes, pauses: whatever is lazy
constexpr std::uint64_t measured = 5'000; // packets inside the counting window
constexpr std::uint64_t burst = 256;      // UDP: fits the socket buffer, so the kernel drops none

// Checks the order and counts: never allocates (it runs inside the counting window).
class counting_parser {
public:
    void operator()(packet const& p) {
        std::uint64_t sequence = 0;
        std::memcpy(&sequence, p.data, std::min<std::size_t>(p.size, sizeof(sequence)));
        if (sequence != next_) {
            out_of_order_.fetch_add(1, std::memory_order_relaxed); // read after stop()
        }
        next_ = sequence + 1;
        // release: pairs with parsed()'s acquire; the run up to here (receive path included)
        // happens-before the test's window closes.
        parsed_.fetch_add(1, std::memory_order_release);
    }
    [[nodiscard]] std::uint64_t parsed() const noexcept {
        return parsed_.load(std::memory_order_acquire);
    }
    [[nodiscard]] std::uint64_t out_of_order() const noexcept {
        return out_of_order_.load(std::memory_order_relaxed); // after stop(): joined
    }

private:
    std::uint64_t next_ = 0; // parser contract only
    std::atomic<std::uint64_t> parsed_{0};
    std::atomic<std::uint64_t> out_of_order_{0};
};

class RuntimeAllocationTest : public ::testing::TestWithParam<signet::test::runtime_mode> {
protected:
    void SetUp() override {
        SIGNET_SKIP_WITHOUT_IO_URING(GetParam());
        SIGNET_SKIP_WITHOUT_AF_XDP(GetParam()); // runs under run-in-veth (tests/net/CMakeLists)
    }
    runtime_options options() const { return GetParam().options(); }
};

// Writes packets [from, to) from this thread; a full queue is retried after a flush.
void write_memory(memory_line& line, std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t i = from; i < to;) {
        bool const written = line.write([i](std::span<std::byte> buffer) noexcept {
            std::memcpy(buffer.data(), &i, sizeof(i));
            return sizeof(i);
        });
        if (written) {
            ++i;
            if (i % 16 == 0) {
                line.flush();
            }
            continue;
        }
        line.flush(); // backpressure: let the parser make room
        std::this_thread::yield();
    }
    line.flush();
}

// Sends datagrams [from, to) in bursts, each parsed before the next goes out.
bool send_udp(signet::test::udp_sender const& sender, udp_endpoint const& to,
              counting_parser const& parser, std::uint64_t from, std::uint64_t end) {
    std::array<std::byte, 64> datagram{};
    for (std::uint64_t i = from; i < end;) {
        std::uint64_t const burst_end = std::min(end, i + burst);
        for (; i < burst_end; ++i) {
            std::memcpy(datagram.data(), &i, sizeof(i));
            sender.send(to, datagram);
        }
        if (!eventually([&] { return parser.parsed() == burst_end; })) {
            return false;
        }
    }
    return true;
}

TEST_P(RuntimeAllocationTest, SteadyStateAllocatesNothingOnAnyThread) {
    signet::test::watchdog dog(120s, "SteadyStateAllocatesNothingOnAnyThread");
    bool const memory = GetParam().backend == backend_kind::memory;
    runtime rt(options());
    feed_options feed;
    feed.name = "alloc";
    if (memory) {
        feed.queue_capacity = 64; // the writer meets a full queue often: the pause path runs
    } else {
        feed.lines.push_back(signet::test::test_line(GetParam().backend));
    }
    counting_parser parser;
    // The parser is stored in the contract: it refers to the counters through a reference.
    auto const f = rt.add_feed(feed, [&parser](packet const& p) { parser(p); });
    rt.start();

    std::size_t allocations = 0;
    if (memory) {
        memory_line line = rt.memory_line(f);
        write_memory(line, 0, warm_up);
        ASSERT_TRUE(eventually([&] { return parser.parsed() == warm_up; }));
        allocations = allocations_on_all_threads_in([&] {
            write_memory(line, warm_up, warm_up + measured);
            ASSERT_TRUE(eventually([&] { return parser.parsed() == warm_up + measured; }));
        });
    } else {
        signet::test::udp_sender sender;
        udp_endpoint const to = rt.local_endpoint(f);
        ASSERT_TRUE(send_udp(sender, to, parser, 0, warm_up));
        allocations = allocations_on_all_threads_in(
            [&] { ASSERT_TRUE(send_udp(sender, to, parser, warm_up, warm_up + measured)); });
    }
    rt.stop();

    EXPECT_EQ(allocations, 0U) << "heap allocations during " << measured << " packets";
    auto const stats = rt.stats(f);
    EXPECT_EQ(stats.packets, warm_up + measured);
    EXPECT_EQ(stats.parsed, warm_up + measured);
    EXPECT_EQ(stats.dropped, 0U);
    EXPECT_EQ(stats.kernel_drops, 0U);
    EXPECT_EQ(parser.out_of_order(), 0U);
}

// The counter itself: a parser that allocates once per packet, on a worker thread, is counted,
// so the test above can fail.
TEST(RuntimeAllocation, AnAllocatingParserIsCountedOnTheWorkerThread) {
    signet::test::watchdog dog(60s, "AnAllocatingParserIsCountedOnTheWorkerThread");
    runtime rt({.backend = backend_kind::memory,
                .workers = 1,
                .idle = idle_strategy::block,
                .poller = poller_mode::contract});
    feed_options feed;
    feed.name = "allocating";
    std::atomic<std::uint64_t> parsed{0};
    auto const f = rt.add_feed(feed, [&parsed](packet const&) {
        ::operator delete(::operator new(32)); // a call, not a new-expression: never elided
        // release: pairs with the test's acquire load.
        parsed.fetch_add(1, std::memory_order_release);
    });
    rt.start();
    memory_line line = rt.memory_line(f);
    constexpr std::uint64_t n = 100;
    std::size_t const allocations = allocations_on_all_threads_in([&] {
        write_memory(line, 0, n);
        ASSERT_TRUE(eventually([&] { return parsed.load(std::memory_order_acquire) == n; }));
    });
    rt.stop();
    EXPECT_GE(allocations, n);
}

INSTANTIATE_TEST_SUITE_P(Backends, RuntimeAllocationTest,
                         ::testing::ValuesIn(signet::test::runtime_modes(
                             {backend_kind::memory, backend_kind::epoll, backend_kind::io_uring,
                              backend_kind::af_xdp})),
                         signet::test::runtime_mode_name);

} // namespace
