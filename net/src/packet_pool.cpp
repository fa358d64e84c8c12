#include <memory>

#include <time.h>

#include <signet/net/packet.hpp>

namespace signet::net {

std::uint64_t realtime_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

packet_pool::packet_pool(std::size_t count, std::size_t buffer_size, std::size_t headroom)
    : count_(count)
    , buffer_size_(buffer_size)
    , stride_((headroom + buffer_size + 63) / 64 * 64)
    , memory_(std::make_unique_for_overwrite<std::byte[]>(count * stride_))
    , returns_(count) {}

} // namespace signet::net
