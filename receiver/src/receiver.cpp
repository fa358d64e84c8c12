#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/receiver/metrics_endpoint.hpp>
#include <signet/receiver/receiver.hpp>

#include "event_dispatch.hpp"
#include "nats_publisher.hpp"
#include "reporter.hpp"
#include "shm_publisher.hpp"

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

/// "line a on 127.0.0.1:31001 (unicast)", "line b on 0.0.0.0:31102 (group 232.1.1.1, source
/// 127.0.0.1, interface lo)".
std::string describe_line(line_spec const& line, net::udp_endpoint const& local) {
    std::string text = "line " + line.name + " on " + local.to_string();
    if (!line.socket.group) {
        return text + " (unicast)";
    }
    text += " (group " + address_text(*line.socket.group);
    text += line.socket.source ? ", source " + address_text(*line.socket.source) : ", any source";
    if (!line.socket.interface.empty()) {
        text += ", interface " + line.socket.interface;
    }
    return text + ")";
}

/// The runtime as one feed's protocol may reach it at setup.
class setup_for_feed final : public feed_setup {
public:
    setup_for_feed(net::runtime& runtime, std::size_t feed, std::vector<line_spec> const& lines,
                   std::string record_path)
        : runtime_(runtime)
        , feed_(feed)
        , lines_(lines)
        , record_path_(std::move(record_path)) {}

    net::udp_socket const& line_socket(std::string_view line) const override {
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            if (lines_[i].name == line) {
                return runtime_.line_socket(feed_, i);
            }
        }
        throw std::invalid_argument("feed_setup::line_socket: the protocol declared no line '" +
                                    std::string(line) + "'");
    }
    std::unique_ptr<net::tcp_client> tcp_client(net::tcp_client_options const& options) override {
        return runtime_.make_tcp_client(feed_, options);
    }
    net::timer parser_timer() override { return runtime_.parser_timer(feed_); }
    blocking_work_contract_group& group() override { return runtime_.group(); }
    std::string const& record_path() const override { return record_path_; }

private:
    net::runtime& runtime_;
    std::size_t feed_;
    std::vector<line_spec> const& lines_;
    std::string record_path_;
};

/// How long stop() lets the runtime parse what was received, and the event workers deliver what
/// the subscribers' queues hold (a handler that never returns cannot hold stop() longer).
constexpr std::chrono::milliseconds drain_bound{5000};

} // namespace

receiver::receiver(receiver_config config, receiver_options options)
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
                             .drain_timeout = drain_bound});
    for (auto const& feed : config_.feeds) {
        add_feed(feed);
    }
    if (!config_.shm.empty()) {
        publish_shm();
    }
    if (!config_.nats.url.empty()) {
        publish_nats();
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

std::vector<std::string> receiver::feed_names() const {
    std::vector<std::string> names;
    for (auto const& f : feeds_) {
        names.push_back(f.parser->config().name);
    }
    return names;
}

void receiver::publish_shm() {
    std::vector<std::string> const names = feed_names();
    shm_ = std::make_unique<shm_publisher>(config_.shm, names, config_.shm_instruments,
                                           config_.shm_events);
    for (std::size_t i = 0; i < names.size(); ++i) { // inline: the feed's contract writes
        subscribe({.name = "shm", .feeds = {names[i]}, .mode = delivery_mode::inline_call},
                  [shm = shm_.get(), i](event_view const& v) { shm->on_event(i, v.event); });
    }
    SPDLOG_LOGGER_INFO(net::logger(), "receiver: shared memory /dev/shm/{} ({} MiB, {} feed(s))",
                       config_.shm, shm_->size() >> 20, names.size());
}

void receiver::publish_nats() {
    nats_ = std::make_unique<nats_publisher>(config_.nats, feed_names());
    // Queued: the parsers only push; the publishing runs on an event worker of its own.
    nats_subscriber_ = subscribe({.name = "nats",
                                  .kinds = kinds_of_subjects(config_.nats.kinds),
                                  .mode = delivery_mode::queued,
                                  .queue_capacity = config_.nats.queue,
                                  .conflate_bbo = config_.nats.conflate},
                                 [nats = nats_.get()](event_view const& v) { nats->publish(v); });
    SPDLOG_LOGGER_INFO(
        net::logger(), "receiver: publishing to NATS at {} (subjects {}*, {}{})", config_.nats.url,
        nats_->prefix(0),
        config_.nats.stream ? "a JetStream last-value stream per feed" : "no JetStream stream",
        config_.nats.standby.empty()
            ? ""
            : ", standby group " + config_.nats.standby + ": publishing while it leads a feed");
}

std::optional<nats_stats> receiver::nats() const {
    if (!nats_) {
        return std::nullopt;
    }
    nats_stats s = nats_->stats();
    s.dropped = subscriber(nats_subscriber_).dropped;
    return s;
}

std::optional<standby_stats> receiver::standby() const {
    return nats_ ? nats_->standby() : std::nullopt;
}

receiver::~receiver() {
    stop();
    event_workers_.reset(); // joined before the subscribers and the group they use go
}

std::size_t receiver::subscribe(subscription s, event_handler handler) {
    if (started_ != std::chrono::steady_clock::time_point{}) { // start() ran
        throw std::logic_error("receiver::subscribe: subscribe before start()");
    }
    if (!handler) {
        throw std::invalid_argument("receiver::subscribe: no handler");
    }
    for (std::string const& name : s.feeds) {
        if (std::none_of(feeds_.begin(), feeds_.end(),
                         [&](feed_entry const& f) { return f.parser->config().name == name; })) {
            throw std::invalid_argument("receiver::subscribe: no feed named '" + name + "'");
        }
    }
    std::vector<std::size_t> chosen;
    for (std::size_t i = 0; i < feeds_.size(); ++i) {
        std::string const& name = feeds_[i].parser->config().name;
        if (s.feeds.empty() || std::find(s.feeds.begin(), s.feeds.end(), name) != s.feeds.end()) {
            chosen.push_back(i);
        }
    }
    if (s.mode == delivery_mode::inline_call && chosen.size() > 1) {
        throw std::invalid_argument(
            "receiver::subscribe: an inline handler would run in several feeds' parser "
            "contracts at once: name one feed, or subscribe queued");
    }
    if (s.mode == delivery_mode::queued && s.queue_capacity == 0) {
        throw std::invalid_argument("receiver::subscribe: queue_capacity must be at least 1");
    }
    std::string name =
        s.name.empty() ? "subscriber-" + std::to_string(subscribers_.size() + 1) : s.name;
    auto sub =
        std::make_unique<detail::subscriber>(std::move(s), std::move(handler), std::move(name));
    dispatchers_.resize(feeds_.size());
    for (std::size_t i : chosen) {
        auto& d = dispatchers_[i];
        if (!d) {
            d = std::make_unique<detail::feed_dispatcher>(feeds_[i].parser->config().name);
        }
        detail::feed_queue* queue = nullptr;
        if (sub->options().mode == delivery_mode::queued) {
            queue = &sub->add_feed(d->feed(), d->instruments());
        }
        d->add(*sub, queue);
    }
    if (sub->options().mode == delivery_mode::queued) {
        if (!event_group_) {
            event_group_ = std::make_unique<blocking_work_contract_group>(64);
        }
        sub->attach(*event_group_);
    }
    subscribers_.push_back(std::move(sub));
    return subscribers_.size() - 1;
}

subscriber_stats receiver::subscriber(std::size_t i) const {
    return subscribers_.at(i)->stats();
}

void receiver::add_feed(feed_config const& config) {
    if (!config.protocol) {
        throw std::invalid_argument("feed '" + config.name +
                                    "' has no protocol settings (feed_config::protocol)");
    }
    feed_entry f;
    f.parser = std::make_unique<feed_parser>(config, config.protocol->make(config));
    net::feed_options options;
    options.name = config.name;
    for (line_spec const& line : f.parser->lines()) {
        options.lines.push_back(line.socket);
    }
    options.queue_capacity = config.queue_capacity;
    options.on_full = config.on_full;
    options.buffer_size = config.buffer_size;
    options.ring_buffers = config.ring_buffers;
    options.af_xdp = config.af_xdp;
    f.id = runtime_->add_feed(options, parser_ref{f.parser.get()});
    f.parser->set_timer(runtime_->parser_timer(f.id));
    f.parser->set_input_probe(
        [rt = runtime_.get(), id = f.id](std::size_t line) { return rt->input_waiting(id, line); });
    std::string record_path = options_.record_path;
    if (!record_path.empty() && config_.feeds.size() > 1) {
        record_path += "." + config.name;
    }
    setup_for_feed setup(*runtime_, f.id, f.parser->lines(), std::move(record_path));
    f.parser->protocol().setup(setup);
    f.parser->set_book_interval(
        static_cast<std::uint64_t>(config_.stats_interval_s * 1e9)); // bounded by the config
    log_feed_lines(*f.parser, f.id);
    feeds_.push_back(std::move(f));
}

void receiver::log_feed_lines(feed_parser const& parser, std::size_t id) const {
    feed_config const& config = parser.config();
    std::string text = "protocol " + std::string(config.protocol_name()) + "; ";
    for (std::size_t i = 0; i < parser.lines().size(); ++i) {
        text += (i == 0 ? "" : "; ") +
                describe_line(parser.lines()[i], runtime_->local_endpoint(id, i)) +
                ", timestamps " + std::string(net::to_string(runtime_->timestamps(id, i)));
    }
    if (std::string const more = parser.protocol().describe(); !more.empty()) {
        text += "; " + more;
    }
    SPDLOG_LOGGER_INFO(net::logger(), "feed {}: {}", config.name, text);
    for (std::size_t i = 0; i < parser.lines().size(); ++i) {
        if (config.timestamps == net::timestamping::hardware &&
            runtime_->timestamps(id, i) != net::timestamping::hardware) {
            SPDLOG_LOGGER_WARN(net::logger(), "feed {}: line {}: {}", config.name,
                               parser.lines()[i].name, runtime_->timestamp_note(id, i));
        }
    }
}

void receiver::start() {
    if (running_) {
        return;
    }
    for (std::size_t i = 0; i < dispatchers_.size(); ++i) {
        if (detail::feed_dispatcher* const d = dispatchers_[i].get()) {
            feeds_[i].parser->protocol().set_event_sink(d, d->kinds());
            feeds_[i].parser->set_after_run(
                [d, shm = shm_.get(), i, parser = feeds_[i].parser.get()] {
                    d->end_of_run();
                    if (shm != nullptr) {
                        shm->end_of_run(i, parser->protocol(), parser->protocol().counters().book);
                    }
                });
        }
    }
    if (event_group_) {
        std::size_t const queued = static_cast<std::size_t>(
            std::count_if(subscribers_.begin(), subscribers_.end(), [](auto const& sub) {
                return sub->options().mode == delivery_mode::queued;
            }));
        event_workers_ = std::make_unique<worker_pool<blocking_work_contract_group>>(
            *event_group_, worker_pool_options{.threads = options_.event_workers != 0
                                                              ? options_.event_workers
                                                              : std::min<std::size_t>(queued, 4),
                                               .cpus = options_.event_cpus,
                                               .idle = options_.event_idle,
                                               .lanes = {},
                                               .drain_timeout = drain_bound});
    }
    if (endpoint_ && nats_) {
        endpoint_->set_nats([this] { return nats(); });
        if (!config_.nats.standby.empty()) {
            endpoint_->set_standby([this] { return standby(); });
        }
    }
    if (endpoint_ && !subscribers_.empty()) {
        endpoint_->set_subscribers([this] {
            std::vector<subscriber_stats> all;
            for (std::size_t i = 0; i < subscribers_.size(); ++i) {
                all.push_back(subscriber(i));
            }
            return all;
        });
    }
    runtime_->start();
    started_ = std::chrono::steady_clock::now();
    running_ = true;
    reporter_->start();
}

void receiver::stop() {
    if (!running_) {
        return;
    }
    running_ = false;
    runtime_->stop(); // drain: every received packet is parsed
    stopped_ = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < feeds_.size(); ++i) {
        feed_parser& parser = *feeds_[i].parser;
        parser.finish(); // the events of what it still held go to the subscribers too
        if (shm_) {      // the contracts are done: this thread is the feeds' writer now
            shm_->end_of_run(i, parser.protocol(), parser.protocol().counters().book);
        }
    }
    if (shm_) {
        shm_->close();
    }
    if (event_workers_) {
        event_workers_->stop(); // delivers what the queues hold (bounded by its drain timeout)
        for (auto& sub : subscribers_) {
            sub->abandon(); // what is left counts as dropped, and the subscriber is told
        }
        if (nats_) {
            nats_->flush(); // what was published reaches the server (bounded)
        }
    }
}

double receiver::elapsed_s() const noexcept {
    auto const end = running_ ? std::chrono::steady_clock::now() : stopped_;
    return std::chrono::duration<double>(end - started_).count();
}

} // namespace signet::receiver
