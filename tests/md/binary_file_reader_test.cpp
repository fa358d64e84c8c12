// binary_file_reader: Nasdaq BinaryFILE framing (u16 big-endian length before each message).
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/binary_file_reader.hpp>

namespace {

using signet::md::nasdaq::binary_file_reader;

std::string framed(std::vector<std::string> const& messages) {
    std::string out;
    for (std::string const& m : messages) {
        out += static_cast<char>(m.size() >> 8);
        out += static_cast<char>(m.size() & 0xFF);
        out += m;
    }
    return out;
}

std::string text(std::span<std::byte const> s) {
    return {reinterpret_cast<char const*>(s.data()), s.size()};
}

std::span<std::byte const> bytes_of(std::string const& s) {
    return std::as_bytes(std::span<char const>(s.data(), s.size()));
}

std::filesystem::path temp_file(std::string const& name, std::string const& contents) {
    std::filesystem::path const path =
        std::filesystem::temp_directory_path() /
        ("signet_binary_file_reader_" + name + "_" + std::to_string(::getpid()) + ".bin");
    std::ofstream out(path, std::ios::binary);
    out << contents;
    return path;
}

std::vector<std::string> read_all(binary_file_reader& reader) {
    std::vector<std::string> out;
    while (std::optional<std::span<std::byte const>> const m = reader.next()) {
        out.push_back(text(*m));
    }
    return out;
}

TEST(BinaryFileReader, ReadsEveryMessage) {
    std::string const big(300, 'x'); // a length above 255 exercises the high byte
    std::string const data = framed({"abc", "", big, "S0123456789"});
    binary_file_reader reader(bytes_of(data));
    EXPECT_EQ(read_all(reader), (std::vector<std::string>{"abc", "", big, "S0123456789"}));
    EXPECT_FALSE(reader.truncated());
    EXPECT_EQ(reader.messages(), 4U);
    EXPECT_EQ(reader.bytes(), 4U * 2 + 3 + 300 + 11);
    EXPECT_FALSE(reader.next().has_value()) << "stays at the end";
}

TEST(BinaryFileReader, EmptyInputIsACleanEnd) {
    binary_file_reader reader(std::span<std::byte const>{});
    EXPECT_FALSE(reader.next().has_value());
    EXPECT_FALSE(reader.truncated());
    EXPECT_EQ(reader.messages(), 0U);
}

TEST(BinaryFileReader, TruncatedBodyIsReported) {
    std::string data = framed({"hello", "world!"});
    data.resize(data.size() - 2); // the last record lacks 2 of its 6 bytes
    binary_file_reader reader(bytes_of(data));
    EXPECT_EQ(read_all(reader), (std::vector<std::string>{"hello"}));
    EXPECT_TRUE(reader.truncated());
    EXPECT_EQ(reader.truncated_bytes(), 2U + 4U);
    EXPECT_EQ(reader.messages(), 1U);
    EXPECT_FALSE(reader.next().has_value());
}

TEST(BinaryFileReader, TruncatedLengthPrefixIsReported) {
    std::string data = framed({"hello"});
    data += '\x00'; // half a length prefix
    binary_file_reader reader(bytes_of(data));
    EXPECT_EQ(read_all(reader), (std::vector<std::string>{"hello"}));
    EXPECT_TRUE(reader.truncated());
    EXPECT_EQ(reader.truncated_bytes(), 1U);
}

TEST(BinaryFileReader, OpensAFileByPath) {
    // Truncated: 9 bytes announced, 3 present.
    std::filesystem::path const path =
        temp_file("path", framed({"one", "two"}) + std::string("\x00\x09"
                                                               "abc",
                                                               5));
    {
        binary_file_reader reader(path);
        EXPECT_EQ(read_all(reader), (std::vector<std::string>{"one", "two"}));
        EXPECT_TRUE(reader.truncated());
        EXPECT_EQ(reader.truncated_bytes(), 5U);
    }
    std::filesystem::remove(path);
    EXPECT_THROW(binary_file_reader{path}, std::system_error);
}

TEST(BinaryFileReader, RecordsAcrossBlockBoundariesArriveWhole) {
    // The smallest block holds one longest record; records of every size straddle its ends,
    // a 65535-byte one included.
    std::vector<std::string> messages;
    for (std::size_t i = 0; i < 400; ++i) {
        messages.emplace_back((i * 7919) % 1500, static_cast<char>('a' + i % 26));
    }
    messages.emplace_back(0xFFFF, 'z');
    messages.emplace_back(3, 'y');
    std::string const data = framed(messages);
    std::filesystem::path const path = temp_file("blocks", data);
    binary_file_reader reader(path, binary_file_reader::min_block_size);
    EXPECT_EQ(read_all(reader), messages);
    EXPECT_FALSE(reader.truncated());
    EXPECT_EQ(reader.messages(), messages.size());
    EXPECT_EQ(reader.bytes(), data.size());
    std::filesystem::remove(path);
}

TEST(BinaryFileReader, BytesCountOnlyCompleteRecords) {
    std::string const data = framed({"abc", "defg"}) + std::string("\x00\x05"
                                                                   "ab",
                                                                   4);
    binary_file_reader reader(bytes_of(data));
    EXPECT_EQ(read_all(reader).size(), 2U);
    EXPECT_EQ(reader.bytes(), 2U + 3 + 2 + 4);
    EXPECT_EQ(reader.truncated_bytes(), 4U);
}

TEST(BinaryFileReader, RefusesABlockSmallerThanARecord) {
    std::filesystem::path const path = temp_file("small", framed({"x"}));
    EXPECT_THROW(binary_file_reader(path, binary_file_reader::min_block_size - 1),
                 std::invalid_argument);
    std::filesystem::remove(path);
}

TEST(BinaryFileReader, RefusesADirectory) {
    // A directory opens on Linux and would read as an empty, clean file.
    std::filesystem::path const dir = std::filesystem::temp_directory_path();
    try {
        binary_file_reader reader(dir);
        FAIL() << "a directory was accepted as a BinaryFILE";
    } catch (std::system_error const& e) {
        EXPECT_EQ(e.code(), std::make_error_code(std::errc::is_a_directory));
        EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
    }
}

} // namespace
