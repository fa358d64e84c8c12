#pragma once

// Umbrella header for signet's core: work contracts, their groups, the signal tree, the SPSC
// queue, the worker pool and the metrics (counter, gauge, histogram).

#include <signet/core/metrics.hpp>
#include <signet/core/realtime_clock.hpp>
#include <signet/core/signal_tree.hpp>
#include <signet/core/spsc_fixed_queue.hpp>
#include <signet/core/work_contract.hpp>
#include <signet/core/work_contract_group.hpp>
#include <signet/core/worker_pool.hpp>
