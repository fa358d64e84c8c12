#!/usr/bin/env python3
"""Runs signet_event_latency (the command after --) writing --json, then checks every point:
each design present, the receiver took every packet sent, latency samples recorded with
p50 <= p99 <= p99.9; on the memory path the queued design's latency from the event's making
too, every stamped message found, and no longer than from the packet's stamp (the making
comes after the stamp). Exit 0 when all hold, 77 when the program could not make its path."""
import argparse
import json
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--designs", default="raw,inline,queued", help="the designs expected")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    result = subprocess.run([*command, "--json", args.json], timeout=110)
    if result.returncode == 77:
        print("skipped: the run's path cannot be made here")
        return 77
    if result.returncode != 0:
        print(f"exit {result.returncode}", file=sys.stderr)
        return 1
    with open(args.json) as f:
        points = json.load(f)["points"]
    designs = {p["design"] for p in points}
    if designs != set(args.designs.split(",")):
        print(f"designs {sorted(designs)}", file=sys.stderr)
        return 1
    for p in points:
        what = f"{p['design']} at {p['messages_per_s']}"
        if p["packets_received"] != p["packets_sent"] or p["packets_sent"] == 0:
            print(f"{what}: received {p['packets_received']} of {p['packets_sent']}",
                  file=sys.stderr)
            return 1
        if p.get("reader_lost", 0) != 0:
            print(f"{what}: the reader in the other process lost {p['reader_lost']}",
                  file=sys.stderr)
            return 1
        for key in ("send_to_handler_ns", "kernel_to_handler_ns"):
            if key == "kernel_to_handler_ns" and p["design"] == "raw" and p["path"] == "memory":
                continue  # one cache line between two threads: no receive stamp
            h = p[key]
            if h["count"] == 0 or not 0 < h["p50"] <= h["p99"] <= h["p999"]:
                print(f"{what}: {key} {h}", file=sys.stderr)
                return 1
        made = p.get("made_to_handler_ns")
        made_expected = p["design"] == "queued" and p["path"] == "memory"
        if (made is not None) != made_expected:
            print(f"{what}: made_to_handler_ns {'missing' if made is None else 'unexpected'}",
                  file=sys.stderr)
            return 1
        if made is not None:
            send = p["send_to_handler_ns"]
            # Each sample's making follows its stamp, so each percentile is no larger (the
            # same histogram buckets: equal is possible).
            if (p["made_unmatched"] != 0 or made["count"] != send["count"] or
                    not 0 < made["p50"] <= made["p99"] <= made["p999"] or
                    any(made[q] > send[q] for q in ("p50", "p99", "p999"))):
                print(f"{what}: made_to_handler_ns {made} ({p['made_unmatched']} unmatched), "
                      f"send_to_handler_ns {send}", file=sys.stderr)
                return 1
    print(f"{len(points)} points checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
