#pragma once

// The NATS bridge ([publish] nats, docs/publishing.md) as its consumers and its operators see
// it: the binary layout of its messages (nats_layout) and what it did so far (nats_stats:
// receiver::nats(), the summary's "publish" section, the stats line "publish nats", the
// signet_nats_* metrics).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include <signet/md/events.hpp>

namespace signet::receiver {

/// A binary NATS message (nats_format = "binary"): an 8-byte header — magic "SGEV", the
/// layout's version (u16, 1), the header's size (u16, 8) — then the 64-byte md::event, all
/// little-endian. The subject says the feed and symbol (signet.<feed>.<symbol>.<kind>).
struct nats_layout {
    static constexpr char magic[4] = {'S', 'G', 'E', 'V'};
    static constexpr std::uint16_t version = 1;
    static constexpr std::size_t header = 8;
    static constexpr std::size_t size = header + sizeof(md::event);

    /// Writes a message into `out` (size bytes).
    static void write(md::event const& e, std::span<char, size> out) noexcept {
        std::memcpy(out.data(), magic, 4);
        std::uint16_t const v = version;
        std::uint16_t const h = header;
        std::memcpy(out.data() + 4, &v, 2);
        std::memcpy(out.data() + 6, &h, 2);
        std::memcpy(out.data() + header, &e, sizeof e);
    }
    /// The event of a message; nullopt when it is not one of this version.
    [[nodiscard]] static std::optional<md::event> read(std::span<char const> in) noexcept {
        std::uint16_t v = 0;
        std::uint16_t h = 0;
        if (in.size() < header || std::memcmp(in.data(), magic, 4) != 0) {
            return std::nullopt;
        }
        std::memcpy(&v, in.data() + 4, 2);
        std::memcpy(&h, in.data() + 6, 2);
        if (v != version || h < header || in.size() < h + sizeof(md::event)) {
            return std::nullopt;
        }
        md::event e;
        std::memcpy(&e, in.data() + h, sizeof e);
        return e;
    }
};

struct nats_stats {
    std::string url;
    std::string state;               ///< "connecting", "connected", "reconnecting", "closed"
    std::uint64_t published = 0;     ///< events handed to the connection
    std::uint64_t failed = 0;        ///< events the connection refused (its reconnect buffer full)
    std::uint64_t dropped = 0;       ///< events its queue could not take (the subscriber's drops)
    std::uint64_t disconnects = 0;   ///< connections lost
    std::uint64_t reconnects = 0;    ///< connections made again
    std::uint64_t streams = 0;       ///< JetStream last-value streams made or updated
    std::uint64_t stream_errors = 0; ///< streams that could not be made (logged once each)
    std::uint64_t stream_unstored = 0; ///< messages the streams did not store (store full,
                                       ///< no leader; logged once per stream)
};

} // namespace signet::receiver
