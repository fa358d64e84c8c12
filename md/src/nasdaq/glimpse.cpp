#include <signet/md/ascii_field.hpp>
#include <signet/md/nasdaq/glimpse.hpp>

namespace signet::md::nasdaq::glimpse {

std::size_t write_end_of_snapshot(std::span<std::byte> out, std::uint64_t next_sequence) noexcept {
    if (out.size() < end_of_snapshot_length) {
        return 0;
    }
    out[0] = static_cast<std::byte>(end_of_snapshot_type);
    // 20 digits hold any 64-bit value: never false.
    (void)write_ascii_number(out.data() + 1, sequence_length, next_sequence);
    return end_of_snapshot_length;
}

std::optional<std::uint64_t> parse_end_of_snapshot(std::span<std::byte const> message) noexcept {
    if (message.size() < end_of_snapshot_length || !is_end_of_snapshot(message)) {
        return std::nullopt;
    }
    return read_ascii_number(message.data() + 1, sequence_length);
}

} // namespace signet::md::nasdaq::glimpse
