#include <mutex>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>

namespace signet::net {

namespace {
std::mutex logger_mutex;
std::shared_ptr<spdlog::logger> custom_logger;

// Without set_logger(): a "signet" logger on the default logger's sinks at warn, so that a
// program embedding the library sees problems, not its setup chatter.
std::shared_ptr<spdlog::logger> library_logger() {
    auto const base = spdlog::default_logger();
    auto quiet =
        std::make_shared<spdlog::logger>("signet", base->sinks().begin(), base->sinks().end());
    quiet->set_level(spdlog::level::warn);
    return quiet;
}

} // namespace

std::shared_ptr<spdlog::logger> logger() {
    std::lock_guard lock(logger_mutex);
    if (!custom_logger) {
        custom_logger = library_logger();
    }
    return custom_logger;
}

void set_logger(std::shared_ptr<spdlog::logger> new_logger) {
    std::lock_guard lock(logger_mutex);
    custom_logger = std::move(new_logger);
}

} // namespace signet::net
