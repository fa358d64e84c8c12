#include <exception>

#include <spdlog/spdlog.h>

#include <signet/core/work_contract.hpp>
#include <signet/net/detail/parser_contract.hpp>
#include <signet/net/log.hpp>

namespace signet::net::detail {

void after_parse_batch(feed_state& feed) noexcept {
    bool more = false;
    for (auto& line : feed.lines) {
        if (line->take_resume_request() && line->resume != nullptr) { // pause protocol
            line->resume(*line);
        }
        more = more || !line->ready.empty();
    }
    if (more) {
        this_contract::schedule();
    }
}

void report_parser_error(feed_state& feed, std::exception_ptr error) noexcept {
    if (feed.parser_error_logged) {
        return;
    }
    feed.parser_error_logged = true;
    try {
        std::rethrow_exception(std::move(error));
    } catch (std::exception const& e) {
        SPDLOG_LOGGER_ERROR(logger(),
                            "feed {}: parser threw: {} (counted as parser_errors; "
                            "further errors are counted, not logged)",
                            feed.name, e.what());
    } catch (...) {
        SPDLOG_LOGGER_ERROR(logger(), "feed {}: parser threw a non-standard exception", feed.name);
    }
}

} // namespace signet::net::detail
