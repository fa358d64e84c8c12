// cli: the apps' command-line checks and error text.
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include "cli.hpp"

namespace {

using signet::cli::parse_command_line;

struct parsed {
    int code = -1; // -1: parse succeeded
    std::string error;
};

parsed run(CLI::App& cli, std::vector<std::string> args, std::vector<CLI::Option*> required) {
    std::vector<char*> argv;
    std::string program = "prog";
    argv.push_back(program.data());
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    testing::internal::CaptureStderr();
    auto const code =
        parse_command_line(cli, static_cast<int>(argv.size()), argv.data(), "prog", required);
    return {code.value_or(-1), testing::internal::GetCapturedStderr()};
}

TEST(CliSupport, ExcludedAndNeededOptionsSayWhatIsWrong) {
    CLI::App cli;
    double speed = 1;
    double rate = 1;
    std::string file;
    auto* file_option = cli.add_option("--file", file);
    auto* rate_option = cli.add_option("--rate", rate);
    cli.add_option("--speed", speed)->needs(file_option)->excludes(rate_option);
    auto const both = run(cli, {"--file", "x", "--speed", "2", "--rate", "3"}, {});
    EXPECT_EQ(both.code, 2);
    EXPECT_NE(both.error.find("prog: --rate and --speed cannot be combined"), std::string::npos)
        << both.error;
    CLI::App again;
    again.add_option("--speed", speed)->needs(again.add_option("--file", file));
    auto const alone = run(again, {"--speed", "2"}, {});
    EXPECT_EQ(alone.code, 2);
    EXPECT_NE(alone.error.find("prog: --speed requires --file"), std::string::npos) << alone.error;
}

TEST(CliSupport, ParsesChecksThroughAFunction) {
    CLI::App cli;
    std::string text;
    cli.add_option("--even", text)
        ->check(signet::cli::parses(
            [](std::string const& t) { return !t.empty() && (t.back() - '0') % 2 == 0; }, "even"));
    EXPECT_EQ(run(cli, {"--even", "4"}, {}).code, -1);
    auto const odd = run(cli, {"--even", "3"}, {});
    EXPECT_EQ(odd.code, 2);
    EXPECT_NE(odd.error.find("--even: must be even"), std::string::npos) << odd.error;
    EXPECT_EQ(signet::cli::seconds(0.25), std::chrono::milliseconds(250));
}

TEST(CliSupport, DurationErrorsAreShort) {
    for (char const* bad : {"-1", "1e10", "inf", "abc"}) {
        CLI::App cli;
        double duration = 0;
        cli.add_option("--duration", duration)
            ->check(signet::cli::number_in(0, signet::cli::max_duration_s, "s"));
        auto const r = run(cli, {"--duration", bad}, {});
        EXPECT_EQ(r.code, 2) << bad;
        EXPECT_NE(r.error.find("--duration"), std::string::npos) << r.error;
        EXPECT_NE(r.error.find("[0 - 31536000] s"), std::string::npos) << r.error;
        EXPECT_LT(r.error.size(), 160U) << "no 300-digit range: " << r.error;
    }
    CLI::App cli;
    double duration = 0;
    cli.add_option("--duration", duration)
        ->check(signet::cli::number_in(0, signet::cli::max_duration_s, "s"));
    EXPECT_EQ(run(cli, {"--duration", "31536000"}, {}).code, -1);
    EXPECT_DOUBLE_EQ(duration, 31536000.0);
}

TEST(CliSupport, UnsignedOptionsRejectNegativeNumbers) {
    CLI::App cli;
    std::uint64_t count = 0;
    cli.add_option("--count", count)->check(signet::cli::whole_number());
    auto const r = run(cli, {"--count", "-1"}, {});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.error.find("--count: expected a whole number >= 0, got -1"), std::string::npos)
        << r.error;
    EXPECT_EQ(count, 0U) << "not wrapped to 2^64 - 1";
}

TEST(CliSupport, UnknownOptionIsReportedBeforeAMissingRequiredOne) {
    CLI::App cli;
    std::string config;
    auto* option = cli.add_option("--config", config);
    auto const r = run(cli, {"--confg", "x.toml"}, {option});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.error.find("unknown option --confg"), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find("required"), std::string::npos) << r.error;

    CLI::App missing;
    auto* required = missing.add_option("--config", config);
    auto const m = run(missing, {}, {required});
    EXPECT_EQ(m.code, 2);
    EXPECT_NE(m.error.find("--config is required"), std::string::npos) << m.error;
}

TEST(CliSupport, DescribeDropsARepeatedErrnoText) {
    std::string const message = std::system_category().message(EADDRINUSE);
    std::system_error const twice(EADDRINUSE, std::system_category(),
                                  "bind failed: " + message + " (port taken)");
    EXPECT_EQ(signet::cli::describe(twice), "bind failed: " + message + " (port taken)");
    std::system_error const once(EADDRINUSE, std::system_category(), "bind");
    EXPECT_EQ(signet::cli::describe(once), "bind: " + message);
}

} // namespace
