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
import round_tables

FIELDS = ("pps", "cpu_ns_per_packet", "stage_samples")


def key(p):
    return (p["design"], p["backend"], p["mode"], p["feeds"], p["workers"], p["payload"],
            p["stages"])


def medians(rounds):
    """Per point and variant: the median of each field, and the median over rounds of the
    round's own difference from "off" (paired: a round's variants ran back to back)."""
    def off_of(k):
        return k[:6] + ("off",) if k[6] != "off" else None

    def deltas(p, off):
        return {"delta_cpu_ns_per_packet": p["cpu_ns_per_packet"] - off["cpu_ns_per_packet"],
                "delta_wall_ns_per_packet": 1e9 / p["pps"] - 1e9 / off["pps"]}

    return round_tables.paired_medians(rounds, key, FIELDS, off_of, deltas)


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
