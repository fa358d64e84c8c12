#!/usr/bin/env python3
"""The reactor comparison table (docs/benchmarks.md): medians over interleaved
rounds of signet_packet_rate's JSON, as Markdown.

  bench/packet_rate/reactor_table.py ROUND_JSON... [--json OUT.json] [--markdown OUT.md]

Each ROUND_JSON is one round of the paced, latency and drain commands bench/run-packet-rate
--reactor runs (their points concatenated); a point's value is the median over the rounds.
"""
import round_tables


def key(p):
    return (p["design"], p["backend"], p["mode"], p["feeds"], p["workers"], p["payload"])


# Each signet reactor's raw loop of the same kernel interface: io_uring against the raw
# io_uring loop, epoll (readiness, then recvmmsg) against the raw recvmmsg loop.
RAW_OF = {"io_uring": "io_uring", "epoll": "recvmmsg"}


def raw_of(k):
    design, backend, mode, *rest = k
    family, _, idle = backend.partition("+")
    if design != "signet" or mode != "latency" or family not in RAW_OF:
        return None
    return ("raw", RAW_OF[family] + ("+" + idle if idle else ""), mode, *rest)


def vs_raw(p, raw):
    """Within one round: the reactor's p50 and p99 over its raw loop's."""
    if not raw["p50_ns"] or not raw["p99_ns"]:
        return None
    return {"p50_vs_raw": p["p50_ns"] / raw["p50_ns"], "p99_vs_raw": p["p99_ns"] / raw["p99_ns"]}


def medians(rounds):
    return round_tables.paired_medians(rounds, key, round_tables.FIELDS, raw_of, vs_raw)


def get(m, design, backend, mode, field, feeds=1):
    p = m.get((design, backend, mode, feeds, 1, 64))
    return None if p is None else p[field]


fmt = round_tables.fmt
ratio = round_tables.ratio


def table(m):
    rows = ["| point | signet (io_uring) | signet (epoll) | signet_poller (io_uring) | queue | "
            "raw io_uring | raw recvmmsg | better signet / better raw |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    designs = [("signet", "io_uring"), ("signet", "epoll"), ("signet_poller", "io_uring"),
               ("queue", "recvmmsg"), ("raw", "io_uring"), ("raw", "recvmmsg")]

    def present(values):
        return [v for v in values if v is not None]

    def note(vals, pick):
        signets = present(vals[:2])
        raws = present(vals[4:])
        mine = pick(signets) if signets else None
        queue = vals[3]
        return ratio(mine, pick(raws) if raws else None) + (
            f" ({ratio(mine, queue)} queue)" if queue else "")

    def lower_is_better(mode, field, scale, digits, label, backend_suffix=""):
        vals = [get(m, d, b + backend_suffix, mode, field) for d, b in designs]
        rows.append(f"| {label} | " + " | ".join(fmt(v, scale, digits) for v in vals) +
                    f" | {note(vals, min)} |")

    def higher_is_better(mode, field, scale, digits, label, feeds):
        vals = [get(m, d, b, mode, field, feeds) for d, b in designs]
        rows.append(f"| {label} | " + " | ".join(fmt(v, scale, digits) for v in vals) +
                    f" | {note(vals, max)} |")

    lower_is_better("paced", "cpu_ns_per_packet", 1, 0, "paced 100k/s, CPU ns/packet")
    lower_is_better("paced", "switches_per_packet", 1, 3, "paced 100k/s, context switches/packet")
    for idle in ("spin", "block"):
        for field in ("p50_ns", "p99_ns"):
            lower_is_better("latency", field, 1000, 1,
                            f"latency 50k/s {idle}, {field[:-3]} µs", "+" + idle)
    higher_is_better("drain", "pps", 1e6, 2, "drain 1 feed, M packets/s", 1)
    higher_is_better("drain", "pps", 1e6, 2, "drain 16 feeds, M packets/s", 16)
    if not any("p99_vs_raw" in p for p in m.values()):
        return "\n".join(rows) + "\n"  # rounds recorded before the ratios were
    rows += ["", "Tail targets: each reactor's latency over its own raw loop's (io_uring over raw "
             "io_uring, epoll over raw recvmmsg), the ratio taken within each round, then the "
             "median over rounds.", "",
             "| idle | signet io_uring p50 / p99 over raw io_uring | signet epoll p50 / p99 over "
             "raw recvmmsg | p99 target |",
             "|---|---:|---:|---|"]
    for idle, target in (("spin", 1.5), ("block", 1.2)):
        cells = []
        verdicts = []
        for backend in ("io_uring", "epoll"):
            p = m.get(("signet", f"{backend}+{idle}", "latency", 1, 1, 64), {})
            if "p99_vs_raw" not in p:
                cells.append("")
                continue
            cells.append(f"{p['p50_vs_raw']:.2f}x / {p['p99_vs_raw']:.2f}x")
            verdicts.append(f"{backend} {'met' if p['p99_vs_raw'] <= target else 'missed'}")
        rows.append(f"| {idle} | " + " | ".join(cells) +
                    f" | <= {target}x: {', '.join(verdicts)} |")
    return "\n".join(rows) + "\n"


def main():
    round_tables.run(("design", "backend", "mode", "feeds", "workers", "payload"), medians, table, "bench/run-packet-rate --reactor")


if __name__ == "__main__":
    main()
