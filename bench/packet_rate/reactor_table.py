#!/usr/bin/env python3
"""The reactor comparison table (docs/benchmarks.md): medians over interleaved
rounds of signet_packet_rate's JSON, as Markdown.

  bench/packet_rate/reactor_table.py ROUND_JSON... [--json OUT.json] [--markdown OUT.md]

Each ROUND_JSON is one round of the paced, latency and drain commands bench/run-packet-rate
--reactor runs (their points concatenated); a point's value is the median over the rounds.
"""
import statistics

import round_tables


def key(p):
    return (p["design"], p["backend"], p["mode"], p["feeds"], p["workers"], p["payload"])


def medians(rounds):
    values = {}
    for points in rounds:
        for p in points:
            values.setdefault(key(p), []).append(p)
    out = {}
    for k, ps in values.items():
        out[k] = {f: statistics.median(p[f] for p in ps)
                  for f in ("pps", "cpu_ns_per_packet", "p50_ns", "p99_ns", "loss_pct",
                            "switches_per_packet")}
        out[k]["rounds"] = len(ps)
    return out


def get(m, design, backend, mode, field, feeds=1):
    p = m.get((design, backend, mode, feeds, 1, 64))
    return None if p is None else p[field]


def fmt(v, scale=1.0, digits=0):
    return "" if v is None else f"{v / scale:.{digits}f}"


def ratio(a, b):
    return "" if a is None or not b else f"{a / b:.2f}x"


def table(m):
    rows = ["| point | signet (io_uring) | signet_poller (io_uring) | queue | raw io_uring | "
            "raw recvmmsg | signet / better raw |", "|---|---:|---:|---:|---:|---:|---:|"]
    designs = [("signet", "io_uring"), ("signet_poller", "io_uring"), ("queue", "recvmmsg"),
               ("raw", "io_uring"), ("raw", "recvmmsg")]

    def lower_is_better(mode, field, scale, digits, label, backend_suffix=""):
        vals = [get(m, d, b + backend_suffix, mode, field) for d, b in designs]
        raws = [v for v in vals[3:] if v is not None]
        best = min(raws) if raws else None
        queue = vals[2]
        note = ratio(vals[0], best) + (f" ({ratio(vals[0], queue)} queue)" if queue else "")
        rows.append(f"| {label} | " + " | ".join(fmt(v, scale, digits) for v in vals) +
                    f" | {note} |")

    def higher_is_better(mode, field, scale, digits, label, feeds):
        vals = [get(m, d, b, mode, field, feeds) for d, b in designs]
        raws = [v for v in vals[3:] if v is not None]
        best = max(raws) if raws else None
        queue = vals[2]
        note = ratio(vals[0], best) + (f" ({ratio(vals[0], queue)} queue)" if queue else "")
        rows.append(f"| {label} | " + " | ".join(fmt(v, scale, digits) for v in vals) +
                    f" | {note} |")

    lower_is_better("paced", "cpu_ns_per_packet", 1, 0, "paced 100k/s, CPU ns/packet")
    lower_is_better("paced", "switches_per_packet", 1, 3, "paced 100k/s, context switches/packet")
    for idle in ("spin", "block"):
        for field in ("p50_ns", "p99_ns"):
            lower_is_better("latency", field, 1000, 1,
                            f"latency 50k/s {idle}, {field[:-3]} µs", "+" + idle)
    higher_is_better("drain", "pps", 1e6, 2, "drain 1 feed, M packets/s", 1)
    higher_is_better("drain", "pps", 1e6, 2, "drain 16 feeds, M packets/s", 16)
    return "\n".join(rows) + "\n"


def main():
    round_tables.run(("design", "backend", "mode", "feeds", "workers", "payload"), medians, table, "bench/run-packet-rate --reactor")


if __name__ == "__main__":
    main()
