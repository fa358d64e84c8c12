// libFuzzer target: the snapshot loader (md::nasdaq::itch_snapshot_sync) fed an arbitrary snapshot
// while a generated live stream is buffered and keeps arriving.
//
// Input: byte 0 picks the join point (the first live sequence, 1 to 256); then records
// (u8 header, bytes): the header's low 6 bits are the record's length, bit 6 sends one more
// live message before it, bit 7 ends the snapshot attempt there with abort() and starts a new
// one. Every record goes to on_snapshot() (GLIMPSE's End of Snapshot 'G' ends the attempt).
//
// Invariants: the book in use only changes when an End of Snapshot synchronized it (an
// aborted, too-old or malformed attempt leaves it as it was: empty before the first success);
// once synchronized the phase is live; the book's own invariants hold after every step; the
// stats add up (completed + too_old + aborted <= started).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <signet/md/nasdaq/itch_snapshot_sync.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

#include "fuzz_check.hpp"

namespace {

using namespace signet::md;
using namespace signet::md::nasdaq;
using signet::publisher::nasdaq::itch_generator;
using signet::publisher::nasdaq::itch_generator_options;

constexpr itch_order_book_options book{.max_orders = 1 << 12, .index_pages = 16};

std::vector<std::vector<std::byte>> const& live_stream() {
    static std::vector<std::vector<std::byte>> const stream = [] {
        itch_generator generator(
            {.seed = 4, .symbols = 8, .messages = 2000, .target_live_orders = 300});
        std::vector<std::vector<std::byte>> out;
        std::vector<std::byte> buffer(itch50::max_message_length);
        while (std::size_t const n = generator.next(buffer)) {
            out.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
        }
        return out;
    }();
    return stream;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size < 1) {
        return 0;
    }
    auto const& stream = live_stream();
    std::size_t next = data[0]; // 0-based index of the next live message
    itch_snapshot_sync sync({.book = book, .buffer_messages = 1024, .buffer_bytes = 1 << 16});
    sync.start_buffering();
    auto const live = [&](std::size_t n) {
        for (; n > 0 && next < stream.size(); --n, ++next) {
            sync.on_live(next + 1, stream[next]);
        }
    };
    live(100);
    bool synchronized = false;
    std::size_t offset = 1;
    while (offset < size) {
        std::uint8_t const header = data[offset++];
        std::size_t const length = std::min<std::size_t>(header & 0x3f, size - offset);
        std::span<std::byte const> const record(reinterpret_cast<std::byte const*>(data + offset),
                                                length);
        offset += length;
        if ((header & 0x40) != 0) {
            live(1);
        }
        if ((header & 0x80) != 0 && sync.phase() == sync_phase::loading) {
            sync.abort();
            SIGNET_FUZZ_CHECK(sync.phase() == sync_phase::buffering);
        }
        if (sync.phase() != sync_phase::loading) {
            sync.start_snapshot();
        }
        std::size_t const before = sync.parser().book().size();
        auto const end = sync.on_snapshot(record);
        if (end && *end == itch_snapshot_sync::end_result::synchronized) {
            synchronized = true;
            SIGNET_FUZZ_CHECK(sync.phase() == sync_phase::live);
        } else {
            // Not synchronized: the book in use did not change.
            SIGNET_FUZZ_CHECK(sync.parser().book().size() == before);
            SIGNET_FUZZ_CHECK(synchronized || before == 0);
        }
        SIGNET_FUZZ_CHECK(sync.parser().book().check_invariants());
    }
    live(stream.size());
    SIGNET_FUZZ_CHECK(sync.parser().book().check_invariants());
    SIGNET_FUZZ_CHECK(synchronized || sync.parser().book().size() == 0 ||
                      sync.phase() == sync_phase::live);
    itch_snapshot_sync_stats const& s = sync.stats();
    SIGNET_FUZZ_CHECK(s.snapshots_completed + s.too_old + s.aborted <= s.snapshots_started);
    return 0;
}
