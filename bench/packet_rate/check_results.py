#!/usr/bin/env python3
"""Smoke test for signet_packet_rate (standard library only).

Runs the benchmark command given after `--` with `--json FILE` appended (the command should pass
--verify, so the benchmark itself fails when a feed did not parse exactly what was sent), then
checks that FILE is a JSON array of points with exactly the documented fields and types, that
every design ran in every mode of the run (unless --partial), that every point moved packets,
that no point lost any, and that points with --stages on timed their parses.

  check_results.py --json out.json -- signet_packet_rate --mode paced --rate 5000 --verify

With --needs-veth (a --path veth command) it exits 77, ctest's "skipped", with the reason when
this is not root or iproute2 is missing.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

DESIGNS = ["signet", "signet_poller", "queue", "asio", "raw"]
MODES = ["paced", "drain", "latency", "memory"]
NUMBER = (int, float)
FIELDS = {"design": str, "backend": str, "feeds": int, "workers": int, "rate": NUMBER,
          "payload": int, "mode": str, "pps": NUMBER, "loss_pct": NUMBER,
          "cpu_ns_per_packet": NUMBER, "p50_ns": int, "p99_ns": int, "p999_ns": int,
          "feed_cv": NUMBER, "switches_per_packet": NUMBER, "steal_ms": NUMBER, "stages": str,
          "stage_samples": int,
          "path": str}
STAGES = ["off", "on", "system"]
PATHS = ["loopback", "veth"]
# signet runs each of its backends; raw both of its loops.
BACKENDS = {"signet": {"io_uring", "epoll", "asio"}, "signet_poller": {"io_uring", "epoll", "asio"},
            "raw": {"io_uring", "recvmmsg"}}


def reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def check(points, partial=False):
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
        bad = False
        for key, kind in FIELDS.items():
            value = p[key]
            if isinstance(value, bool) or not isinstance(value, kind):
                errors.append(f"point {i}: {key}={value!r} has the wrong type")
                bad = True
            elif isinstance(value, NUMBER) and (not math.isfinite(value) or value < 0):
                errors.append(f"point {i}: {key}={value!r} is not a finite non-negative number")
                bad = True
        if bad:
            continue
        if p["design"] not in DESIGNS:
            errors.append(f"point {i}: unknown design {p['design']!r}")
        if p["mode"] not in MODES:
            errors.append(f"point {i}: unknown mode {p['mode']!r}")
        if p["pps"] <= 0:
            errors.append(f"point {i} ({p['design']}/{p['backend']}/{p['mode']}): pps is 0")
        if p["loss_pct"] != 0:
            errors.append(f"point {i} ({p['design']}/{p['backend']}/{p['mode']}): "
                          f"loss {p['loss_pct']}%")
        if p["path"] not in PATHS:
            errors.append(f"point {i}: unknown path {p['path']!r}")
        if p["stages"] not in STAGES:
            errors.append(f"point {i}: unknown stages {p['stages']!r}")
        elif (p["stages"] != "off") != (p["stage_samples"] > 0):
            errors.append(f"point {i}: stages {p['stages']} with {p['stage_samples']} timed "
                          "parses")
        if p["mode"] == "latency" and p["p50_ns"] <= 0:
            errors.append(f"point {i}: latency point without percentiles")
        seen.setdefault((p["design"], p["mode"]), set()).add(p["backend"].split("+")[0])
    modes = {m for (_, m) in seen} if not partial else set()
    for mode in modes:
        for design in DESIGNS:
            backends = seen.get((design, mode))
            if backends is None:
                errors.append(f"design {design} did not run in mode {mode}")
            elif mode != "memory" and design in BACKENDS and backends != BACKENDS[design]:
                errors.append(f"design {design} ran backends {sorted(backends)} in mode {mode}, "
                              f"expected {sorted(BACKENDS[design])}")
    return errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True, help="where the benchmark writes its JSON")
    parser.add_argument("--partial", action="store_true",
                        help="the command runs some designs and backends only: check the points "
                             "it wrote, not that every design and backend ran")
    parser.add_argument("--needs-veth", action="store_true",
                        help="the command runs --path veth: exit 77 (skipped) with the reason "
                             "when this is not root or iproute2 is missing")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- benchmark command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no benchmark command given after --")

    if args.needs_veth:
        if os.geteuid() != 0:
            print("SKIP: --path veth makes network namespaces: needs root")
            return 77
        if shutil.which("ip") is None:
            print("SKIP: --path veth needs iproute2 ('ip')")
            return 77

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
    errors = check(points, args.partial)
    for e in errors:
        print(f"{args.json}: {e}", file=sys.stderr)
    if errors:
        return 1
    ran = "the given designs ran" if args.partial else "every design ran"
    print(f"{args.json}: {len(points)} points, {ran}, no loss, parsed == sent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
