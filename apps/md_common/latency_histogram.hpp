#pragma once

// latency_histogram: the apps' latency histogram (nanoseconds) is signet's metrics histogram:
// one writer (the feed's parser contract) records; any thread takes a snapshot (take()).
// Nearest-rank percentiles within 1/32 above the true value; see
// <signet/core/metrics/histogram.hpp> for the rule, the buckets and the threading contract.

#include <signet/core/metrics/histogram.hpp>

namespace signet::apps {

using latency_histogram = metrics::histogram;

} // namespace signet::apps
