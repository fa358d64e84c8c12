#!/usr/bin/env python3
"""Smoke test for signet_contention_bench (standard library only).

Runs the benchmark command given after `--` with `--json FILE` appended, then checks that FILE
is a well-formed JSON array of points with exactly the documented fields and types, and that
every implementation ran (executed tasks) for every expected workload, task size, task count
and thread count.

  check_results.py --json out.json --expect-tasks max,low --expect-threads 1,2 --
      signet_contention_bench --seconds 0.2 --task max,low --threads 1,2
  check_results.py --json out.json --expect-workloads fan_in,fan_out --expect-task-counts 64,1024
      --expect-tasks max -- signet_contention_bench --workload fan_in,fan_out --tasks 64,1024 ...
"""
import argparse
import json
import math
import subprocess
import sys

IMPLS = ["signet", "signet_blocking", "moodycamel", "moodycamel_bulk", "tbb", "boost_lockfree", "mutex_deque",
         "work_stealing"]
TASKS = ["max", "high", "medium", "low"]
WORKLOADS = ["self", "fan_in", "fan_out"]
# "tasks" is the number of executions in the measured window; "task_count" the size of the set.
FIELDS = {"impl": str, "task": str, "workload": str, "threads": int, "task_count": int,
          "seconds": (int, float), "tasks": int, "tasks_per_sec": (int, float),
          "ns_per_task": (int, float), "task_cv": (int, float), "thread_cv": (int, float),
          "never_run": int}


def reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def check(points, expect_tasks, expect_threads, expect_workloads, expect_task_counts):
    errors = []
    if not isinstance(points, list) or not points:
        return ["top level is not a non-empty array"]
    seen = {}
    for i, p in enumerate(points):
        if not isinstance(p, dict):
            errors.append(f"point {i} is not an object")
            continue
        if set(p) != set(FIELDS):
            errors.append(f"point {i} has fields {sorted(p)}, expected {sorted(FIELDS)}")
            continue
        for key, kind in FIELDS.items():
            value = p[key]
            if isinstance(value, bool) or not isinstance(value, kind):
                errors.append(f"point {i}: {key}={value!r} has the wrong type")
            elif isinstance(value, (int, float)) and (not math.isfinite(value) or value < 0):
                errors.append(f"point {i}: {key}={value!r} is not a finite non-negative number")
        if p["impl"] not in IMPLS:
            errors.append(f"point {i}: unknown impl {p['impl']!r}")
        if p["task"] not in TASKS:
            errors.append(f"point {i}: unknown task {p['task']!r}")
        if p["workload"] not in WORKLOADS:
            errors.append(f"point {i}: unknown workload {p['workload']!r}")
        if p["task_count"] <= 0 or p["never_run"] > p["task_count"]:
            errors.append(f"point {i}: task_count {p['task_count']} and never_run "
                          f"{p['never_run']} do not fit")
        if p["tasks"] > 0 and p["seconds"] > 0:
            expected = 1e9 * p["threads"] * p["seconds"] / p["tasks"]
            if abs(p["ns_per_task"] - expected) > 0.01 * expected:
                errors.append(f"point {i}: ns_per_task {p['ns_per_task']} is not threads x "
                              f"seconds / tasks = {expected:.6g} ns")
        seen.setdefault((p["impl"], p["workload"], p["task"], p["threads"]), []).append(p)
    for impl in IMPLS:
        for workload in expect_workloads:
            for task in expect_tasks:
                for threads in expect_threads:
                    name = f"{impl}/{workload}/{task}/{threads} threads"
                    found = seen.get((impl, workload, task, threads), [])
                    counts = sorted(p["task_count"] for p in found)
                    if not found:
                        errors.append(f"missing point {name}")
                    elif expect_task_counts and counts != sorted(expect_task_counts):
                        errors.append(f"{name}: task counts {counts}, expected "
                                      f"{sorted(expect_task_counts)}")
                    for p in found:
                        if p["tasks"] <= 0 or p["tasks_per_sec"] <= 0 or p["seconds"] <= 0:
                            errors.append(f"{name}/{p['task_count']} tasks executed nothing: {p}")
    return errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True, help="where the benchmark writes its JSON")
    parser.add_argument("--expect-threads", default="1", help="thread counts that must appear")
    parser.add_argument("--expect-tasks", default=",".join(TASKS),
                        help="task sizes that must appear")
    parser.add_argument("--expect-workloads", default="self", help="workloads that must appear")
    parser.add_argument("--expect-task-counts", default="",
                        help="task counts (--tasks) that every point group must have; any if empty")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- benchmark command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no benchmark command given after --")
    expect_threads = [int(t) for t in args.expect_threads.split(",")]
    expect_tasks = args.expect_tasks.split(",")
    expect_workloads = args.expect_workloads.split(",")
    expect_task_counts = [int(n) for n in args.expect_task_counts.split(",") if n]

    run = subprocess.run(command + ["--json", args.json], check=False)
    if run.returncode != 0:
        print(f"benchmark exited with {run.returncode}", file=sys.stderr)
        return 1
    try:
        with open(args.json, encoding="utf-8") as f:
            points = json.load(f, parse_constant=reject_constant)
    except (OSError, ValueError) as e:
        print(f"{args.json}: not well-formed JSON: {e}", file=sys.stderr)
        return 1
    errors = check(points, expect_tasks, expect_threads, expect_workloads, expect_task_counts)
    for e in errors:
        print(f"{args.json}: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"{args.json}: {len(points)} points, every implementation ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
