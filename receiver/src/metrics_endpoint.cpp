#include <array>
#include <stdexcept>

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

void add_counter(MetricFamily& f, std::vector<ClientMetric::Label> labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.counter.value = value;
    f.metric.push_back(std::move(m));
}

void add_gauge(MetricFamily& f, std::vector<ClientMetric::Label> labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = value;
    f.metric.push_back(std::move(m));
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

class metrics_endpoint::collector final : public prometheus::Collectable {
public:
    collector(net::runtime const& rt, std::vector<metrics_feed> feeds)
        : rt_(rt)
        , feeds_(std::move(feeds)) {}

    std::vector<MetricFamily> Collect() const override {
        // Per line (the runtime's counters).
        auto packets =
            family("signet_feed_packets_total", "Datagrams received", MetricType::Counter);
        auto bytes =
            family("signet_feed_bytes_total", "Payload bytes received", MetricType::Counter);
        auto queue_drops = family("signet_feed_queue_drops_total",
                                  "Datagrams dropped: the line queue was full (on_full = drop)",
                                  MetricType::Counter);
        auto kernel_drops =
            family("signet_feed_kernel_drops_total",
                   "Datagrams the kernel dropped: the socket buffer was full", MetricType::Counter);
        auto truncated = family("signet_feed_truncated_total",
                                "Datagrams longer than buffer_size (cut)", MetricType::Counter);
        // Per feed (the session, the parser and the book).
        auto messages = family("signet_feed_messages_total", "Messages delivered in sequence",
                               MetricType::Counter);
        auto gaps =
            family("signet_feed_gaps_total", "Sequence gaps not recovered", MetricType::Counter);
        auto missing = family("signet_feed_missing_messages_total",
                              "Messages lost in gaps not recovered", MetricType::Counter);
        auto duplicates =
            family("signet_feed_duplicate_packets_total",
                   "Packets delivered before (A/B copies, resends)", MetricType::Counter);
        auto malformed =
            family("signet_feed_malformed_packets_total", "Malformed packets", MetricType::Counter);
        auto ignored = family("signet_feed_ignored_packets_total",
                              "Packets of another session or with an implausible sequence",
                              MetricType::Counter);
        auto recovered = family("signet_feed_recovered_messages_total",
                                "Messages recovered by re-requests", MetricType::Counter);
        auto lost = family("signet_feed_lost_messages_total",
                           "Messages of gaps whose recovery was given up", MetricType::Counter);
        // Per feed with a snapshot server (late join).
        auto snapshots =
            family("signet_feed_snapshots_total",
                   "GLIMPSE snapshots applied (the feed synchronized)", MetricType::Counter);
        auto snapshot_orders = family("signet_feed_snapshot_orders_loaded_total",
                                      "Orders loaded from applied snapshots", MetricType::Counter);
        auto snapshot_buffered = family(
            "signet_feed_snapshot_buffered_messages_total",
            "Live messages buffered while the feed was not synchronized", MetricType::Counter);
        auto snapshot_failures = family("signet_feed_snapshot_failures_total",
                                        "Snapshot attempts that failed (connect, disconnect, "
                                        "rejected login, protocol, too old)",
                                        MetricType::Counter);
        auto snapshot_synchronized =
            family("signet_feed_snapshot_synchronized",
                   "1 when the book is synchronized, 0 while buffering or loading a snapshot",
                   MetricType::Gauge);
        auto snapshot_sync_seconds = family(
            "signet_feed_snapshot_last_sync_seconds",
            "Time from needing a snapshot to synchronized, the last time", MetricType::Gauge);
        auto latency =
            family("signet_feed_latency_seconds", "Kernel receive timestamp to the end of parsing",
                   MetricType::Histogram);
        auto stages = family("signet_feed_stage_latency_seconds",
                             "Latency per stage: receive (kernel -> user space), queue (-> parse "
                             "start), parse (-> parse end), sequence (held for a gap -> "
                             "delivered in sequence)",
                             MetricType::Histogram);
        for (auto const& f : feeds_) {
            std::string const& name = f.parser->config().name;
            for (std::size_t l = 0; l < rt_.line_count(f.id); ++l) {
                std::vector<ClientMetric::Label> const labels{
                    {"feed", name}, {"line", line_name(f.parser->config(), l)}};
                auto const s = rt_.stats(f.id, l);
                add_counter(packets, labels, static_cast<double>(s.packets));
                add_counter(bytes, labels, static_cast<double>(s.bytes));
                add_counter(queue_drops, labels, static_cast<double>(s.dropped));
                add_counter(kernel_drops, labels, static_cast<double>(s.kernel_drops));
                add_counter(truncated, labels, static_cast<double>(s.truncated));
            }
            std::vector<ClientMetric::Label> const labels{{"feed", name}};
            auto const live = f.parser->live();
            add_counter(messages, labels, static_cast<double>(live.messages));
            add_counter(gaps, labels, static_cast<double>(live.gaps));
            add_counter(missing, labels, static_cast<double>(live.missing_messages));
            add_counter(duplicates, labels, static_cast<double>(live.duplicate_packets));
            add_counter(malformed, labels, static_cast<double>(live.malformed_packets));
            add_counter(ignored, labels, static_cast<double>(live.ignored_packets));
            add_counter(recovered, labels, static_cast<double>(live.recovered_messages));
            add_counter(lost, labels, static_cast<double>(live.lost_messages));
            if (auto const* client = f.parser->snapshot()) {
                snapshot_live const sl = client->live();
                add_counter(snapshots, labels, static_cast<double>(sl.completed));
                add_counter(snapshot_orders, labels, static_cast<double>(sl.orders_loaded));
                add_counter(snapshot_buffered, labels, static_cast<double>(sl.buffered_messages));
                add_counter(snapshot_failures, labels, static_cast<double>(sl.failures));
                add_gauge(snapshot_synchronized, labels,
                          sl.phase == snapshot_phase::live ? 1.0 : 0.0);
                add_gauge(snapshot_sync_seconds, labels,
                          static_cast<double>(sl.last_sync_us) / 1e6);
            }
            add_histogram(latency, labels, f.parser->stages().total());
            auto const& st = f.parser->stages();
            add_histogram(stages, {{"feed", name}, {"stage", "receive"}}, st.receive());
            add_histogram(stages, {{"feed", name}, {"stage", "queue"}}, st.queue());
            add_histogram(stages, {{"feed", name}, {"stage", "parse"}}, st.parse());
            add_histogram(stages, {{"feed", name}, {"stage", "sequence"}},
                          f.parser->sequence_latency());
        }
        return {packets,
                bytes,
                queue_drops,
                kernel_drops,
                truncated,
                messages,
                gaps,
                missing,
                duplicates,
                malformed,
                ignored,
                recovered,
                lost,
                snapshots,
                snapshot_orders,
                snapshot_buffered,
                snapshot_failures,
                snapshot_synchronized,
                snapshot_sync_seconds,
                latency,
                stages};
    }

private:
    net::runtime const& rt_;
    std::vector<metrics_feed> feeds_;
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
}

metrics_endpoint::~metrics_endpoint() = default;

} // namespace signet::receiver
