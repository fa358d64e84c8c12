#!/usr/bin/env python3
"""What per-stage latency costs (docs/benchmarks.md): medians over interleaved rounds
of signet_packet_rate --stages off,on,system, as Markdown.

  bench/packet_rate/stages_table.py ROUND_JSON... [--json OUT.json] [--markdown OUT.md]

Each ROUND_JSON is one round of the commands bench/run-packet-rate --stages runs. "on" times the
parser with net::stage_latency on realtime_clock (the TSC here); "system" does the same with the
clock forced to clock_gettime(CLOCK_REALTIME). The cost is the difference from "off" in CPU
ns per packet (every thread of the pipeline) and in wall ns per packet (1 / packets/s), taken
within each round (the variants of a point run back to back) and then the median over rounds.
"""
import statistics

import round_tables

FIELDS = ("pps", "cpu_ns_per_packet", "stage_samples")


def key(p):
    return (p["design"], p["backend"], p["mode"], p["feeds"], p["workers"], p["payload"],
            p["stages"])


def medians(rounds):
    """Per point and variant: the median of each field, and the median over rounds of the
    round's own difference from "off" (paired: a round's variants ran back to back)."""
    values = {}
    deltas = {}
    for points in rounds:
        by_key = {key(p): p for p in points}
        for k, p in by_key.items():
            values.setdefault(k, []).append(p)
            off = by_key.get(k[:6] + ("off",))
            if off is not None and k[6] != "off":
                deltas.setdefault(k, []).append(
                    (p["cpu_ns_per_packet"] - off["cpu_ns_per_packet"],
                     1e9 / p["pps"] - 1e9 / off["pps"]))
    out = {}
    for k, ps in values.items():
        out[k] = {f: statistics.median(p[f] for p in ps) for f in FIELDS}
        out[k]["rounds"] = len(ps)
        if k in deltas:
            out[k]["delta_cpu_ns_per_packet"] = statistics.median(d[0] for d in deltas[k])
            out[k]["delta_wall_ns_per_packet"] = statistics.median(d[1] for d in deltas[k])
    return out


def table(m):
    rows = ["| point | stages | packets/s | CPU ns/packet | Δ CPU ns/packet | "
            "Δ wall ns/packet | stages timed | Δ wall ns per stage |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    points = sorted({k[:6] for k in m}, key=lambda k: (k[2] != "memory", k))
    for point in points:
        design, backend, mode, feeds, workers, payload = point
        # memory: queue and parse (no kernel stamp); sockets: receive, queue, parse, total.
        stages = 2 if mode == "memory" else 4
        label = f"{mode} {design}" + ("" if backend == "none" else f" {backend}") + \
            f", {feeds} feed, {workers} worker, {payload} B"
        for variant in ("off", "on", "system"):
            p = m.get(point + (variant,))
            if p is None:
                continue
            d_cpu = d_wall = per_stage = ""
            if "delta_cpu_ns_per_packet" in p:
                d_cpu = f"{p['delta_cpu_ns_per_packet']:+.1f}"
                d_wall = f"{p['delta_wall_ns_per_packet']:+.1f}"
                per_stage = f"{p['delta_wall_ns_per_packet'] / stages:+.1f}"
            timed = f"{stages}" if variant != "off" else "-"
            clock = {"off": "off", "on": "on (TSC)", "system": "on (clock_gettime)"}[variant]
            rows.append(f"| {label} | {clock} | {p['pps']:.0f} | {p['cpu_ns_per_packet']:.1f} | "
                        f"{d_cpu} | {d_wall} | {timed} | {per_stage} |")
    return "\n".join(rows) + "\n"


def main():
    round_tables.run(("design", "backend", "mode", "feeds", "workers", "payload", "stages"), medians, table, "bench/run-packet-rate --stages")


if __name__ == "__main__":
    main()
