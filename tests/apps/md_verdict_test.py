#!/usr/bin/env python3
"""scripts/md-verdict on crafted summaries: an exact match is a yes; packets short by no more
than the counted kernel drops are a yes only with --allow-kernel-drops and only when every other
count matches; beyond the drops, or with a gap, it stays a no. With --partial-line snapshot the
snapshot line's packets leave the count (a loop heard only while recovering), but hearing more
of them than were sent is a no.

    md_verdict_test.py PATH/TO/md-verdict
"""
import json
import os
import subprocess
import sys
import tempfile


def feed_report():
    return {"protocol": "mdp3", "packets": 100, "messages": 250, "duplicated_packets": 0,
            "heartbeats": 0, "end_of_session_packets": 0, "dropped_packets": 0,
            "dropped_sequences": 0, "dropped_messages": 0, "side_packets": 40,
            "snapshot_packets": 30, "definition_packets": 10}


def summary(packets, gaps=0, kernel_drops=0, snapshot_heard=30):
    return {"schema": 2, "feeds": [{"name": "f", "packets": packets, "messages": 250, "gaps": gaps,
                                    "missing": gaps, "recovered": 0, "kernel_drops": kernel_drops,
                                    "book_state": "complete",
                                    "lines": {"snapshot": {"packets": snapshot_heard}}}]}


def verdict(script, workdir, the_summary, *flags):
    s, r = os.path.join(workdir, "s.json"), os.path.join(workdir, "r.json")
    with open(s, "w") as f:
        json.dump(the_summary, f)
    with open(r, "w") as f:
        json.dump(feed_report(), f)
    result = subprocess.run([sys.executable, script, s, r, "--lines", "2", *flags],
                            capture_output=True, text=True, timeout=30)
    return result.returncode, result.stdout.strip().splitlines()[-1]


def main():
    script = sys.argv[1]
    expected = 2 * 100 + 40
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        cases = [
            ("exact", summary(expected), (), 0),
            ("short, no flag", summary(expected - 3, kernel_drops=5), (), 1),
            ("short within drops", summary(expected - 3, kernel_drops=5),
             ("--allow-kernel-drops",), 0),
            ("short beyond drops", summary(expected - 6, kernel_drops=5),
             ("--allow-kernel-drops",), 1),
            ("short and a gap", summary(expected - 3, gaps=1, kernel_drops=5),
             ("--allow-kernel-drops",), 1),
            ("snapshot heard in part", summary(expected - 30 + 7, snapshot_heard=7),
             ("--partial-line", "snapshot"), 0),
            ("snapshot heard in part, no flag", summary(expected - 30 + 7, snapshot_heard=7), (), 1),
            ("snapshot heard in part, a packet short",
             summary(expected - 30 + 6, snapshot_heard=7), ("--partial-line", "snapshot"), 1),
            ("snapshot heard more than sent", summary(expected + 1, snapshot_heard=31),
             ("--partial-line", "snapshot"), 1),
        ]
        for name, the_summary, flags, want in cases:
            code, line = verdict(script, workdir, the_summary, *flags)
            if code != want:
                failures.append(f"{name}: exit {code} (want {want}): {line}")
            elif want == 0 and "short" in name and "counted as kernel drops" not in line:
                failures.append(f"{name}: the line does not say the drops: {line}")
    for f in failures:
        print(f, file=sys.stderr)
    print("md-verdict: " + ("FAILED" if failures else f"{len(cases)} cases passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
