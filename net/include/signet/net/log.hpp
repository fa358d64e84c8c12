#pragma once

#include <spdlog/logger.h>

#include <memory>

namespace signet::net {

/// The logger net/ uses for setup and error paths (never per packet). spdlog's default logger
/// unless set_logger() chose another.
std::shared_ptr<spdlog::logger> logger();
void set_logger(std::shared_ptr<spdlog::logger> logger);

} // namespace signet::net
