#pragma once

// metrics_endpoint: the receiver's Prometheus endpoint ([metrics] listen): GET /metrics answers
// in the Prometheus text format (prometheus-cpp's exposer and serializer). Nothing is copied on
// the hot path: a scrape reads the runtime's line counters and each feed parser's live
// counters and histograms (atomic snapshots, safe from the exposer's threads).
//
// Names follow Prometheus conventions: signet_feed_<what>_total counters with labels feed (and
// line: the line's name, a, b, request, snapshot or definitions), the protocol-neutral counters
// of every feed, signet_feed_latency_seconds and
// signet_feed_stage_latency_seconds{stage=receive|queue|parse|sequence} histograms, then the
// families each feed's protocol adds (signet_feed_<protocol part>_*), and per event subscriber
// (label subscriber) signet_subscriber_{delivered,dropped,conflated,lost_notices}_total; with
// [publish] nats, signet_nats_{published,failed,dropped,disconnects,reconnects}_total and the
// gauge signet_nats_connected; with [publish] standby, per feed (labels group, feed) the gauges
// signet_standby_leader and signet_standby_last_takeover_seconds and
// signet_standby_{takeovers,resyncs,lease_errors}_total.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <signet/net/runtime.hpp>
#include <signet/net/udp_endpoint.hpp>
#include <signet/receiver/feed_parser.hpp>
#include <signet/receiver/publish.hpp>
#include <signet/receiver/standby.hpp>
#include <signet/receiver/subscription.hpp>

namespace prometheus {
class Exposer;
}

namespace signet::receiver {

struct metrics_feed {
    std::size_t id = 0; ///< the runtime's feed index
    feed_parser const* parser = nullptr;
};

class metrics_endpoint {
public:
    /// Starts serving at `listen` ("ip:port"); throws std::runtime_error naming it when the
    /// port cannot be bound. `rt` and the parsers outlive this.
    metrics_endpoint(std::string const& listen, net::runtime const& rt,
                     std::vector<metrics_feed> feeds);
    ~metrics_endpoint();
    /// Where the subscribers' counters come from (receiver::start(); any thread may scrape
    /// meanwhile: a mutex guards the source, on the scrape path only).
    void set_subscribers(std::function<std::vector<subscriber_stats>()> source);
    /// Where the NATS bridge's counters come from (the same rules).
    void set_nats(std::function<std::optional<nats_stats>()> source);
    /// Where the standby group's state comes from (the same rules).
    void set_standby(std::function<std::optional<standby_stats>()> source);
    metrics_endpoint(metrics_endpoint const&) = delete;
    metrics_endpoint& operator=(metrics_endpoint const&) = delete;

private:
    class collector;
    std::shared_ptr<collector> collector_;
    std::unique_ptr<prometheus::Exposer> exposer_;
    std::optional<net::udp_endpoint> wake_at_; ///< the exposer's socket, to end its poll at stop
};

} // namespace signet::receiver
