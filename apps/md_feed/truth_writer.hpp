#pragma once

// --truth-out: what the exchange's books are after every sequence md_feed generates, for a test
// that applies a receiver's events as a consumer would and compares (tests/apps/
// md_end_to_end_test.py, the consumer-truth check). JSON lines, in the events' vocabulary:
//
//   {"truth":"moldudp64","symbols":{"AAPL":0,...}}       first: each symbol and its unit (0: none)
//   {"seq":12,"unit":0,"levels":[["AAPL","B",1234500,300,2],...]}
//
// A line per sequence that changed a book, with each changed level after it: symbol, side ('B'
// or 'S'), price (the events' integer), size and orders (size 0: the level is gone). The book at
// sequence S is every line of its unit up to S applied in order. Lines go to a 1 MiB buffer,
// written when it fills: a test tool, kept off the paced path's way. Header-only: md_feed's.

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace signet::md_feed {

class truth_writer {
public:
    /// One aggregated level: price, size, orders.
    struct level {
        std::int64_t price = 0;
        std::int64_t size = 0;
        std::int64_t orders = 0;
    };

    /// "" writes nothing. Throws std::system_error when the file cannot be opened.
    explicit truth_writer(std::string const& path) {
        if (path.empty()) {
            return;
        }
        errno = 0;
        file_.reset(std::fopen(path.c_str(), "w"));
        if (!file_) {
            throw std::system_error(errno != 0 ? errno : EIO, std::generic_category(),
                                    "cannot write the truth to " + path);
        }
        path_ = path;
        out_.reserve(buffer_bytes + 4096);
    }

    [[nodiscard]] bool enabled() const noexcept { return file_ != nullptr; }

    /// The first line: the protocol and each instrument's symbol (by instrument index) and unit.
    void start(std::string_view protocol, std::vector<std::pair<std::string, unsigned>> symbols) {
        symbols_ = std::move(symbols);
        out_ += fmt::format("{{\"truth\":\"{}\",\"symbols\":{{", protocol);
        for (std::size_t i = 0; i < symbols_.size(); ++i) {
            out_ += fmt::format("{}\"{}\":{}", i == 0 ? "" : ",", symbols_[i].first,
                                symbols_[i].second);
        }
        out_ += "}}\n";
    }

    /// A change of one level by a message (an order added, executed, reduced, deleted).
    void change(std::uint32_t instrument, char side, std::int64_t price, std::int64_t size,
                std::int64_t orders) {
        level& l = levels_[{instrument, side, price}];
        l.price = price;
        l.size += size;
        l.orders += orders;
        dirty_.emplace_back(instrument, side, price);
    }

    /// A side's whole book (market by price, best first) as it is now: the levels that differ
    /// from the last one set change.
    void set_side(std::uint32_t instrument, char side, std::span<level const> now) {
        auto const lo = levels_.lower_bound({instrument, side, INT64_MIN});
        auto const hi = levels_.upper_bound({instrument, side, INT64_MAX});
        std::map<std::int64_t, level> before;
        for (auto it = lo; it != hi; ++it) {
            if (it->second.size != 0) {
                before.emplace(it->second.price, it->second);
            }
        }
        for (level const& l : now) {
            auto const was = before.find(l.price);
            if (was == before.end() || was->second.size != l.size ||
                was->second.orders != l.orders) {
                levels_[{instrument, side, l.price}] = l;
                dirty_.emplace_back(instrument, side, l.price);
            }
            if (was != before.end()) {
                before.erase(was);
            }
        }
        for (auto const& [price, gone] : before) {
            levels_[{instrument, side, price}] = {price, 0, 0};
            dirty_.emplace_back(instrument, side, price);
        }
    }

    /// Ends a sequence of `unit`: a line of the levels changed since the last call, if any.
    void end_sequence(std::uint64_t sequence, unsigned unit = 0) {
        if (dirty_.empty()) {
            return;
        }
        out_ += fmt::format("{{\"seq\":{},\"unit\":{},\"levels\":[", sequence, unit);
        bool first = true;
        for (key const& k : dirty_) {
            auto const it = levels_.find(k);
            if (it == levels_.end()) {
                continue; // already written in this line (erased once empty)
            }
            level const l = it->second;
            out_ += fmt::format("{}[\"{}\",\"{}\",{},{},{}]", first ? "" : ",",
                                symbols_[std::get<0>(k)].first, std::get<1>(k), l.price, l.size,
                                l.orders);
            first = false;
            if (l.size == 0) {
                levels_.erase(it);
            }
        }
        // A level changed twice in one sequence is written once, as it ends (the second is
        // found erased, or written again with the same values).
        out_ += "]}\n";
        dirty_.clear();
        if (out_.size() >= buffer_bytes) {
            flush();
        }
    }

    /// Writes what is buffered; throws std::runtime_error when the file cannot be written.
    void finish() {
        if (file_) {
            flush();
            if (std::fflush(file_.get()) != 0) {
                throw std::runtime_error("cannot write the truth to " + path_);
            }
        }
    }

private:
    static constexpr std::size_t buffer_bytes = std::size_t{1} << 20;
    using key = std::tuple<std::uint32_t, char, std::int64_t>;
    struct closer {
        void operator()(std::FILE* f) const noexcept { (void)std::fclose(f); }
    };

    void flush() {
        if (!out_.empty() && std::fwrite(out_.data(), 1, out_.size(), file_.get()) != out_.size()) {
            throw std::runtime_error("cannot write the truth to " + path_);
        }
        out_.clear();
    }

    std::unique_ptr<std::FILE, closer> file_;
    std::string path_;
    std::string out_;
    std::vector<std::pair<std::string, unsigned>> symbols_;
    std::map<key, level> levels_;
    std::vector<key> dirty_;
};

} // namespace signet::md_feed
