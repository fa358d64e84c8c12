#pragma once

#include <memory>

#include <spdlog/logger.h>

namespace signet::net {

/// The logger net/ uses for setup and error paths (never per packet). Until set_logger() names
/// another, a logger called "signet" on the sinks of spdlog's default logger, at level warn:
/// setup lines (backend chosen, feeds started) are info, so a program that wants them routes
/// the library to its own logger, e.g. `signet::net::set_logger(spdlog::default_logger())`.
std::shared_ptr<spdlog::logger> logger();
void set_logger(std::shared_ptr<spdlog::logger> logger);

} // namespace signet::net
