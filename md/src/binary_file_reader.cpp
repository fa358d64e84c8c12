#include <array>
#include <cerrno>
#include <system_error>

#include <signet/md/big_endian.hpp>
#include <signet/md/binary_file_reader.hpp>

namespace signet::md {

namespace {

// Reads up to n bytes; returns how many arrived (fewer only at the end of the input).
std::size_t read_some(std::istream& in, std::byte* p, std::size_t n) {
    in.read(reinterpret_cast<char*>(p), static_cast<std::streamsize>(n));
    return static_cast<std::size_t>(in.gcount());
}

} // namespace

binary_file_reader::binary_file_reader(std::istream& in)
    : in_(&in)
    , buffer_(0xFFFF) {}

binary_file_reader::binary_file_reader(std::filesystem::path const& path)
    : file_(std::make_unique<std::ifstream>(path, std::ios::binary))
    , in_(file_.get())
    , buffer_(0xFFFF) {
    if (!file_->is_open()) {
        int const error = errno != 0 ? errno : EIO;
        throw std::system_error(error, std::generic_category(),
                                "binary_file_reader: cannot open " + path.string());
    }
    // A directory opens as a stream on Linux and then reads as an empty file: refuse it here.
    std::error_code ignored;
    if (std::filesystem::is_directory(path, ignored)) {
        throw std::system_error(EISDIR, std::generic_category(),
                                "binary_file_reader: cannot read " + path.string());
    }
}

std::optional<std::span<std::byte const>> binary_file_reader::next() {
    if (done_) {
        return std::nullopt;
    }
    std::array<std::byte, 2> prefix{};
    std::size_t const got = read_some(*in_, prefix.data(), prefix.size());
    if (got < prefix.size()) {
        done_ = true;
        truncated_bytes_ = got; // 0: a clean end between records
        return std::nullopt;
    }
    std::size_t const length = load_be16(prefix.data());
    std::size_t const body = read_some(*in_, buffer_.data(), length);
    if (body < length) {
        done_ = true;
        truncated_bytes_ = prefix.size() + body;
        return std::nullopt;
    }
    ++messages_;
    bytes_ += prefix.size() + length;
    return std::span<std::byte const>(buffer_.data(), length);
}

} // namespace signet::md
