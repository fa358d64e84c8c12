#include <memory>

#include <signet/net/packet.hpp>

namespace signet::net {

packet_pool::packet_pool(std::size_t count, std::size_t buffer_size, std::size_t headroom,
                         bool allocate)
    : count_(count)
    , buffer_size_(buffer_size)
    , stride_((headroom + buffer_size + 63) / 64 * 64)
    , memory_(allocate ? std::make_unique_for_overwrite<std::byte[]>(count * stride_) : nullptr)
    , returns_(count) {}

} // namespace signet::net
