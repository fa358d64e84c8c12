#pragma once

/// binary_file_reader: reads Nasdaq "BinaryFILE" framing — each message preceded by its length
/// as a 2-byte big-endian integer — as published for the ITCH 5.0 sample days.
///
/// Threading: none. Costs: a file is read in blocks of block_size (1 MiB by default) into a
/// buffer allocated at construction; next() hands out views into that block (a bounds check
/// and a 2-byte load, inline), and only at the end of a block moves the partial record left
/// over to the front and reads the next block. Bytes already in memory are read in place, with
/// no copy. No allocation, istream or virtual call per message. A file that ends inside a record
/// is reported (truncated()), never read past.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <signet/md/big_endian.hpp>

namespace signet::md::nasdaq {

class binary_file_reader {
public:
    static constexpr std::size_t default_block_size = std::size_t{1} << 20;
    /// The longest record: the 2-byte prefix and a 65535-byte message.
    static constexpr std::size_t min_block_size = 2 + 0xFFFF;

    /// Opens the file; throws std::system_error if it cannot, or if it is a directory, and
    /// std::invalid_argument if block_size < min_block_size.
    explicit binary_file_reader(std::filesystem::path const& path,
                                std::size_t block_size = default_block_size);
    /// Reads `bytes` in place; they must outlive the reader.
    explicit binary_file_reader(std::span<std::byte const> bytes) noexcept;

    /// The next message, valid until the next call. nullopt at the end of the input, or when it
    /// ends inside a record (then truncated() is true); every later call returns nullopt too.
    /// A record of length 0 is an empty span, not the end: the caller decides what it means.
    /// Throws std::system_error if reading the file fails.
    [[nodiscard]] std::optional<std::span<std::byte const>> next() {
        std::span<std::byte const> message;
        if (take(message)) {
            return message;
        }
        return next_after_block();
    }
    /// Up to out.size() next messages into `out`, all valid until the next call; returns how
    /// many (0 only at the end, as next()'s nullopt). Feeds itch50_parser::on_messages().
    [[nodiscard]] std::size_t next_batch(std::span<std::span<std::byte const>> out) {
        std::size_t n = 0;
        while (n < out.size() && take(out[n])) {
            ++n;
        }
        if (n == 0 && !out.empty()) { // the block is used up: refill, hand out one
            std::optional<std::span<std::byte const>> const first = next_after_block();
            if (!first) {
                return 0;
            }
            out[n++] = *first;
            while (n < out.size() && take(out[n])) {
                ++n;
            }
        }
        return n;
    }

    /// True if the input ended inside a record (its length prefix or its body).
    [[nodiscard]] bool truncated() const noexcept { return truncated_bytes_ != 0; }
    /// Bytes of that incomplete trailing record, its partial length prefix included.
    [[nodiscard]] std::size_t truncated_bytes() const noexcept { return truncated_bytes_; }
    [[nodiscard]] std::uint64_t messages() const noexcept { return messages_; }
    /// Bytes consumed by complete records, length prefixes included.
    [[nodiscard]] std::uint64_t bytes() const noexcept {
        return consumed_ + static_cast<std::uint64_t>(pos_ - base_);
    }

private:
    struct file_closer {
        void operator()(std::FILE* f) const noexcept { std::fclose(f); }
    };

    /// Takes the next record if the current block holds all of it.
    bool take(std::span<std::byte const>& message) noexcept {
        auto const available = static_cast<std::size_t>(end_ - pos_);
        if (available < 2) {
            return false;
        }
        std::size_t const length = load_be16(pos_);
        if (available < 2 + length) {
            return false;
        }
        message = std::span<std::byte const>(pos_ + 2, length);
        pos_ += 2 + length;
        ++messages_;
        return true;
    }
    /// The slow path: reads the next block (moving the partial record to the front) and
    /// retries, or ends the input.
    std::optional<std::span<std::byte const>> next_after_block();

    std::unique_ptr<std::FILE, file_closer> file_; // null when reading bytes in place
    std::vector<std::byte> buffer_;
    std::byte const* base_ = nullptr; // start of the current block
    std::byte const* pos_ = nullptr;
    std::byte const* end_ = nullptr;
    std::uint64_t consumed_ = 0; // bytes before base_
    std::uint64_t messages_ = 0;
    std::size_t truncated_bytes_ = 0;
    bool done_ = false;
};

} // namespace signet::md::nasdaq
