#!/usr/bin/env python3
"""Fairness under a flood (docs/benchmarks.md): medians over interleaved rounds of
signet_packet_rate --mode quiet,flood, as Markdown.

  bench/packet_rate/fairness_table.py ROUND_JSON... [--json OUT.json] [--markdown OUT.md]

Each ROUND_JSON is one round of the commands bench/run-packet-rate --fairness runs. In both
modes feeds 1..N-1 are paced and their send-to-parse latency is recorded; in "flood" a second
sender floods feed 0 as fast as it can. The p99 ratio is flood over quiet, taken within each
round (the pair ran back to back) and then the median over rounds; the target is <= 2x.
"""
import round_tables

FIELDS = ("pps", "p50_ns", "p99_ns", "loss_pct", "cpu_ns_per_packet", "flood_pps",
          "flood_sent_pps")
TARGET = 2.0


def key(p):
    return (p["design"], p["backend"], p["mode"], p["feeds"], p["workers"], p["rate"])


def medians(rounds):
    """Per point: the median of each field; per flood point also the median over rounds of the
    round's own p99 and p50 ratios to its quiet point."""
    def quiet_of(k):
        return k[:2] + ("quiet",) + k[3:] if k[2] == "flood" else None

    def ratios(flood, quiet):
        if not quiet["p99_ns"] or not quiet["p50_ns"]:
            return None
        return {"p99_ratio": flood["p99_ns"] / quiet["p99_ns"],
                "p50_ratio": flood["p50_ns"] / quiet["p50_ns"]}

    return round_tables.paired_medians(rounds, key, FIELDS, quiet_of, ratios)


def table(m):
    rows = ["| design | backend | paced feeds, packets/s | quiet p50 / p99 µs | "
            "flood p50 / p99 µs | p50 ratio | p99 ratio (target <= 2x) | flood sent / parsed "
            "per s | paced loss % |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for k in sorted(k for k in m if k[2] == "flood"):
        design, backend, _, feeds, workers, rate = k
        flood = m[k]
        quiet = m.get(k[:2] + ("quiet",) + k[3:])
        if quiet is None:
            continue
        verdict = "" if "p99_ratio" not in flood else \
            (" (met)" if flood["p99_ratio"] <= TARGET else " (missed)")
        rows.append(
            f"| {design} | {backend} | {feeds - 1} of {feeds}, {rate:.0f} | "
            f"{quiet['p50_ns'] / 1e3:.1f} / {quiet['p99_ns'] / 1e3:.1f} | "
            f"{flood['p50_ns'] / 1e3:.1f} / {flood['p99_ns'] / 1e3:.1f} | "
            f"{flood.get('p50_ratio', 0):.2f}x | {flood.get('p99_ratio', 0):.2f}x{verdict} | "
            f"{flood['flood_sent_pps']:.0f} / {flood['flood_pps']:.0f} | "
            f"{flood['loss_pct']:.3f} |")
    return "\n".join(rows) + "\n"


def main():
    round_tables.run(("design", "backend", "mode", "feeds", "workers", "rate"), medians, table,
                     "bench/run-packet-rate --fairness")


if __name__ == "__main__":
    main()
