#pragma once

// binary_file_writer: writes messages to a Nasdaq BinaryFILE (each message: its length as a
// u16 big-endian, then its bytes) without ever making its producer wait for the disk — what
// md_receiver --record writes a session's delivered messages with. The producer (a parser
// contract) appends into fixed chunks (one memcpy per message); a full chunk goes through an
// spsc_fixed_queue to a writer contract in the caller's group, which writes it and hands it back
// through a second queue. When no chunk is free (the disk is slower than the feed) the message
// is dropped and counted, never waited for.
//
// Threading: append() and flush() on the parser contract (one producer); the writer contract
// consumes full chunks; stats() from any thread (relaxed snapshots); finish() once the runtime
// stopped (no contract runs), on the controlling thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <signet/core/metrics.hpp>
#include <signet/core/spsc_fixed_queue.hpp>
#include <signet/core/work_contract.hpp>
#include <signet/core/work_contract_group.hpp>

namespace signet::md::nasdaq {

class binary_file_writer {
public:
    struct stats {
        std::uint64_t messages = 0; ///< written (or queued to be)
        std::uint64_t bytes = 0;    ///< file bytes, length prefixes included
        std::uint64_t drops = 0;    ///< messages dropped: no free chunk (slow disk)
        std::uint64_t write_errors = 0;
    };

    /// Opens (truncates) `path`; throws std::system_error naming it when it cannot.
    explicit binary_file_writer(std::string path, std::size_t chunks = 64,
                                std::size_t chunk_bytes = 1 << 16);
    binary_file_writer(binary_file_writer const&) = delete;
    binary_file_writer& operator=(binary_file_writer const&) = delete;
    ~binary_file_writer();

    /// Setup: the writer contract runs in `group`. Throws std::length_error without a free slot.
    void attach(blocking_work_contract_group& group);

    /// Parser contract: one delivered message.
    void append(std::span<std::byte const> message) noexcept;
    /// Parser contract: hands the partly filled chunk to the writer (timers, end of a burst).
    void flush() noexcept;
    /// After the runtime stopped, before it is destroyed: writes what is left, closes the file
    /// and releases the writer contract.
    void finish() noexcept;

    [[nodiscard]] stats snapshot() const noexcept;
    [[nodiscard]] std::string const& path() const noexcept { return path_; }

private:
    struct chunk {
        std::uint32_t index = 0;
        std::uint32_t used = 0;
    };
    void write_ready() noexcept; // writer contract
    void write_chunk(chunk const& c) noexcept;
    bool take_chunk() noexcept; // parser side

    std::string path_;
    int fd_ = -1;
    std::size_t chunk_bytes_;
    std::unique_ptr<std::byte[]> memory_;
    spsc_fixed_queue<chunk> full_;          // producer: parser; consumer: writer contract
    spsc_fixed_queue<std::uint32_t> empty_; // producer: writer contract; consumer: parser
    work_contract writer_;
    bool have_current_ = false; // parser side: the chunk being filled
    chunk current_{};
    // Single-writer counters: messages, bytes, drops by the parser; write_errors by the writer.
    metrics::counter messages_;
    metrics::counter bytes_;
    metrics::counter drops_;
    metrics::counter write_errors_;
};

} // namespace signet::md::nasdaq
