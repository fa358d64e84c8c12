#pragma once

// signet::metrics: statistics that a contract (or any single writer) updates without locks or
// read-modify-writes and that any thread reads. counter (monotonic u64), gauge (i64 set/get),
// histogram (log-linear u64 buckets; nearest-rank percentiles within 1/32; snapshots that add,
// subtract and yield Prometheus-style cumulative buckets).

#include <signet/core/metrics/counter.hpp>
#include <signet/core/metrics/gauge.hpp>
#include <signet/core/metrics/histogram.hpp>
