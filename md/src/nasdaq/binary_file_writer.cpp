#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/binary_file_writer.hpp>

namespace signet::md::nasdaq {

binary_file_writer::binary_file_writer(std::string path, std::size_t chunks,
                                       std::size_t chunk_bytes)
    : path_(std::move(path))
    , chunk_bytes_(chunk_bytes)
    , memory_(std::make_unique_for_overwrite<std::byte[]>(chunks * chunk_bytes))
    , full_(chunks)
    , empty_(chunks) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        throw std::system_error(errno, std::generic_category(),
                                "cannot open '" + path_ + "' for writing");
    }
    for (std::uint32_t i = 0; i < chunks; ++i) {
        [[maybe_unused]] bool const pushed = empty_.push(i); // room for every chunk
    }
}

binary_file_writer::~binary_file_writer() {
    finish();
}

void binary_file_writer::attach(blocking_work_contract_group& group) {
    writer_ = group.create_contract([this] { write_ready(); });
    if (!writer_.is_valid()) {
        throw std::length_error("binary_file_writer: no free contract slot for the writer");
    }
}

bool binary_file_writer::take_chunk() noexcept {
    std::uint32_t index = 0;
    if (!empty_.pop(index)) {
        return false;
    }
    current_ = {index, 0};
    have_current_ = true;
    return true;
}

void binary_file_writer::append(std::span<std::byte const> message) noexcept {
    std::size_t const need = 2 + message.size();
    if (need > chunk_bytes_) {
        drops_.add(1); // cannot happen with MoldUDP64's 16-bit lengths and 64 KiB chunks
        return;
    }
    if (have_current_ && current_.used + need > chunk_bytes_) {
        flush();
    }
    if (!have_current_ && !take_chunk()) {
        drops_.add(1); // every chunk is waiting for the disk
        return;
    }
    std::byte* out = memory_.get() + std::size_t{current_.index} * chunk_bytes_ + current_.used;
    md::store_be16(out, static_cast<std::uint16_t>(message.size()));
    std::memcpy(out + 2, message.data(), message.size());
    current_.used += static_cast<std::uint32_t>(need);
    messages_.add(1);
    bytes_.add(need);
}

void binary_file_writer::flush() noexcept {
    if (!have_current_ || current_.used == 0) {
        return;
    }
    // Never full: the queue has room for every chunk.
    [[maybe_unused]] bool const pushed = full_.push(current_);
    have_current_ = false;
    if (writer_.is_valid()) {
        writer_.schedule();
    }
}

void binary_file_writer::write_ready() noexcept {
    chunk c;
    while (full_.pop(c)) {
        write_chunk(c);
        [[maybe_unused]] bool const pushed = empty_.push(c.index);
    }
}

void binary_file_writer::write_chunk(chunk const& c) noexcept {
    std::byte const* data = memory_.get() + std::size_t{c.index} * chunk_bytes_;
    std::size_t left = c.used;
    while (left > 0) {
        ssize_t const n = ::write(fd_, data, left);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            write_errors_.add(1);
            return;
        }
        data += n;
        left -= static_cast<std::size_t>(n);
    }
}

void binary_file_writer::finish() noexcept {
    if (fd_ >= 0) {
        flush();
        write_ready(); // no contract runs any more: the controlling thread writes the rest
        ::close(fd_);
        fd_ = -1;
    }
    writer_ = work_contract{}; // releases the writer while its group still exists
}

binary_file_writer::stats binary_file_writer::snapshot() const noexcept {
    return {messages_.value(), bytes_.value(), drops_.value(), write_errors_.value()};
}

} // namespace signet::md::nasdaq
