#pragma once

/// binary_file_reader: reads Nasdaq "BinaryFILE" framing — each message preceded by its length
/// as a 2-byte big-endian integer — as published for the ITCH 5.0 sample days.
///
/// Threading: none. Costs: two istream reads per message into a 64 KiB buffer allocated at
/// construction; no allocation per message. A file that ends inside a record is reported
/// (truncated()), never read past.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace signet::md {

class binary_file_reader {
public:
    /// Reads from `in`, which must outlive the reader.
    explicit binary_file_reader(std::istream& in);
    /// Opens the file; throws std::system_error if it cannot, or if it is a directory.
    explicit binary_file_reader(std::filesystem::path const& path);

    /// The next message, valid until the next call. nullopt at the end of the input, or when it
    /// ends inside a record (then truncated() is true); every later call returns nullopt too.
    /// A record of length 0 is an empty span, not the end: the caller decides what it means.
    [[nodiscard]] std::optional<std::span<std::byte const>> next();

    /// True if the input ended inside a record (its length prefix or its body).
    [[nodiscard]] bool truncated() const noexcept { return truncated_bytes_ != 0; }
    /// Bytes of that incomplete trailing record, its partial length prefix included.
    [[nodiscard]] std::size_t truncated_bytes() const noexcept { return truncated_bytes_; }
    [[nodiscard]] std::uint64_t messages() const noexcept { return messages_; }
    /// Bytes consumed by complete records, length prefixes included.
    [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }

private:
    std::unique_ptr<std::ifstream> file_; // set when the reader opened the file itself
    std::istream* in_;
    std::vector<std::byte> buffer_;
    std::uint64_t messages_ = 0;
    std::uint64_t bytes_ = 0;
    std::size_t truncated_bytes_ = 0;
    bool done_ = false;
};

} // namespace signet::md
