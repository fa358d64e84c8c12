#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <sys/socket.h>
#include <unistd.h>

#include <signet/receiver/metrics_endpoint.hpp>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

namespace signet::receiver {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

/// Histogram bucket bounds: 1 µs to 1 s, 1-2-5 per decade (in ns).
constexpr std::array<std::uint64_t, 19> latency_bounds_ns{
    1'000,      2'000,       5'000,       10'000,      20'000,       50'000,     100'000,
    200'000,    500'000,     1'000'000,   2'000'000,   5'000'000,    10'000'000, 20'000'000,
    50'000'000, 100'000'000, 200'000'000, 500'000'000, 1'000'000'000};

MetricFamily family(std::string name, std::string help, MetricType type) {
    return MetricFamily{std::move(name), std::move(help), type, {}};
}

/// Takes `histogram`'s snapshot here, one at a time: a snapshot is 15 KiB and the exposer's
/// threads have small stacks (several snapshots live at once in one frame overflowed it).
[[gnu::noinline]] void add_histogram(MetricFamily& f, std::vector<ClientMetric::Label> labels,
                                     metrics::histogram const& histogram) {
    metrics::histogram::snapshot const h = histogram.take();
    ClientMetric m;
    m.label = std::move(labels);
    m.histogram.sample_count = h.count;
    m.histogram.sample_sum = static_cast<double>(h.sum) / 1e9;
    h.for_each_cumulative(
        std::span<std::uint64_t const>(latency_bounds_ns),
        [&](std::uint64_t le, std::uint64_t cumulative) {
            m.histogram.bucket.push_back({cumulative, static_cast<double>(le) / 1e9});
        });
    m.histogram.bucket.push_back({h.count, std::numeric_limits<double>::infinity()});
    f.metric.push_back(std::move(m));
}

} // namespace

/// Families by name, in the order first written: what a scrape returns.
class family_writer final : public metric_writer {
public:
    void counter(std::string_view name, std::string_view help, metric_labels labels,
                 double value) override {
        ClientMetric m;
        m.label = to_labels(std::move(labels));
        m.counter.value = value;
        family_of(name, help, MetricType::Counter).metric.push_back(std::move(m));
    }
    void gauge(std::string_view name, std::string_view help, metric_labels labels,
               double value) override {
        ClientMetric m;
        m.label = to_labels(std::move(labels));
        m.gauge.value = value;
        family_of(name, help, MetricType::Gauge).metric.push_back(std::move(m));
    }
    void histogram(std::string_view name, std::string_view help, metric_labels labels,
                   metrics::histogram const& h) override {
        add_histogram(family_of(name, help, MetricType::Histogram), to_labels(std::move(labels)),
                      h);
    }
    std::vector<MetricFamily> take() { return std::move(families_); }

private:
    static std::vector<ClientMetric::Label> to_labels(metric_labels labels) {
        std::vector<ClientMetric::Label> out;
        for (auto& [name, value] : labels) {
            out.push_back({std::move(name), std::move(value)});
        }
        return out;
    }
    MetricFamily& family_of(std::string_view name, std::string_view help, MetricType type) {
        for (MetricFamily& f : families_) {
            if (f.name == name) {
                return f;
            }
        }
        families_.push_back(family(std::string(name), std::string(help), type));
        return families_.back();
    }
    std::vector<MetricFamily> families_;
};

class metrics_endpoint::collector final : public prometheus::Collectable {
public:
    collector(net::runtime const& rt, std::vector<metrics_feed> feeds)
        : rt_(rt)
        , feeds_(std::move(feeds)) {}

    std::vector<MetricFamily> Collect() const override {
        family_writer out;
        for (auto const& f : feeds_) { // per line: the runtime's counters
            std::string const& name = f.parser->config().name;
            for (std::size_t l = 0; l < rt_.line_count(f.id); ++l) {
                metric_labels const labels{{"feed", name}, {"line", f.parser->lines()[l].name}};
                auto const s = rt_.stats(f.id, l);
                out.counter("signet_feed_packets_total", "Datagrams received", labels,
                            static_cast<double>(s.packets));
                out.counter("signet_feed_bytes_total", "Payload bytes received", labels,
                            static_cast<double>(s.bytes));
                out.counter("signet_feed_queue_drops_total",
                            "Datagrams dropped: the line queue was full (on_full = drop)", labels,
                            static_cast<double>(s.dropped));
                out.counter("signet_feed_kernel_drops_total",
                            "Datagrams the kernel dropped: the socket buffer was full", labels,
                            static_cast<double>(s.kernel_drops));
                out.counter("signet_feed_truncated_total",
                            "Datagrams longer than buffer_size (cut)", labels,
                            static_cast<double>(s.truncated));
            }
        }
        for (auto const& f : feeds_) { // per feed: the protocol-neutral counters
            std::string const& name = f.parser->config().name;
            metric_labels const labels{{"feed", name}};
            feed_counters const live = f.parser->live();
            out.counter("signet_feed_messages_total", "Messages delivered in sequence", labels,
                        static_cast<double>(live.messages));
            out.counter("signet_feed_gaps_total", "Sequence gaps not recovered", labels,
                        static_cast<double>(live.gaps));
            out.counter("signet_feed_missing_total", "Sequence numbers lost in gaps", labels,
                        static_cast<double>(live.missing));
            out.counter("signet_feed_duplicate_packets_total",
                        "Packets delivered before (A/B copies, resends)", labels,
                        static_cast<double>(live.duplicates));
            out.counter("signet_feed_malformed_packets_total",
                        "Packets that failed validation (they claimed no sequence)", labels,
                        static_cast<double>(live.malformed));
            out.counter("signet_feed_ignored_packets_total",
                        "Packets of another stream or with an implausible sequence", labels,
                        static_cast<double>(live.ignored));
            out.counter("signet_feed_recovered_messages_total",
                        "Messages a recovery brought back (re-requests)", labels,
                        static_cast<double>(live.recovered));
            out.counter("signet_feed_lost_messages_total",
                        "Messages of gaps whose recovery was given up", labels,
                        static_cast<double>(live.lost));
            out.gauge("signet_feed_late_start",
                      "Sequence numbers before a late join's first packet", labels,
                      static_cast<double>(live.late_start));
            out.gauge("signet_feed_recovering", "1 while a gap or the book is being recovered",
                      labels, live.recovering ? 1.0 : 0.0);
            for (book_state const state : {book_state::none, book_state::complete,
                                           book_state::recovering, book_state::stale}) {
                out.gauge("signet_feed_book_state",
                          "1 for the feed's book state (none, complete, recovering, stale)",
                          {{"feed", name}, {"state", to_string(state)}},
                          live.book == state ? 1.0 : 0.0);
            }
            out.histogram("signet_feed_latency_seconds",
                          "Kernel receive timestamp to the end of parsing", labels,
                          f.parser->stages().total());
            auto const& st = f.parser->stages();
            char const* const stage_help =
                "Latency per stage: receive (kernel -> user space), queue (-> parse start), "
                "parse (-> parse end), sequence (held for a gap -> delivered in sequence)";
            out.histogram("signet_feed_stage_latency_seconds", stage_help,
                          {{"feed", name}, {"stage", "receive"}}, st.receive());
            out.histogram("signet_feed_stage_latency_seconds", stage_help,
                          {{"feed", name}, {"stage", "queue"}}, st.queue());
            out.histogram("signet_feed_stage_latency_seconds", stage_help,
                          {{"feed", name}, {"stage", "parse"}}, st.parse());
            out.histogram("signet_feed_stage_latency_seconds", stage_help,
                          {{"feed", name}, {"stage", "sequence"}}, f.parser->sequence_latency());
        }
        for (auto const& f : feeds_) { // what each protocol adds
            f.parser->protocol().metrics(out, f.parser->config().name);
        }
        std::lock_guard lock(subscribers_mutex_);
        if (subscribers_) {
            for (subscriber_stats const& s : subscribers_()) {
                metric_labels const labels{{"subscriber", s.name}};
                out.counter("signet_subscriber_delivered_total",
                            "Events an event subscriber's handler was called with", labels,
                            static_cast<double>(s.delivered));
                out.counter("signet_subscriber_dropped_total",
                            "Events a subscriber lost (its queue full, or left at stop)", labels,
                            static_cast<double>(s.dropped));
                out.counter("signet_subscriber_conflated_total",
                            "Best bid/offer events replaced by a later one of their instrument",
                            labels, static_cast<double>(s.conflated));
                out.counter("signet_subscriber_lost_notices_total",
                            "events_lost events a subscriber was told", labels,
                            static_cast<double>(s.lost_notices));
            }
        }
        if (nats_) {
            if (std::optional<nats_stats> const n = nats_()) {
                metric_labels const labels{{"url", n->url}};
                out.gauge("signet_nats_connected", "1 while the NATS connection is up", labels,
                          n->state == "connected" ? 1.0 : 0.0);
                out.counter("signet_nats_published_total", "Events published to NATS", labels,
                            static_cast<double>(n->published));
                out.counter("signet_nats_failed_total",
                            "Events the NATS connection refused (reconnect buffer full)", labels,
                            static_cast<double>(n->failed));
                out.counter("signet_nats_dropped_total",
                            "Events the NATS publisher's queue could not take", labels,
                            static_cast<double>(n->dropped));
                out.counter("signet_nats_disconnects_total", "NATS connections lost", labels,
                            static_cast<double>(n->disconnects));
                out.counter("signet_nats_reconnects_total", "NATS connections made again", labels,
                            static_cast<double>(n->reconnects));
                out.counter("signet_nats_stream_unstored_total",
                            "Messages the JetStream last-value streams did not store", labels,
                            static_cast<double>(n->stream_unstored));
            }
        }
        if (standby_) {
            if (std::optional<standby_stats> const sb = standby_()) {
                for (standby_feed_stats const& f : sb->feeds) {
                    metric_labels const labels{{"group", sb->group}, {"feed", f.feed}};
                    out.gauge("signet_standby_leader", "1 while this member publishes the feed",
                              labels, f.role == "leader" ? 1.0 : 0.0);
                    out.counter("signet_standby_takeovers_total",
                                "Leaderships of the feed this member took", labels,
                                static_cast<double>(f.takeovers));
                    out.counter("signet_standby_resyncs_total",
                                "Takeovers that published the current state instead", labels,
                                static_cast<double>(f.resyncs));
                    out.counter("signet_standby_lease_errors_total", "Lease requests that failed",
                                labels, static_cast<double>(f.lease_errors));
                    out.gauge("signet_standby_last_takeover_seconds",
                              "The last takeover: lease found free -> publishing again", labels,
                              f.last_takeover_ms / 1000.0);
                }
            }
        }
        return out.take();
    }

    void set_standby(std::function<std::optional<standby_stats>()> source) {
        std::lock_guard lock(subscribers_mutex_);
        standby_ = std::move(source);
    }

    void set_nats(std::function<std::optional<nats_stats>()> source) {
        std::lock_guard lock(subscribers_mutex_);
        nats_ = std::move(source);
    }

    void set_subscribers(std::function<std::vector<subscriber_stats>()> source) {
        std::lock_guard lock(subscribers_mutex_);
        subscribers_ = std::move(source);
    }

private:
    net::runtime const& rt_;
    std::vector<metrics_feed> feeds_;
    // Guards subscribers_, nats_ and standby_ (scrapes, start()).
    mutable std::mutex subscribers_mutex_;
    std::function<std::vector<subscriber_stats>()> subscribers_;
    std::function<std::optional<nats_stats>()> nats_;
    std::function<std::optional<standby_stats>()> standby_;
};

metrics_endpoint::metrics_endpoint(std::string const& listen, net::runtime const& rt,
                                   std::vector<metrics_feed> feeds)
    : collector_(std::make_shared<collector>(rt, std::move(feeds))) {
    try {
        exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
    } catch (std::exception const& e) {
        throw std::runtime_error("[metrics] listen = \"" + listen +
                                 "\": cannot serve /metrics there: " + e.what());
    }
    exposer_->RegisterCollectable(collector_);
    // Where the destructor knocks (below): the listening socket, "any" as loopback.
    if (auto const at = net::udp_endpoint::try_parse(listen)) {
        wake_at_ = at->is_any() ? net::udp_endpoint::try_parse_address(
                                      at->is_v6() ? "::1" : "127.0.0.1", at->port())
                                : at;
        auto const ports = exposer_->GetListeningPorts();
        if (wake_at_ && !ports.empty()) {
            wake_at_->set_port(static_cast<std::uint16_t>(ports.front()));
        }
    }
}

metrics_endpoint::~metrics_endpoint() {
    // The exposer (CivetWeb) stops by a flag its listening thread reads between polls of its
    // socket, 2 s each: alone, every stop of a receiver with metrics waited a second on
    // average. A connection ends the poll; made every 5 ms (a retry period) until the exposer
    // is gone, one of them comes after the flag is set. Loopback: each connect is at once.
    std::atomic<bool> gone{false};
    std::thread knocker;
    if (wake_at_) {
        knocker = std::thread([&gone, at = *wake_at_] {
            // acquire: pairs with the release store after the exposer's destruction.
            while (!gone.load(std::memory_order_acquire)) {
                int const fd = ::socket(at.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd >= 0) {
                    (void)::connect(fd, at.data(), at.size());
                    ::close(fd);
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        });
    }
    exposer_.reset();
    gone.store(true, std::memory_order_release); // pairs with the knocker's acquire load
    if (knocker.joinable()) {
        knocker.join();
    }
}

void metrics_endpoint::set_nats(std::function<std::optional<nats_stats>()> source) {
    collector_->set_nats(std::move(source));
}

void metrics_endpoint::set_standby(std::function<std::optional<standby_stats>()> source) {
    collector_->set_standby(std::move(source));
}

void metrics_endpoint::set_subscribers(std::function<std::vector<subscriber_stats>()> source) {
    collector_->set_subscribers(std::move(source));
}

} // namespace signet::receiver
