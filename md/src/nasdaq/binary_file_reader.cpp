#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <signet/md/nasdaq/binary_file_reader.hpp>

namespace signet::md::nasdaq {

binary_file_reader::binary_file_reader(std::filesystem::path const& path, std::size_t block_size) {
    if (block_size < min_block_size) {
        throw std::invalid_argument("binary_file_reader: block size below one record (65537)");
    }
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) {
        int const error = errno != 0 ? errno : EIO;
        throw std::system_error(error, std::generic_category(),
                                "binary_file_reader: cannot open " + path.string());
    }
    // A directory opens on Linux and then fails every read: refuse it here.
    std::error_code ignored;
    if (std::filesystem::is_directory(path, ignored)) {
        throw std::system_error(EISDIR, std::generic_category(),
                                "binary_file_reader: cannot read " + path.string());
    }
    std::setvbuf(file_.get(), nullptr, _IONBF, 0); // whole blocks go straight to read()
    buffer_.resize(block_size);
    base_ = pos_ = end_ = buffer_.data();
}

binary_file_reader::binary_file_reader(std::span<std::byte const> bytes) noexcept
    : base_(bytes.data())
    , pos_(bytes.data())
    , end_(bytes.data() + bytes.size()) {}

std::optional<std::span<std::byte const>> binary_file_reader::next_after_block() {
    for (;;) {
        std::span<std::byte const> message;
        if (take(message)) {
            return message;
        }
        auto const available = static_cast<std::size_t>(end_ - pos_);
        if (done_ || !file_ || std::feof(file_.get()) != 0) {
            done_ = true;                 // pos_ stays: bytes() counts complete records only
            truncated_bytes_ = available; // 0: a clean end between records
            return std::nullopt;
        }
        // Move the partial record to the front, then fill the rest of the buffer.
        consumed_ += static_cast<std::uint64_t>(pos_ - base_);
        std::byte* const front = buffer_.data();
        std::memmove(front, pos_, available);
        std::size_t const got =
            std::fread(front + available, 1, buffer_.size() - available, file_.get());
        if (got < buffer_.size() - available && std::ferror(file_.get()) != 0) {
            throw std::system_error(errno != 0 ? errno : EIO, std::generic_category(),
                                    "binary_file_reader: read failed");
        }
        base_ = pos_ = front;
        end_ = front + available + got;
    }
}

} // namespace signet::md::nasdaq
