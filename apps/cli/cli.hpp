#pragma once

// Command-line pieces md_receiver and md_feed share (target signet_cli, namespace signet::cli):
// CLI11 validators whose errors are short (CLI11's NonNegativeNumber prints DBL_MAX in full),
// parsing with "unknown option" errors ahead of "--x is required" and "--a and --b cannot be
// combined" for CLI11's excludes(), and error text without the errno description twice.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

namespace signet::cli {

/// The longest --duration either app accepts: one year. Longer would overflow the steady
/// clock's time points (int64 nanoseconds) once converted, so it is rejected, not clamped.
inline constexpr double max_duration_s = 365.0 * 86'400;

/// A seconds option as a duration (after number_in() checked its range).
inline std::chrono::nanoseconds seconds(double value) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(value));
}

inline std::string short_number(double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.10g", value);
    return text;
}

/// A finite number in [min, max] (min itself excluded when min_exclusive).
inline CLI::Validator number_in(double min, double max, std::string_view unit,
                                bool min_exclusive = false) {
    std::string const range = (min_exclusive ? "in (" : "in [") + short_number(min) + " - " +
                              short_number(max) + "]" + (unit.empty() ? "" : " ") +
                              std::string(unit);
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            double value = 0;
            if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value)) {
                return "'" + text + "' is not a number (expected " + range + ")";
            }
            bool const low_ok = min_exclusive ? value > min : value >= min;
            if (!low_ok || value > max) {
                return "expected " + range + ", got " + text;
            }
            return {};
        },
        range);
}

/// A whole number >= 0 for an unsigned option: CLI11 would wrap "-1" to 2^64 - 1.
inline CLI::Validator whole_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            bool const digits =
                !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
            if (!digits) {
                return "expected a whole number >= 0, got " + text;
            }
            return {};
        },
        "");
}

/// A check that `parse(text)` accepts the text (its result converts to true); otherwise the
/// error is "must be <expected>" (CLI11 puts the option's name first).
template <typename Parse>
CLI::Validator parses(Parse parse, std::string const& expected) {
    return CLI::Validator(
        [=](std::string& text) { return parse(text) ? std::string() : "must be " + expected; }, "");
}

/// Parses the command line. Returns an exit code to leave with (0 after --help, 2 on an error,
/// printed to stderr), or nullopt to go on. An unknown option is reported as such even when a
/// required option is missing too (a typo of the required option is the usual cause);
/// `required` lists the options this checks itself after CLI11's parse for that reason.
inline std::optional<int> parse_command_line(CLI::App& cli, int argc, char** argv,
                                             std::string_view program,
                                             std::vector<CLI::Option*> const& required) {
    auto const fail = [&](std::string const& message) {
        std::fprintf(stderr, "%.*s: %s\nRun with --help for more information.\n",
                     static_cast<int>(program.size()), program.data(), message.c_str());
        return 2;
    };
    try {
        cli.parse(argc, argv);
    } catch (CLI::ExtrasError const&) {
        std::string options;
        std::string arguments;
        for (auto const& extra : cli.remaining()) {
            std::string& list = extra.size() > 1 && extra[0] == '-' ? options : arguments;
            list += (list.empty() ? "" : " ") + extra;
        }
        return fail(!options.empty() ? "unknown option " + options
                                     : "unexpected argument " + arguments);
    } catch (CLI::ExcludesError const& e) {
        // CLI11 says "--a excludes --b"; either may come first, so say what is wrong instead.
        std::string text = e.what();
        std::string_view const excludes = " excludes ";
        if (auto const at = text.find(excludes); at != std::string::npos) {
            text = text.substr(0, at) + " and " + text.substr(at + excludes.size()) +
                   " cannot be combined";
        }
        return fail(text);
    } catch (CLI::ParseError const& e) {
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
            return cli.exit(e); // --help
        }
        return fail(e.what());
    }
    for (CLI::Option const* option : required) {
        if (option->count() == 0) {
            return fail(option->get_name() + " is required");
        }
    }
    return std::nullopt;
}

/// e.what(), without the errno text a second time: some messages already contain the error
/// description before std::system_error appends it again.
inline std::string describe(std::exception const& e) {
    std::string text = e.what();
    if (auto const* system = dynamic_cast<std::system_error const*>(&e)) {
        std::string const suffix = ": " + system->code().message();
        if (text.size() > suffix.size() && text.ends_with(suffix)) {
            std::string const head = text.substr(0, text.size() - suffix.size());
            if (head.find(system->code().message()) != std::string::npos) {
                return head;
            }
        }
    }
    return text;
}

} // namespace signet::cli
