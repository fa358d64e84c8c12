#include <cctype>
#include <string>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/receiver/itch_receiver.hpp>
#include <signet/receiver/metrics_endpoint.hpp>

#include "reporter.hpp"

namespace signet::receiver {

namespace {

/// The parser contract's callable: the feed's parser, with its batch and idle hooks.
struct parser_ref {
    feed_parser* parser;
    void operator()(net::packet const& packet) { (*parser)(packet); }
    void on_batch() { parser->on_batch(); }
    void on_idle() { parser->on_idle(); }
};

/// "239.1.1.1" for an address-only endpoint (port 0), "ip:port" otherwise.
std::string address_text(net::udp_endpoint const& e) {
    std::string text = e.to_string();
    if (text.ends_with(":0")) {
        text.resize(text.size() - 2);
        if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
            text = text.substr(1, text.size() - 2);
        }
    }
    return text;
}

/// "line A on 127.0.0.1:31001 (unicast)", "line B on 0.0.0.0:31102 (group 232.1.1.1, source
/// 127.0.0.1, interface lo)".
std::string describe_line(std::string const& label, net::udp_socket_options const& line,
                          net::udp_endpoint const& local) {
    std::string text = "line " + label + " on " + local.to_string();
    if (!line.group) {
        return text + " (unicast)";
    }
    text += " (group " + address_text(*line.group);
    text += line.source ? ", source " + address_text(*line.source) : ", any source";
    if (!line.interface.empty()) {
        text += ", interface " + line.interface;
    }
    return text + ")";
}

/// "A", "B", "R" (line_name, upper case).
std::string label(feed_config const& feed, std::size_t line) {
    return std::string(1, static_cast<char>(std::toupper(*line_name(feed, line))));
}

} // namespace

itch_receiver::itch_receiver(receiver_config config, receiver_options options)
    : config_(std::move(config))
    , options_(std::move(options)) {
    runtime_ = std::make_unique<net::runtime>(
        net::runtime_options{.backend = config_.backend,
                             .workers = config_.workers,
                             .cpus = config_.cpus,
                             .poller_cpu = -1,
                             .idle = config_.idle,
                             .poller = config_.poller,
                             .contract_capacity = 64 + 4 * config_.feeds.size(),
                             .drain_timeout = std::chrono::milliseconds(5000)});
    for (auto const& feed : config_.feeds) {
        add_feed(feed);
    }
    reporter_ = std::make_unique<reporter>(*this, options_);
    reporter_->set_timer(runtime_->create_timer([r = reporter_.get()] { r->report(); }));
    if (config_.metrics_listen) {
        std::vector<metrics_feed> views;
        for (auto const& f : feeds_) {
            views.push_back({.id = f.id, .parser = f.parser.get()});
        }
        endpoint_ = std::make_unique<metrics_endpoint>(config_.metrics_listen->to_string(),
                                                       *runtime_, std::move(views));
        SPDLOG_LOGGER_INFO(net::logger(), "receiver: Prometheus metrics at http://{}/metrics",
                           config_.metrics_listen->to_string());
    }
}

itch_receiver::~itch_receiver() {
    stop();
}

void itch_receiver::add_feed(feed_config const& config) {
    net::feed_options options;
    options.name = config.name;
    options.lines = line_options(config);
    options.queue_capacity = config.queue_capacity;
    options.on_full = config.on_full;
    options.buffer_size = config.buffer_size;
    options.ring_buffers = config.ring_buffers;
    options.af_xdp = config.af_xdp;
    feed_entry f;
    f.parser = std::make_unique<feed_parser>(config);
    f.id = runtime_->add_feed(options, parser_ref{f.parser.get()});
    if (config.rerequest) {
        std::size_t const request = options.lines.size() - 1; // R, the last line
        f.parser->attach_request_line(runtime_->line_socket(f.id, request),
                                      static_cast<std::uint16_t>(request));
    }
    f.parser->set_timer(runtime_->parser_timer(f.id));
    if (config.snapshot) {
        f.parser->attach_snapshot(
            runtime_->make_tcp_client(
                f.id, {.peer = *config.snapshot, .name = "feed " + config.name + " snapshot"}),
            runtime_->parser_timer(f.id));
    }
    f.parser->set_book_interval(
        static_cast<std::uint64_t>(config_.stats_interval_s * 1e9)); // bounded by the config
    log_feed_lines(config, f.id);
    if (!options_.record_path.empty() && config.protocol == protocol_kind::moldudp64) {
        f.recording = std::make_unique<md::nasdaq::binary_file_writer>(
            config_.feeds.size() == 1 ? options_.record_path
                                      : options_.record_path + "." + config.name);
        f.recording->attach(runtime_->group());
        f.parser->attach_recorder(*f.recording);
        SPDLOG_LOGGER_INFO(net::logger(), "feed {}: recording delivered messages to {}",
                           config.name, f.recording->path());
    }
    feeds_.push_back(std::move(f));
}

void itch_receiver::log_feed_lines(feed_config const& config, std::size_t id) const {
    std::size_t const lines = runtime_->line_count(id);
    auto const options = line_options(config);
    std::string text;
    for (std::size_t i = 0; i < lines; ++i) {
        text += (i == 0 ? "" : "; ") +
                describe_line(label(config, i), options[i], runtime_->local_endpoint(id, i)) +
                ", timestamps " + std::string(net::to_string(runtime_->timestamps(id, i)));
    }
    if (config.rerequest) {
        text += "; re-requests to " + config.rerequest->to_string();
    }
    if (config.snapshot) {
        text += "; GLIMPSE snapshots from " + config.snapshot->to_string() + " (late join)";
    }
    SPDLOG_LOGGER_INFO(net::logger(), "feed {}: {}", config.name, text);
    for (std::size_t i = 0; i < lines; ++i) {
        if (config.timestamps == net::timestamping::hardware &&
            runtime_->timestamps(id, i) != net::timestamping::hardware) {
            SPDLOG_LOGGER_WARN(net::logger(), "feed {}: line {}: {}", config.name, label(config, i),
                               runtime_->timestamp_note(id, i));
        }
    }
}

void itch_receiver::start() {
    if (running_) {
        return;
    }
    runtime_->start();
    started_ = std::chrono::steady_clock::now();
    running_ = true;
    reporter_->start();
}

void itch_receiver::stop() {
    if (!running_) {
        return;
    }
    running_ = false;
    runtime_->stop(); // drain: every received packet is parsed or counted
    stopped_ = std::chrono::steady_clock::now();
    for (auto& f : feeds_) {
        f.parser->finish();
        if (f.recording) {
            f.recording->finish();
        }
    }
}

double itch_receiver::elapsed_s() const noexcept {
    auto const end = running_ ? std::chrono::steady_clock::now() : stopped_;
    return std::chrono::duration<double>(end - started_).count();
}

} // namespace signet::receiver
