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
