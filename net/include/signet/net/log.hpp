#pragma once

#include <memory>

#include <spdlog/logger.h>

namespace signet::net {

/// The logger net/ uses for setup and error paths (never per packet). spdlog's default logger
/// unless set_logger() chose another.
std::shared_ptr<spdlog::logger> logger();
void set_logger(std::shared_ptr<spdlog::logger> logger);

} // namespace signet::net
