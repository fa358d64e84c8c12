// signet_contention_bench: the contention benchmark from the work-contracts talk. A fixed set of
// tasks is driven by T pinned worker threads for a fixed time after a warm-up, for several task
// sizes, task counts, workloads and implementations. Workloads (schedulers.hpp): `self` (each
// task re-schedules or re-enqueues itself whenever it runs), `fan_in` (a pinned producer thread
// schedules the tasks round robin) and `fan_out` (a root task schedules 8 leaves and the next
// root). Reports throughput, ns per execution and thread, and fairness (CoV of per-task and
// per-thread execution counts) as a table on stdout and, with --json, as a JSON array (one
// object per point).
//
//   signet_contention_bench --impl signet,moodycamel --task max,low --threads 1,2
//                           --seconds 2 --cpus 0,1 --tasks 1024,16384 --workload self,fan_in
//                           --json results.json

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <sched.h>
#include <sys/utsname.h>

#include <CLI/CLI.hpp>

#include "harness.hpp"
#include "json_array.hpp"
#include "machine_info.hpp"
#include "schedulers.hpp"

namespace {

using signet::bench::affinity_cpus;
using signet::bench::cpu_model;
using signet::bench::join;

using namespace signet::bench;

struct task_kind {
    std::string name;
    unsigned rounds; // N in hash_task<N>
};

std::vector<task_kind> const all_tasks{{"max", 0}, {"high", 1}, {"medium", 64}, {"low", 256}};

struct workload_kind {
    std::string name;
    workload value;
};

std::vector<workload_kind> const all_workloads{
    {"self", workload::self}, {"fan_in", workload::fan_in}, {"fan_out", workload::fan_out}};

using point_runner = point_result (*)(unsigned rounds, workload w, point_config const&);

template <template <unsigned, workload> class Scheduler, workload W>
point_result run_rounds(unsigned rounds, point_config const& config) {
    switch (rounds) {
    case 0:
        return run_point<Scheduler<0, W>>(config);
    case 1:
        return run_point<Scheduler<1, W>>(config);
    case 64:
        return run_point<Scheduler<64, W>>(config);
    default:
        return run_point<Scheduler<256, W>>(config);
    }
}

template <template <unsigned, workload> class Scheduler>
point_result run_for(unsigned rounds, workload w, point_config const& config) {
    switch (w) {
    case workload::fan_in:
        return run_rounds<Scheduler, workload::fan_in>(rounds, config);
    case workload::fan_out:
        return run_rounds<Scheduler, workload::fan_out>(rounds, config);
    default:
        return run_rounds<Scheduler, workload::self>(rounds, config);
    }
}

double body_ns(unsigned rounds, int cpu, double seconds) {
    switch (rounds) {
    case 0:
        return measure_body_ns<0>(cpu, seconds);
    case 1:
        return measure_body_ns<1>(cpu, seconds);
    case 64:
        return measure_body_ns<64>(cpu, seconds);
    default:
        return measure_body_ns<256>(cpu, seconds);
    }
}

struct implementation {
    std::string name;
    point_runner run; // empty: not compiled in (its library was not found)
};

std::vector<implementation> all_implementations() {
    std::vector<implementation> list;
    list.push_back({"signet", &run_for<signet_nonblocking>});
    list.push_back({"signet_blocking", &run_for<signet_blocking>});
#if defined(SIGNET_BENCH_HAVE_MOODYCAMEL)
    list.push_back({"moodycamel", &run_for<moodycamel_scheduler>});
    list.push_back({"moodycamel_bulk", &run_for<moodycamel_bulk_scheduler>});
#else
    list.push_back({"moodycamel", {}});
    list.push_back({"moodycamel_bulk", {}});
#endif
#if defined(SIGNET_BENCH_HAVE_TBB)
    list.push_back({"tbb", &run_for<tbb_scheduler>});
#else
    list.push_back({"tbb", {}});
#endif
#if defined(SIGNET_BENCH_HAVE_BOOST_LOCKFREE)
    list.push_back({"boost_lockfree", &run_for<boost_lockfree_scheduler>});
#else
    list.push_back({"boost_lockfree", {}});
#endif
    list.push_back({"mutex_deque", &run_for<mutex_deque_scheduler>});
    list.push_back({"work_stealing", &run_for<work_stealing_scheduler>});
    return list;
}

/// Coefficient of variation (sample standard deviation / mean); 0 for fewer than two values or
/// a zero mean.
double coefficient_of_variation(std::vector<std::uint64_t> const& values) {
    if (values.size() < 2) {
        return 0;
    }
    double sum = 0;
    for (auto v : values) {
        sum += static_cast<double>(v);
    }
    double const mean = sum / static_cast<double>(values.size());
    if (mean == 0) {
        return 0;
    }
    double squares = 0;
    for (auto v : values) {
        double const d = static_cast<double>(v) - mean;
        squares += d * d;
    }
    return std::sqrt(squares / static_cast<double>(values.size() - 1)) / mean;
}

struct point_row {
    std::string impl;
    std::string task;
    std::string workload;
    std::size_t threads = 0;
    std::size_t task_count = 0; // tasks (contracts) in the set
    double seconds = 0;
    std::uint64_t tasks = 0; // executions in the measured window
    double tasks_per_sec = 0;
    double ns_per_task = 0; // ns per execution and worker thread: threads / tasks_per_sec
    double task_cv = 0;
    double thread_cv = 0;
    std::size_t never_run = 0;
};

/// Runs one point, re-measuring while other processes took more than max_other % of the
/// point's CPUs (a shared machine); reports and prints the least disturbed attempt.
point_row measure(implementation const& impl, task_kind const& task, workload_kind const& load,
                  point_config const& config, int attempts, double max_other) {
    point_result r = impl.run(task.rounds, load.value, config);
    for (int attempt = 1; attempt < attempts && 100 * r.other_share > max_other; ++attempt) {
        std::printf("  (%s/%zu threads/%zu tasks: others took %.1f%% of the CPUs, "
                    "re-measuring)\n",
                    impl.name.c_str(), config.threads, config.tasks, 100 * r.other_share);
        std::fflush(stdout);
        point_result again = impl.run(task.rounds, load.value, config);
        if (again.other_share < r.other_share) {
            r = std::move(again);
        }
    }
    point_row row;
    row.impl = impl.name;
    row.task = task.name;
    row.workload = load.name;
    row.threads = config.threads;
    row.task_count = config.tasks;
    row.seconds = r.seconds;
    for (auto c : r.per_thread) {
        row.tasks += c;
    }
    row.tasks_per_sec = static_cast<double>(row.tasks) / r.seconds;
    row.ns_per_task = row.tasks == 0 ? 0.0
                                     : 1e9 * static_cast<double>(row.threads) * r.seconds /
                                           static_cast<double>(row.tasks);
    row.task_cv = coefficient_of_variation(r.per_task);
    row.thread_cv = coefficient_of_variation(r.per_thread);
    row.never_run = static_cast<std::size_t>(
        std::count(r.per_task.begin(), r.per_task.end(), std::uint64_t{0}));
    std::printf("%-16s %7zu %9zu %14.0f %14.0f %9.1f %9.5f %9.5f %9zu %6.1f %6.1f\n",
                row.impl.c_str(), row.threads, row.task_count, row.tasks_per_sec,
                row.tasks_per_sec / static_cast<double>(row.threads), row.ns_per_task, row.task_cv,
                row.thread_cv, row.never_run, 100 * r.cpu_share, 100 * r.other_share);
    std::fflush(stdout);
    return row;
}

/// signet against the fastest shared queue (moodycamel, moodycamel_bulk, tbb, boost_lockfree,
/// mutex_deque) at
/// each point measured for both, and signet's worst fairness per workload. work_stealing is
/// listed apart: in the self workload it starves tasks (never_run), so it is no baseline there.
void print_comparison(std::vector<point_row> const& rows) {
    using point_key = std::tuple<std::string, std::string, std::size_t, std::size_t>;
    std::map<point_key, std::map<std::string, point_row const*>> points;
    std::vector<point_key> order;
    for (auto const& r : rows) {
        point_key key{r.workload, r.task, r.task_count, r.threads};
        if (points.find(key) == points.end()) {
            order.push_back(key);
        }
        points[key][r.impl] = &r;
    }
    bool header = false;
    for (auto const& key : order) {
        auto const& at = points[key];
        point_row const* best = nullptr;
        for (char const* queue :
             {"moodycamel", "moodycamel_bulk", "tbb", "boost_lockfree", "mutex_deque"}) {
            auto it = at.find(queue);
            if (it != at.end() &&
                (best == nullptr || it->second->tasks_per_sec > best->tasks_per_sec)) {
                best = it->second;
            }
        }
        if (best == nullptr || best->tasks_per_sec <= 0) {
            continue;
        }
        std::string line;
        for (char const* name : {"signet", "signet_blocking", "work_stealing"}) {
            if (auto it = at.find(name); it != at.end()) {
                char buffer[160];
                std::snprintf(buffer, sizeof buffer, "%s%s %.2fx", line.empty() ? "" : ", ", name,
                              it->second->tasks_per_sec / best->tasks_per_sec);
                line += buffer;
                if (std::string(name) == "work_stealing" && it->second->never_run > 0) {
                    std::snprintf(buffer, sizeof buffer, " (never ran %zu tasks)",
                                  it->second->never_run);
                    line += buffer;
                }
            }
        }
        if (line.empty()) {
            continue;
        }
        if (!header) {
            std::printf("\nsignet vs best queue (throughput ratio; best queue = the fastest of "
                        "moodycamel, moodycamel_bulk, tbb, boost_lockfree, mutex_deque at the same "
                        "point)\n");
            header = true;
        }
        auto const& [load, task, task_count, threads] = key;
        std::printf("  %-8s %-6s %8zu tasks %2zu thread%s: best queue %s %.3g M/s; %s\n",
                    load.c_str(), task.c_str(), task_count, threads, threads == 1 ? " " : "s",
                    best->impl.c_str(), best->tasks_per_sec / 1e6, line.c_str());
    }
    if (!header) {
        std::printf("\n");
    }
    for (auto const& load : all_workloads) {
        double task_cv = 0;
        double thread_cv = 0;
        std::size_t never_run = 0;
        bool any = false;
        for (auto const& r : rows) {
            if (r.workload == load.name && (r.impl == "signet" || r.impl == "signet_blocking")) {
                any = true;
                task_cv = std::max(task_cv, r.task_cv);
                thread_cv = std::max(thread_cv, r.thread_cv);
                never_run += r.never_run;
            }
        }
        if (any) {
            std::printf("signet fairness, %s workload (both groups, worst point): task CoV "
                        "%.5f, thread CoV %.5f, never_run total %zu\n",
                        load.name.c_str(), task_cv, thread_cv, never_run);
        }
    }
}

void write_json(std::string const& path, std::vector<point_row> const& rows) {
    std::vector<nlohmann::ordered_json> objects;
    objects.reserve(rows.size());
    for (auto const& r : rows) {
        objects.push_back({{"impl", r.impl},
                           {"task", r.task},
                           {"workload", r.workload},
                           {"threads", r.threads},
                           {"task_count", r.task_count},
                           {"seconds", finite_or_zero(r.seconds)},
                           {"tasks", r.tasks},
                           {"tasks_per_sec", finite_or_zero(std::round(r.tasks_per_sec))},
                           {"ns_per_task", finite_or_zero(r.ns_per_task)},
                           {"task_cv", finite_or_zero(r.task_cv)},
                           {"thread_cv", finite_or_zero(r.thread_cv)},
                           {"never_run", r.never_run}});
    }
    write_json_array(path, objects);
}

/// Drops repeated values, keeping the first of each.
template <typename T>
void drop_repeats(std::vector<T>& values) {
    std::vector<T> unique;
    for (auto const& v : values) {
        if (std::find(unique.begin(), unique.end(), v) == unique.end()) {
            unique.push_back(v);
        }
    }
    values = std::move(unique);
}

/// Finds each name in `all` (by .name); prints the error and returns false on an unknown one.
template <typename Kind>
bool select_by_name(std::vector<std::string> const& names, std::vector<Kind> const& all,
                    std::vector<Kind>& selected, char const* what, char const* choices) {
    for (auto const& name : names) {
        auto it =
            std::find_if(all.begin(), all.end(), [&](auto const& k) { return k.name == name; });
        if (it == all.end()) {
            std::cerr << "unknown " << what << " '" << name << "' (" << choices << ")\n";
            return false;
        }
        selected.push_back(*it);
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
#if !defined(NDEBUG) || !defined(__OPTIMIZE__)
    std::cout << "Debug build: numbers are not representative" << std::endl;
#endif
    CLI::App app{"signet contention benchmark: work contracts vs MPMC task queues"};
    std::vector<std::string> impl_names;
    std::vector<std::string> task_names;
    std::vector<std::string> workload_names{"self"};
    std::vector<std::size_t> thread_counts;
    std::vector<int> cpus;
    int producer_cpu = -1;
    double seconds = 1.0;
    double warm_up = -1;
    std::vector<std::size_t> task_counts{16384};
    std::string json_path;
    double max_other = 2.0;
    int attempts = 3;
    // trigger_on_parse: a flag given twice takes its last value (or list), so a wrapper script's
    // defaults can be overridden by the flags passed after them.
    app.add_option("--impl", impl_names,
                   "implementations: signet,signet_blocking,moodycamel,moodycamel_bulk,tbb,"
                   "boost_lockfree,mutex_deque,work_stealing (default: all)")
        ->delimiter(',')
        ->trigger_on_parse();
    app.add_option("--task", task_names, "task sizes: max,high,medium,low (default: all)")
        ->delimiter(',')
        ->trigger_on_parse();
    app.add_option("--workload", workload_names,
                   "workloads: self (each task re-schedules itself), fan_in (one producer "
                   "thread schedules the tasks round robin; see --producer-cpu), fan_out (a "
                   "root task schedules 8 leaf tasks and the next root)")
        ->delimiter(',')
        ->capture_default_str()
        ->trigger_on_parse();
    app.add_option("--threads", thread_counts,
                   "worker thread counts (default: 1 up to the number of CPUs)")
        ->delimiter(',')
        ->trigger_on_parse();
    app.add_option("--cpus", cpus, "CPU ids, one per worker (default: this process's CPUs)")
        ->delimiter(',')
        ->trigger_on_parse();
    app.add_option("--producer-cpu", producer_cpu,
                   "fan_in: CPU of the producer thread (default: the last CPU of --cpus, "
                   "shared with a worker when every CPU has one)")
        ->check(CLI::Range(0, CPU_SETSIZE - 1))
        ->trigger_on_parse();
    app.add_option("--seconds", seconds, "measured duration of each point")
        ->check(CLI::PositiveNumber)
        ->capture_default_str()
        ->trigger_on_parse();
    app.add_option("--warmup", warm_up, "warm-up before each point (default: seconds/4, <= 0.5)")
        ->trigger_on_parse();
    app.add_option("--tasks", task_counts,
                   "numbers of tasks (contracts), a list to sweep, e.g. 64,1024,16384,1048576")
        ->delimiter(',')
        ->check(CLI::Range(1, 1 << 24))
        ->capture_default_str()
        ->trigger_on_parse();
    app.add_option("--json", json_path, "write the results as a JSON array to this file")
        ->trigger_on_parse();
    app.add_option("--max-other", max_other,
                   "re-measure a point when other processes took more than this % of the "
                   "point's CPUs (from /proc/stat)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str()
        ->trigger_on_parse();
    app.add_option("--attempts", attempts,
                   "measurements per point at most (the least "
                   "disturbed one is reported)")
        ->check(CLI::Range(1, 10))
        ->capture_default_str()
        ->trigger_on_parse();
    CLI11_PARSE(app, argc, argv);
    drop_repeats(impl_names);
    drop_repeats(task_names);
    drop_repeats(workload_names);
    drop_repeats(thread_counts);
    drop_repeats(task_counts);

    auto implementations = all_implementations();
    if (impl_names.empty()) {
        for (auto const& i : implementations) {
            if (i.run) {
                impl_names.push_back(i.name);
            }
        }
    }
    std::vector<implementation const*> selected_impls;
    for (auto const& name : impl_names) {
        auto it = std::find_if(implementations.begin(), implementations.end(),
                               [&](auto const& i) { return i.name == name; });
        if (it == implementations.end()) {
            std::cerr << "unknown implementation '" << name << "'\n";
            return 2;
        }
        if (!it->run) {
            std::cerr << "implementation '" << name << "' was not built (library not found)\n";
            return 2;
        }
        selected_impls.push_back(&*it);
    }
    if (task_names.empty()) {
        for (auto const& t : all_tasks) {
            task_names.push_back(t.name);
        }
    }
    std::vector<task_kind> selected_tasks;
    std::vector<workload_kind> selected_workloads;
    if (!select_by_name(task_names, all_tasks, selected_tasks, "task", "max, high, medium, low") ||
        !select_by_name(workload_names, all_workloads, selected_workloads, "workload",
                        "self, fan_in, fan_out")) {
        return 2;
    }
    if (cpus.empty()) {
        cpus = affinity_cpus();
    }
    if (cpus.empty()) {
        std::cerr << "no CPU to run on\n";
        return 2;
    }
    auto sorted_cpus = cpus;
    std::sort(sorted_cpus.begin(), sorted_cpus.end());
    if (std::adjacent_find(sorted_cpus.begin(), sorted_cpus.end()) != sorted_cpus.end()) {
        std::cerr << "--cpus must list distinct CPUs\n";
        return 2;
    }
    if (thread_counts.empty()) {
        for (std::size_t t = 1; t <= cpus.size(); ++t) {
            thread_counts.push_back(t);
        }
    }
    for (auto t : thread_counts) {
        if (t == 0 || t > cpus.size()) {
            std::cerr << "--threads " << t << ": need 1.." << cpus.size()
                      << " (one distinct CPU per worker; see --cpus)\n";
            return 2;
        }
    }
    if (producer_cpu < 0) {
        producer_cpu = cpus.back();
    }
    if (warm_up < 0) {
        warm_up = std::min(0.5, seconds / 4);
    }
    bool const any_fan_in = std::any_of(selected_workloads.begin(), selected_workloads.end(),
                                        [](auto const& w) { return w.value == workload::fan_in; });

    utsname uts{};
    uname(&uts);
    std::cout << "signet contention benchmark\n"
              << "  cpu: " << cpu_model() << "\n  kernel: " << uts.release
              << "\n  workers pinned to cpus: " << join(cpus);
    if (any_fan_in) {
        std::cout << "\n  fan_in producer pinned to cpu " << producer_cpu;
        auto const at = std::find(cpus.begin(), cpus.end(), producer_cpu);
        if (at != cpus.end()) {
            auto const shared_from = static_cast<std::size_t>(at - cpus.begin()) + 1;
            std::cout << " (shares it with worker " << shared_from - 1 << " from " << shared_from
                      << " thread" << (shared_from == 1 ? "" : "s")
                      << " up: fan_in numbers there include the producer's share of that CPU)";
        }
    }
    std::string task_list;
    for (auto n : task_counts) {
        task_list += (task_list.empty() ? "" : ",") + std::to_string(n);
    }
    std::cout << "\n  tasks: " << task_list << ", warm-up " << warm_up << " s, measured " << seconds
              << " s per point\n";

    std::vector<point_row> rows;
    std::map<unsigned, double> body_cache;
    try {
        for (auto const& load : selected_workloads) {
            for (auto const& task : selected_tasks) {
                if (body_cache.find(task.rounds) == body_cache.end()) {
                    body_cache[task.rounds] =
                        body_ns(task.rounds, cpus.front(), std::min(0.5, seconds / 2));
                }
                std::printf("\nworkload %s, task %s: hash_task<%u>, body alone %.1f ns\n",
                            load.name.c_str(), task.name.c_str(), task.rounds,
                            body_cache[task.rounds]);
                std::printf("%-16s %7s %9s %14s %14s %9s %9s %9s %9s %6s %6s\n", "impl", "threads",
                            "tasks", "tasks/s", "tasks/s/thread", "ns/task", "task_cv", "thread_cv",
                            "never_run", "cpu%", "other%");
                // Implementations innermost: the points compared with each other are measured
                // close together in time (a shared machine drifts).
                for (auto task_count : task_counts) {
                    for (auto threads : thread_counts) {
                        point_config config;
                        config.tasks = task_count;
                        config.threads = threads;
                        config.cpus.assign(cpus.begin(),
                                           cpus.begin() + static_cast<std::ptrdiff_t>(threads));
                        config.producer_cpu = load.value == workload::fan_in ? producer_cpu : -1;
                        config.warm_up_seconds = warm_up;
                        config.seconds = seconds;
                        for (auto const* impl : selected_impls) {
                            rows.push_back(measure(*impl, task, load, config, attempts, max_other));
                        }
                    }
                }
            }
        }
        print_comparison(rows);
        if (!json_path.empty()) {
            write_json(json_path, rows);
            std::cout << "\nwrote " << rows.size() << " points to " << json_path << "\n";
        }
    } catch (std::exception const& e) {
        std::cerr << "signet_contention_bench: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
