"""Shared by the table scripts of bench/run-packet-rate (reactor_table.py, stages_table.py): the
command line (round JSON files, --json, --markdown), reading the rounds, and writing the table
and the medians.
"""
import argparse
import json
import statistics
import sys

FIELDS = ("pps", "cpu_ns_per_packet", "p50_ns", "p99_ns", "loss_pct", "switches_per_packet")


def medians(rounds, key, fields=FIELDS):
    """Per point (key(p)), the median of each field over the rounds, and how many rounds."""
    values = {}
    for points in rounds:
        for p in points:
            values.setdefault(key(p), []).append(p)
    out = {}
    for k, ps in values.items():
        out[k] = {f: statistics.median(p[f] for p in ps) for f in fields}
        out[k]["rounds"] = len(ps)
    return out


def paired_medians(rounds, key, fields, baseline_of, compare):
    """medians(), plus per point the median over rounds of compare(point, baseline) — a dict of
    named values, or None — where baseline_of(key) names the point it is paired with in the same
    round (its variants ran back to back) or None."""
    values = {}
    pairs = {}
    for points in rounds:
        by_key = {key(p): p for p in points}
        for k, p in by_key.items():
            values.setdefault(k, []).append(p)
            base = by_key.get(baseline_of(k)) if baseline_of(k) is not None else None
            compared = compare(p, base) if base is not None else None
            if compared is not None:
                pairs.setdefault(k, []).append(compared)
    out = {}
    for k, ps in values.items():
        out[k] = {f: statistics.median(p.get(f, 0) for p in ps) for f in fields}
        out[k]["rounds"] = len(ps)
        for name in (pairs[k][0] if k in pairs else {}):
            out[k][name] = statistics.median(c[name] for c in pairs[k])
    return out


def fmt(v, scale=1.0, digits=0):
    return "" if v is None else f"{v / scale:.{digits}f}"


def ratio(a, b):
    return "" if a is None or not b else f"{a / b:.2f}x"


def run(key_names, medians, table, source):
    """Reads the rounds named on the command line, prints table(medians(rounds)) and writes it
    (--markdown, with a line naming `source`) and the medians (--json; keys named key_names)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", nargs="+")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    rounds = []
    for path in args.rounds:
        with open(path, encoding="utf-8") as f:
            rounds.append(json.load(f))
    m = medians(rounds)
    text = table(m)
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(f"Medians of {len(rounds)} interleaved rounds ({source}).\n\n" + text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([dict(zip(key_names, k), **v) for k, v in sorted(m.items())], f, indent=1)
            f.write("\n")
