#include <mutex>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>

namespace signet::net {

namespace {
std::mutex logger_mutex;
std::shared_ptr<spdlog::logger> custom_logger;
} // namespace

std::shared_ptr<spdlog::logger> logger() {
    std::lock_guard lock(logger_mutex);
    return custom_logger ? custom_logger : spdlog::default_logger();
}

void set_logger(std::shared_ptr<spdlog::logger> new_logger) {
    std::lock_guard lock(logger_mutex);
    custom_logger = std::move(new_logger);
}

} // namespace signet::net
