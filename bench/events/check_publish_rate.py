#!/usr/bin/env python3
"""Runs signet_publish_rate (the command after --) writing --json, then checks every point:
each publisher and feed count present, packets received and events produced in the window, a
CPU time per packet, latency samples with p50 <= p99. Exit 0 when all hold."""
import argparse
import json
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--publishers", required=True, help="the publishers expected")
    parser.add_argument("--feeds", required=True, help="the feed counts expected")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    result = subprocess.run([*command, "--json", args.json], timeout=110)
    if result.returncode != 0:
        print(f"exit {result.returncode}", file=sys.stderr)
        return 1
    with open(args.json) as f:
        points = json.load(f)["points"]
    seen = {(p["publisher"], p["feeds"]) for p in points}
    want = {(name, int(n)) for name in args.publishers.split(",") for n in args.feeds.split(",")}
    if seen != want:
        print(f"points for {sorted(seen)}, expected {sorted(want)}", file=sys.stderr)
        return 1
    for p in points:
        what = f"{p['publisher']} with {p['feeds']} feeds"
        if p["packets_received"] == 0 or p["events_per_s"] <= 0 or p["cpu_ns_per_packet"] <= 0:
            print(f"{what}: {p}", file=sys.stderr)
            return 1
        h = p["send_to_handler_ns"]
        if h["count"] == 0 or not 0 < h["p50"] <= h["p99"]:
            print(f"{what}: send_to_handler_ns {h}", file=sys.stderr)
            return 1
    print(f"{len(points)} points checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
