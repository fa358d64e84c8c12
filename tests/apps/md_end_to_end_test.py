#!/usr/bin/env python3
"""End-to-end tests of md_feed -> md_receiver on loopback (standard library only).

Each case starts md_receiver with a generated config on free ports, runs md_feed against it,
stops the receiver with SIGINT and compares the receiver's --summary-json with the report
md_feed prints. Prints 'N passed, N failed' and exits non-zero on any failure.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    def __init__(self, binary, config_text, workdir, backend="auto"):
        self.config = os.path.join(workdir, "receiver.toml")
        self.summary = os.path.join(workdir, "summary.json")
        with open(self.config, "w") as f:
            f.write(config_text.replace("@BACKEND@", backend))
        self.process = subprocess.Popen(
            [binary, "--config", self.config, "--summary-json", self.summary, "--log-level", "info"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.reader.start()
        time.sleep(0.5)
        if self.process.poll() is not None:
            self.reader.join(timeout=5)
            raise AssertionError(f"md_receiver exited early ({self.process.returncode}): "
                                 + "".join(self.lines))

    def _read_stderr(self):
        for line in self.process.stderr:
            self.lines.append(line)

    def wait_idle(self, timeout=60):
        """Waits for two stats lines in a row with 0 packets/s: the sockets are drained."""
        start = len(self.lines)
        deadline = time.time() + timeout
        while time.time() < deadline:
            stats = [l for l in self.lines[start:] if "stats:" in l]
            if len(stats) >= 2 and all(" 0 packets/s" in l for l in stats[-2:]):
                return
            time.sleep(0.05)
        raise AssertionError("md_receiver did not go idle: " + "".join(self.lines[-5:]))

    def stop(self):
        self.wait_idle()  # everything sent has been read from the kernel
        self.process.send_signal(signal.SIGINT)
        out, _ = self.process.communicate(timeout=60)
        self.reader.join(timeout=5)
        if self.process.returncode != 0:
            raise AssertionError(f"md_receiver exit {self.process.returncode}: " + "".join(self.lines))
        with open(self.summary) as f:
            return json.load(f), out


def run_feed(binary, *args):
    result = subprocess.run([binary, *args], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"md_feed exit {result.returncode}: {result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def expect_equal(what, got, want):
    if got != want:
        raise AssertionError(f"{what}: receiver has {got}, expected {want}")


def single_feed_config(port, extra=""):
    return f"""
[runtime]
backend = "@BACKEND@"
workers = 2
[stats]
interval_s = 0.2
[[feed]]
name = "e2e"
bind = "127.0.0.1:{port}"
{extra}
"""


def case_faults_are_counted_exactly(args, workdir, backend):
    port = free_port()
    receiver = Receiver(args.receiver, single_feed_config(port), workdir, backend)
    sent = run_feed(args.feed, "--to", f"127.0.0.1:{port}", "--count", "20000", "--rate", "200000",
                    "--batch", "8", "--symbols", "8", "--seed", "7", "--drop-every", "97",
                    "--dup-every", "31", "--reorder-every", "53")
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    assert sent["dropped_packets"] > 0 and sent["duplicated_packets"] > 0
    assert sent["reordered_packets"] > 0
    expect_equal("messages", feed["messages"], sent["messages"])
    expect_equal("messages_by_type", feed["messages_by_type"], sent["messages_by_type"])
    expect_equal("gaps", feed["gaps"], sent["dropped_packets"])
    expect_equal("missing_messages", feed["missing_messages"], sent["dropped_messages"])
    expect_equal("duplicate_packets", feed["duplicate_packets"], sent["duplicated_packets"])
    expect_equal("next_sequence", feed["next_sequence"], sent["next_sequence"])
    expect_equal("end_of_session", feed["end_of_session"], True)
    expect_equal("malformed_packets", feed["malformed_packets"], 0)
    expect_equal("queue_drops", feed["queue_drops"], 0)
    assert len(feed["books"]) == 8, feed["books"].keys()
    for symbol, book in feed["books"].items():
        assert book["bid_price"] == 0 or book["ask_price"] == 0 or book["bid_price"] < book["ask_price"], (symbol, book)
    assert summary["latency_ns"]["p50"] > 0 and summary["latency_ns"]["max"] >= summary["latency_ns"]["p99"]


def case_ab_lines_fill_each_others_gaps(args, workdir, backend):
    port_a, port_b = free_port(), free_port()
    config = single_feed_config(port_a, f'bind_b = "127.0.0.1:{port_b}"')
    receiver = Receiver(args.receiver, config, workdir, backend)
    sent = run_feed(args.feed, "--to", f"127.0.0.1:{port_a}", "--to-b", f"127.0.0.1:{port_b}",
                    "--count", "20000", "--rate", "200000", "--batch", "8", "--drop-every", "10",
                    "--drop-line", "a")
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    assert sent["dropped_one_line_packets"] > 0 and sent["dropped_packets"] == 0
    expect_equal("gaps", feed["gaps"], 0)
    expect_equal("missing_messages", feed["missing_messages"], 0)
    expect_equal("messages", feed["messages"], sent["messages"])
    expect_equal("messages_by_type", feed["messages_by_type"], sent["messages_by_type"])
    # Every data packet arrived twice except those line A lost.
    expect_equal("duplicate_packets", feed["duplicate_packets"],
                 sent["packets"] - sent["dropped_one_line_packets"])


def case_malformed_datagrams_are_counted(args, workdir, backend):
    port = free_port()
    receiver = Receiver(args.receiver, single_feed_config(port), workdir, backend)
    garbage = [b"", b"short", b"X" * 19, b"SESSION001" + b"\x00" * 7 + b"\x01" + b"\x00\x05" + b"\x00\x09abc"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for g in garbage:
            s.sendto(g, ("127.0.0.1", port))
    time.sleep(0.2)
    sent = run_feed(args.feed, "--to", f"127.0.0.1:{port}", "--count", "5000", "--rate", "100000",
                    "--session", "SESSION001")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for g in garbage:
            s.sendto(g, ("127.0.0.1", port))
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    expect_equal("malformed_packets", feed["malformed_packets"], 2 * len(garbage))
    expect_equal("messages", feed["messages"], sent["messages"])
    expect_equal("gaps", feed["gaps"], 0)


def itch_messages():
    """A stock directory (R, 39 bytes) for locate 1 and two adds (A, 36 bytes) on it."""
    header = lambda t, ts: t + (1).to_bytes(2, "big") + (0).to_bytes(2, "big") + ts.to_bytes(6, "big")
    r = header(b"R", 1) + b"TEST    " + bytes(39 - 19)
    a1 = header(b"A", 2) + (11).to_bytes(8, "big") + b"B" + (100).to_bytes(4, "big") + b"TEST    " + (1234500).to_bytes(4, "big")
    a2 = header(b"A", 3) + (12).to_bytes(8, "big") + b"S" + (300).to_bytes(4, "big") + b"TEST    " + (1240000).to_bytes(4, "big")
    assert len(r) == 39 and len(a1) == 36 and len(a2) == 36
    return [r, a1, a2]


def case_replay_binary_file(args, workdir, backend):
    path = os.path.join(workdir, "sample.itch")
    with open(path, "wb") as f:
        for m in itch_messages():
            f.write(len(m).to_bytes(2, "big") + m)
    port = free_port()
    receiver = Receiver(args.receiver, single_feed_config(port), workdir, backend)
    sent = run_feed(args.feed, "--to", f"127.0.0.1:{port}", "--replay", path, "--rate", "0")
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    expect_equal("messages", feed["messages"], 3)
    expect_equal("messages_by_type", feed["messages_by_type"], {"R": 1, "A": 2})
    expect_equal("sent messages", sent["messages"], 3)
    expect_equal("books", feed["books"], {"TEST": {"bid_price": 1234500, "bid_shares": 100,
                                                   "ask_price": 1240000, "ask_shares": 300,
                                                   "orders": 2}})


BAD_CONFIGS = [
    ("unknown key", '[runtime]\nworkerz = 2\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "workerz", ":2:"),
    ("bad enum", '[runtime]\nbackend = "kqueue"\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "backend", ":2:"),
    ("bad bind", '[[feed]]\nname = "a"\nbind = "localhost"\n', "bind", ":3:"),
    ("no feed", '[runtime]\nworkers = 1\n', "feed", ""),
    ("bad workers", '[runtime]\nworkers = 0\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "workers", ":2:"),
    ("not multicast", '[[feed]]\nname = "a"\nbind = "*:1"\ngroup = "10.0.0.1"\n', "group", ":4:"),
    ("syntax", '[[feed]\nname = "a"\n', "TOML syntax", ":1:"),
]


def case_bad_config_exits_2_naming_the_key(args, workdir, backend):
    for name, text, key, line in BAD_CONFIGS:
        path = os.path.join(workdir, "bad.toml")
        with open(path, "w") as f:
            f.write(text)
        result = subprocess.run([args.receiver, "--config", path], capture_output=True, text=True,
                                timeout=30)
        if result.returncode != 2:
            raise AssertionError(f"{name}: exit {result.returncode}, expected 2 ({result.stderr})")
        if key not in result.stderr or line not in result.stderr:
            raise AssertionError(f"{name}: error does not name '{key}' at '{line}': {result.stderr}")
    result = subprocess.run([args.receiver, "--config", os.path.join(workdir, "missing.toml")],
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 2 or "missing.toml" not in result.stderr:
        raise AssertionError(f"missing file: exit {result.returncode}: {result.stderr}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--receiver", required=True)
    parser.add_argument("--feed", required=True)
    parser.add_argument("--backends", default="auto,epoll,asio")
    args = parser.parse_args()
    cases = [case_faults_are_counted_exactly, case_ab_lines_fill_each_others_gaps,
             case_malformed_datagrams_are_counted]
    runs = [(case, backend) for backend in args.backends.split(",") for case in cases]
    runs.append((case_bad_config_exits_2_naming_the_key, "auto"))
    runs.append((case_replay_binary_file, "auto"))
    passed = failed = 0
    for case, backend in runs:
        label = f"{case.__name__}[{backend}]"
        with tempfile.TemporaryDirectory() as workdir:
            try:
                case(args, workdir, backend)
                print(f"[  PASSED  ] {label}", flush=True)
                passed += 1
            except Exception:
                print(f"[  FAILED  ] {label}", flush=True)
                traceback.print_exc()
                failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
