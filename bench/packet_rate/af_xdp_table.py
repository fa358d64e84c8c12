#!/usr/bin/env python3
"""The af_xdp comparison table (docs/benchmarks.md): medians over interleaved rounds of
signet_packet_rate --path veth, as Markdown.

  bench/packet_rate/af_xdp_table.py ROUND_JSON... [--json OUT.json] [--markdown OUT.md]

Each ROUND_JSON is one round of the paced, latency and drain commands bench/run-packet-rate
--af-xdp runs over the veth pair (their points concatenated); a point's value is the median
over the rounds.
"""
import round_tables

KEYS = ("design", "backend", "mode", "feeds", "workers", "payload", "path")
DESIGNS = [("signet", "af_xdp"), ("signet_poller", "af_xdp"), ("signet", "io_uring"),
           ("signet", "epoll"), ("raw", "io_uring"), ("raw", "recvmmsg")]


def key(p):
    return tuple(p.get(k, "loopback") if k == "path" else p[k] for k in KEYS)


def medians(rounds):
    return round_tables.medians(rounds, key)


def get(m, design, backend, mode, field):
    p = m.get((design, backend, mode, 1, 1, 64, "veth"))
    return None if p is None else p[field]


fmt = round_tables.fmt
ratio = round_tables.ratio


def table(m):
    rows = ["| point (veth) | signet af_xdp | signet_poller af_xdp | signet io_uring | "
            "signet epoll | raw io_uring | raw recvmmsg | af_xdp / raw recvmmsg |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def row(label, mode, field, scale, digits, suffix=""):
        vals = [get(m, d, b + suffix, mode, field) for d, b in DESIGNS]
        rows.append(f"| {label} | " + " | ".join(fmt(v, scale, digits) for v in vals) +
                    f" | {ratio(vals[0], vals[5])} |")

    row("paced 100k/s, CPU ns/packet", "paced", "cpu_ns_per_packet", 1, 0)
    row("paced 100k/s, loss %", "paced", "loss_pct", 1, 3)
    for idle in ("spin", "block"):
        for field in ("p50_ns", "p99_ns"):
            row(f"latency 50k/s {idle}, {field[:-3]} µs", "latency", field, 1000, 1, "+" + idle)
    row("drain 1 feed, M packets/s", "drain", "pps", 1e6, 2)
    row("drain 1 feed, loss %", "drain", "loss_pct", 1, 3)
    return "\n".join(rows) + "\n"


def main():
    round_tables.run(KEYS, medians, table, "bench/run-packet-rate --af-xdp")


if __name__ == "__main__":
    main()
