#pragma once

// What every protocol's run shares: the signal flag its publisher polls, the report file
// (opened before anything is sent, so that an unwritable path fails first), the tail of a run
// that serves recovery (--linger) and the end of a run (the report as stdout's last line and
// into the file; a failed run is then an error).

#include <atomic>
#include <fstream>
#include <string>

#include <signet/publisher/run_result.hpp>

namespace signet::md_feed {

/// Set by SIGINT and SIGTERM (main.cpp): the publishers' stop_flag.
extern std::atomic<bool> interrupted;

/// The stream is out: says so on stderr ("md_feed: the stream is sent; serving for S s more
/// (--linger)"), so that whoever runs md_feed may end the tail early (SIGINT) once its
/// receivers need no more of the servers, then waits that long unless interrupted.
void linger(double seconds);

/// Opens the report file ("" for none); throws std::system_error naming the path.
[[nodiscard]] std::ofstream open_report(std::string const& path);

/// Prints the report as stdout's last line and writes it to the file; throws
/// std::runtime_error when the file cannot be written or the run failed.
void finish_run(std::string const& report, std::ofstream& file, std::string const& path,
                publisher::run_result const& result);

} // namespace signet::md_feed
