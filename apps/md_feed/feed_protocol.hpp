#pragma once

// What md_feed knows of a protocol it publishes: its flags (in an option group named after it,
// so that --help shows them apart and a flag of another protocol is refused by one rule in
// main.cpp) and its run, which builds its publisher from signet::publisher over the lines,
// pacing and fault injection every protocol shares, and writes the report (run.hpp). A protocol
// is added with a file of its own and one line in protocols.cpp.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include <signet/net/udp_endpoint.hpp>
#include <signet/net/udp_sender.hpp>
#include <signet/publisher/fault_injector.hpp>

namespace signet::md_feed {

/// The flags every protocol has, parsed.
struct common_options {
    std::vector<net::udp_endpoint> lines; ///< --to (line A), --to-b (line B)
    double rate = 100'000;                ///< --rate: messages/s (or the protocol's unit)
    bool rate_given = false;              ///< --rate was on the command line
    double duration_s = 0;                ///< --duration; 0: until --count or a signal
    std::uint64_t count = 0;              ///< --count; 0: no limit
    std::uint64_t seed = 1;               ///< --seed
    net::udp_sender_options socket{};     ///< --ttl, --loop, --interface, --source
    publisher::fault_options faults{};    ///< --drop-every, --drop-line, --dup-every, ...
    std::string report_path;              ///< --report-json
    std::string truth_path;               ///< --truth-out (truth_writer.hpp)
};

class feed_protocol {
public:
    virtual ~feed_protocol() = default;
    /// --protocol's value.
    [[nodiscard]] virtual std::string_view name() const noexcept = 0;
    /// One line for --help.
    [[nodiscard]] virtual std::string_view description() const noexcept = 0;
    /// Adds its flags to `group` (and the checks between them).
    virtual void add_options(CLI::Option_group& group) = 0;
    /// After parsing, when it is the chosen protocol: "" or what is wrong (exit 2).
    [[nodiscard]] virtual std::string check(common_options const& common) const {
        (void)common;
        return {};
    }
    /// Sends (and serves), writes the report; the exit code: 0, or 1 on a runtime error.
    virtual int run(common_options const& common) = 0;
};

/// Every protocol md_feed publishes, the default first (protocols.cpp).
[[nodiscard]] std::vector<std::unique_ptr<feed_protocol>> protocols();

} // namespace signet::md_feed
