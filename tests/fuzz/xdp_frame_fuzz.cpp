// libFuzzer target: the af_xdp backend's header checks (xdp_frame.hpp) on any bytes as a frame.
// Input: one byte choosing the buffer size (64 + 8 * byte), then the frame. Invariants: an
// accepted frame's payload lies inside the frame, after its headers, and within the buffer
// size; a rejected one leaves the packet untouched.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <signet/net/detail/xdp_frame.hpp>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    std::size_t const buffer_size = 64 + std::size_t{data[0]} * 8;
    // A copy of exactly the frame's bytes: ASan flags any read past it.
    std::vector<std::byte> frame(size - 1);
    for (std::size_t i = 1; i < size; ++i) {
        frame[i - 1] = static_cast<std::byte>(data[i]);
    }
    signet::net::packet p;
    signet::net::detail::frame_destination to;
    bool const ok = signet::net::detail::strip_headers(
        frame.data(), static_cast<std::uint32_t>(frame.size()), buffer_size, p, to);
    if (!ok) {
        SIGNET_FUZZ_CHECK(p.data == nullptr && p.size == 0);
        return 0;
    }
    SIGNET_FUZZ_CHECK(p.data >= frame.data() + 14 + 20 + 8);
    SIGNET_FUZZ_CHECK(p.data + p.size <= frame.data() + frame.size());
    SIGNET_FUZZ_CHECK(p.size <= buffer_size);
    SIGNET_FUZZ_CHECK(!p.truncated || p.size == buffer_size);
    return 0;
}
