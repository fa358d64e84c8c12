#pragma once

// A minimal streaming JSON writer (objects, arrays, strings, numbers, booleans) for the apps'
// reports. Commas and escaping are handled; the caller keeps the nesting right.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace signet::apps {

class json_writer {
public:
    json_writer& begin_object() { return open('{'); }
    json_writer& end_object() { return close('}'); }
    json_writer& begin_array() { return open('['); }
    json_writer& end_array() { return close(']'); }

    json_writer& key(std::string_view k) {
        comma();
        string(k);
        out_ += ':';
        after_key_ = true;
        return *this;
    }
    json_writer& value(std::string_view v) {
        comma();
        string(v);
        return *this;
    }
    json_writer& value(char const* v) { return value(std::string_view(v)); }
    json_writer& value(bool v) {
        comma();
        out_ += v ? "true" : "false";
        return *this;
    }
    json_writer& value(std::uint64_t v) {
        comma();
        out_ += std::to_string(v);
        return *this;
    }
    json_writer& value(double v) {
        comma();
        if (!std::isfinite(v)) {
            out_ += "null";
            return *this;
        }
        char buffer[64];
        std::snprintf(buffer, sizeof(buffer), "%.6f", v);
        out_ += buffer;
        return *this;
    }
    template <typename T>
    json_writer& field(std::string_view k, T const& v) {
        key(k);
        return value(v);
    }

    [[nodiscard]] std::string const& str() const noexcept { return out_; }

private:
    json_writer& open(char c) {
        comma();
        out_ += c;
        first_.push_back(true);
        return *this;
    }
    json_writer& close(char c) {
        out_ += c;
        first_.pop_back();
        return *this;
    }
    void comma() {
        if (after_key_) {
            after_key_ = false;
            return;
        }
        if (!first_.empty()) {
            if (!first_.back()) {
                out_ += ',';
            }
            first_.back() = false;
        }
    }
    void string(std::string_view s) {
        out_ += '"';
        for (char c : s) {
            switch (c) {
            case '"':
                out_ += "\\\"";
                break;
            case '\\':
                out_ += "\\\\";
                break;
            case '\n':
                out_ += "\\n";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buffer[8];
                    std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
                    out_ += buffer;
                } else {
                    out_ += c;
                }
            }
        }
        out_ += '"';
    }

    std::string out_;
    std::vector<bool> first_;
    bool after_key_ = false;
};

} // namespace signet::apps
