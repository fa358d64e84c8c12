#include "run.hpp"

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <system_error>

#include <signet/publisher/pacing_clock.hpp>

#include "cli.hpp"

namespace signet::md_feed {

std::atomic<bool> interrupted{false};

void linger(double seconds) {
    std::fprintf(stderr, "md_feed: the stream is sent; serving for %g s more (--linger)\n",
                 seconds);
    publisher::wait_unless_interrupted(cli::seconds(seconds), &interrupted);
}

std::ofstream open_report(std::string const& path) {
    std::ofstream file;
    if (!path.empty() && (errno = 0, file.open(path), !file)) {
        throw std::system_error(errno != 0 ? errno : EIO, std::generic_category(),
                                "cannot write the report to " + path);
    }
    return file;
}

void finish_run(std::string const& report, std::ofstream& file, std::string const& path,
                publisher::run_result const& result) {
    std::printf("%s\n", report.c_str());
    if (file.is_open() && !(file << report << '\n').flush()) {
        throw std::runtime_error("cannot write the report to " + path);
    }
    if (!result.ok()) {
        throw std::runtime_error(result.error);
    }
}

} // namespace signet::md_feed
