// binary_file_reader: Nasdaq BinaryFILE framing (u16 big-endian length before each message).
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include <signet/md/binary_file_reader.hpp>

namespace {

using signet::md::binary_file_reader;

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

std::vector<std::string> read_all(binary_file_reader& reader) {
    std::vector<std::string> out;
    while (std::optional<std::span<std::byte const>> const m = reader.next()) {
        out.push_back(text(*m));
    }
    return out;
}

TEST(BinaryFileReader, ReadsEveryMessage) {
    std::string const big(300, 'x'); // a length above 255 exercises the high byte
    std::istringstream in(framed({"abc", "", big, "S0123456789"}));
    binary_file_reader reader(in);
    EXPECT_EQ(read_all(reader), (std::vector<std::string>{"abc", "", big, "S0123456789"}));
    EXPECT_FALSE(reader.truncated());
    EXPECT_EQ(reader.messages(), 4U);
    EXPECT_EQ(reader.bytes(), 4U * 2 + 3 + 300 + 11);
    EXPECT_FALSE(reader.next().has_value()) << "stays at the end";
}

TEST(BinaryFileReader, EmptyInputIsACleanEnd) {
    std::istringstream in("");
    binary_file_reader reader(in);
    EXPECT_FALSE(reader.next().has_value());
    EXPECT_FALSE(reader.truncated());
    EXPECT_EQ(reader.messages(), 0U);
}

TEST(BinaryFileReader, TruncatedBodyIsReported) {
    std::string data = framed({"hello", "world!"});
    data.resize(data.size() - 2); // the last record lacks 2 of its 6 bytes
    std::istringstream in(data);
    binary_file_reader reader(in);
    EXPECT_EQ(read_all(reader), (std::vector<std::string>{"hello"}));
    EXPECT_TRUE(reader.truncated());
    EXPECT_EQ(reader.truncated_bytes(), 2U + 4U);
    EXPECT_EQ(reader.messages(), 1U);
    EXPECT_FALSE(reader.next().has_value());
}

TEST(BinaryFileReader, TruncatedLengthPrefixIsReported) {
    std::string data = framed({"hello"});
    data += '\x00'; // half a length prefix
    std::istringstream in(data);
    binary_file_reader reader(in);
    EXPECT_EQ(read_all(reader), (std::vector<std::string>{"hello"}));
    EXPECT_TRUE(reader.truncated());
    EXPECT_EQ(reader.truncated_bytes(), 1U);
}

TEST(BinaryFileReader, OpensAFileByPath) {
    std::filesystem::path const path =
        std::filesystem::temp_directory_path() /
        ("signet_binary_file_reader_" + std::to_string(::getpid()) + ".bin");
    {
        std::ofstream out(path, std::ios::binary);
        out << framed({"one", "two"});
        out << '\x00' << '\x09' << "abc"; // truncated: 9 announced, 3 present
    }
    {
        binary_file_reader reader(path);
        EXPECT_EQ(read_all(reader), (std::vector<std::string>{"one", "two"}));
        EXPECT_TRUE(reader.truncated());
        EXPECT_EQ(reader.truncated_bytes(), 5U);
    }
    std::filesystem::remove(path);
    EXPECT_THROW(binary_file_reader{path}, std::system_error);
}

TEST(BinaryFileReader, RefusesADirectory) {
    // A directory opens as an ifstream on Linux and would read as an empty, clean file.
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
