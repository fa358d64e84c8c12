#!/usr/bin/env python3
"""End-to-end tests of md_feed -> md_receiver on loopback (standard library only).

Each case starts md_receiver with a generated config on free ports, runs md_feed against it,
stops the receiver with SIGINT and compares the receiver's --summary-json with the report
md_feed prints. Prints 'N passed, N failed' and exits non-zero on any failure.

The af_xdp backend's runs ("af_xdp", "af_xdp+thread") cross the veth pair of
tests/net/run-in-veth instead of loopback: the receivers bind this namespace's address on its
interface, md_feed and the cases' own datagrams come from the sending namespace.
"""
import argparse
import ctypes
import datetime
import errno
import fcntl
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "lib"))
from nats_server import NatsServer  # noqa: E402


class Network:
    """Where the cases' traffic goes: loopback, or the veth pair for the af_xdp backend."""
    host = "127.0.0.1"  # receivers bind here; md_feed and forged datagrams send here
    peer = "127.0.0.1"  # md_feed's re-request and snapshot servers are reached here
    interface = ""      # the receivers' feed interface (af_xdp)
    sender_ns = ""      # the namespace md_feed and forged datagrams come from (/run/netns/NAME)


NET = Network()


def use_network(backend):
    """Loopback, or (backend af_xdp) the veth pair run-in-veth describes in the environment."""
    if not backend.startswith("af_xdp"):
        NET.host, NET.peer, NET.interface, NET.sender_ns = "127.0.0.1", "127.0.0.1", "", ""
        return
    if not os.environ.get("SIGNET_VETH_INTERFACE"):
        raise AssertionError("the af_xdp runs need tests/net/run-in-veth (a veth pair)")
    NET.host = os.environ["SIGNET_VETH_ADDRESS"]
    NET.peer = os.environ["SIGNET_VETH_PEER_ADDRESS"]
    NET.interface = os.environ["SIGNET_VETH_INTERFACE"]
    NET.sender_ns = os.environ["SIGNET_VETH_SENDER_NETNS"]


def wire_drops():
    """Datagrams the veth pair of the af_xdp runs dropped so far, before any receiver saw them:
    the receiving end's rx_dropped and the sending end's tx_dropped (where veth counts a frame
    its peer's XDP ring had no room for). 0 on loopback."""
    if not NET.interface:
        return 0
    with open(f"/sys/class/net/{NET.interface}/statistics/rx_dropped") as f:
        total = int(f.read())
    result = subprocess.run(
        ["ip", "-n", os.path.basename(NET.sender_ns), "-j", "-s", "link", "show"],
        capture_output=True, text=True, timeout=10, check=True)
    for link in json.loads(result.stdout or "[]"):
        if link.get("ifname") != "lo":
            total += link.get("stats64", {}).get("tx", {}).get("dropped", 0)
    return total


def feed_command(binary, *args):
    """md_feed's command line, run in the sending namespace when there is one."""
    if NET.sender_ns:
        return ["ip", "netns", "exec", os.path.basename(NET.sender_ns), binary, *args]
    return [binary, *args]


def sender_socket(kind=socket.SOCK_DGRAM):
    """A socket (UDP unless told) in the sending namespace (this one on loopback)."""
    if not NET.sender_ns:
        return socket.socket(socket.AF_INET, kind)
    libc = ctypes.CDLL(None, use_errno=True)
    clone_newnet = 0x40000000
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(NET.sender_ns, os.O_RDONLY)
    try:
        if libc.setns(target, clone_newnet) != 0:
            raise OSError(ctypes.get_errno(), "setns into " + NET.sender_ns)
        return socket.socket(socket.AF_INET, kind)
    finally:
        libc.setns(home, clone_newnet)
        os.close(home)
        os.close(target)


# Ports come from a range of their own per part (set_port_range), below the kernel's ephemeral
# range (32768-60999 by default): a port probed free here is not offered to anything else — not
# to the other part's probes (ctest runs both side by side), not to a TCP client's local port.
PORTS = {"start": 20000, "next": 20000, "end": 23000}


def set_port_range(part):
    PORTS["start"] = 20000 + 3000 * (part - 1)  # below the ephemeral ports (32768) for 4 parts
    PORTS["next"] = PORTS["start"]
    PORTS["end"] = PORTS["start"] + 3000


def free_port():
    """A port free now for both UDP and TCP, not handed out in the last 3000 of this part: a
    case that asks for several before binding any must not get one twice. A part that runs most
    cases (the other part slow, or run alone) starts its range over."""
    for _ in range(PORTS["end"] - PORTS["start"]):
        if PORTS["next"] == PORTS["end"]:
            PORTS["next"] = PORTS["start"]
        port = PORTS["next"]
        PORTS["next"] += 1
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u, \
                    socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
                u.bind(("127.0.0.1", port))
                t.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue  # taken: the next one
    raise AssertionError("the part's port range is used up")


POLL_S = 0.02  # polling period while waiting on a condition (never a synchronization delay)


def wait_until(condition, timeout, what):
    """Polls condition() until it returns a true value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


STATS_LINE = re.compile(r"stats (\S+) \| last [0-9.]+ s: (\d+) pkts/s, (\d+) msgs/s, .* \| "
                        r"totals: (\d+) pkts, (\d+) msgs, (\d+) gaps, (\d+) missing, "
                        r"(\d+) dup pkts, (\d+) malformed pkts, (\d+) ignored pkts, "
                        r"(\d+) queue drops, "
                        r"(\d+) kernel drops")


# A backend spec is "NAME" or "NAME+MODE": the mode sets the runtime's poller and idle keys, so
# every case also runs with the reactor on one blocking worker and with the dedicated poller
# thread ("+spin1" exists for manual runs: a spinning worker on a loaded 2-CPU CI machine makes
# the timing cases slow; the runtime tests cover spin mode on every backend).
MODES = {
    "": None,
    "block1": 'workers = 1\nidle = "block"\npoller = "contract"',
    "spin1": 'workers = 1\nidle = "spin"\npoller = "contract"',
    "thread": 'workers = 2\npoller = "thread"',
}


def runtime_mode(config_text, backend):
    name, _, mode = backend.partition("+")
    text = config_text.replace("@BACKEND@", name)
    if MODES[mode] is not None:
        text = text.replace("workers = 2", MODES[mode], 1)
    return text


class Receiver:
    # Every Receiver a case started: run_case() kills what a failed case left running and
    # shows each one's warnings and errors.
    running = []

    def __init__(self, binary, config_text, workdir, backend="auto", extra_args=(), prefix=()):
        """`prefix`: a command md_receiver runs under (ip netns exec NAME)."""
        self.config = os.path.join(workdir, "receiver.toml")
        self.summary = os.path.join(workdir, "summary.json")
        with open(self.config, "w") as f:
            f.write(runtime_mode(config_text, backend))
        self.process = subprocess.Popen(
            [*prefix, binary, "--config", self.config, "--summary-json", self.summary,
             "--log-level", "info", *extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        Receiver.running.append(self)
        self.lines = []
        self.out = []
        self.reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.reader.start()
        self.out_reader = threading.Thread(target=self._read_stdout, daemon=True)
        self.out_reader.start()
        # Ready once it logs so (after the runtime started), or failed if it exits first.
        wait_until(lambda: self.process.poll() is not None or self.find("md_receiver: ready"),
                   30, "md_receiver's ready line")
        if self.process.poll() is not None:
            self.reader.join(timeout=5)
            self.out_reader.join(timeout=5)
            raise AssertionError(f"md_receiver exited early ({self.process.returncode}): "
                                 + "".join(self.lines))

    def _read_stderr(self):
        for line in self.process.stderr:
            self.lines.append(line)

    def _read_stdout(self):
        for line in self.process.stdout:
            self.out.append(line)

    def find(self, text, start=0):
        return [l for l in self.lines[start:] if text in l]

    def stats(self, start=0, feed=None):
        """Parsed stats lines: (feed, pkts/s, msgs/s, totals dict)."""
        out = []
        for line in self.lines[start:]:
            m = STATS_LINE.search(line)
            if m and (feed is None or m.group(1) == feed):
                keys = ["packets", "messages", "gaps", "missing", "duplicates", "malformed",
                        "ignored", "queue_drops", "kernel_drops"]
                out.append((m.group(1), int(m.group(2)), int(m.group(3)),
                            dict(zip(keys, map(int, m.groups()[3:])))))
        return out

    def wait_idle(self, timeout=60):
        """Waits for two stats lines in a row with 0 packets/s: the sockets are drained."""
        start = len(self.lines)

        def idle():
            stats = self.stats(start)
            return len(stats) >= 2 and all(s[1] == 0 for s in stats[-2:])
        try:
            wait_until(idle, timeout, "two idle stats lines")
        except AssertionError:
            raise AssertionError("md_receiver did not go idle: " + "".join(self.lines[-5:]))

    def wait_total_packets(self, count, timeout=30, feed=None):
        """Waits for a stats line with at least `count` packets; on a timeout the error shows
        the last stats lines and, when `feed` (its md_feed) has exited, what it said."""
        try:
            wait_until(lambda: any(s[3]["packets"] >= count for s in self.stats()), timeout,
                       f"a stats line with at least {count} packets")
        except AssertionError as e:
            state = "md_feed still running"
            if feed is not None and feed.poll() is not None:
                state = f"md_feed exited {feed.returncode}: {feed.err()}"
            raise AssertionError(f"{e}; {state}; last lines: " + "".join(self.lines[-4:]))

    def terminate(self, sig=signal.SIGINT, timeout=60):
        """Sends sig; returns (seconds until exit, stdout). Raises unless the exit code is 0."""
        sent = time.monotonic()
        self.process.send_signal(sig)
        self.process.wait(timeout=timeout)
        took = time.monotonic() - sent
        self.reader.join(timeout=5)
        self.out_reader.join(timeout=5)
        if self.process.returncode != 0:
            raise AssertionError(f"md_receiver exit {self.process.returncode}: " + "".join(self.lines))
        # spdlog's own complaint, e.g. a line logged after the async logger's thread pool is gone
        if errors := self.find("LOG ERROR"):
            raise AssertionError("md_receiver's logger failed: " + "".join(errors))
        return took, "".join(self.out)

    def read_summary(self):
        with open(self.summary, "rb") as f:
            raw = f.read()
        # Strict: the summary must be valid UTF-8 (and JSON) whatever bytes came off the wire.
        return json.loads(raw.decode("utf-8", errors="strict"))

    def stop(self):
        self.wait_idle()  # everything sent has been read from the kernel
        _, out = self.terminate(signal.SIGINT)
        return self.read_summary(), out


def itch(feed):
    """A moldudp64 feed's ITCH section of the summary (its books and book counters)."""
    return feed["moldudp64"]["itch"]


def glimpse_of(feed):
    """A moldudp64 feed's GLIMPSE section (late join)."""
    return feed["moldudp64"]["glimpse"]


def run_feed(binary, *args):
    result = subprocess.run(feed_command(binary, *args), capture_output=True, text=True,
                            timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"md_feed exit {result.returncode}: {result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def expect_equal(what, got, want):
    if got != want:
        if isinstance(got, dict) and isinstance(want, dict):  # the keys that differ, in short
            keys = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            raise AssertionError(f"{what}: differ at {keys[:5]}: receiver has "
                                 f"{str({k: got.get(k) for k in keys[:2]})[:1500]}, expected "
                                 f"{str({k: want.get(k) for k in keys[:2]})[:1500]}")
        raise AssertionError(f"{what}: receiver has {got}, expected {want}")


def expect_verdict(args, summary, report, lines, feed_name=None, allow_kernel_drops=False):
    """scripts/md-verdict (the demo's last line) agrees that the receiver matches the feed
    (with allow_kernel_drops: md-verdict --allow-kernel-drops, packets short by no more than the
    counted kernel drops)."""
    summary_path = os.path.join(os.path.dirname(report), "verdict-summary.json")
    with open(summary_path, "w") as f:
        json.dump(summary, f)
    which = ["--feed-name", feed_name] if feed_name else []
    if allow_kernel_drops:
        which.append("--allow-kernel-drops")
    result = subprocess.run([sys.executable, args.verdict, summary_path, report, "--lines",
                             str(lines), *which], capture_output=True, text=True, timeout=30)
    out = result.stdout.strip().splitlines()
    if result.returncode != 0 or not out or not out[-1].startswith("receiver matches feed: yes ("):
        raise AssertionError(f"md-verdict exit {result.returncode}: {result.stdout}{result.stderr}")
    assert "end-of-session" in out[0], out
    verdict = out[-1]
    # A receiver that lost a message must get a "no".
    with open(report) as f:
        tampered = json.load(f)
    tampered["messages"] += 1
    tampered_path = report + ".tampered"
    with open(tampered_path, "w") as f:
        json.dump(tampered, f)
    result = subprocess.run([sys.executable, args.verdict, summary_path, tampered_path, "--lines",
                             str(lines), *which], capture_output=True, text=True, timeout=30)
    if result.returncode != 1 or "receiver matches feed: no (" not in result.stdout:
        raise AssertionError(f"md-verdict on a mismatch: exit {result.returncode}: {result.stdout}")
    return verdict


BOOK_EVENT_KINDS = ("instrument_definition,order_add,order_modify,order_delete,order_execute,"
                    "level_update,bbo,book_clear,events_lost")


def events_args(workdir, name="events", kinds=BOOK_EVENT_KINDS):
    """md_receiver's --events for every instrument, to a file, the kinds a book is rebuilt
    from (or `kinds`): (arguments, path)."""
    path = os.path.join(workdir, f"{name}.jsonl")
    return ("--events", "all", "--event-kinds", kinds, "--events-out", path), path


def json_lines(text):
    """JSON lines, parsed as one array: a fifth faster than a json.loads() per line."""
    return json.loads("[" + ",".join(text.splitlines()) + "]")


def read_events(path):
    """md_receiver --events-out's lines (or a consumer's), parsed: read once, checked by
    rebuild_from_events() and consumer_truth_check() alike."""
    with open(path) as f:
        return json_lines(f.read())


def rebuild_from_events(events):
    """What md_receiver --events lines alone (read_events()) say the books are, per (feed,
    symbol): levels {(side, price): (size, orders)}, live orders {id: (side, price, quantity)}
    and the last bbo. A feed-wide book_clear empties the feed's books; a lost event fails
    (nothing may be lost)."""
    books, symbols = {}, {}

    def book(feed, instrument):
        key = (feed, symbols.get((feed, instrument), f"#{instrument}"))
        return books.setdefault(key, {"levels": {}, "orders": {}, "bbo": None})
    for e in events:
        kind, feed, instrument = e["kind"], e["feed"], e["instrument"]
        assert kind != "events_lost", e
        if kind == "instrument_definition":
            symbols.setdefault((feed, instrument), e["symbol"])
            book(feed, instrument)
        elif kind == "book_clear":
            for key, b in books.items():
                if key[0] == feed and (instrument == "all" or key == (feed, e["symbol"])):
                    b["levels"].clear()
                    b["orders"].clear()
                    b["bbo"] = None
        elif kind == "level_update":
            levels = book(feed, instrument)["levels"]
            if e["size"] == 0:
                levels.pop((e["side"], e["price"]), None)
            else:
                levels[(e["side"], e["price"])] = (e["size"], e["orders"])
        elif kind in ("order_add", "order_modify"):
            book(feed, instrument)["orders"][e["id"]] = (e["side"], e["price"], e["quantity"])
        elif kind == "order_delete":
            book(feed, instrument)["orders"].pop(e["id"], None)
        elif kind == "order_execute":
            orders = book(feed, instrument)["orders"]
            if e["remaining"] == 0:
                orders.pop(e["id"], None)
            elif e["id"] in orders:
                side, price, _ = orders[e["id"]]
                orders[e["id"]] = (side, price, e["remaining"])
        elif kind == "bbo":
            book(feed, instrument)["bbo"] = (e["bid_price"], e["bid_size"], e["ask_price"],
                                             e["ask_size"])
    return books


def expect_itch_books_from_events(events, feed):
    """The events' books equal the summary's ITCH books: each symbol's best bid and offer and
    live orders; and the events' levels are their orders' totals, price by price."""
    books = itch(feed)["books"]
    assert books, feed
    for symbol, want in books.items():
        got = events.get((feed["name"], symbol))
        assert got is not None, f"no events of {symbol}"
        expect_equal(f"{symbol}: live orders from events", len(got["orders"]), want["orders"])
        bid = (want["bid_price"], want["bid_shares"]) if want["bid_shares"] else (0, 0)
        ask = (want["ask_price"], want["ask_shares"]) if want["ask_shares"] else (0, 0)
        expect_equal(f"{symbol}: bbo from events", got["bbo"], bid + ask)
        totals = {}
        for side, price, quantity in got["orders"].values():
            size, count = totals.get((side, price), (0, 0))
            totals[(side, price)] = (size + quantity, count + 1)
        expect_equal(f"{symbol}: levels from events = their orders", got["levels"], totals)


def expect_mdp3_books_from_events(events, feed):
    """The events' books equal the summary's MDP 3.0 instruments, level by level, order by
    order."""
    for symbol, want in feed["mdp3"]["instruments"].items():
        got = events.get((feed["name"], symbol))
        assert got is not None, f"{feed['name']}: no events of {symbol}"
        levels = {("B", p): (size, orders) for p, size, orders in want["bids"]}
        levels.update({("S", p): (size, orders) for p, size, orders in want["offers"]})
        expect_equal(f"{feed['name']} {symbol}: levels from events", got["levels"], levels)
        if not want["orders_stale"]:
            orders = {o[0]: ("B" if o[1] == "0" else "S", o[2], o[3]) for o in want["orders"]}
            expect_equal(f"{feed['name']} {symbol}: orders from events", got["orders"], orders)


# The consumer-truth check (issue 37): md_feed --truth-out writes the books the exchange holds
# after every sequence it generates; consumer_truth_check() applies md_receiver's event lines
# in order, as a consumer would, and checks them against it as it goes (docs/events.md, "How
# the project checks it").
TRUTH_EVENT_KINDS = (BOOK_EVENT_KINDS + ",instrument_stale,instrument_recovered,"
                     "snapshot_begin,snapshot_end")

# Where each protocol's instrument_recovered says the book is: its sequence minus this. A
# MoldUDP64 snapshot's events carry the End of Snapshot's sequence (the next message's), a PITCH
# unit's recovery the unit's next sequence; MDP 3.0's that of the last packet applied.
RECOVERED_BEHIND = {"moldudp64": 1, "pitch": 1, "mdp3": 0}

class Truth:
    """md_feed --truth-out: the books after each sequence, per unit (0: the feed's one stream),
    stepped forward on request (and rebuilt from the start for a step back)."""

    def __init__(self, path):
        with open(path) as f:
            head = json.loads(f.readline())
            self.protocol, self.unit_of = head["truth"], head["symbols"]
            self.lines = {}
            for t in json_lines(f.read()):
                self.lines.setdefault(t["unit"], []).append((t["seq"], t["levels"]))
        self.books, self.at, self.next = {}, {}, {}

    def symbols(self, unit):
        return [s for s, u in self.unit_of.items() if u == unit]

    def book(self, symbol):
        return self.books.get(symbol, {})

    def step_to(self, unit, sequence):
        """The books of `unit` after `sequence`; returns the symbols that changed."""
        changed = set()
        if sequence < self.at.get(unit, 0):
            for symbol in self.symbols(unit):
                self.books.pop(symbol, None)
                changed.add(symbol)
            self.next[unit] = 0
        lines = self.lines.get(unit, [])
        i = self.next.get(unit, 0)
        while i < len(lines) and lines[i][0] <= sequence:
            for symbol, side, price, size, orders in lines[i][1]:
                levels = self.books.setdefault(symbol, {})
                if size == 0:
                    levels.pop((side, price), None)
                else:
                    levels[(side, price)] = (size, orders)
                changed.add(symbol)
            i += 1
        self.next[unit], self.at[unit] = i, sequence
        return changed


def first_difference(got, want):
    """The first level (by side, then price) where the consumer's book and the exchange's
    differ: "B 1234500: events (300, 2), exchange (400, 3)"."""
    for key in sorted(set(got) | set(want)):
        if got.get(key) != want.get(key):
            return (f"level {key[0]} {key[1]}: events {got.get(key, 'none')}, exchange "
                    f"{want.get(key, 'none')} ({len(got)} vs {len(want)} levels)")
    return "no difference"


def consumer_truth_check(events, truths, max_failures=8, require_checks=True):
    """Applies md_receiver --events lines (TRUTH_EVENT_KINDS, read_events()) in order, per
    feed, as a consumer would, against md_feed's truth per feed name (`truths`: name -> Truth).
    Checks: (1) once the events of a sequence are all applied (the next event moves it on)
    every instrument not marked stale has exactly the exchange's book as of it, and so at a
    snapshot_end of one not stale (a reload); (2) a recovery (instrument_recovered) of an
    instrument the consumer had a book of comes after an instrument_stale of it; (3) the
    sequence never goes back within a feed (PITCH: a unit); (4) at each instrument_recovered
    the recovered books are the exchange's (RECOVERED_BEHIND). Raises naming the feed, symbol,
    sequence and first difference of the first failure of each (feed, symbol, check), up to
    max_failures; returns counts of what it checked, which must not be none unless
    require_checks is False (a killed receiver may have written no whole line)."""
    failures, reported, counts = [], set(), {"events": 0, "checks": 0, "recoveries": 0}
    feeds = {}  # name -> consumer state

    def fail(text, key):
        """The first failure of each key (feed, symbol, check) only."""
        if key not in reported and len(failures) < max_failures:
            reported.add(key)
            failures.append(text)

    def state(name):
        if name not in feeds:
            feeds[name] = {"books": {}, "stale": set(), "all_stale": False, "loading": set(),
                           "loading_all": False, "first_load": set(), "dirty": set(),
                           "last": {}, "applied": {}}
        return feeds[name]

    def check(name, symbols, unit, sequence, why):
        """Checks `symbols` of `unit` at `sequence`; the symbols whose exchange book changed
        on the way are checked next time the feed settles."""
        truth, s = truths[name], feeds[name]
        if changed := truth.step_to(unit, sequence):
            s["dirty"] |= changed & s["books"].keys()
        for symbol in sorted(symbols):
            if symbol not in s["books"] or truth.unit_of.get(symbol) != unit:
                continue
            if s["all_stale"] or symbol in s["stale"] or symbol in s["loading"]:
                continue
            counts["checks"] += 1
            got, want = s["books"][symbol], truth.book(symbol)
            if got != want:
                text = (f"{name} {symbol} at sequence {sequence} ({why}): not stale, and not "
                        f"the exchange's book: {first_difference(got, want)}")
                fail(text, (name, symbol, why))

    def settle(name, unit, sequence):
        """The events of `unit` up to `sequence` are all in: checks what they changed."""
        s = feeds[name]
        done = s["applied"].get(unit)
        if done is not None and sequence > done:
            truth = truths[name]
            if changed := truth.step_to(unit, done):
                s["dirty"] |= changed & s["books"].keys()
            dirty = {x for x in s["dirty"] if truth.unit_of.get(x) == unit}
            check(name, dirty, unit, done, "after its events")
            s["dirty"] -= dirty
        if done is None or sequence > done:
            s["applied"][unit] = sequence

    for e in events:
        counts["events"] += 1
        name, kind, sequence = e["feed"], e["kind"], e["sequence"]
        assert kind != "events_lost", e
        if name not in truths:
            continue
        s, truth = state(name), truths[name]
        every = e["instrument"] == "all"
        symbol = None if every else e.get("symbol")
        unit = truth.unit_of.get(symbol, 0) if symbol else 0
        targets = sorted(s["books"]) if every else [symbol] if symbol else []
        if sequence < s["last"].get(unit, 0):
            fail(f"{name} {symbol or 'all'}: sequence {sequence} ({kind}) after "
                 f"{s['last'][unit]}: backwards" + (f" in unit {unit}" if unit else ""),
                 (name, symbol, "backwards"))
        s["last"][unit] = max(sequence, s["last"].get(unit, 0))
        if kind == "instrument_stale":
            if every:
                s["all_stale"] = True
            else:
                s["stale"].add(symbol)
            continue
        if kind == "instrument_recovered":
            for t in targets:  # a first load (a late join's) had nothing to mark stale
                if t in s["first_load"]:
                    continue
                if t in s["books"] and not (s["all_stale"] or t in s["stale"]):
                    fail(f"{name} {t} at sequence {sequence}: {kind} without an "
                         f"instrument_stale before it", (name, t, "unstaled"))
        if kind == "snapshot_begin":
            s["loading"].update(targets)
            s["loading_all"] = s["loading_all"] or every
            continue
        if kind == "snapshot_end":
            s["loading"].difference_update(targets)
            s["loading_all"] = s["loading_all"] and not every
            # A book reloaded while not stale (MDP 3.0's orders from the loop) is right
            # at its end; a stale one waits for its instrument_recovered.
            reloaded = [t for t in targets if t not in s["first_load"]]
            for u in sorted({truth.unit_of.get(t, 0) for t in reloaded}):
                check(name, {t for t in reloaded if truth.unit_of.get(t, 0) == u}, u,
                      sequence - RECOVERED_BEHIND[truth.protocol],
                      "snapshot_end while not stale")
            continue
        if kind == "instrument_recovered":
            counts["recoveries"] += 1
            if every:
                s["all_stale"] = False
                s["stale"].clear()
            else:
                s["stale"].discard(symbol)
            s["first_load"].difference_update(targets)
            for u in sorted({truth.unit_of.get(t, 0) for t in targets}):
                at = sequence - RECOVERED_BEHIND[truth.protocol]
                check(name, {t for t in targets if truth.unit_of.get(t, 0) == u}, u, at,
                      "instrument_recovered")
            continue
        settle(name, unit, sequence)
        if kind == "book_clear":
            for t in targets:
                s["books"][t] = {}
                s["dirty"].add(t)
        elif symbol:
            if symbol not in s["books"] and (s["loading_all"] or kind == "instrument_definition"
                                             and e.get("flags", 0) & 1):
                s["first_load"].add(symbol)  # first seen in a snapshot
            levels = s["books"].setdefault(symbol, {})
            s["dirty"].add(symbol)
            if kind == "level_update":
                if e["size"] == 0:
                    levels.pop((e["side"], e["price"]), None)
                else:
                    levels[(e["side"], e["price"])] = (e["size"], e["orders"])
    for name, s in feeds.items():  # the last sequence of each unit
        for unit, done in list(s["applied"].items()):
            settle(name, unit, done + 1)
    if failures:
        raise AssertionError("consumer-truth check failed:\n  " + "\n  ".join(failures))
    assert counts["checks"] > 0 or not require_checks, counts
    return counts


def single_feed_config(port, extra="", host=None):
    """One feed line bound to `host` (this run's, by default) and `port`."""
    return f"""
[runtime]
backend = "@BACKEND@"
workers = 2
[stats]
interval_s = 0.2
[[feed]]
name = "e2e"
bind = "{host or NET.host}:{port}"
{f'interface = "{NET.interface}"' if NET.interface else ""}
{extra}
"""


def case_faults_are_counted_exactly(args, workdir, backend):
    port = free_port()
    receiver = Receiver(args.receiver, single_feed_config(port), workdir, backend)
    report = os.path.join(workdir, "feed.json")
    sent = run_feed(args.feed, "--to", f"{NET.host}:{port}", "--count", "20000", "--rate", "200000",
                    "--batch", "8", "--symbols", "8", "--seed", "7", "--drop-every", "97",
                    "--dup-every", "31", "--reorder-every", "53", "--report-json", report)
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    # The stats line: one per feed, labelled; its running totals end where the summary does.
    _, rate, _, totals = receiver.stats(feed="e2e")[-1]
    expect_equal("stats line rate when idle", rate, 0)
    expect_equal("stats line total messages", totals["messages"], feed["messages"])
    expect_equal("stats line gaps", totals["gaps"], feed["gaps"])
    expect_equal("stats line missing", totals["missing"], feed["missing"])
    expect_equal("stats line duplicates", totals["duplicates"], feed["duplicates"])
    for key in ("unknown_order_refs", "duplicate_order_refs", "book_full_drops"):
        assert isinstance(itch(feed)[key], int), (key, itch(feed).get(key))
    expect_equal("book_full_drops", itch(feed)["book_full_drops"], 0)
    expect_equal("book_max_orders", itch(feed)["book_max_orders"], 1 << 20)
    expect_verdict(args, summary, report, lines=1)
    assert sent["dropped_packets"] > 0 and sent["duplicated_packets"] > 0
    assert sent["reordered_packets"] > 0
    expect_equal("messages", feed["messages"], sent["messages"])
    expect_equal("messages_by_type", itch(feed)["messages_by_type"], sent["messages_by_type"])
    expect_equal("gaps", feed["gaps"], sent["dropped_packets"])
    expect_equal("missing", feed["missing"], sent["dropped_messages"])
    expect_equal("duplicates", feed["duplicates"], sent["duplicated_packets"])
    expect_equal("next_sequence", feed["sequencing"]["next_sequence"], sent["next_sequence"])
    expect_equal("end_of_stream", feed["end_of_stream"], True)
    expect_equal("malformed", feed["malformed"], 0)
    expect_equal("queue_drops", feed["queue_drops"], 0)
    assert len(itch(feed)["books"]) == 8, itch(feed)["books"].keys()
    for symbol, book in itch(feed)["books"].items():
        assert book["bid_price"] == 0 or book["ask_price"] == 0 or book["bid_price"] < book["ask_price"], (symbol, book)
    assert summary["latency_ns"]["p50"] > 0 and summary["latency_ns"]["max"] >= summary["latency_ns"]["p99"]


def case_faults_on_both_lines_beside_busy_cpus_are_exact(args, workdir, backend):
    """Drops, duplicates and reordering on lines A and B (no re-request server) while two
    CPU-bound processes compete for the machine: scheduling delay must not turn a packet that
    arrived into a gap, a missing message and then a duplicate. The counts are md_feed's."""
    port_a, port_b = free_port(), free_port()
    receiver = Receiver(args.receiver, single_feed_config(port_a, f'bind_b = "{NET.host}:{port_b}"'),
                        workdir, backend)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        report = os.path.join(workdir, "feed.json")
        sent = run_feed(args.feed, "--to", f"{NET.host}:{port_a}", "--to-b", f"{NET.host}:{port_b}",
                        "--count", "200000", "--rate", "100000", "--seed", "3", "--symbols", "32",
                        "--drop-every", "97", "--dup-every", "41", "--reorder-every", "53",
                        "--report-json", report)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    summary, _ = receiver.stop()
    expect_verdict(args, summary, report, lines=2)
    feed = summary["feeds"][0]
    assert sent["dropped_packets"] > 0 and sent["duplicated_packets"] > 0, sent
    assert sent["reordered_packets"] > 0, sent
    expect_equal("gaps", feed["gaps"], sent["dropped_packets"])
    expect_equal("missing", feed["missing"], sent["dropped_messages"])
    expect_equal("messages", feed["messages"], sent["messages"])


def case_ab_lines_fill_each_others_gaps(args, workdir, backend):
    port_a, port_b = free_port(), free_port()
    config = single_feed_config(port_a, f'bind_b = "{NET.host}:{port_b}"')
    receiver = Receiver(args.receiver, config, workdir, backend)
    report = os.path.join(workdir, "feed.json")
    sent = run_feed(args.feed, "--to", f"{NET.host}:{port_a}", "--to-b", f"{NET.host}:{port_b}",
                    "--count", "20000", "--rate", "200000", "--batch", "8", "--drop-every", "10",
                    "--drop-line", "a", "--report-json", report)
    summary, _ = receiver.stop()
    expect_verdict(args, summary, report, lines=2)
    feed = summary["feeds"][0]
    assert sent["dropped_one_line_packets"] > 0 and sent["dropped_packets"] == 0
    expect_equal("gaps", feed["gaps"], 0)
    expect_equal("missing", feed["missing"], 0)
    expect_equal("messages", feed["messages"], sent["messages"])
    expect_equal("messages_by_type", itch(feed)["messages_by_type"], sent["messages_by_type"])
    # Every data packet arrived twice except those line A lost.
    expect_equal("duplicates", feed["duplicates"],
                 sent["packets"] - sent["dropped_one_line_packets"])


def case_malformed_datagrams_are_counted(args, workdir, backend):
    port = free_port()
    receiver = Receiver(args.receiver, single_feed_config(port), workdir, backend)
    garbage = [b"", b"short", b"X" * 19, b"SESSION001" + b"\x00" * 7 + b"\x01" + b"\x00\x05" + b"\x00\x09abc"]
    with sender_socket() as s:
        for g in garbage:
            s.sendto(g, (NET.host, port))
    receiver.wait_total_packets(len(garbage))  # the garbage is parsed before the feed starts
    sent = run_feed(args.feed, "--to", f"{NET.host}:{port}", "--count", "5000", "--rate", "100000",
                    "--session", "SESSION001")
    with sender_socket() as s:
        for g in garbage:
            s.sendto(g, (NET.host, port))
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    expect_equal("malformed", feed["malformed"], 2 * len(garbage))
    expect_equal("messages", feed["messages"], sent["messages"])
    expect_equal("gaps", feed["gaps"], 0)


def case_forged_packets_do_not_blind_the_feed(args, workdir, backend):
    """A heartbeat far ahead, then a heartbeat of another session, before the real stream: the
    second anchors provisionally and the stream's first data packet replaces it; the first waits
    in the reorder hold until its timer releases it and is then ignored (as another session's
    or as implausible, depending on the anchor of that moment); nothing real is lost or called
    a duplicate, and the event is logged."""
    port = free_port()
    receiver = Receiver(args.receiver, single_feed_config(port), workdir, backend)
    heartbeat = lambda session, sequence: session + sequence.to_bytes(8, "big") + b"\x00\x00"
    with sender_socket() as s:
        s.sendto(heartbeat(b"SESSION001", 1_000_000), (NET.host, port))
        s.sendto(heartbeat(b"EVIL000001", 1), (NET.host, port))
    receiver.wait_total_packets(1)
    sent = run_feed(args.feed, "--to", f"{NET.host}:{port}", "--count", "5000", "--rate", "100000",
                    "--session", "SESSION001")
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    expect_equal("messages", feed["messages"], sent["messages"])
    expect_equal("gaps", feed["gaps"], 0)
    expect_equal("duplicates", feed["duplicates"], 0)
    expect_equal("malformed", feed["malformed"], 0)
    expect_equal("ignored packets (implausible + foreign session)",
                 feed["ignored"], 1)
    expect_equal("resyncs", feed["sequencing"]["resyncs"], 1)
    assert receiver.find("ignored"), "no warning about the ignored packets"


def read_binary_file(path):
    """The messages of a BinaryFILE (u16 big-endian length, then the message)."""
    messages = []
    with open(path, "rb") as f:
        data = f.read()
    offset = 0
    while offset < len(data):
        length = int.from_bytes(data[offset:offset + 2], "big")
        messages.append(data[offset + 2:offset + 2 + length])
        offset += 2 + length
    assert offset == len(data), "a truncated record"
    return messages


def case_record_writes_what_was_delivered_in_sequence(args, workdir, backend):
    port = free_port()
    record = os.path.join(workdir, "recorded.itch")
    receiver = Receiver(args.receiver, single_feed_config(port), workdir, backend,
                        extra_args=("--record", record))
    sent = run_feed(args.feed, "--to", f"127.0.0.1:{port}", "--count", "20000", "--rate", "200000",
                    "--batch", "8", "--symbols", "8", "--seed", "3", "--reorder-every", "40",
                    "--dup-every", "30")
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    messages = read_binary_file(record)
    expect_equal("recorded messages", len(messages), sent["messages"])
    expect_equal("record.messages", feed["moldudp64"]["record"]["messages"], sent["messages"])
    expect_equal("record.drops", feed["moldudp64"]["record"]["drops"], 0)
    by_type = {}
    for m in messages:
        key = chr(m[0])
        by_type[key] = by_type.get(key, 0) + 1
    expect_equal("recorded messages_by_type", by_type, itch(feed)["messages_by_type"])
    # Replayed, the recording builds the same books.
    port2 = free_port()
    replayer = Receiver(args.receiver, single_feed_config(port2), workdir, backend)
    run_feed(args.feed, "--to", f"127.0.0.1:{port2}", "--replay", record, "--rate", "200000")
    summary2, _ = replayer.stop()
    expect_equal("books after replaying the recording", itch(summary2["feeds"][0])["books"],
                 itch(feed)["books"])


def scrape(port, host="127.0.0.1"):
    """GET /metrics, parsed: {(name, frozenset(labels)): value}."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode("utf-8")
    samples = {}
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = sample.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        labels = frozenset(tuple(kv.split("=", 1)) for kv in re.findall(r'\w+="[^"]*"', m.group(2) or ""))
        labels = frozenset((k, v.strip('"')) for k, v in labels)
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def case_metrics_endpoint_reconciles_with_feed_and_summary(args, workdir, backend):
    port, metrics_port = free_port(), free_port()
    config = single_feed_config(port) + f'\n[metrics]\nlisten = "127.0.0.1:{metrics_port}"\n'
    receiver = Receiver(args.receiver, config, workdir, backend)
    before = scrape(metrics_port)
    feed_label = frozenset({("feed", "e2e")})
    expect_equal("messages before sending", before[("signet_feed_messages_total", feed_label)], 0)
    sent = run_feed(args.feed, "--to", f"127.0.0.1:{port}", "--count", "20000", "--rate",
                    "200000", "--batch", "8", "--drop-every", "97")
    receiver.wait_idle()
    live = scrape(metrics_port)  # during the run: the receiver is still up
    line_a = frozenset({("feed", "e2e"), ("line", "a")})
    expect_equal("signet_feed_messages_total", live[("signet_feed_messages_total", feed_label)],
                 sent["messages"])
    expect_equal("signet_feed_gaps_total", live[("signet_feed_gaps_total", feed_label)],
                 sent["dropped_packets"])
    count = live[("signet_feed_latency_seconds_count", feed_label)]
    assert count > 0, live
    inf = live[("signet_feed_latency_seconds_bucket", frozenset(feed_label | {("le", "+Inf")}))]
    expect_equal("+Inf bucket == count", inf, count)
    # sequence: --drop-every leaves gaps; the packets behind each wait out the reorder hold.
    for stage in ("receive", "queue", "parse", "sequence"):
        key = ("signet_feed_stage_latency_seconds_count",
               frozenset(feed_label | {("stage", stage)}))
        assert live[key] > 0, (stage, live.get(key))
    receiver.wait_idle()
    took, _ = receiver.terminate()
    # The exposer's listening thread polls in 2 s slices: the stop knocks on its socket, not
    # waiting out a slice (about a second before).
    assert took < 1.0, f"{took:.2f} s from SIGINT to exit with a metrics endpoint"
    summary = receiver.read_summary()
    feed = summary["feeds"][0]
    expect_equal("packets_total == summary packets",
                 live[("signet_feed_packets_total", line_a)], feed["packets"])
    expect_equal("messages_total == summary messages",
                 live[("signet_feed_messages_total", feed_label)], feed["messages"])
    for stage in ("receive", "queue", "parse", "total", "sequence"):
        dist = feed["stage_latency_ns"][stage]
        assert dist["count"] > 0, feed["stage_latency_ns"]
        cumulative = [c for _, c in dist["buckets"]]
        bounds = [le for le, _ in dist["buckets"]]
        assert cumulative == sorted(cumulative) and bounds == sorted(bounds), dist
        expect_equal(f"{stage}: last bucket == count", cumulative[-1], dist["count"])
        assert bounds[-1] >= dist["max"] >= dist["p99"] >= dist["p50"], dist
    # The CDF plot: its points, and the PNG where gnuplot is installed.
    summary_path = os.path.join(workdir, "summary.json")
    with open(summary_path, "w") as f:
        json.dump(summary, f)
    plot = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                        "plot-latency")
    table = subprocess.run([sys.executable, plot, summary_path, "--table"], capture_output=True,
                           text=True, timeout=60, check=True).stdout.split("\n")
    stages = {line.split()[0] for line in table if line}
    expect_equal("plotted stages", stages, {"receive", "queue", "parse", "total", "sequence"})
    # A packet behind a gap that nobody fills waits out the 2 ms hold (or until 64 wait: 2.5 ms
    # at this rate): well over 1 ms.
    assert feed["stage_latency_ns"]["sequence"]["max"] >= 1_000_000, feed["stage_latency_ns"]
    if shutil.which("gnuplot"):
        png = os.path.join(workdir, "latency.png")
        subprocess.run([sys.executable, plot, summary_path, png], capture_output=True, text=True,
                       timeout=60, check=True)
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"


def case_rerequests_recover_every_gap(args, workdir, backend):
    """md_feed drops every 50th packet and serves re-requests; md_receiver recovers them all:
    nothing lost, and the books equal those of a run without drops."""
    server = free_port()
    stream = ("--count", "20000", "--rate", "200000", "--batch", "8", "--symbols", "8",
              "--seed", "11")
    port = free_port()
    keys = (f'rerequest = "{NET.peer}:{server}"\nrerequest_timeout_ms = 20\n')
    events, events_path = events_args(workdir, kinds=TRUTH_EVENT_KINDS)
    receiver = Receiver(args.receiver, single_feed_config(port, keys), workdir, backend,
                        extra_args=events)
    report = os.path.join(workdir, "feed.json")
    truth = os.path.join(workdir, "truth.jsonl")
    feed = start_feed(args.feed, "--to", f"{NET.host}:{port}", *stream, "--drop-every", "50",
                      "--serve-rerequests", str(server), "--linger", "30", "--report-json", report,
                      "--truth-out", truth)
    feed.stream_sent()
    receiver.wait_idle()
    end_tail_once_synchronized(feed, receiver)
    sent = finish_feed(feed)
    summary, _ = receiver.stop()
    # The demo's verdict with re-requests: everything recovered, the books complete.
    last = expect_verdict(args, summary, report, lines=1)
    assert f"recovered {sent['dropped_messages']}/{sent['dropped_messages']}" in last, last
    assert last.endswith("; books complete"), last
    feed = summary["feeds"][0]
    recovery = feed["moldudp64"]["recovery"]
    assert sent["dropped_packets"] > 0
    expect_equal("lost_messages", recovery["lost_messages"], 0)
    expect_equal("recovered_messages", recovery["recovered_messages"], sent["dropped_messages"])
    expect_equal("gaps left", feed["gaps"], 0)
    # md_feed's messages are those it put on the wire; the receiver also has the resent ones.
    expect_equal("messages", feed["messages"], sent["messages"] + sent["dropped_messages"])
    assert recovery["rerequests_sent"] >= 1 and recovery["latency_ns"]["p50"] > 0, recovery
    assert recovery["state"] == "synchronized", recovery
    # The reference: the same stream without drops.
    port2 = free_port()
    reference = Receiver(args.receiver, single_feed_config(port2), workdir, backend)
    run_feed(args.feed, "--to", f"{NET.host}:{port2}", *stream)
    summary2, _ = reference.stop()
    expect_equal("books (recovered vs loss-free)", itch(feed)["books"], itch(summary2["feeds"][0])["books"])
    # A consumer of the events alone has the same books, and the exchange's at every sequence.
    events = read_events(events_path)
    expect_itch_books_from_events(rebuild_from_events(events), feed)
    consumer_truth_check(events, {"e2e": Truth(truth)})


def end_tail_once_synchronized(feed, receiver, name="e2e"):
    """With the stream sent and read (Feed.stream_sent(), Receiver.wait_idle()), every gap is
    known: once the receiver's recovery says synchronized, no re-request is left to answer and
    md_feed's tail ends; else it runs its course (the case's checks say what was lost)."""
    def synchronized():
        lines = receiver.find(f"recovery {name} | ")
        return lines and "synchronized" in lines[-1]
    try:
        wait_until(synchronized, 10, "the receiver's recovery synchronized")
    except AssertionError:
        return
    feed.end_tail()


class Feed(subprocess.Popen):
    """md_feed in the background (start_feed), its stdout and stderr read as they come (reader
    threads): err() is what it said so far; finish_feed() waits for it and returns its report."""
    running = []  # this case's feeds: run_case() kills those a failed case left running

    def __init__(self, command):
        super().__init__(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        Feed.running.append(self)
        self.out_lines, self.err_lines = [], []
        self.readers = [threading.Thread(target=lambda: self.out_lines.extend(self.stdout),
                                         daemon=True),
                        threading.Thread(target=lambda: self.err_lines.extend(self.stderr),
                                         daemon=True)]
        for reader in self.readers:
            reader.start()

    def err(self):
        return "".join(self.err_lines)

    def stream_sent(self):
        """Waits until md_feed says the stream is sent (--linger's tail begins) or has exited."""
        wait_until(lambda: "md_feed: the stream is sent" in self.err() or self.poll() is not None,
                   120, "md_feed's end of the stream")

    def messages_sent(self):
        """Waits until md_feed --protocol pitch says its messages are out (the tail's heartbeats
        begin) or has exited."""
        wait_until(lambda: "md_feed: the messages are sent" in self.err() or
                   self.poll() is not None, 120, "md_feed's last message")

    def end_tail(self):
        """Ends --linger's tail (SIGINT) once the stream is sent: for a case whose receivers are
        done with the servers (else the tail runs its course)."""
        self.stream_sent()
        if self.poll() is None:
            self.send_signal(signal.SIGINT)


def start_feed(binary, *args):
    """md_feed in the background; finish_feed() waits for it and returns its report."""
    return Feed(feed_command(binary, *args))


def finish_feed(process, timeout=120):
    process.wait(timeout=timeout)
    for reader in process.readers:
        reader.join(timeout=10)
    if process.returncode != 0:
        raise AssertionError(f"md_feed exit {process.returncode}: {process.err()}")
    return json.loads("".join(process.out_lines).strip().splitlines()[-1])


def late_join_config(port, snapshot_port, extra=""):
    return single_feed_config(port, f'glimpse = "{NET.peer}:{snapshot_port}"\n{extra}')


def expect_same_books(late, reference, what):
    """The late joiner's book equals the reference's: every stock's top and order count, the
    live orders, and where the session ends."""
    expect_equal(f"{what}: books", itch(late)["books"], itch(reference)["books"])
    expect_equal(f"{what}: live_orders", itch(late)["live_orders"], itch(reference)["live_orders"])
    expect_equal(f"{what}: next_sequence", late["sequencing"]["next_sequence"], reference["sequencing"]["next_sequence"])
    snapshot = glimpse_of(late)
    expect_equal(f"{what}: snapshot state", snapshot["state"], "live")
    assert snapshot["completed"] >= 1 and snapshot["orders_loaded"] > 0, snapshot
    assert itch(late)["unknown_order_refs"] == 0, itch(late)["unknown_order_refs"]


def per_backend_share(args, backend):
    """The share of its full stream a case that runs on every backend sends, at that share of
    its rate (the same time, so the same timing): all of it on the run's first backend,
    --other-backends-share on the others. The first runs the case at the size its checks were
    made for; the others carry the same protocol flow through their own receive path, which a
    thinner stream exercises as well (the late joins cost the most CPU of the suite,
    scripts/test-times)."""
    return 1.0 if backend == args.backends.split(",")[0] else args.other_backends_share


def late_join_messages(args, share):
    """The messages of a late join's stream at `share` of its size (late_join_run())."""
    return max(int(args.late_join_messages * share), 8)


def late_join_run(args, workdir, backend, join_at, faults=(), restart=False, truth=None,
                  share=1.0):
    """One stream (8 messages a packet) to two receivers: the reference on line A from the
    start, the late joiner on line B (with a GLIMPSE snapshot server) started once the
    reference has received `join_at` packets — and, with restart, killed (SIGKILL) once it has
    synchronized and the stream went on for a tenth of it more, then started again. The stream
    is --late-join-messages long at --late-join-rate messages/s, both times `share` (the same
    time); with `truth`, md_feed writes its --truth-out there and the late joiner its events
    (TRUTH_EVENT_KINDS), read into its `events`. Returns both feeds' summaries, the report and
    the late joiner."""
    count = late_join_messages(args, share)
    rate = max(int(args.late_join_rate * share), 1)
    port_a, port_b, glimpse = free_port(), free_port(), free_port()
    os.makedirs(os.path.join(workdir, "ref"))
    os.makedirs(os.path.join(workdir, "late"))
    # One XDP program per interface: beside an af_xdp late joiner the reference takes the
    # kernel's path (its port is not the program's: the frames pass to its socket).
    reference = Receiver(args.receiver, single_feed_config(port_a), os.path.join(workdir, "ref"),
                         "epoll" if backend.startswith("af_xdp") else backend)
    feed = start_feed(args.feed, "--to", f"{NET.host}:{port_a}", "--to-b", f"{NET.host}:{port_b}",
                      "--count", str(count), "--rate", str(rate), "--batch", "8", "--seed", "5",
                      "--serve-glimpse", str(glimpse), "--linger", "4", *faults,
                      *(("--truth-out", truth) if truth else ()))
    config = late_join_config(port_b, glimpse)
    reference.wait_total_packets(join_at, feed=feed)
    events, events_path = events_args(os.path.join(workdir, "late"), kinds=TRUTH_EVENT_KINDS) \
        if truth else ((), None)
    late = Receiver(args.receiver, config, os.path.join(workdir, "late"), backend,
                    extra_args=events)
    if restart:
        wait_until(lambda: late.find("synchronized from a snapshot"), 30, "the first snapshot")
        reference.wait_total_packets(join_at + count // 80, feed=feed)
        late.process.kill()  # a crash: nothing is flushed, no summary
        late.process.wait(timeout=30)
        late = Receiver(args.receiver, config, os.path.join(workdir, "late"), backend,
                        extra_args=events)
        if backend.startswith("af_xdp"):  # the killed one's XDP program was still attached
            assert late.find("did not stop cleanly"), "no warning about the stale XDP program"
    # The snapshot server lives as long as the feed (and its linger): a late joiner still
    # starting when it ends never synchronizes (once under CI load: empty books). Say so then.
    wait_until(lambda: late.find("synchronized from a snapshot") or feed.poll() is not None, 60,
               "the late joiner's snapshot")
    assert late.find("synchronized from a snapshot"), \
        "the late joiner did not synchronize before the feed and its snapshot server ended: " + \
        "".join(late.lines[-8:])
    if not faults:
        # Once the stream is out and the late joiner has read all of it without a gap, no
        # snapshot is asked for again: the tail (--linger) ends there. A gap (a kernel drop,
        # the wire's) lets the tail run its course: the lost-gap path loads a new snapshot.
        feed.stream_sent()
        late.wait_idle()
        if late.stats()[-1][3]["gaps"] == 0:
            feed.end_tail()
    sent = finish_feed(feed)
    summary_ref, _ = reference.stop()
    summary_late, _ = late.stop()
    for sub in summary_late["subscribers"]:  # every event reached the file
        assert sub["dropped"] == 0 and sub["lost_notices"] == 0, sub
    late.events = read_events(events_path) if truth else None
    return summary_ref["feeds"][0], summary_late["feeds"][0], sent, late


def case_late_join_builds_the_books_of_a_full_run(args, workdir, backend):
    """A receiver started mid-stream loads a GLIMPSE snapshot, replays what it buffered meanwhile
    and ends with the books of a receiver that ran from the start."""
    share = per_backend_share(args, backend)
    packets = late_join_messages(args, share) // 8
    join_at = random.randrange(packets // 10, packets * 6 // 10)
    truth = os.path.join(workdir, "truth.jsonl")
    ref, late, sent, log = late_join_run(args, workdir, backend, join_at, truth=truth,
                                         share=share)
    expect_same_books(late, ref, f"joined at packet {join_at}")
    # Its events: stale -> clear -> the snapshot's book -> recovered -> live, the same books,
    # and the exchange's after every sequence from the snapshot on.
    expect_itch_books_from_events(rebuild_from_events(log.events), late)
    consumer_truth_check(log.events, {"e2e": Truth(truth)})
    assert late["messages"] < ref["messages"], (late["messages"], ref["messages"])
    assert log.find("synchronized from a snapshot"), log.lines[-5:]
    glimpse = sent["glimpse"]
    assert glimpse["snapshots_sent"] >= 1 and glimpse["sequence_breaks"] == 0, glimpse


def case_late_join_at_five_points(args, workdir, backend):
    """Five random join points of one stream size: each late joiner ends with the full books."""
    packets = args.late_join_messages // 8
    for i, join_at in enumerate(sorted(random.sample(range(packets // 20, packets * 7 // 10), 5))):
        run_dir = os.path.join(workdir, f"run{i}")
        os.makedirs(run_dir)
        ref, late, _, _ = late_join_run(args, run_dir, backend, join_at)
        expect_same_books(late, ref, f"point {i}: joined at packet {join_at}")


def case_killed_receiver_restarts_into_the_full_books(args, workdir, backend):
    """A late joiner killed mid-stream and started again synchronizes again from a snapshot."""
    ref, late, _, _ = late_join_run(args, workdir, backend, args.late_join_messages // 80,
                                    restart=True)
    expect_same_books(late, ref, "after kill and restart")


def case_lost_gap_without_rerequests_loads_a_new_snapshot(args, workdir, backend):
    """Line B loses packets and there is no re-request server: each gap the late joiner declares
    lost brings a new snapshot, and its books still equal the loss-free line's."""
    ref, late, sent, _ = late_join_run(args, workdir, backend, args.late_join_messages // 100,
                                       faults=("--drop-every", "4000", "--drop-line", "b"))
    assert sent["dropped_one_line_packets"] > 0, sent
    assert late["gaps"] >= 1, late["gaps"]
    expect_same_books(late, ref, "after lost gaps")
    assert glimpse_of(late)["requests"] >= 2, glimpse_of(late)
    expect_equal("reference gaps", ref["gaps"], 0)


def case_snapshot_server_down_or_refusing_is_counted(args, workdir, backend):
    """No snapshot server: the feed keeps buffering, counts the refused connects with backoff
    and says so in one clear line per attempt; a wrong password is one clear error."""
    port = free_port()
    dead = free_port()  # nothing listens here
    receiver = Receiver(args.receiver, late_join_config(port, dead), workdir, backend)
    # A snapshot is asked for once the stream has shown where it is.
    stream = start_feed(args.feed, "--to", f"{NET.host}:{port}", "--rate", "1000",
                        "--duration", "60")
    try:
        wait_until(lambda: len(receiver.find("connect failed")) >= 3, 20,
                   "three refused connects")
    finally:
        stream.terminate()
        finish_feed(stream)
    summary, _ = receiver.terminate()
    snapshot = glimpse_of(receiver.read_summary()["feeds"][0])
    assert snapshot["connect_failures"] >= 3 and snapshot["completed"] == 0, snapshot
    expect_equal("state", snapshot["state"], "buffering")
    # A server that rejects the login.
    glimpse, port2 = free_port(), free_port()
    # The stream and its server run until the login was refused (then SIGTERM), however long
    # the receiver takes to start and ask.
    feed = start_feed(args.feed, "--to", f"127.0.0.1:{port2}", "--rate", "2000", "--duration",
                      "60", "--serve-glimpse", str(glimpse), "--glimpse-username", "alice",
                      "--glimpse-password", "right")
    os.makedirs(os.path.join(workdir, "rejected"))
    keys = 'glimpse_username = "alice"\nglimpse_password = "wrong"'
    rejected = Receiver(args.receiver, late_join_config(port2, glimpse, keys),
                        os.path.join(workdir, "rejected"), backend)
    wait_until(lambda: rejected.find("rejected the login"), 20, "the rejected-login error")
    feed.terminate()
    sent = finish_feed(feed)
    rejected.terminate()
    snapshot = glimpse_of(rejected.read_summary()["feeds"][0])
    expect_equal("login_rejected", snapshot["login_rejected"], 1)
    expect_equal("state", snapshot["state"], "rejected")
    assert sent["glimpse"]["rejected_logins"] >= 1, sent["glimpse"]


def soup_packet(kind, payload=b""):
    """A SoupBinTCP packet: its length (type and payload, u16 big-endian), type, payload."""
    return (1 + len(payload)).to_bytes(2, "big") + kind + payload


class LyingGlimpseServer:
    """A GLIMPSE server (SoupBinTCP) that answers every login with one stock directory, one add
    and an End of Snapshot naming `resume`: what a server of another session or day sends."""

    def __init__(self, resume):
        self.listener = sender_socket(socket.SOCK_STREAM)
        self.listener.bind((NET.peer, 0))
        self.listener.listen(4)
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.snapshot = b"".join(soup_packet(b"S", m) for m in (
            itch_directory(1, b"LIAR    "), itch_add(1, 1, b"B", 100, 1000000),
            b"G" + str(resume).rjust(20).encode()))
        self.logins = 0
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            try:
                connection, _ = self.listener.accept()
            except socket.timeout:
                continue
            with connection:
                connection.settimeout(5)
                try:
                    request = connection.recv(2 + 47)  # Login Request: 'L' and 46 bytes
                    if request[2:3] != b"L":
                        continue
                    self.logins += 1
                    connection.sendall(soup_packet(b"A", b"GLIMPSE   " + b"1".rjust(20)) +
                                       self.snapshot)
                    while connection.recv(4096):  # until the client closes
                        pass
                except OSError:
                    continue

    def close(self):
        self.running = False
        self.thread.join(timeout=5)
        self.listener.close()


def case_snapshot_from_the_future_is_refused(args, workdir, backend):
    """A GLIMPSE server whose End of Snapshot names a sequence a trillion ahead of the stream:
    the receiver refuses it (counted as future, one warning), asks again, keeps buffering and
    never calls its book complete; taken, it would have skipped every live message."""
    liar = LyingGlimpseServer(10 ** 12)
    try:
        port = free_port()
        receiver = Receiver(args.receiver, late_join_config(port, liar.port), workdir, backend)
        sent = run_feed(args.feed, "--to", f"{NET.host}:{port}", "--count", "100000", "--rate",
                        "50000", "--live-orders", "20000")
        wait_until(lambda: liar.logins >= 2, 30, "a second login after the refusal")
        summary, _ = receiver.stop()
    finally:
        liar.close()
    feed = summary["feeds"][0]
    glimpse = glimpse_of(feed)
    assert glimpse["future"] >= 1 and glimpse["completed"] == 0, glimpse
    assert glimpse["state"] in ("buffering", "loading"), glimpse["state"]
    expect_equal("covered_messages", glimpse["covered_messages"], 0)
    expect_equal("book_state", feed["book_state"], "recovering")
    counters = {k: feed[k] for k in ("packets", "gaps", "missing", "kernel_drops", "queue_drops",
                                     "truncated", "malformed")}
    expect_equal(f"messages ({counters}; md_feed: {sent})", feed["messages"], sent["messages"])
    expect_equal("warnings", len(receiver.find("beyond the live stream")), 1)


def mdp3_feeds_config(ports):
    """A receiver config with an MDP 3.0 feed per name of `ports` (name -> incremental A, B,
    snapshot loop and definitions ports), two workers, stats every 0.2 s."""
    config = "[runtime]\nbackend = \"@BACKEND@\"\nworkers = 2\n[stats]\ninterval_s = 0.2\n"
    for name, (a, b, snap, defs) in ports.items():
        config += (f'[[feed]]\nname = "{name}"\nprotocol = "mdp3"\nbind = "{NET.host}:{a}"\n'
                   f'bind_b = "{NET.host}:{b}"\nsnapshot_bind = "{NET.host}:{snap}"\n'
                   f'definitions_bind = "{NET.host}:{defs}"\n')
        if NET.interface:
            config += f'interface = "{NET.interface}"\n'
    return config


def case_mdp3_loss_on_a_b_or_both_is_recovered(args, workdir, backend):
    """CME MDP 3.0 through the same runtime: four feeds of one receiver get the same generated
    channel (incremental A/B, snapshot loop, definitions) from four md_feeds — one loss-free,
    one losing every 37th incremental packet on line A, one on line B, one on both. Each ends
    with the loss-free feed's books; the losses on both lines were recovered through the
    snapshot loop, and the summary says how many and how long it took."""
    variants = [("ref", ()), ("lose_a", ("--drop-every", "37", "--drop-line", "a")),
                ("lose_b", ("--drop-every", "37", "--drop-line", "b")),
                ("lose_both", ("--drop-every", "37", "--drop-line", "both"))]
    ports = {name: [free_port() for _ in range(4)] for name, _ in variants}
    receiver = Receiver(args.receiver, mdp3_feeds_config(ports), workdir, backend)
    feeds = {}
    for name, faults in variants:
        a, b, snap, defs = ports[name]
        feeds[name] = start_feed(args.feed, "--protocol", "mdp3", "--to", f"{NET.host}:{a}",
                                 "--to-b", f"{NET.host}:{b}", "--snapshot-to", f"{NET.host}:{snap}",
                                 "--definitions-to", f"{NET.host}:{defs}", "--count", "8000",
                                 "--rate", "10000", "--seed", "9", "--tail", "1.5",
                                 "--report-json", os.path.join(workdir, f"{name}.json"), *faults)
    reports = {name: finish_feed(process) for name, process in feeds.items()}
    summary, out = receiver.stop()
    by_name = {f["name"]: f for f in summary["feeds"]}
    # The verdict reads the protocol-neutral counters: the same script as for MoldUDP64.
    for name, _ in variants:
        verdict = expect_verdict(args, summary, os.path.join(workdir, f"{name}.json"), lines=2,
                                 feed_name=name, allow_kernel_drops=backend.startswith("af_xdp"))
        assert verdict.endswith("; books complete"), (name, verdict)
    reference = by_name["ref"]["mdp3"]
    assert len(reference["instruments"]) == 4, reference["instruments"].keys()
    for name, _ in variants:
        mdp3 = by_name[name]["mdp3"]
        channel = mdp3["channel"]
        expect_equal(f"{name}: books", mdp3["instruments"], reference["instruments"])
        assert not channel["recovering"], (name, channel)
        expect_equal(f"{name}: recoveries completed", channel["recoveries_completed"],
                     channel["recoveries"])
        expect_equal(f"{name}: inconsistent updates", channel["inconsistent_updates"], 0)
        assert reports[name]["packets"] > 0, reports[name]
    assert reports["lose_a"]["dropped_one_line_packets"] > 0, reports["lose_a"]
    lost = reports["lose_both"]["dropped_packets"]
    both = by_name["lose_both"]["mdp3"]["channel"]
    assert lost > 0 and by_name["lose_both"]["gaps"] >= lost, (lost, by_name["lose_both"])
    assert both["snapshots_applied"] >= 1 and both["recovery_ms"] > 0, both
    # Order entries applied live or replayed over a snapshot: with a loss every 37th packet on
    # both lines the orders may be waiting for the loop at every live entry (when the
    # definitions come late, say), so live ones alone can be 0.
    assert both["order_snapshots_applied"] >= 1, both
    assert both["order_entries"] + both["replayed_entries"] > 0, both
    for instrument in reference["instruments"].values():
        assert instrument["orders"], "market by order: every instrument has live orders"
    # Line B filled line A's losses (and A B's): the books never waited for the loop for them.
    for name in ("lose_a", "lose_b"):
        assert by_name[name]["duplicates"] > 0, name


def case_mdp3_events_rebuild_the_books(args, workdir, backend):
    """md_receiver --events on two MDP 3.0 feeds of one channel, one loss-free and one losing
    every 37th incremental packet on both lines: a consumer of the events alone ends with
    every level and order of both feeds' books, through the snapshot-loop recoveries."""
    variants = [("ref", ()), ("lose_both", ("--drop-every", "37", "--drop-line", "both"))]
    ports = {name: [free_port() for _ in range(4)] for name, _ in variants}
    events, events_path = events_args(workdir, kinds=TRUTH_EVENT_KINDS)
    receiver = Receiver(args.receiver, mdp3_feeds_config(ports), workdir, backend,
                        extra_args=events)
    feeds = {}
    for name, faults in variants:
        a, b, snap, defs = ports[name]
        feeds[name] = start_feed(args.feed, "--protocol", "mdp3", "--to", f"{NET.host}:{a}",
                                 "--to-b", f"{NET.host}:{b}", "--snapshot-to", f"{NET.host}:{snap}",
                                 "--definitions-to", f"{NET.host}:{defs}", "--count", "4000",
                                 "--rate", "4000", "--seed", "9", "--tail", "1.5", "--truth-out",
                                 os.path.join(workdir, f"{name}.truth.jsonl"), *faults)
    for process in feeds.values():
        finish_feed(process)
    summary, _ = receiver.stop()
    by_name = {f["name"]: f for f in summary["feeds"]}
    events = read_events(events_path)
    from_events = rebuild_from_events(events)
    for name, _ in variants:
        assert not by_name[name]["mdp3"]["channel"]["recovering"], by_name[name]
        expect_mdp3_books_from_events(from_events, by_name[name])
    assert by_name["lose_both"]["mdp3"]["channel"]["snapshots_applied"] >= 1, by_name["lose_both"]
    expect_equal("subscriber drops", summary["subscribers"][0]["dropped"], 0)
    # And the exchange's books at every sequence, stale marked where they are not.
    consumer_truth_check(events, {name: Truth(os.path.join(workdir, f"{name}.truth.jsonl"))
                                  for name, _ in variants})


def case_mdp3_consumer_truth_on_one_line_loss_and_late_join(args, workdir, backend):
    """CME MDP 3.0, the consumer-truth check: two channels losing every 37th incremental packet,
    one on line A and one on line B (the other line fills every gap: nothing is stale), and a
    third joined mid-stream by a second receiver (its books first loaded from the snapshot
    loop). A consumer of each receiver's events has the exchange's books (md_feed --truth-out)
    after every MsgSeqNum, but where it was told stale."""
    variants = [("lose_a", ("--drop-every", "37", "--drop-line", "a")),
                ("lose_b", ("--drop-every", "37", "--drop-line", "b")), ("late", ())]
    ports = {name: [free_port() for _ in range(4)] for name, _ in variants}
    truth = {name: os.path.join(workdir, f"{name}.truth.jsonl") for name, _ in variants}
    events, events_path = events_args(workdir, kinds=TRUTH_EVENT_KINDS)
    receiver = Receiver(args.receiver, mdp3_feeds_config(
        {name: ports[name] for name in ("lose_a", "lose_b")}), workdir, backend,
        extra_args=events)
    feeds = {}
    for name, faults in variants:
        a, b, snap, defs = ports[name]
        feeds[name] = start_feed(args.feed, "--protocol", "mdp3", "--to", f"{NET.host}:{a}",
                                 "--to-b", f"{NET.host}:{b}", "--snapshot-to", f"{NET.host}:{snap}",
                                 "--definitions-to", f"{NET.host}:{defs}", "--count", "6000",
                                 "--rate", "4000", "--seed", "9", "--tail", "1.5", "--truth-out",
                                 truth[name], *faults)
    receiver.wait_total_packets(1000, feed=feeds["late"])
    os.makedirs(os.path.join(workdir, "late"))
    late_events, late_path = events_args(os.path.join(workdir, "late"), kinds=TRUTH_EVENT_KINDS)
    late = Receiver(args.receiver, mdp3_feeds_config({"late": ports["late"]}),
                    os.path.join(workdir, "late"), backend, extra_args=late_events)
    reports = {name: finish_feed(process) for name, process in feeds.items()}
    summary, _ = receiver.stop()
    late_summary, _ = late.stop()
    by_name = {f["name"]: f for f in summary["feeds"] + late_summary["feeds"]}
    for name in ("lose_a", "lose_b"):
        assert reports[name]["dropped_one_line_packets"] > 0, reports[name]
        assert by_name[name]["duplicates"] > 0, name
    joined = by_name["late"]
    assert joined["late_start"] > 0, joined
    assert joined["mdp3"]["channel"]["snapshots_applied"] >= 1, joined["mdp3"]["channel"]
    assert not joined["mdp3"]["channel"]["recovering"], joined["mdp3"]["channel"]
    for s in (summary, late_summary):
        expect_equal("subscriber drops", s["subscribers"][0]["dropped"], 0)
    consumer_truth_check(read_events(events_path),
                         {name: Truth(truth[name]) for name in ("lose_a", "lose_b")})
    consumer_truth_check(read_events(late_path), {"late": Truth(truth["late"])})


def pitch_feeds_config(ports, grp=None):
    """A receiver config with a Cboe PITCH feed of units 1 and 2 per name of `ports` (name ->
    line A and B ports), two workers, stats every 0.2 s; grp: name -> (proxy port, gap line
    port) of the feeds that recover through a Gap Request Proxy."""
    config = "[runtime]\nbackend = \"@BACKEND@\"\nworkers = 2\n[stats]\ninterval_s = 0.2\n"
    for name, (a, b) in ports.items():
        config += (f'[[feed]]\nname = "{name}"\nprotocol = "pitch"\nunits = [1, 2]\n'
                   f'bind = "{NET.host}:{a}"\nbind_b = "{NET.host}:{b}"\n')
        if grp and name in grp:
            proxy, gap = grp[name]
            config += (f'grp = "{NET.peer}:{proxy}"\ngap_bind = "{NET.host}:{gap}"\n'
                       f'login = "0001:USER:secret"\n')
        if NET.interface:
            config += f'interface = "{NET.interface}"\n'
    return config


def pitch_feed(args, workdir, name, a, b, *extra):
    # Across the veth pair (af_xdp) five feeds of two lines at full rate overflowed its rings
    # under CI's load (the wire's loss on both lines, no receiver's): half the rate there.
    rate = "10000" if NET.interface else "20000"
    return start_feed(args.feed, "--protocol", "pitch", "--to", f"{NET.host}:{a}", "--to-b",
                      f"{NET.host}:{b}", "--units", "2", "--count", "20000", "--rate", rate,
                      "--seed", "5", "--tail-heartbeats", "1",
                      "--report-json", os.path.join(workdir, f"{name}.json"), *extra)


def finish_pitch_feeds(feeds, receiver, lingering):
    """The reports of pitch_feed()s (name -> Feed). Those named in `lingering` serve their GRP
    after the stream (--linger): a receiver that fell behind its input (a loaded machine) still
    has gaps to ask for when the stream ends. Their tail ends once the receiver has read
    everything and says the feed's recovery is synchronized (nothing left to ask)."""
    reports = {name: finish_feed(feed) for name, feed in feeds.items() if name not in lingering}
    for name in lingering:
        feeds[name].stream_sent()
    receiver.wait_idle()
    for name in lingering:
        end_tail_once_synchronized(feeds[name], receiver, name)
        reports[name] = finish_feed(feeds[name])
    return reports


def case_pitch_loss_on_a_b_or_both_is_recovered(args, workdir, backend):
    """Cboe PITCH through the same runtime: five feeds of one receiver get the same generated
    market (two units, lines A and B) from five md_feeds — one loss-free, one losing every 37th
    block on line A, one on line B, one on both with a Gap Request Proxy, one on both without.
    Lines A and B fill each other's losses, and the proxy's answers (on the gap line, their own
    unit and sequences) fill the losses on both: those feeds end with the loss-free feed's books,
    order by order, and the verdict's exact counts. Without the proxy the losses are gaps of
    their own unit only, counted exactly, each staling its unit."""
    variants = [("ref", ()), ("lose_a", ("--drop-every", "37", "--drop-line", "a")),
                ("lose_b", ("--drop-every", "37", "--drop-line", "b")),
                ("grp", ("--drop-every", "37", "--drop-line", "both")),
                ("lose_both", ("--drop-every", "101", "--drop-line", "both"))]
    ports = {name: [free_port() for _ in range(2)] for name, _ in variants}
    grp_ports = {"grp": (free_port(), free_port())}
    # A hold must span what arrives while a gap is being asked for: the receiver's backlog plus
    # the round trip. A sanitizer build on a loaded 2-core machine fell a second behind its
    # input, filled the default hold (4096 packets) and gave gaps up (counted, as it must); the
    # unit's whole stream fits in this one.
    config = pitch_feeds_config(ports, grp_ports).replace(
        'login = "0001:USER:secret"\n', 'login = "0001:USER:secret"\nrecovery_buffer = 16384\n')
    receiver = Receiver(args.receiver, config, workdir, backend)
    feeds = {}
    for name, faults in variants:
        extra = list(faults)
        if name in grp_ports:
            proxy, gap = grp_ports[name]
            # The receiver's session is up before the first gap, as in production (under
            # load, a proxy that came up with its data left gaps waiting for a session).
            extra += ["--serve-grp", str(proxy), "--gap-to", f"{NET.host}:{gap}",
                      "--login", "0001:USER:secret", "--await-login", "30", "--linger", "10"]
        feeds[name] = pitch_feed(args, workdir, name, *ports[name], *extra)
    reports = finish_pitch_feeds(feeds, receiver, grp_ports)
    summary, _ = receiver.stop()
    by_name = {f["name"]: f for f in summary["feeds"]}
    for name, _ in variants:
        try:
            verdict = expect_verdict(args, summary, os.path.join(workdir, f"{name}.json"),
                                     lines=2, feed_name=name,
                                     allow_kernel_drops=backend.startswith("af_xdp"))
        except AssertionError as e:  # say what the recovery did
            pitch = by_name[name]["pitch"]
            raise AssertionError(f"{e}\n{name}: grp {pitch.get('grp')}; units {pitch['units']}; "
                                 f"feed {reports[name]}") from None
        book = by_name[name]["pitch"]["book"]
        expect_equal(f"{name}: unknown messages", book["unknown_messages"], 0)
        if name != "lose_both":
            assert verdict.endswith("; books complete"), (name, verdict)
            expect_equal(f"{name}: books", by_name[name]["pitch"]["instruments"],
                         by_name["ref"]["pitch"]["instruments"])
            expect_equal(f"{name}: unknown orders", book["unknown_orders"], 0)
    reference = by_name["ref"]["pitch"]
    assert len(reference["instruments"]) == 8, reference["instruments"].keys()
    assert all(i["orders"] for i in reference["instruments"].values()), reference
    for name in ("lose_a", "lose_b"):
        assert by_name[name]["duplicates"] > 0, name
        assert reports[name]["dropped_one_line_packets"] > 0, reports[name]
    grp = by_name["grp"]["pitch"]["grp"]
    dropped = reports["grp"]["dropped_packets"]
    assert dropped > 0, reports["grp"]
    expect_equal("grp: gaps recovered", grp["gaps_recovered"], grp["gaps"])
    assert grp["gaps"] >= dropped and grp["accepted"] == grp["responses"], grp
    # Every recovered message was resent (a request retried after its timeout resends some twice).
    assert grp["recovered_messages"] <= reports["grp"]["rerequests"]["messages_resent"], grp
    # Both lines lost blocks of both units, no proxy: each unit's gaps are its own.
    both = by_name["lose_both"]
    assert reports["lose_both"]["dropped_packets"] > 0, reports["lose_both"]
    stale = [u["unit"] for u in both["pitch"]["units"] if u["stale"]]
    expect_equal("lose_both: stale units", stale, [1, 2])
    expect_equal("lose_both: lost gaps", sum(u["lost_gaps"] for u in both["pitch"]["units"]),
                 reports["lose_both"]["dropped_packets"])
    expect_equal("lose_both: book state", both["book_state"], "stale")


def case_pitch_consumer_truth_through_grp(args, workdir, backend):
    """Cboe PITCH, the consumer-truth check: a feed losing every 37th block on both lines,
    recovered through a Gap Request Proxy, and a loss-free one; a consumer of the receiver's
    events has the exchange's books (md_feed --truth-out) after every sequence of each unit."""
    ports = {"ref": [free_port(), free_port()], "grp": [free_port(), free_port()]}
    grp = {"grp": (free_port(), free_port())}
    config = pitch_feeds_config(ports, grp).replace(
        'login = "0001:USER:secret"\n', 'login = "0001:USER:secret"\nrecovery_buffer = 16384\n')
    events, events_path = events_args(workdir, kinds=TRUTH_EVENT_KINDS)
    receiver = Receiver(args.receiver, config, workdir, backend, extra_args=events)
    proxy, gap = grp["grp"]
    feeds = {name: pitch_feed(args, workdir, name, *ports[name], "--truth-out",
                              os.path.join(workdir, f"{name}.truth.jsonl"), *extra)
             for name, extra in (("ref", ()), ("grp", (
                 "--drop-every", "37", "--drop-line", "both", "--serve-grp", str(proxy),
                 "--gap-to", f"{NET.host}:{gap}", "--login", "0001:USER:secret",
                 "--await-login", "30", "--linger", "10")))}
    reports = finish_pitch_feeds(feeds, receiver, grp)
    summary, _ = receiver.stop()
    assert reports["grp"]["dropped_packets"] > 0, reports["grp"]
    grp_counts = {f["name"]: f for f in summary["feeds"]}["grp"]["pitch"]["grp"]
    assert grp_counts["gaps_recovered"] > 0, grp_counts
    expect_equal("subscriber drops", summary["subscribers"][0]["dropped"], 0)
    consumer_truth_check(read_events(events_path),
                         {name: Truth(os.path.join(workdir, f"{name}.truth.jsonl"))
                          for name in ports})


def pitch_books(feed):
    """A pitch feed's books as a late joiner can have them: each symbol's best levels and live
    orders (the session's volume and last price are not in a spin)."""
    return {symbol: {k: v for k, v in i.items() if k not in ("volume", "last_price")}
            for symbol, i in feed["pitch"]["instruments"].items()}


def expect_pitch_books_from_events(events, feed):
    """The events' books equal the summary's: each symbol's live orders and bbo."""
    for symbol, want in feed["pitch"]["instruments"].items():
        got = events.get((feed["name"], symbol))
        assert got is not None, f"{feed['name']}: no events of {symbol}"
        orders = {o[0]: (o[1], o[3], o[2]) for o in want["orders"]}
        expect_equal(f"{feed['name']} {symbol}: orders from events", got["orders"], orders)
        bid = (want["bid_price"], want["bid_shares"]) if want["bid_shares"] else (0, 0)
        ask = (want["ask_price"], want["ask_shares"]) if want["ask_shares"] else (0, 0)
        expect_equal(f"{feed['name']} {symbol}: bbo from events", got["bbo"], bid + ask)


def whole_messages_of_a_killed_receiver(path, truth):
    """A killed receiver's --events-out is a prefix of its events cut anywhere (stdio's buffer
    was lost): its whole lines (read_events()), less every line of the last line's feed, unit
    and sequence (that message's, or recovery's, events may be cut short)."""
    with open(path) as f:
        text = f.read()
    events = json_lines(text[:text.rfind("\n") + 1])
    def key(e):
        return e["feed"], truth.unit_of.get(e.get("symbol"), 0), e["sequence"]
    cut = key(events[-1]) if events else None
    return [e for e in events if key(e) != cut]


def case_pitch_late_join_and_restart_through_spin(args, workdir, backend):
    """Cboe PITCH late join: a receiver started mid-stream buffers each unit's live messages,
    loads each unit's Spin (the unit's book as of a sequence the buffer reaches), replays what
    it buffered past it and goes live; killed (SIGKILL) later and started again, it does the
    same; killed again once the messages are over and started while the units send only
    heartbeats, it spins from the heartbeats' position. It ends with the books of a receiver
    that ran from the start, order by order, and a consumer of its events alone rebuilds those
    books. Each of the three receivers writes its own events: a consumer of each has the
    exchange's books (md_feed --truth-out) after every sequence it was live for."""
    port_a, port_b = free_port(), free_port()
    while True:  # the second unit's spin server listens on spin + 1: both free
        spin = free_port()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", spin + 1))
                break
            except OSError:
                continue
    os.makedirs(os.path.join(workdir, "ref"))
    os.makedirs(os.path.join(workdir, "late"))
    truth = os.path.join(workdir, "truth.jsonl")
    ref_config = ("[runtime]\nbackend = \"@BACKEND@\"\n[stats]\ninterval_s = 0.2\n[[feed]]\n"
                  f'name = "ref"\nprotocol = "pitch"\nunits = [1, 2]\nbind = "{NET.host}:{port_a}"\n')
    late_config = ("[runtime]\nbackend = \"@BACKEND@\"\n[stats]\ninterval_s = 0.2\n[[feed]]\n"
                   f'name = "late"\nprotocol = "pitch"\nunits = [1, 2]\n'
                   f'bind = "{NET.host}:{port_b}"\nlogin = "0001:USER:secret"\n'
                   f'spin = ["{NET.peer}:{spin}", "{NET.peer}:{spin + 1}"]\n')
    if NET.interface:
        ref_config += f'interface = "{NET.interface}"\n'
        late_config += f'interface = "{NET.interface}"\n'
    reference = Receiver(args.receiver, ref_config, os.path.join(workdir, "ref"),
                         "epoll" if backend.startswith("af_xdp") else backend)
    share = per_backend_share(args, backend)
    count = int(60000 * share)  # 2.5 a block: 24000 blocks at full size
    feed = start_feed(args.feed, "--protocol", "pitch", "--to", f"{NET.host}:{port_a}", "--to-b",
                      f"{NET.host}:{port_b}", "--units", "2", "--count", str(count), "--rate",
                      str(int(20000 * share)), "--seed", "7", "--serve-spin", str(spin), "--login",
                      "0001:USER:secret", "--tail-heartbeats", "120", "--truth-out", truth)
    reference.wait_total_packets(count // 15, feed=feed)
    runs = [events_args(os.path.join(workdir, "late"), f"events{n}", TRUTH_EVENT_KINDS)
            for n in range(3)]
    late = Receiver(args.receiver, late_config, os.path.join(workdir, "late"), backend,
                    extra_args=runs[0][0])
    reference.wait_total_packets(count // 5, feed=feed)
    late.process.kill()  # a crash: nothing is flushed, no summary
    late.process.wait(timeout=30)
    late = Receiver(args.receiver, late_config, os.path.join(workdir, "late"), backend,
                    extra_args=runs[1][0])
    wait_until(lambda: len(late.find("synchronized from a spin")) == 2, 30,
               "the restarted receiver's units live through their spins")
    # Once md_feed's messages are out, a receiver started now sees heartbeats alone (until the
    # SIGINT below ends them).
    feed.messages_sent()
    late.process.kill()
    late.process.wait(timeout=30)
    late = Receiver(args.receiver, late_config, os.path.join(workdir, "late"), backend,
                    extra_args=runs[2][0])
    # Live through its spins, it needs nothing more of the feed: its heartbeats may end.
    wait_until(lambda: len(late.find("synchronized from a spin")) == 2, 30,
               "the third receiver's units live through their spins")
    feed.send_signal(signal.SIGINT)
    finish_feed(feed)
    summary_ref, _ = reference.stop()
    summary_late, _ = late.stop()
    ref, joined = summary_ref["feeds"][0], summary_late["feeds"][0]
    spin_counts = joined["pitch"]["spin"]
    assert spin_counts["completed"] == 2 and spin_counts["orders_loaded"] > 0, spin_counts
    # Joined on heartbeats alone: nothing to buffer, the spins reached the stream's position.
    expect_equal("heartbeat-only join: buffered messages", spin_counts["buffered_messages"], 0)
    assert joined["late_start"] > 0, joined
    expect_equal("late joiner: phases", [u["phase"] for u in joined["pitch"]["units"]],
                 ["live", "live"])
    expect_equal("late joiner: book state", joined["book_state"], "complete")
    expect_equal("late joiner: books", pitch_books(joined), pitch_books(ref))
    expect_equal("late joiner: unknown orders", joined["pitch"]["book"]["unknown_orders"], 0)
    for sub in summary_late["subscribers"]:  # every event reached the file
        assert sub["dropped"] == 0 and sub["lost_notices"] == 0, sub
    truth = Truth(truth)  # stepped back to the start by each check
    for n, (_, path) in enumerate(runs):
        if n < 2:  # killed: what it wrote, to its last whole message
            events = whole_messages_of_a_killed_receiver(path, truth)
        else:
            events = read_events(path)
            expect_pitch_books_from_events(rebuild_from_events(events), joined)
        consumer_truth_check(events, {"late": truth}, require_checks=n == 2)


def case_pitch_recovery_servers_that_refuse_or_stall_are_counted(args, workdir, backend):
    """Cboe PITCH recovery that does not come: a Gap Request Proxy that accepts requests and
    never answers, one that refuses the receiver's login, and a Spin server that is not there.
    Nothing hangs: the silent proxy's gaps are given up after their tries and the refused
    login's at once (each stales its unit, counted exactly), the refusal is logged once as an
    error, and the units waiting for a spin stay buffering, their book state recovering."""
    ports = {name: [free_port() for _ in range(2)] for name in ("mute", "refused", "nospin")}
    grp = {name: (free_port(), free_port()) for name in ("mute", "refused")}
    config = pitch_feeds_config({name: ports[name] for name in grp}, grp)
    config = config.replace('name = "mute"\n', 'name = "mute"\ngrp_timeout_ms = 50\ngrp_tries = 2\n')
    head, tail = config.split('name = "refused"')
    config = head + 'name = "refused"' + tail.replace("0001:USER:secret", "0001:USER:wrong")
    config += (f'[[feed]]\nname = "nospin"\nprotocol = "pitch"\nunits = [1, 2]\n'
               f'bind = "{NET.host}:{ports["nospin"][0]}"\n'
               f'spin = ["{NET.peer}:{free_port()}", "{NET.peer}:{free_port()}"]\n')
    receiver = Receiver(args.receiver, config, workdir, backend)
    feeds = {}
    for name in ("mute", "refused"):
        proxy, gap = grp[name]
        extra = ["--drop-every", "53", "--drop-line", "both", "--serve-grp", str(proxy),
                 "--gap-to", f"{NET.host}:{gap}", "--login", "0001:USER:secret"]
        if name == "mute":
            extra.append("--mute-grp")
        feeds[name] = pitch_feed(args, workdir, name, *ports[name], *extra)
    # A lost gap sends a unit of a feed with spin servers to a spin: none answers.
    feeds["nospin"] = start_feed(args.feed, "--protocol", "pitch", "--to",
                                 f"{NET.host}:{ports['nospin'][0]}", "--units", "2", "--count",
                                 "20000", "--rate", "20000", "--seed", "5", "--tail-heartbeats",
                                 "1", "--drop-every", "53")
    reports = {name: finish_feed(process) for name, process in feeds.items()}
    summary, _ = receiver.stop()
    by_name = {f["name"]: f for f in summary["feeds"]}
    for name in ("mute", "refused"):
        feed = by_name[name]
        dropped = reports[name]["dropped_packets"]
        assert dropped > 0, reports[name]
        expect_equal(f"{name}: lost gaps", sum(u["lost_gaps"] for u in feed["pitch"]["units"]),
                     dropped)
        expect_equal(f"{name}: book state", feed["book_state"], "stale")
        expect_equal(f"{name}: gaps recovered", feed["pitch"]["grp"]["gaps_recovered"], 0)
        # A gap given up releases what was held behind it, later gaps of it too: an episode
        # of the proxy's may cover several of the feed's gaps.
        assert 0 < feed["pitch"]["grp"]["gaps_lost"] <= dropped, feed["pitch"]["grp"]
    mute = by_name["mute"]["pitch"]["grp"]
    expect_equal("mute: responses", mute["responses"], 0)
    assert mute["requests"] >= mute["gaps"] > 0, mute  # every gap asked for, none answered
    refused = by_name["refused"]["pitch"]["grp"]
    expect_equal("refused: login rejected", refused["login_rejected"], 1)
    expect_equal("refused: requests", refused["requests"], 0)
    errors = [l for l in receiver.lines if "login refused" in l]
    expect_equal("refused: logged once", len(errors), 1)
    nospin = by_name["nospin"]
    expect_equal("nospin: phases", [u["phase"] for u in nospin["pitch"]["units"]],
                 ["buffering", "buffering"])
    expect_equal("nospin: book state", nospin["book_state"], "recovering")
    expect_equal("nospin: spins", nospin["pitch"]["spin"]["completed"], 0)


def case_hostile_answers_never_corrupt_the_session(args, workdir, backend):
    """A 'server' that answers with wrong sessions, sequences never asked, duplicates and garbage:
    each is counted and ignored; the gap is then lost (counted), and the session is intact."""
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.settimeout(10)
    port = free_port()
    keys = (f'rerequest = "127.0.0.1:{server.getsockname()[1]}"\nrerequest_timeout_ms = 20\n'
            "rerequest_tries = 2\n")
    receiver = Receiver(args.receiver, single_feed_config(port, keys), workdir, backend)
    header = lambda session, seq, count: session + seq.to_bytes(8, "big") + count.to_bytes(2, "big")
    block = lambda body: len(body).to_bytes(2, "big") + body
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as feed_socket:
        to = ("127.0.0.1", port)
        feed_socket.sendto(header(b"SESSION001", 1, 1) + block(b"S" + bytes(11)), to)
        feed_socket.sendto(header(b"SESSION001", 2, 1) + block(b"S" + bytes(11)), to)
        feed_socket.sendto(header(b"SESSION001", 4, 1) + block(b"S" + bytes(11)), to)  # 3 missing
        request, source = server.recvfrom(100)
        assert len(request) == 20 and request[:10] == b"SESSION001", request
        assert int.from_bytes(request[10:18], "big") == 3, request
        server.sendto(header(b"EVIL000001", 3, 1) + block(b"S" + bytes(11)), source)  # foreign
        server.sendto(b"garbage", source)                                            # malformed
        server.sendto(header(b"SESSION001", 2, 1) + block(b"S" + bytes(11)), source)  # duplicate
        # Nothing real is answered: after its tries the receiver gives the gap up (its timers
        # run without traffic) and says so on its recovery line.
        wait_until(lambda: receiver.find("msgs recovered, 1 lost"), 30, "the gap given up")
        feed_socket.sendto(header(b"SESSION001", 5, 1) + block(b"S" + bytes(11)), to)
    server.close()
    summary, _ = receiver.stop()
    feed = summary["feeds"][0]
    expect_equal("foreign answers", feed["sequencing"]["foreign"], 1)
    expect_equal("malformed answers", feed["malformed"], 1)
    assert feed["duplicates"] >= 1, feed
    expect_equal("lost", feed["moldudp64"]["recovery"]["lost_messages"], 1)
    expect_equal("messages", feed["messages"], 4)  # 1, 2, 4, 5: in sequence, 3 lost
    expect_equal("next_sequence", feed["sequencing"]["next_sequence"], 6)


def case_top_redraws_a_live_view_on_a_terminal(args, workdir, backend):
    """--top N on a terminal: a screen per interval with the feed's rates and its busiest
    stocks; on a pipe: a warning and the plain stats lines."""
    import pty
    port = free_port()
    config = os.path.join(workdir, "top.toml")
    with open(config, "w") as f:
        f.write(single_feed_config(port).replace("@BACKEND@", "auto"))
    master, slave = pty.openpty()
    process = subprocess.Popen([args.receiver, "--config", config, "--top", "3"], stdout=slave,
                               stderr=subprocess.DEVNULL)
    os.close(slave)
    screen = bytearray()

    def read_screen():
        while True:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                return
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            screen.extend(chunk)

    try:
        wait_until(lambda: read_screen() or b"feed e2e" in screen, 30, "the first screen")
        run_feed(args.feed, "--to", f"127.0.0.1:{port}", "--count", "20000", "--rate", "200000",
                 "--symbols", "8")
        wait_until(lambda: read_screen() or screen.count(b"\x1b[2J") >= 3 and
                   b"orders" in screen.split(b"\x1b[2J")[-1] and
                   len(screen.split(b"\x1b[2J")[-1].split(b"\n")) >= 6, 30,
                   "a screen with three stock rows")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        os.close(master)
    last = screen.split(b"\x1b[2J")[-2 if screen.endswith(b"\x1b[2J") else -1].decode(errors="replace")
    assert "pkts/s" in last and "latency p50/p99" in last and "sequence" in last, last
    rows = [l for l in last.splitlines() if " x " in l and "price" not in l]
    expect_equal("stock rows", len(rows), 3)
    # Not a terminal: plain stats lines and a warning.
    receiver = Receiver(args.receiver, single_feed_config(free_port()), workdir, backend,
                        extra_args=("--top", "3"))
    assert receiver.find("--top needs a terminal"), receiver.lines[:5]
    receiver.stop()


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
    expect_equal("messages_by_type", itch(feed)["messages_by_type"], {"R": 1, "A": 2})
    expect_equal("sent messages", sent["messages"], 3)
    expect_equal("books", itch(feed)["books"], {"TEST": {"bid_price": 1234500, "bid_shares": 100,
                                                   "ask_price": 1240000, "ask_shares": 300,
                                                   "orders": 2}})


BAD_CONFIGS = [
    ("tiny interval", '[stats]\ninterval_s = 1e-6\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "interval_s", ":2:"),
    ("huge interval", '[stats]\ninterval_s = 1e10\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "interval_s", ":2:"),
    ("giant interval", '[stats]\ninterval_s = 1e30\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "interval_s", ":2:"),
    ("bad silence", '[stats]\nsilent_warning_s = -1\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "silent_warning_s", ":2:"),
    ("bad max_orders", '[book]\nmax_orders = 0\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "max_orders", ":2:"),
    ("missing cpu", '[runtime]\ncpus = [1000]\n[[feed]]\nname = "a"\nbind = "127.0.0.1:1"\n', "cpus", ":2:"),
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


def itch_header(type_byte, locate, timestamp):
    return type_byte + locate.to_bytes(2, "big") + (0).to_bytes(2, "big") + timestamp.to_bytes(6, "big")


def itch_directory(locate, symbol8):
    assert len(symbol8) == 8
    return itch_header(b"R", locate, 1) + symbol8 + bytes(39 - 19)


def itch_add(locate, ref, side, shares, price):
    return (itch_header(b"A", locate, 2) + ref.to_bytes(8, "big") + side + shares.to_bytes(4, "big")
            + b"TEST    " + price.to_bytes(4, "big"))


def itch_delete(ref):
    return itch_header(b"D", 1, 3) + ref.to_bytes(8, "big")


def write_binary_file(path, messages):
    with open(path, "wb") as f:
        for m in messages:
            f.write(len(m).to_bytes(2, "big") + m)


class Sink:
    """A UDP socket on loopback recording (arrival time, datagram) until closed."""

    def __init__(self):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.1)
        self.port = self.socket.getsockname()[1]
        self.datagrams = []
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            try:
                data = self.socket.recv(65536)
            except socket.timeout:
                continue
            self.datagrams.append((time.monotonic(), data))

    def close(self):
        self.running = False
        self.thread.join(timeout=5)
        self.socket.close()


def case_wire_bytes_and_book_counters_in_summary(args, workdir, backend):
    """Non-UTF-8 symbol bytes give valid UTF-8 JSON (bytes kept as \\u00XX); the order book's
    capacity comes from [book] max_orders and its overflow, duplicate and unknown references
    are counted; type bytes >= 0x80 are counted by md_feed."""
    odd_symbol = b"\xffAB\xc3(   "  # not UTF-8: a lone 0xFF, and 0xC3 without a continuation
    messages = [itch_directory(1, b"TEST    "), itch_directory(2, odd_symbol),
                itch_add(1, 11, b"B", 100, 1234500), itch_add(1, 12, b"S", 300, 1240000),
                itch_add(1, 13, b"B", 100, 1200000),  # beyond max_orders = 2: dropped
                itch_add(1, 11, b"B", 100, 1234500),  # duplicate reference
                itch_delete(99),                      # unknown reference
                b"\x99" + bytes(10)]                  # a type byte >= 0x80 (unknown to ITCH)
    path = os.path.join(workdir, "odd.itch")
    write_binary_file(path, messages)
    port = free_port()
    config = single_feed_config(port) + "[book]\nmax_orders = 2\n"
    receiver = Receiver(args.receiver, config, workdir, backend)
    sent = run_feed(args.feed, "--to", f"127.0.0.1:{port}", "--replay", path, "--rate", "0")
    summary, out = receiver.stop()
    with open(receiver.summary, "rb") as f:
        raw = f.read()
    assert all(b < 0x80 for b in raw), "the summary is ASCII (non-ASCII text is \\u-escaped)"
    feed = summary["feeds"][0]
    expect_equal("sent messages", sent["messages"], len(messages))
    expect_equal("sent messages_by_type", sent["messages_by_type"],
                 {"R": 2, "A": 4, "D": 1, "\u0099": 1})
    expect_equal("messages", feed["messages"], len(messages))
    expect_equal("unknown_messages", itch(feed)["unknown_messages"], 1)
    expect_equal("book_full_drops", itch(feed)["book_full_drops"], 1)
    expect_equal("duplicate_order_refs", itch(feed)["duplicate_order_refs"], 1)
    expect_equal("unknown_order_refs", itch(feed)["unknown_order_refs"], 1)
    expect_equal("book_max_orders", itch(feed)["book_max_orders"], 2)
    # Trailing spaces trimmed; every other byte kept as the code point of the same value.
    expect_equal("book keys", sorted(itch(feed)["books"]), sorted(["TEST", "\u00ffAB\u00c3("]))
    expect_equal("odd symbol bytes", [ord(c) for c in "\u00ffAB\u00c3("],
                 list(odd_symbol.rstrip(b" ")))
    warnings = receiver.find("[book] max_orders")
    expect_equal("book full warnings", len(warnings), 1)
    assert "\\xFFAB\\xC3(" in out, out  # the printed book escapes the bytes too


def case_sigterm_stops_promptly_at_interval_bounds(args, workdir, backend):
    for interval in ("0.01", "86400"):
        port = free_port()
        config = single_feed_config(port).replace("interval_s = 0.2", f"interval_s = {interval}")
        receiver = Receiver(args.receiver, config, workdir, backend)
        if interval == "0.01":
            wait_until(lambda: len(receiver.stats()) >= 5, 30, "five stats lines")
        took, out = receiver.terminate(signal.SIGTERM, timeout=30)
        if took > 5:
            raise AssertionError(f"interval_s {interval}: {took:.1f} s from SIGTERM to exit")
        assert receiver.find("SIGTERM received, stopping"), receiver.lines
        assert "md_receiver summary" in out, out
        summary = receiver.read_summary()
        expect_equal("feeds in summary", [f["name"] for f in summary["feeds"]], ["e2e"])
        if interval == "0.01":
            # One line per interval at most: no flood (a stalled loop skips, never bursts).
            elapsed = summary["elapsed_s"]
            assert len(receiver.stats()) <= elapsed / 0.01 + 5, (len(receiver.stats()), elapsed)
        else:
            expect_equal("stats lines at 86400 s", len(receiver.stats()), 0)


def case_silent_feeds_warn_rate_limited(args, workdir, backend):
    port_1, port_2 = free_port(), free_port()
    config = f"""
[runtime]
backend = "@BACKEND@"
[stats]
interval_s = 0.05
silent_warning_s = 0.3
[[feed]]
name = "quiet1"
bind = "127.0.0.1:{port_1}"
[[feed]]
name = "quiet2"
bind = "127.0.0.1:{port_2}"
"""
    receiver = Receiver(args.receiver, config, workdir, backend)
    assert receiver.find(f"feed quiet1: protocol moldudp64; line a on 127.0.0.1:{port_1} (unicast)"), \
        receiver.lines
    wait_until(lambda: receiver.find("feed quiet2: nothing received for"), 30, "a silence warning")
    # Twenty more stats intervals (1 s, four times silent_warning_s): still one warning per feed.
    start = len(receiver.stats())
    wait_until(lambda: len(receiver.stats(feed="quiet1")) >= start // 2 + 20, 30,
               "twenty more stats lines")
    for name in ("quiet1", "quiet2"):
        warnings = receiver.find(f"feed {name}: nothing received for")
        expect_equal(f"{name} warnings", len(warnings), 1)
        assert "since start" in warnings[0], warnings
    # One labelled stats line per feed and interval, naming rates and totals.
    names = [s[0] for s in receiver.stats()]
    assert names.count("quiet1") >= 20 and abs(names.count("quiet1") - names.count("quiet2")) <= 1
    line = next(l for l in receiver.lines if "stats quiet1 |" in l)
    for part in ("pkts/s", "msgs/s", "totals:", "missing", "dup pkts"):
        assert part in line, (part, line)
    receiver.terminate()


def case_feed_socket_keys_reach_the_sockets(args, workdir, backend):
    """buffer_size cuts longer datagrams on every backend (counted: stats line and summary),
    reuse_port lets another socket share the port, the startup line names the timestamps in
    effect (hardware on lo: software, with a warning), and ring_buffers = 1 (one io_uring buffer
    lent at a time) loses or strands nothing."""
    port, port_plain = free_port(), free_port()
    config = f"""
[runtime]
backend = "@BACKEND@"
workers = 2
[stats]
interval_s = 0.05
[[feed]]
name = "cut"
protocol = "raw"
parser = "count"
bind = "127.0.0.1:{port}"
interface = "lo"
buffer_size = 64
ring_buffers = 1
reuse_port = true
timestamps = "hardware"
busy_poll_us = 0
[[feed]]
name = "plain"
protocol = "raw"
parser = "count"
bind = "127.0.0.1:{port_plain}"
timestamps = "off"
"""
    receiver = Receiver(args.receiver, config, workdir, backend)
    assert receiver.find(f"feed cut: protocol raw; line a on 127.0.0.1:{port} (unicast), "
                         "timestamps software"), \
        receiver.lines
    assert receiver.find(
        f"feed plain: protocol raw; line a on 127.0.0.1:{port_plain} (unicast), timestamps off"), \
        receiver.lines
    warnings = [l for l in receiver.find("feed cut: line a: ") if "warn" in l]
    assert warnings and "using software" in warnings[0], receiver.lines
    assert not receiver.find("feed plain: line a: "), receiver.lines
    # SO_REUSEPORT on both: a second socket may bind the port (closed again before sending, so
    # that the kernel does not share the datagrams between the two).
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        other.bind(("127.0.0.1", port))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        for i in range(10):
            sender.sendto(b"x" * (200 if i % 2 else 50), ("127.0.0.1", port))
    wait_until(lambda: any(s[3]["packets"] >= 10 for s in receiver.stats(feed="cut")), 30,
               "a stats line with the 10 packets")
    wait_until(lambda: any("kernel drops, 5 truncated; book" in l
                           for l in receiver.find("stats cut |")), 30,
               "a stats line with 5 truncated")
    receiver.terminate()
    feed = next(f for f in receiver.read_summary()["feeds"] if f["name"] == "cut")
    expect_equal("packets", feed["packets"], 10)
    expect_equal("truncated", feed["truncated"], 5)
    expect_equal("bytes (cut at buffer_size)", feed["bytes"], 5 * 64 + 5 * 50)
    expect_equal("hardware_timestamps", feed["hardware_timestamps"], 0)
    # ring_buffers = 1: on io_uring the ring runs dry after every datagram; none may be stuck.
    assert "rearms" in feed, feed


def run_app(binary, *args, timeout=30):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)


def case_command_line_errors(args, workdir, backend):
    port = free_port()
    config = os.path.join(workdir, "ok.toml")
    with open(config, "w") as f:
        f.write(single_feed_config(port).replace("@BACKEND@", backend))
    for binary, base in ((args.receiver, ["--config", config]),
                         (args.feed, ["--to", f"127.0.0.1:{port}", "--count", "10"])):
        name = os.path.basename(binary)
        for duration in ("1e10", "-1", "1e300"):
            result = run_app(binary, *base, "--duration", duration)
            if result.returncode != 2 or "--duration" not in result.stderr:
                raise AssertionError(f"{name} --duration {duration}: exit {result.returncode}: "
                                     f"{result.stderr}")
            if len(result.stderr) > 200 or "[0 - 31536000] s" not in result.stderr:
                raise AssertionError(f"{name} --duration {duration}: unclear: {result.stderr}")
    result = run_app(args.feed, "--to", f"127.0.0.1:{port}", "--count", "-1")
    if result.returncode != 2 or "--count: expected a whole number >= 0, got -1" not in result.stderr:
        raise AssertionError(f"md_feed --count -1: exit {result.returncode}: {result.stderr}")
    result = run_app(args.receiver, "--confg", config)
    if result.returncode != 2 or "unknown option --confg" not in result.stderr:
        raise AssertionError(f"md_receiver --confg: exit {result.returncode}: {result.stderr}")
    result = run_app(args.feed, "--tto", f"127.0.0.1:{port}")
    if result.returncode != 2 or "unknown option --tto" not in result.stderr:
        raise AssertionError(f"md_feed --tto: exit {result.returncode}: {result.stderr}")
    result = run_app(args.receiver)
    if result.returncode != 2 or "--config is required" not in result.stderr:
        raise AssertionError(f"md_receiver without --config: {result.returncode}: {result.stderr}")
    for binary, default in ((args.receiver, "=info"), (args.feed, "=100000")):
        result = run_app(binary, "--help")
        if result.returncode != 0 or default not in result.stdout:
            raise AssertionError(f"{binary} --help shows no defaults: {result.stdout}")


def case_port_in_use_is_one_clear_error(args, workdir, backend):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        config = os.path.join(workdir, "busy.toml")
        with open(config, "w") as f:
            f.write(single_feed_config(port).replace("@BACKEND@", backend))
        result = run_app(args.receiver, "--config", config, "--duration", "1")
    if result.returncode != 1 or f"127.0.0.1:{port}" not in result.stderr:
        raise AssertionError(f"port in use: exit {result.returncode}: {result.stderr}")
    message = os.strerror(errno.EADDRINUSE)
    expect_equal(f"times '{message}' is printed", result.stderr.count(message), 1)


def case_md_feed_replay_and_report_errors(args, workdir, backend):
    sink = Sink()
    try:
        to = f"127.0.0.1:{sink.port}"
        # A zero-length record is skipped and counted; the replay goes on.
        path = os.path.join(workdir, "zero.itch")
        write_binary_file(path, [itch_directory(1, b"TEST    "), b"", itch_add(1, 11, b"B", 100, 1)])
        result = run_app(args.feed, "--to", to, "--replay", path, "--rate", "0")
        if result.returncode != 0:
            raise AssertionError(f"zero-length record: exit {result.returncode}: {result.stderr}")
        report = json.loads(result.stdout.strip().splitlines()[-1])
        expect_equal("messages after a zero-length record", report["messages"], 2)
        expect_equal("messages_by_type", report["messages_by_type"], {"R": 1, "A": 1})
        expect_equal("replay_malformed_records", report["replay_malformed_records"], 1)
        assert "has length 0" in result.stderr, result.stderr
        # A directory is not a BinaryFILE.
        result = run_app(args.feed, "--to", to, "--replay", workdir)
        if result.returncode != 1 or "Is a directory" not in result.stderr:
            raise AssertionError(f"--replay DIR: exit {result.returncode}: {result.stderr}")
        # An unwritable report fails before anything is sent.
        before = len(sink.datagrams)
        missing = os.path.join(workdir, "no-such-dir", "feed.json")
        result = run_app(args.feed, "--to", to, "--count", "10", "--report-json", missing)
        if result.returncode != 1 or f"cannot write the report to {missing}" not in result.stderr:
            raise AssertionError(f"unwritable report: exit {result.returncode}: {result.stderr}")
        assert "No such file or directory" in result.stderr, result.stderr
        # Everything sent so far has arrived (md_feed exited); the failed run added nothing.
        expect_equal("datagrams from the failed run", len(sink.datagrams) - before, 0)
    finally:
        sink.close()


def case_low_rate_packets_leave_within_the_heartbeat(args, workdir, backend):
    """At --rate 2 a batch of 8 takes 4 s to fill; no message may wait longer than the
    heartbeat interval (1 s) for its packet, and the line is never silent longer than that."""
    sink = Sink()
    heartbeat = 1.0
    slack = 0.6
    try:
        started = time.monotonic()
        result = run_app(args.feed, "--to", f"127.0.0.1:{sink.port}", "--rate", "2",
                         "--duration", "3", "--batch", "8", "--heartbeat", str(heartbeat))
        if result.returncode != 0:
            raise AssertionError(f"md_feed exit {result.returncode}: {result.stderr}")
        report = json.loads(result.stdout.strip().splitlines()[-1])
        wait_until(lambda: len(sink.datagrams) >= report["packets"] + report["heartbeats"]
                   + report["end_of_session_packets"], 10, "every datagram md_feed sent")
    finally:
        sink.close()
    times = [started] + [t for t, d in sink.datagrams
                         if int.from_bytes(d[18:20], "big") != 0xFFFF]
    data = [t for t, d in sink.datagrams if 0 < int.from_bytes(d[18:20], "big") < 0xFFFF]
    assert data, "no data packet arrived"
    first = data[0] - started
    if first > heartbeat + slack:
        raise AssertionError(f"the first data packet left after {first:.2f} s (heartbeat "
                             f"{heartbeat} s): messages waited in the packer")
    longest = max(b - a for a, b in zip(times, times[1:]))
    if longest > heartbeat + slack:
        raise AssertionError(f"the line was silent for {longest:.2f} s (heartbeat {heartbeat} s)")


def run_example_with_feed(command, port, feed_args):
    """Starts an example, runs md_feed with `feed_args` once the example has bound `port` (UDP
    on 127.0.0.1), waits for the example: (md_feed's report, stdout, stderr)."""
    example = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        sent = None
        deadline = time.monotonic() + 30
        while sent is None and time.monotonic() < deadline:  # until its socket is bound
            probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                probe.bind(("127.0.0.1", port))
                probe.close()
                time.sleep(0.02)  # a polling period, not a synchronization delay
            except OSError:
                probe.close()
                sent = run_feed(*feed_args)
        out, err = example.communicate(timeout=60)
    finally:
        if example.poll() is None:
            example.kill()
    assert sent is not None, "the example never bound its port"
    assert example.returncode == 0, (example.returncode, err)
    return sent, out, err


def case_example_receiver(args, workdir, backend):
    """apps/examples/receiver.cpp, the README's example: a config, 4 s of md_feed traffic,
    and its summary text counts every message md_feed sent."""
    port = free_port()
    path = os.path.join(workdir, "example.toml")
    with open(path, "w") as f:
        f.write(single_feed_config(port).replace("@BACKEND@", "auto"))
    sent, out, err = run_example_with_feed(
        [args.example, path, "4"], port,
        (args.feed, "--to", f"127.0.0.1:{port}", "--count", "20000", "--rate", "50000",
         "--symbols", "8"))
    match = re.search(r"feed e2e \(moldudp64\): (\d+) packets, (\d+) messages, (\d+) gaps", out)
    assert match, out
    expect_equal("example messages", int(match.group(2)), sent["messages"])
    expect_equal("example gaps", int(match.group(3)), 0)
    assert "stats e2e |" in out + err, out + err  # the library's stats lines reach its logger


BBO_LINE = re.compile(r"^(\S+) bbo (\d+) @ (\S+) / (\d+) @ (\S+)$")
TRADE_LINE = re.compile(r"^(\S+) trade (\d+) @ (\S+)$")


def case_bbo_trades_example(args, workdir, backend):
    """apps/examples/bbo_trades.cpp, the same code on an ITCH config and an MDP 3.0 one: best
    bid/offer changes and trades of the symbols it was given, and of no other."""
    binary = os.path.join(os.path.dirname(args.example), "example_bbo_trades")
    port = free_port()
    itch_config = os.path.join(workdir, "itch.toml")
    with open(itch_config, "w") as f:
        f.write(single_feed_config(port).replace("@BACKEND@", "auto"))
    a, b, snap, defs = free_port(), free_port(), free_port(), free_port()
    mdp3_config = os.path.join(workdir, "mdp3.toml")
    with open(mdp3_config, "w") as f:
        f.write('[[feed]]\nname = "cme"\nprotocol = "mdp3"\n'
                f'bind = "127.0.0.1:{a}"\nbind_b = "127.0.0.1:{b}"\n'
                f'snapshot_bind = "127.0.0.1:{snap}"\ndefinitions_bind = "127.0.0.1:{defs}"\n')
    runs = [
        (itch_config, port, ("AAPL", "MSFT"),
         ("--to", f"127.0.0.1:{port}", "--count", "20000", "--rate", "50000", "--symbols", "8")),
        (mdp3_config, a, ("SIG1000", "SIG1002"),
         ("--protocol", "mdp3", "--to", f"127.0.0.1:{a}", "--to-b", f"127.0.0.1:{b}",
          "--snapshot-to", f"127.0.0.1:{snap}", "--definitions-to", f"127.0.0.1:{defs}",
          "--count", "3000", "--rate", "2000", "--instruments", "4")),
    ]
    for config, bound, symbols, feed_args in runs:
        _, out, err = run_example_with_feed([binary, config, "4", *symbols], bound,
                                            (args.feed, *feed_args))
        seen = {symbol: {"bbo": 0, "trade": 0} for symbol in symbols}
        for line in out.splitlines():
            bbo, trade = BBO_LINE.match(line), TRADE_LINE.match(line)
            assert bbo or trade, (config, line)
            symbol = (bbo or trade).group(1)
            assert symbol in seen, (config, line)
            seen[symbol]["bbo" if bbo else "trade"] += 1
            if bbo and int(bbo.group(2)) and int(bbo.group(4)):  # both sides quoted
                assert float(bbo.group(3)) < float(bbo.group(5)), (config, line)
        for symbol, counts in seen.items():
            assert counts["bbo"] > 0 and counts["trade"] > 0, (config, symbol, counts, err[-500:])


def case_shared_memory_readers_see_the_books_and_events(args, workdir, backend):
    """[publish] shm: an ITCH feed and an MDP 3.0 feed in one segment. While they run, the Python
    reader follows every event (none lost) and md_top draws the books from another process;
    after the stop the segment's books equal the summary's: ITCH best bid and offer, MDP 3.0
    every level."""
    name = f"signet-e2e-{os.getpid()}"
    shm_reader = os.path.join(os.path.dirname(args.verdict), "signet_shm.py")
    md_top = os.path.join(os.path.dirname(args.receiver), "md_top")
    itch_port, a, b, snap, defs = free_port(), free_port(), free_port(), free_port(), free_port()
    config = single_feed_config(itch_port, f"""
[[feed]]
name = "cme"
protocol = "mdp3"
bind = "127.0.0.1:{a}"
bind_b = "127.0.0.1:{b}"
snapshot_bind = "127.0.0.1:{snap}"
definitions_bind = "127.0.0.1:{defs}"
[publish]
shm = "{name}"
shm_events = 1048576
""")
    receiver = Receiver(args.receiver, config, workdir, backend)
    try:
        follower = subprocess.Popen([sys.executable, shm_reader, name, "--events", "--from-start"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        run_feed(args.feed, "--to", f"{NET.host}:{itch_port}", "--count", "20000", "--rate",
                 "20000", "--batch", "8", "--symbols", "8", "--seed", "9")
        run_feed(args.feed, "--protocol", "mdp3", "--to", f"127.0.0.1:{a}", "--to-b",
                 f"127.0.0.1:{b}", "--snapshot-to", f"127.0.0.1:{snap}", "--definitions-to",
                 f"127.0.0.1:{defs}", "--count", "3000", "--rate", "3000", "--instruments", "4")
        receiver.wait_idle()
        top = subprocess.run([md_top, "--shm", name, "--once", "--rows", "50"],
                             capture_output=True, text=True, timeout=30)
        assert top.returncode == 0, top.stderr
        for symbol in ("AAPL", "SIG1000"):
            assert any(line.split()[1:2] == [symbol] for line in top.stdout.splitlines()), top.stdout
        summary, _ = receiver.stop()
        events, err = follower.communicate(timeout=60)  # it ends when the segment says closed
        assert follower.returncode == 0, err
        books = json.loads(subprocess.run([sys.executable, shm_reader, name, "--json"],
                                          capture_output=True, text=True, check=True).stdout)
    finally:
        if os.path.exists("/dev/shm/" + name):
            os.unlink("/dev/shm/" + name)
    expect_equal("segment state", books["state"], "closed")
    kinds = {}
    for line in events.splitlines():
        e = json.loads(line)
        assert e["kind"] != "events_lost", e
        kinds[(e["feed"], e["kind"])] = kinds.get((e["feed"], e["kind"]), 0) + 1
    shm_subscribers = [s for s in summary["subscribers"] if s["name"] == "shm"]
    expect_equal("events the reader followed", sum(kinds.values()),
                 sum(s["delivered"] for s in shm_subscribers))
    assert kinds.get(("e2e", "order_add"), 0) > 1000 and kinds.get(("cme", "level_update"), 0) > 100, kinds
    feeds = {f["name"]: f for f in summary["feeds"]}
    segment = {f["name"]: {s["symbol"]: s for s in f["instruments"].values()} for f in books["feeds"]}
    for symbol, want in itch(feeds["e2e"])["books"].items():
        got = segment["e2e"][symbol]
        top_of = lambda levels: (levels[0]["price"], levels[0]["size"]) if levels else None
        expect_equal(f"{symbol}: best bid", top_of(got["bids"]),
                     (want["bid_price"], want["bid_shares"]) if want["bid_shares"] else None)
        expect_equal(f"{symbol}: best ask", top_of(got["asks"]),
                     (want["ask_price"], want["ask_shares"]) if want["ask_shares"] else None)
    for symbol, want in feeds["cme"]["mdp3"]["instruments"].items():
        got = segment["cme"][symbol]
        for side, key in (("bids", "bids"), ("asks", "offers")):
            expect_equal(f"{symbol}: {side}", [[l["price"], l["size"], l["orders"]] for l in got[side]],
                         [list(l) for l in want[key]])


SHM_SAMPLE_PERIOD_S = 0.001  # the slot sampler's period: it samples, nothing waits on it


def load_signet_shm(args):
    """scripts/signet_shm.py as a module (its Segment reader)."""
    import importlib.util
    path = os.path.join(os.path.dirname(args.verdict), "signet_shm.py")
    spec = importlib.util.spec_from_file_location("signet_shm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample_shm_slots(segment, feed, max_samples, max_seconds, idle_s=0.5):
    """Copies every instrument slot of the segment's first feed, sweep after sweep, while
    `feed` (md_feed) runs: at most max_samples slots and max_seconds, and no longer than idle_s
    once the ring stopped moving after it had moved (the stream is over). Returns the samples
    in the order taken: (live, id, slot), live when the ring moved since the sweep before (the
    feed was still sending)."""
    samples, started = [], time.monotonic()
    written = segment.feed_header(0)["written"]
    moved_at = None
    while (feed.poll() is None and len(samples) < max_samples
           and time.monotonic() - started < max_seconds):
        sweep = list(segment.instruments(0))
        now_written, now = segment.feed_header(0)["written"], time.monotonic()
        live = now_written > written
        if live:
            moved_at = now
        elif moved_at is not None and now - moved_at > idle_s:
            break
        written = now_written
        samples.extend((live, id, slot) for id, slot in sweep)
        time.sleep(SHM_SAMPLE_PERIOD_S)
    return samples


def slot_truth_check(samples, truth, depth, max_failures=8):
    """Checks the sampled slots (sample_shm_slots) against md_feed's truth (one unit): (1) a
    slot's sequence never goes back between samples of its instrument; (2) a slot not flagged
    stale holds the exchange's book as of its sequence, both sides, best first, as many levels
    as the exchange has up to `depth` (the slot's). Raises naming the symbol, slot sequence and
    first differing level of the first failure of each (symbol, check), up to max_failures;
    returns counts."""
    failures, reported = [], set()
    counts = {"samples": len(samples), "live": 0, "stale": 0, "checks": 0, "live_checks": 0,
              "sequences": 0}

    def fail(text, key):
        if key not in reported and len(failures) < max_failures:
            reported.add(key)
            failures.append(text)
    last = {}
    for n, (live, _, slot) in enumerate(samples):
        symbol, sequence = slot["symbol"], slot["sequence"]
        counts["live"] += live
        if sequence < last.get(symbol, (0, 0))[0]:
            fail(f"{symbol}: slot sequence {sequence} (sample {n}) after {last[symbol][0]} "
                 f"(sample {last[symbol][1]}): backwards", (symbol, "backwards"))
        last[symbol] = max(last.get(symbol, (0, 0)), (sequence, n))
    # The truth steps forward only: the samples in order of sequence.
    wants, sequences = {}, set()
    for n in sorted(range(len(samples)), key=lambda i: samples[i][2]["sequence"]):
        live, _, slot = samples[n]
        symbol, sequence = slot["symbol"], slot["sequence"]
        if slot["stale"]:
            counts["stale"] += 1
            continue
        if symbol not in truth.unit_of:
            fail(f"slot symbol {symbol!r} (sequence {sequence}) is not the exchange's",
                 (symbol, "unknown"))
            continue
        truth.step_to(0, sequence)
        key = (symbol, sequence)
        if key not in wants:
            book = truth.book(symbol)
            wants[key] = {side: sorted(((p, size, orders) for (s, p), (size, orders)
                                        in book.items() if s == side),
                                       reverse=side == "B")[:depth] for side in ("B", "S")}
        want = wants[key]
        got = {"B": [(l["price"], l["size"], l["orders"]) for l in slot["bids"]],
               "S": [(l["price"], l["size"], l["orders"]) for l in slot["asks"]]}
        counts["checks"] += 1
        counts["live_checks"] += live
        sequences.add(key)
        if got != want:
            side = "B" if got["B"] != want["B"] else "S"
            i = next(i for i in range(max(len(got[side]), len(want[side])))
                     if got[side][i:i + 1] != want[side][i:i + 1])
            fail(f"{symbol} at slot sequence {sequence} (sample {n}, updates {slot['updates']}):"
                 f" not the exchange's book as of it: {'bid' if side == 'B' else 'ask'} level "
                 f"{i}: slot {got[side][i] if i < len(got[side]) else 'none'}, exchange "
                 f"{want[side][i] if i < len(want[side]) else 'none'} ({len(got[side])} vs "
                 f"{len(want[side])} levels)", (symbol, "levels"))
    counts["sequences"] = len(sequences)
    if failures:
        raise AssertionError(f"slot-truth check failed ({counts}):\n  " + "\n  ".join(failures))
    return counts


def case_shared_memory_slots_are_the_exchange_books_as_of_their_sequence(args, workdir, backend):
    """[publish] shm with ITCH over MoldUDP64, a packet in 50 dropped and re-requested (no
    GLIMPSE: no snapshot events, whose sequence is the live stream's next and comes before its
    live event, docs/publishing.md). While md_feed sends, this process samples every
    instrument's slot through the Python reader again and again; once md_feed's --truth-out is
    complete each sample not flagged stale must hold the exchange's book as of its sequence, to
    the slot's depth, and no slot's sequence may go back (slot_truth_check). At least 2000
    checked samples must come from while the feed was still sending."""
    shm = load_signet_shm(args)
    name = f"signet-e2e-slots-{os.getpid()}"
    server, port = free_port(), free_port()
    keys = (f'rerequest = "{NET.peer}:{server}"\nrerequest_timeout_ms = 20\n'
            f'[publish]\nshm = "{name}"\nshm_instruments = 16\nshm_events = 4096\n')
    receiver = Receiver(args.receiver, single_feed_config(port, keys), workdir, backend)
    truth_path = os.path.join(workdir, "truth.jsonl")
    started = time.monotonic()
    try:
        segment = shm.Segment(name)
        # 4 s of sending: under CI's load the Python sampler took only 1648 live samples in
        # the 2 s a 30000-message feed lasted.
        feed = start_feed(args.feed, "--to", f"{NET.host}:{port}", "--count", "60000",
                          "--rate", "15000", "--batch", "8", "--symbols", "8", "--seed", "13",
                          "--drop-every", "50", "--serve-rerequests", str(server), "--linger",
                          "30", "--truth-out", truth_path)
        samples = sample_shm_slots(segment, feed, max_samples=40000, max_seconds=8)
        sampled_s = time.monotonic() - started
        feed.stream_sent()
        receiver.wait_idle()
        end_tail_once_synchronized(feed, receiver)  # its last gaps answered, not a fixed second
        sent = finish_feed(feed)
        summary, _ = receiver.stop()
    finally:
        if os.path.exists("/dev/shm/" + name):
            os.unlink("/dev/shm/" + name)
    recovery = summary["feeds"][0]["moldudp64"]["recovery"]
    assert sent["dropped_packets"] > 0, sent
    expect_equal("lost_messages", recovery["lost_messages"], 0)
    counts = slot_truth_check(samples, Truth(truth_path), shm.DEPTH)
    print(f"    slots: {counts}, sampled for {sampled_s:.1f} s", flush=True)
    assert counts["live_checks"] >= 2000, f"too few slots checked while the feed sent: {counts}"
    assert counts["sequences"] >= 500, f"too few distinct slot states checked: {counts}"


# The cases' consumers check what was published; they are not what a case tests, so a
# server does not cut one off as a slow consumer (its defaults: a write to it blocked for 10 s,
# or 64 MB pending) when the machine starves it: under AddressSanitizer beside the background
# builds, the Python reader of two standby cases was cut off mid-run ("Slow Consumer Detected:
# WriteDeadline of 10s exceeded with 149 chunks of 9727952 total bytes"). The case of a slow
# consumer sets its own limits.
PATIENT_WITH_CONSUMERS = 'write_deadline: "120s"\nmax_pending: 1GB\n'


def nats_server(workdir, port=None, **options):
    """A real nats-server with JetStream on loopback (scripts/lib/nats_server.py) on this part's
    ports, started by the test and stopped (or killed) by it; `config` defaults to
    PATIENT_WITH_CONSUMERS."""
    options.setdefault("config", PATIENT_WITH_CONSUMERS)
    return NatsServer(workdir, port or free_port(), free_port(), **options)


def nats_cluster(workdir, listen="127.0.0.1"):
    """Three clustered nats-servers (JetStream), returned once routed and with a meta leader;
    stopped by a failed start (the caller stops them after). `listen`: their clients' address
    ("0.0.0.0" for other namespaces too)."""
    routes = [free_port() for _ in range(3)]
    servers = []
    try:
        for i in range(3):
            servers.append(nats_server(workdir, name=f"n{i + 1}", listen=listen, cluster=(
                routes[i], [r for j, r in enumerate(routes) if j != i])))
        wait_until(lambda: all(s.monitor_page("routez")["num_routes"] == 2 for s in servers)
                   and servers[0].jsz().get("meta_cluster", {}).get("leader"), 30, "the cluster")
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers


# This case's consumers (md_subscribe, signet_nats_reader): run_case() kills those a failed case
# left running (their --idle-exit is long: CONSUMER_IDLE_EXIT).
CONSUMERS = []


def md_subscribe(args, url, *extra):
    """md_subscribe in the background, returned once it has subscribed."""
    binary = os.path.join(os.path.dirname(args.receiver), "md_subscribe")
    process = subprocess.Popen([binary, "--server", url, *extra], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    CONSUMERS.append(process)
    line = process.stderr.readline()
    while "asking again" in line:  # a JetStream cluster still settling
        line = process.stderr.readline()
    assert "subscribed" in line, (line, process.poll())
    return process


def signet_nats_reader(args, url, *extra):
    """scripts/signet_nats.py (the Python reader) in the background, once it has subscribed."""
    script = os.path.join(os.path.dirname(args.verdict), "signet_nats.py")
    process = subprocess.Popen([sys.executable, script, "--server", url, *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    CONSUMERS.append(process)
    line = process.stderr.readline()
    assert "subscribed" in line, (line, process.poll())
    return process


def last_bbos(lines):
    """Each symbol's last bbo among JSON lines: symbol -> (bid_price, bid_size, ask_price, ask_size)."""
    out = {}
    for line in lines:
        e = json.loads(line)
        if e["kind"] == "bbo":
            out[e["symbol"]] = (e["bid_price"], e["bid_size"], e["ask_price"], e["ask_size"])
    return out


def summary_bbos(feed):
    out = {}
    for symbol, b in itch(feed)["books"].items():
        bid = (b["bid_price"], b["bid_shares"]) if b["bid_shares"] else (0, 0)
        ask = (b["ask_price"], b["ask_shares"]) if b["ask_shares"] else (0, 0)
        out[symbol] = bid + ask
    return out


def case_nats_consumers_get_every_event_and_late_ones_the_last_values(args, workdir, backend):
    """[publish] nats into a real nats-server: a consumer subscribed before the stream gets every
    event the receiver published (their last bbos are the receiver's books); a consumer that
    starts after the stream gets each symbol's current bbo first from the JetStream stream."""
    server = nats_server(workdir)
    try:
        port = free_port()
        receiver = Receiver(args.receiver, single_feed_config(
            port, f'[publish]\nnats = "{server.url}"\n'), workdir, backend)
        consumer = TimedLines(md_subscribe(args, server.url, "signet.e2e.>", "--json",
                                           "--idle-exit", CONSUMER_IDLE_EXIT))
        run_feed(args.feed, "--to", f"{NET.host}:{port}", "--count", "20000", "--rate", "20000",
                 "--batch", "8", "--symbols", "8", "--seed", "13")
        summary, _ = receiver.stop()
        nats = summary["publish"]["nats"]
        err = consumer.finish(has_all=lambda lines: len(lines) >= nats["published"])
        assert consumer.process.returncode == 0, err
        assert nats["state"] == "connected" and nats["streams"] == 1, nats
        assert nats["failed"] == 0 and nats["dropped"] == 0 and nats["stream_errors"] == 0, nats
        assert nats["stream_unstored"] == 0, nats
        lines = [line for _, line in consumer.lines]
        expect_equal("events the consumer got", len(lines), nats["published"])
        feed = summary["feeds"][0]
        want = summary_bbos(feed)
        expect_equal("last bbos on NATS", last_bbos(lines), want)
        late = md_subscribe(args, server.url, "signet.e2e.*.bbo", "--last", "--json", "--count",
                            str(len(want)), "--idle-exit", "10")
        out, err = late.communicate(timeout=60)
        assert late.returncode == 0, err
        expect_equal("a late consumer's bbos (JetStream last values)", last_bbos(out.splitlines()), want)
    finally:
        server.stop()


def case_nats_full_store_and_slow_consumer_leave_the_receiver_unaffected(args, workdir, backend):
    """A nats-server whose JetStream store holds 2 KB (the stream fills at once) and which cuts
    a consumer off once a write to it blocks for 200 ms; beside a normal consumer, one that
    subscribes and never reads. The receiver's books stay exact and its NATS connection is
    never lost; the normal consumer gets every event published; the server cut the slow one
    off; the receiver counts what the full stream did not store and says so once."""
    server = nats_server(workdir, config="jetstream {max_file_store: 2KB, max_memory_store: 2KB}\n"
                                         "write_deadline: \"200ms\"\nmax_pending: 1MB\n")
    slow = None
    try:
        port = free_port()
        receiver = Receiver(args.receiver, single_feed_config(
            port, f'[publish]\nnats = "{server.url}"\n'), workdir, backend)
        consumer = TimedLines(md_subscribe(args, server.url, "signet.e2e.>", "--json",
                                           "--idle-exit", CONSUMER_IDLE_EXIT))
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
        slow.connect(("127.0.0.1", server.port))
        slow.recv(4096)  # INFO
        slow.sendall(b'CONNECT {"verbose":false,"name":"slow"}\r\nSUB signet.e2e.> 1\r\n'
                     b"PING\r\n")
        wait_until(lambda: server.monitor_page("connz?subs=1")["num_connections"] >= 3, 30,
                   "the slow consumer's subscription")
        report = os.path.join(workdir, "feed.json")
        run_feed(args.feed, "--to", f"{NET.host}:{port}", "--count", "40000", "--rate", "20000",
                 "--batch", "8", "--symbols", "8", "--seed", "19", "--report-json", report)
        wait_until(lambda: receiver.find("did not store"), 30, "the full stream's warning")
        summary, _ = receiver.stop()
        published = summary["publish"]["nats"]["published"]
        err = consumer.finish(has_all=lambda lines: len(lines) >= published)
        assert consumer.process.returncode == 0, err
        slow_consumers = server.monitor_page("varz")["slow_consumers"]
    finally:
        if slow:
            slow.close()
        server.stop()
    expect_verdict(args, summary, report, lines=1)
    nats = summary["publish"]["nats"]
    assert nats["state"] == "connected" and nats["disconnects"] == 0, nats
    assert nats["failed"] == 0 and nats["dropped"] == 0 and nats["streams"] == 1, nats
    assert nats["stream_unstored"] > 0, nats
    expect_equal("events the normal consumer got", len(consumer.lines), nats["published"])
    expect_equal("'did not store' lines", len(receiver.find("did not store")), 1)
    assert slow_consumers >= 1, f"the server cut no slow consumer off ({slow_consumers})"


def case_nats_outages_leave_the_receiver_unaffected(args, workdir, backend):
    """No server at start, then one, then it is killed and started again mid-stream: the
    receiver's books stay exact (md-verdict), each outage is logged once, the summary counts the
    disconnect and the reconnects, and what was published after the last reconnect arrives. An
    md_subscribe --last whose JetStream consumer died with the server says so and exits 1 once
    the consumer's heartbeats stop, rather than waiting forever."""
    port = free_port()
    nats_port = free_port()
    receiver = Receiver(args.receiver, single_feed_config(
        port, f'[publish]\nnats = "nats://127.0.0.1:{nats_port}"\n'), workdir, backend)
    assert receiver.find("does not answer yet"), receiver.lines[-5:]
    report = os.path.join(workdir, "feed.json")
    feed = start_feed(args.feed, "--to", f"{NET.host}:{port}", "--count", "60000", "--rate",
                      "12000", "--batch", "8", "--symbols", "8", "--seed", "17", "--report-json",
                      report)
    server = None
    try:
        receiver.wait_total_packets(500, feed=feed)
        server = nats_server(workdir, nats_port)
        wait_until(lambda: receiver.find("publish nats: connected"), 30, "the connection")
        # The stream is made off the publishing path, just after the connection.
        wait_until(lambda: any(s["name"] == "signet_e2e"
                               for acc in server.jsz().get("account_details", [])
                               for s in acc.get("stream_detail", [])), 30, "the feed's stream")
        last = md_subscribe(args, server.url, "signet.e2e.*.bbo", "--last", "--json")
        assert json.loads(last.stdout.readline())["feed"] == "e2e"  # it follows the stream
        server.kill()
        wait_until(lambda: receiver.find("lost the connection"), 30, "the lost connection")
        server.start()
        wait_until(lambda: len(receiver.find("publish nats: connected")) >= 2, 30, "the reconnection")
        finish_feed(feed)
        summary, _ = receiver.stop()
        _, last_err = last.communicate(timeout=60)  # its consumer (in memory) died with the server
    finally:
        if server:
            server.stop()
    expect_equal("md_subscribe --last after its consumer died: exit", last.returncode, 1)
    assert "the JetStream consumer went silent" in last_err, last_err
    expect_verdict(args, summary, report, lines=1)
    nats = summary["publish"]["nats"]
    assert nats["state"] == "connected" and nats["disconnects"] == 1, nats
    assert nats["reconnects"] >= 1 and nats["published"] > 0 and nats["dropped"] == 0, nats
    expect_equal("'does not answer yet' lines", len(receiver.find("does not answer yet")), 1)
    expect_equal("'lost the connection' lines", len(receiver.find("lost the connection")), 1)


def case_nats_cluster_keeps_the_last_values_through_a_node_loss(args, workdir, backend):
    """The many-host layout on loopback: three clustered nats-servers, the feeds split between
    two receivers publishing to the cluster with last-value streams replicated 3 times, a
    consumer on the subjects. Mid-stream one server is killed and one receiver is killed and
    started again (it loads a GLIMPSE snapshot). Nothing crashes; the summaries say what
    happened; a consumer started afterwards gets each symbol's bbo from the streams, equal to
    the receivers' final books."""
    servers = nats_cluster(workdir)
    urls = ",".join(server.url for server in servers)
    port_a, port_b, glimpse = free_port(), free_port(), free_port()
    publish = f'[publish]\nnats = "{urls}"\nnats_replicas = 3\n'
    os.makedirs(os.path.join(workdir, "a"))
    os.makedirs(os.path.join(workdir, "b"))
    config_a = single_feed_config(port_a, publish).replace('name = "e2e"', 'name = "a"')
    config_b = late_join_config(port_b, glimpse, publish).replace('name = "e2e"', 'name = "b"')
    receivers = []
    try:
        a = Receiver(args.receiver, config_a, os.path.join(workdir, "a"), backend)
        b = Receiver(args.receiver, config_b, os.path.join(workdir, "b"), backend)
        receivers = [a, b]
        consumer = TimedLines(md_subscribe(args, servers[0].url, "signet.>", "--json",
                                           "--idle-exit", CONSUMER_IDLE_EXIT))
        # The streams run until the restarted receiver has synchronized (SIGINT then ends them):
        # the cluster's elections take their time on a loaded machine, and a receiver that
        # restarts after its stream ended has nothing to synchronize with.
        feed_a = start_feed(args.feed, "--to", f"{NET.host}:{port_a}", "--duration", "150",
                            "--rate", "10000", "--batch", "8", "--symbols", "8", "--seed", "21")
        feed_b = start_feed(args.feed, "--to", f"{NET.host}:{port_b}", "--duration", "150",
                            "--rate", "10000", "--batch", "8", "--symbols", "8", "--seed", "22",
                            "--serve-glimpse", str(glimpse), "--linger", "5")
        a.wait_total_packets(1000, feed=feed_a)
        def replicated():
            streams = {s["name"]: s for acc in servers[1].jsz().get("account_details", [])
                       for s in acc.get("stream_detail", [])}
            return all(name in streams and streams[name]["config"]["num_replicas"] == 3 and
                       len(streams[name]["cluster"].get("replicas", [])) == 2
                       for name in ("signet_a", "signet_b"))
        wait_until(replicated, 30, "both feeds' streams replicated on the three servers")
        servers[2].kill()
        # Core NATS publishing into a stream is not acknowledged: what is published while a
        # stream elects a leader is not kept (docs/publishing.md). The restart comes after.
        def led_by_the_living():
            streams = {s["name"]: s for acc in servers[1].jsz().get("account_details", [])
                       for s in acc.get("stream_detail", [])}
            return all(streams[name]["cluster"].get("leader") in ("n1", "n2")
                       for name in ("signet_a", "signet_b"))
        wait_until(led_by_the_living, 30, "stream leaders on the servers still running")
        b.process.kill()  # a crash: started again, it loads a snapshot
        b.process.wait(timeout=30)
        b = Receiver(args.receiver, config_b, os.path.join(workdir, "b"), backend)
        receivers = [a, b]
        wait_until(lambda: b.find("synchronized from a snapshot"), 30, "b's snapshot")
        seen = max((s[3]["packets"] for s in b.stats()), default=0)
        b.wait_total_packets(seen + 200, feed=feed_b)  # and goes on live
        # The restarted b asks for its stream while the cluster may still be electing the leader
        # of its JetStream metadata (the killed server's role): it tries once a second and says
        # when the stream is made.
        for r in (a, b):
            wait_until(lambda: not r.find("cannot make the JetStream stream")
                       or r.find("the JetStream streams are made"), 60, "the streams made")
        for feed in (feed_a, feed_b):
            feed.send_signal(signal.SIGINT)
        finish_feed(feed_a)
        finish_feed(feed_b)
        summary_a, _ = a.stop()
        summary_b, _ = b.stop()
        # Both feeds' messages reached it: SIGINT ends it.
        seen, read = set(), [0]

        def both_feeds(lines):  # parses each line once
            n = len(lines)
            seen.update(json.loads(line)["feed"] for _, line in lines[read[0]:n])
            read[0] = n
            return seen == {"a", "b"}
        err = consumer.finish(has_all=both_feeds)
        assert consumer.process.returncode == 0, err
        want = {("a", s): v for s, v in summary_bbos(summary_a["feeds"][0]).items()}
        want.update({("b", s): v for s, v in summary_bbos(summary_b["feeds"][0]).items()})
        assert len(want) == 16, want
        # One JetStream stream per feed: a --last subject stays within one feed. A cluster that
        # lost a server may still be catching a replica up: ask until the values are the
        # receivers' (bounded).
        def late_values():
            late = md_subscribe(args, servers[1].url, "signet.a.*.bbo", "signet.b.*.bbo",
                                "--last", "--json", "--count", str(len(want)), "--idle-exit", "5")
            late_out, err = late.communicate(timeout=120)
            assert late.returncode == 0, err
            got = {}
            for line in late_out.splitlines():
                e = json.loads(line)
                got[(e["feed"], e["symbol"])] = (e["bid_price"], e["bid_size"], e["ask_price"],
                                                 e["ask_size"])
            return got
        last = {}
        deadline = time.monotonic() + 60
        while last != want and time.monotonic() < deadline:
            last = late_values()
    finally:
        for r in receivers:
            if r.process.poll() is None:
                r.process.kill()
        for server in servers:
            server.stop()
    expect_equal("the last bbos from the replicated streams", last, want)
    assert b.find("synchronized from a snapshot"), b.lines[-5:]
    for summary in (summary_a, summary_b):
        nats = summary["publish"]["nats"]
        assert nats["published"] > 0 and nats["dropped"] == 0 and nats["streams"] >= 1, nats
        assert nats["state"] == "connected", nats
    # What the streams missed while a leader was elected is counted, not hidden (the late
    # consumer above got the final values anyway).
    print(f"  messages the streams did not store: a {summary_a['publish']['nats']['stream_unstored']}"
          f", b {summary_b['publish']['nats']['stream_unstored']}")
    both_feeds(consumer.lines)
    assert seen == {"a", "b"}, seen


def log_time(line):
    """The wall-clock time of an md_receiver log line ("[2026-12-03 04:06:58.320] ...")."""
    return datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S.%f").timestamp()


def standby_pair_config(port, urls, member, lease_ms=2000, extra="", host=None):
    """A member of the standby group "pair" (docs/publishing.md, "Standby groups") on one feed
    line (bound to `host`), publishing to the cluster `urls`."""
    return single_feed_config(port, f'[publish]\nnats = "{urls}"\nnats_replicas = 3\n'
                                    f'standby = "pair"\nstandby_name = "{member}"\n'
                                    f'standby_lease_ms = {lease_ms}\n{extra}', host)


# A consumer's --idle-exit (md_subscribe, signet_nats.py): a safety net that ends one a case
# forgot, never how a case ends it. A short one ended consumers early whenever a loaded machine
# (sanitizers, a takeover) kept them without a message that long; TimedLines.finish() ends them
# once they have what the stopped sources published.
CONSUMER_IDLE_EXIT = "300"
# TimedLines.finish() without a condition: seconds without a line, counted from when the sources
# had stopped, after which nothing more is on its way.
QUIET_AFTER_STOP = 3


class TimedLines:
    """A process's stdout lines with the monotonic time each arrived (a reader thread)."""

    def __init__(self, process):
        self.process = process
        self.lines = []  # (arrival, line)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append((time.monotonic(), line))

    def finish(self, timeout=60, has_all=None):
        """Ends the consumer once every source stopped; returns its stderr. SIGINT ends it when
        `has_all` (a condition on the lines, true once they hold everything the stopped sources
        published: ends_with_last_event(), a count) holds, or, without one (what was published
        is not known), once no line came for QUIET_AFTER_STOP s since this call; after 30 s
        anyway: the checks that follow say what it lacks."""
        if has_all is None:
            called = time.monotonic()

            def has_all(lines):
                last = max(called, lines[-1][0]) if lines else called
                return time.monotonic() - last >= QUIET_AFTER_STOP
        try:
            wait_until(lambda: has_all(self.lines) or self.process.poll() is not None, 30,
                       "the consumer's last message")
        except AssertionError:
            pass
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=timeout)
        self.thread.join(timeout=10)
        return self.process.stderr.read()


def ends_with_last_event(source, summary):
    """TimedLines.finish()'s condition: the last line is the last event of `source`, the
    --events file of the member that published last, stopped (`summary`: its summary). None
    (finish() then waits for a quiet spell) when that file is short: its writer dropped events
    at the stop."""
    if any(s["name"] == "events" and s["dropped"] > 0 for s in summary["subscribers"]):
        return None
    with open(source) as f:
        last = event_key(json.loads(f.readlines()[-1]))
    return lambda lines: lines and event_key(json.loads(lines[-1][1])) == last


def expect_whole_chain(events, what):
    """Every message continues the one before it by its position (standby.hpp's nats_position):
    index + 1 within a sequence, else index 0 whose previous is the last sequence; from the feed's
    first event (previous 0). Checked at every message a consumer takes: a hole or a double fails
    here, naming the message. Returns the resynchronizations' messages seen."""
    last, resyncs = None, 0
    for n, e in enumerate(events):
        pos = (e["sequence"], e["index"])
        if e.get("resync"):
            resyncs += 1
            last = pos
            continue
        if last is None:
            ok = e["index"] == 0 and e["previous"] == 0
        elif e["index"] > 0:
            ok = pos == (last[0], last[1] + 1)
        else:
            ok = e["previous"] == last[0] and e["sequence"] > last[0]
        assert ok, (f"{what}: message {n} at {pos} (previous {e['previous']}) does not follow "
                    f"{last}: a {'double' if last is not None and pos <= last else 'hole'}")
        last = pos
    return resyncs


def whole_chain_without_resync(timed, err, diagnosis):
    """The consumer's events (md_subscribe --json --chain, its stderr `err`): the chain whole at
    every message with no resynchronization, as md_subscribe counted it too; diagnosis() says
    more when not."""
    events = json_lines("".join(line for _, line in timed.lines))
    try:
        expect_equal("resynchronization messages", expect_whole_chain(events, "the consumer"), 0)
        assert f"md_subscribe: feed e2e: {len(events)} messages, 0 holes, 0 doubles" in err, err
    except AssertionError as e:
        raise AssertionError(f"{e}\n{diagnosis()}") from None
    return events


def event_key(e):
    """What identifies an event among a feed's JSON lines (md_receiver --events, md_subscribe)."""
    return (e["sequence"], e["kind"], e["instrument"], e.get("side"), e.get("price"), e.get("id"),
            e.get("bid_price"), e.get("ask_price"))


def expect_consumer_got_members_events(events, timed, member_dir, summary, workdir, who,
                                       short_own=False):
    """The consumer's events are the member's own (its --events file), one for one, in order,
    and the books they rebuild are the member's final books. With short_own (a ThreadSanitizer
    build: its --events writer falls behind, and what it still holds at the stop is more than
    the drain bound lets through, counted as dropped) the member's file may be a prefix."""
    own = read_events(os.path.join(member_dir, "events.jsonl"))
    writer = next(s for s in summary["subscribers"] if s["name"] == "events")
    if short_own and writer["dropped"] > 0:
        expect_equal(f"{who}'s events written and dropped", writer["delivered"] + writer["dropped"],
                     len(events))
        assert own and own[-1]["kind"] == "events_lost", own[-1:]  # the writer was told
        own = own[:-1]
        events_checked = events[:len(own)]
        print(f"  {who}'s --events writer dropped {writer['dropped']} at its stop (ThreadSanitizer):"
              f" the consumer's first {len(own)} events checked one for one")
    else:
        events_checked = events
    expect_equal(f"the consumer's events = {who}'s own", len(events_checked), len(own))
    for n, (got, want) in enumerate(zip(events_checked, own)):
        assert event_key(got) == event_key(want), f"message {n}: {got} != {who}'s {want}"
    expect_itch_books_from_events(rebuild_from_events(events), summary["feeds"][0])


def standby_diagnosis(receivers, servers, consumer=None):
    """What a failed standby case shows: the members' standby and NATS lines and last lines, the
    servers' slow-consumer and stale-connection lines and what `consumer`, if given, said (it is
    stopped for that)."""
    said = "the members said:\n"
    for r in receivers:
        said += "".join(l for l in r.lines if "publish standby" in l or "nats" in l.lower())
        said += "".join(r.lines[-2:])
    for server in servers:  # a consumer the server cut off, reconnected, has a hole
        with open(server.log, encoding="utf-8") as log:
            said += "".join(l for l in log if "Slow Consumer" in l or "Stale" in l)
    if consumer is not None:
        if consumer.poll() is None:
            consumer.terminate()
        try:
            consumer.wait(timeout=10)
            said += f"the consumer (exit {consumer.returncode}) said: " + consumer.stderr.read()
        except subprocess.TimeoutExpired:
            said += "the consumer did not stop\n"
    return said


def standby_pair_run(args, workdir, backend, hand_over, short_history=False, hosts=False):
    """Two members of one standby group on the same feed (md_feed sends every packet to both:
    --to and --to-b), a 3-node nats-server cluster, a consumer of the feed's every subject
    subscribed throughout. Mid-stream the leader is killed (-9) or, with hand_over, stopped by
    SIGTERM; the follower takes over. With short_history the members keep 1024 events, less
    than a lease's worth: the takeover is a resynchronization, counted, which the consumer sees
    flagged (each symbol's state), its chain going on from there; its last bbos are the
    survivor's. The consumer gets every event exactly once, in order (the
    chain of positions holds at every message), the very events the survivor made (its own
    --events), and its books equal the survivor's final books; the takeover time is measured at
    the consumer. The old leader, started again, follows. With `hosts` each member runs in a
    network namespace of its own (another host: PartitionNetns), the feed and the cluster
    reached over veth pairs."""
    nets = {}
    for name in ("a", "b") if hosts else ():
        nets[name] = PartitionNetns()
        if nets[name].error:
            print(f"  skipped: {nets[name].error}")
            for net in nets.values():
                net.close()
            return
    address = {name: nets[name].address if hosts else "127.0.0.1" for name in ("a", "b")}
    servers, receivers, feed, consumer = [], [], None, None
    lease_ms = 2000
    history = "standby_history = 1024\n" if short_history else ""

    def start(name, extra=()):
        """Member `name` in its namespace (if any), its cluster addresses as seen from there."""
        urls = ",".join(f"nats://{nets[name].nats_host}:{server.port}" if hosts else server.url
                        for server in servers)
        return Receiver(args.receiver, standby_pair_config(
                            ports[name], urls, name, lease_ms,
                            history + f'[metrics]\nlisten = "{address[name]}:{metrics[name]}"\n',
                            host=address[name] if hosts else None),
                        os.path.join(workdir, name), backend, extra_args=extra,
                        prefix=nets[name].prefix if hosts else ())

    try:
        servers = nats_cluster(workdir, listen="0.0.0.0" if hosts else "127.0.0.1")
        ports = {"a": free_port(), "b": free_port()}
        metrics = {"a": free_port(), "b": free_port()}
        members = {}
        for name in ("a", "b"):
            os.makedirs(os.path.join(workdir, name))
            members[name] = start(name, events_args(os.path.join(workdir, name), "events",
                                                    ",".join(ALL_PUBLISHED_KINDS))[0])
            receivers.append(members[name])
        leader = wait_until(lambda: next((n for n, r in members.items()
                                          if r.find("publish standby: feed e2e leads")), None),
                            30, "a leader of the feed")
        follower = "b" if leader == "a" else "a"
        wait_until(lambda: members[follower].find(f"publish standby: feed e2e follows {leader}"),
                   30, "the follower naming the leader")
        consumer = md_subscribe(args, servers[0].url, "signet.e2e.>", "--json", "--chain",
                                "--idle-exit", CONSUMER_IDLE_EXIT)
        timed = TimedLines(consumer)
        # The Python reader, on another server of the cluster: the same messages, the same chain.
        python_reader = TimedLines(signet_nats_reader(args, servers[1].url, "signet.e2e.>",
                                                      "--chain", "--idle-exit", CONSUMER_IDLE_EXIT))
        target = {name: f"{address[name] if hosts else NET.host}:{ports[name]}"
                  for name in ("a", "b")}
        feed = start_feed(args.feed, "--to", target["a"], "--to-b", target["b"],
                          "--count", "30000", "--rate", "6000",
                          "--symbols", "8", "--seed", "40")
        members[leader].wait_total_packets(1500, feed=feed)
        try:
            wait_until(lambda: len(timed.lines) > 1000, 30,
                       "the consumer's first thousand messages")
        except AssertionError as e:
            raise AssertionError(f"{e} ({len(timed.lines)} came)\n" +
                                 standby_diagnosis(receivers, servers, consumer))
        stopped_at, stopped_wall = time.monotonic(), time.time()
        if hand_over:
            took, _ = members[leader].terminate(signal.SIGTERM)
            assert members[leader].find("publish standby: feed e2e hands over"), \
                members[leader].lines[-5:]
        else:
            members[leader].process.kill()
            members[leader].process.wait(timeout=30)
        survivor = members[follower]
        wait_until(lambda: survivor.find("publish standby: feed e2e leads"), 10,
                   "the follower's takeover")
        labels = frozenset({("group", "pair"), ("feed", "e2e")})
        samples = scrape(metrics[follower], address[follower])
        expect_equal("the survivor's metrics", (samples[("signet_standby_leader", labels)],
                     samples[("signet_standby_takeovers_total", labels)]), (1.0, 1.0))
        # The old leader comes back mid-stream (a late start): it follows the survivor.
        old = start(leader)
        receivers.append(old)
        try:
            wait_until(lambda: old.find(f"publish standby: feed e2e follows {follower}"), 10,
                       "the restarted member following")
        except AssertionError as e:
            raise AssertionError(f"{e}: " + "".join(old.lines[-8:]))
        finish_feed(feed)
        old_summary, _ = old.stop()  # first: a follower stopping hands nothing over
        summary, _ = survivor.stop()
        has_all = ends_with_last_event(os.path.join(workdir, follower, "events.jsonl"), summary)
        err = timed.finish(has_all=has_all)
        assert consumer.returncode == 0, err
        python_err = python_reader.finish(has_all=has_all)
    finally:
        for r in receivers:
            if r.process.poll() is None:
                r.process.kill()
        if feed is not None and feed.poll() is None:
            feed.kill()
        for server in servers:
            server.stop()
        for net in nets.values():
            net.close()
    events = json_lines("".join(line for _, line in timed.lines))
    try:
        resyncs = expect_whole_chain(events, "the consumer")
        assert (resyncs > 0) == short_history, f"{resyncs} resynchronization messages"
        # md_subscribe --chain applies the same rule in C++ (docs/publishing.md).
        assert (f"md_subscribe: feed e2e: {len(events)} messages, 0 holes, 0 doubles, "
                f"{resyncs} resynchronization messages, 0 after a loss") in err, err
        # The Python reader saw the same: its chain's counts, and the events one for one.
        assert (f"signet_nats: feed e2e: {len(events)} messages, 0 holes, 0 doubles, "
                f"{resyncs} resynchronization messages, 0 after a loss") in python_err, python_err
        expect_equal("the Python reader's exit", python_reader.process.returncode, 0)
        python_events = json_lines("".join(line for _, line in python_reader.lines))
        for n, (got, want) in enumerate(zip(python_events, events)):
            assert (event_key(got), got["index"], got["previous"], got.get("resync")) == (
                event_key(want), want["index"], want["previous"], want.get("resync")), \
                f"the Python reader's message {n}: {got} != md_subscribe's {want}"
    except AssertionError as e:
        raise AssertionError(f"{e}\n{standby_diagnosis(receivers, servers)}the consumer said: {err}")
    if short_history:  # the state, flagged, then the survivor's events from its newest on
        with open(os.path.join(workdir, follower, "events.jsonl")) as f:
            own = [json.loads(line) for line in f]
        flagged = [n for n, e in enumerate(events) if e.get("resync")]
        resumed = events[flagged[-1] + 1:]
        at = next(n for n, e in enumerate(own) if event_key(e) == event_key(resumed[0]))
        expect_equal("the consumer's events after the resync = the survivor's",
                     [event_key(e) for e in resumed], [event_key(e) for e in own[at:]])
        expect_equal("the consumer's last bbos (with the resync's)", last_bbos(
            line for _, line in timed.lines), summary_bbos(summary["feeds"][0]))
        standby = summary["publish"]["standby"]["feeds"][0]
        expect_equal("the survivor's resyncs", (standby["role"], standby["takeovers"],
                                                standby["resyncs"]), ("leader", 1, 1))
        assert standby["resync_messages"] == len(flagged), (standby, len(flagged))
        print(f"  short history: a resynchronization of {len(flagged)} messages at the takeover")
        return
    # Exactly the survivor's own events, in its order (it made each of them from the feed).
    expect_consumer_got_members_events(events, timed, os.path.join(workdir, follower), summary,
                                       workdir, "the survivor", short_own=args.no_time_bounds)
    # The takeover, as the consumer saw it: from the stop to the first message of the new leader
    # (the longest silence after the stop ends there).
    after = [stopped_at] + [t for t, _ in timed.lines if t >= stopped_at]  # from the stop on
    gaps = [(b - a, b) for a, b in zip(after, after[1:])]
    gap, resumed_at = max(gaps) if gaps else (0, stopped_at)
    standby = summary["publish"]["standby"]["feeds"][0]
    resumed = "" if hand_over else f", resumed {(resumed_at - stopped_at) * 1000:.0f} ms after the kill"
    if not hand_over:
        resumed += (f" (its log: published again "
                    f"{(log_time(survivor.find('publish standby: feed e2e leads')[0]) - stopped_wall) * 1000:.0f}"
                    f" ms after)")
    print(f"  {'hand-over' if hand_over else 'kill -9'}: the consumer's longest silence "
          f"{gap * 1000:.0f} ms{resumed}; the survivor's takeover "
          f"{standby['last_takeover_ms']:.1f} ms after finding the lease free, resumed after "
          f"sequence {standby['resumed_after_sequence']} index {standby['resumed_after_index']}")
    expect_equal("survivor role " + "".join(survivor.find("publish standby: feed")),
                 (standby["role"], standby["takeovers"], standby["resyncs"]), ("leader", 1, 0))
    assert standby["resumed_after_sequence"] > 0, standby
    if args.no_time_bounds:
        pass
    elif hand_over:  # the leader publishes until it stops, then the follower at its next poll
        assert gap < 1.0, f"a hand-over left the consumer {gap:.3f} s without a message"
    else:  # within the lease plus 500 ms, by the survivor's log: its "leads" line comes once
        # its history is published. (At the consumer a loaded machine adds the pipe's backlog:
        # once 2.9 s after the kill, its longest silence hidden in 47 ms gaps.)
        bound = lease_ms / 1000 + 0.5
        took = log_time(survivor.find("publish standby: feed e2e leads")[0]) - stopped_wall
        assert took < bound, f"published again {took:.3f} s after the kill (bound {bound} s)"
    old_standby = old_summary["publish"]["standby"]["feeds"][0]
    expect_equal("the restarted member", (old_standby["role"], old_standby["holder"],
                                          old_standby["takeovers"]), ("follower", follower, 0))
    assert old_summary["publish"]["nats"]["published"] == 0, old_summary["publish"]


ALL_PUBLISHED_KINDS = ("instrument_definition", "trading_status", "order_add", "order_modify",
                       "order_delete", "order_execute", "level_update", "bbo", "trade",
                       "book_clear", "snapshot_begin", "snapshot_end", "instrument_stale",
                       "instrument_recovered")


def case_nats_standby_pair_takes_over_a_killed_leader_exactly(args, workdir, backend):
    standby_pair_run(args, workdir, backend, hand_over=False)


def case_nats_standby_pair_on_two_hosts_takes_over_a_killed_leader_exactly(args, workdir,
                                                                            backend):
    standby_pair_run(args, workdir, backend, hand_over=False, hosts=True)


def case_nats_standby_pair_hands_over_on_sigterm(args, workdir, backend):
    standby_pair_run(args, workdir, backend, hand_over=True)


def case_nats_standby_short_history_resynchronizes_visibly(args, workdir, backend):
    standby_pair_run(args, workdir, backend, hand_over=False, short_history=True)


def case_nats_standby_group_of_three_survives_two_kills(args, workdir, backend):
    """Three members of one group on the same feed and a 3-node cluster: a is started first
    and leads, b and c follow it. Mid-stream the leader is killed (-9), one of b and c takes
    over and the other follows the new leader; then the new leader is killed too and the last
    member takes over. A consumer of the whole feed subscribed throughout gets every event
    exactly once, in order (the chain holds at every message, no resynchronization), the very
    events the last member made, and ends with its books."""
    servers = nats_cluster(workdir)
    urls = ",".join(server.url for server in servers)
    members, feed, feed_c, consumer = {}, None, None, None
    try:
        ports = {name: free_port() for name in "abc"}
        for name in "abc":
            os.makedirs(os.path.join(workdir, name))
            members[name] = Receiver(
                args.receiver, standby_pair_config(ports[name], urls, name, 2000),
                os.path.join(workdir, name), backend,
                extra_args=events_args(os.path.join(workdir, name), "events",
                                       ",".join(ALL_PUBLISHED_KINDS))[0])
            if name == "a":  # the first started takes the lease
                wait_until(lambda: members["a"].find("publish standby: feed e2e leads"), 30,
                           "a leading")
        for name in "bc":
            wait_until(lambda: members[name].find("publish standby: feed e2e follows a"), 30,
                       f"{name} following a")
        consumer = md_subscribe(args, servers[0].url, "signet.e2e.>", "--json", "--chain",
                                "--idle-exit", CONSUMER_IDLE_EXIT)
        timed = TimedLines(consumer)
        # md_feed sends each packet to two destinations: a and b get lines A and B of one
        # md_feed, c the same stream from a second md_feed of the same seed (same packets).
        feed = start_feed(args.feed, "--to", f"{NET.host}:{ports['a']}", "--to-b",
                          f"{NET.host}:{ports['b']}", "--count", "30000", "--rate", "5000",
                          "--symbols", "8", "--seed", "41")
        feed_c = start_feed(args.feed, "--to", f"{NET.host}:{ports['c']}", "--count", "30000",
                            "--rate", "5000", "--symbols", "8", "--seed", "41")
        leader, alive = "a", ["a", "b", "c"]
        for round_ in (1, 2):
            seen = len(timed.lines)
            try:
                wait_until(lambda: len(timed.lines) > seen + 1000, 30,
                           f"a thousand more messages before kill {round_}")
            except AssertionError as e:
                raise AssertionError(f"{e}\n" + standby_diagnosis(list(members.values()),
                                                                    servers, consumer))
            members[leader].process.kill()
            members[leader].process.wait(timeout=30)
            alive.remove(leader)
            leader = wait_until(lambda: next((n for n in alive if members[n].find(
                "publish standby: feed e2e leads")), None), 10, f"a takeover after kill {round_}")
            for other in alive:
                if other != leader:
                    wait_until(lambda: members[other].find(
                        f"publish standby: feed e2e follows {leader}"), 10,
                        f"{other} following {leader}")
        finish_feed(feed)
        finish_feed(feed_c)
        summary, _ = members[leader].stop()
        err = timed.finish(has_all=ends_with_last_event(os.path.join(workdir, leader,
                                                                      "events.jsonl"), summary))
        assert consumer.returncode == 0, err
    finally:
        for r in members.values():
            if r.process.poll() is None:
                r.process.kill()
        for f in (feed, feed_c):
            if f is not None and f.poll() is None:
                f.kill()
        for server in servers:
            server.stop()
    events = whole_chain_without_resync(
        timed, err, lambda: standby_diagnosis(list(members.values()), servers))
    expect_consumer_got_members_events(events, timed, os.path.join(workdir, leader), summary,
                                       workdir, "the last member")
    standby = summary["publish"]["standby"]["feeds"][0]
    expect_equal("the last member", (standby["role"], standby["takeovers"], standby["resyncs"]),
                 ("leader", 1, 0))
    print(f"  two kills: the last member ({leader}) resumed after sequence "
          f"{standby['resumed_after_sequence']} index {standby['resumed_after_index']}")


class PartitionNetns:
    """A namespace (another host) joined to this one by two veth pairs: one carries the feed
    (the namespace's `address`), the other the NATS connection (this side's `nats_host`); cut()
    takes the NATS pair's link down (a partition: what is sent is lost, TCP retransmits) and
    heal() brings it back. Each holds a slot (a lock file) that names its links and subnets
    (10.231.2k+1.0/24 and 10.231.2k+2.0/24), so that cases running side by side, in this
    process or another part's, never share one. cut() is a firewall in the namespace (nftables:
    every packet to or from this side's NATS address dropped) where `nft` is installed, else the
    link taken down; `how` says which. None of it without root or iproute2: `error` says why."""

    SLOTS = 60

    def __init__(self):
        self.error, self.lock, self.name = None, None, None
        if os.geteuid() != 0 or not shutil.which("ip"):
            self.error = "needs root and iproute2"
            return
        for slot in range(self.SLOTS):
            lock = open(f"/tmp/signet-e2e-netns-{slot}.lock", "w")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.lock = lock
                break
            except BlockingIOError:
                lock.close()
        if self.lock is None:
            self.error = f"all {self.SLOTS} namespace slots are in use"
            return
        feed_net, nats_net = f"10.231.{2 * slot + 1}", f"10.231.{2 * slot + 2}"
        self.address, self.nats_host = f"{feed_net}.2", f"{nats_net}.1"
        self.name, self.feed, self.nats = f"sgpart{slot}", f"sgf{slot}", f"sgn{slot}"
        self._remove()  # what a killed run in this slot left behind
        steps = [["netns", "add", self.name],
                 ["link", "add", self.feed + "a", "type", "veth", "peer", "name", self.feed + "b"],
                 ["link", "add", self.nats + "a", "type", "veth", "peer", "name", self.nats + "b"],
                 ["link", "set", self.feed + "b", "netns", self.name],
                 ["link", "set", self.nats + "b", "netns", self.name],
                 ["addr", "add", f"{feed_net}.1/24", "dev", self.feed + "a"],
                 ["addr", "add", f"{nats_net}.1/24", "dev", self.nats + "a"],
                 ["link", "set", self.feed + "a", "up"], ["link", "set", self.nats + "a", "up"],
                 ["-n", self.name, "addr", "add", f"{feed_net}.2/24", "dev", self.feed + "b"],
                 ["-n", self.name, "addr", "add", f"{nats_net}.2/24", "dev", self.nats + "b"],
                 ["-n", self.name, "link", "set", self.feed + "b", "up"],
                 ["-n", self.name, "link", "set", self.nats + "b", "up"],
                 ["-n", self.name, "link", "set", "lo", "up"]]
        for step in steps:
            r = subprocess.run(["ip", *step], capture_output=True, text=True)
            if r.returncode != 0:
                self.error = f"ip {' '.join(step)}: {r.stderr.strip()}"
                self.close()
                return

    @property
    def prefix(self):
        return ("ip", "netns", "exec", self.name)

    @property
    def how(self):
        return "nftables in the namespace" if shutil.which("nft") else "the link taken down"

    def cut(self):
        if not shutil.which("nft"):
            subprocess.run(["ip", "link", "set", self.nats + "a", "down"], check=True)
            return
        nats = self.nats_host
        rules = (f"table inet sgpartition {{\n"
                 f" chain out {{ type filter hook output priority 0; ip daddr {nats} drop; }}\n"
                 f" chain in {{ type filter hook input priority 0; ip saddr {nats} drop; }}\n"
                 f"}}\n")
        subprocess.run([*self.prefix, "nft", "-f", "-"], input=rules, text=True, check=True)

    def heal(self):
        if not shutil.which("nft"):
            subprocess.run(["ip", "link", "set", self.nats + "a", "up"], check=True)
            return
        subprocess.run([*self.prefix, "nft", "delete", "table", "inet", "sgpartition"],
                       check=True)

    def _remove(self):
        for command in (["link", "del", self.feed + "a"], ["link", "del", self.nats + "a"],
                        ["netns", "del", self.name]):
            subprocess.run(["ip", *command], capture_output=True)

    def close(self):
        if self.name is not None:
            self._remove()
            self.name = None
        if self.lock is not None:
            self.lock.close()  # the slot is free again
            self.lock = None


def case_nats_standby_partitioned_leader_doubles_nothing(args, workdir, backend):
    """The leader in a namespace of its own (another host) receives the feed on one link and
    reaches NATS on another; mid-stream a firewall in its namespace drops all its NATS traffic
    (PartitionNetns.cut: nftables, or the link down) while the feed still arrives. The leader
    stops publishing at its deadline and its connection is cut, the follower takes over; 3 s
    later the partition heals and the old leader reconnects and follows. What the old leader
    sent before its deadline but the partition held back in its TCP connection must never
    arrive (it would double what the follower published): the
    consumer, subscribed throughout, gets every event exactly once, in order, and its books
    equal the survivor's. (Before the fence: one double after the heal.)"""
    net = PartitionNetns()
    if net.error:
        print(f"  skipped: {net.error}")
        return
    server, members, feed, consumer = None, [], None, None
    try:
        server = nats_server(workdir, listen="0.0.0.0")
        ports = {"a": free_port(), "b": free_port()}
        for name in ("a", "b"):
            os.makedirs(os.path.join(workdir, name))
        a = Receiver(args.receiver, single_feed_config(
            ports["a"], host=net.address, extra=f'[publish]\nnats = "nats://{net.nats_host}:{server.port}"\n'
                        f'standby = "part"\nstandby_name = "a"\nstandby_lease_ms = 2000\n'),
            os.path.join(workdir, "a"), backend, prefix=net.prefix)
        members.append(a)
        wait_until(lambda: a.find("publish standby: feed e2e leads"), 30, "a leading")
        b = Receiver(args.receiver, single_feed_config(
            ports["b"], f'[publish]\nnats = "{server.url}"\nstandby = "part"\n'
                        f'standby_name = "b"\nstandby_lease_ms = 2000\n'),
                     os.path.join(workdir, "b"), backend,
                     extra_args=events_args(os.path.join(workdir, "b"), "events",
                                            ",".join(ALL_PUBLISHED_KINDS))[0])
        members.append(b)
        wait_until(lambda: b.find("publish standby: feed e2e follows a"), 30, "b following a")
        consumer = md_subscribe(args, server.url, "signet.e2e.>", "--json", "--chain",
                                "--idle-exit", CONSUMER_IDLE_EXIT)
        timed = TimedLines(consumer)
        feed = start_feed(args.feed, "--to", f"{net.address}:{ports['a']}", "--to-b",
                          f"{NET.host}:{ports['b']}", "--rate", "6000", "--duration", "12",
                          "--symbols", "8", "--seed", "43")
        wait_until(lambda: len(timed.lines) > 10000, 30, "the consumer's first messages")
        net.cut()
        wait_until(lambda: b.find("publish standby: feed e2e leads"), 10, "b's takeover")
        healed_at = time.monotonic() + 3
        wait_until(lambda: time.monotonic() > healed_at, 5, "3 s of partition")
        net.heal()
        wait_until(lambda: a.find("publish standby: feed e2e follows b"), 30, "a following b")
        finish_feed(feed)
        b.wait_idle()
        old_summary, _ = a.stop()
        summary, _ = b.stop()
        err = timed.finish(has_all=ends_with_last_event(os.path.join(workdir, "b", "events.jsonl"),
                                                        summary))
    except AssertionError as e:
        raise AssertionError(f"{e}\n" + standby_diagnosis(members, [server] if server else [],
                                                            consumer))
    finally:
        for r in members:
            if r.process.poll() is None:
                r.process.kill()
        if feed is not None and feed.poll() is None:
            feed.kill()
        if server:
            server.stop()
        net.close()
    events = whole_chain_without_resync(
        timed, err, lambda: f"{standby_diagnosis(members, [])}the consumer said: {err}")
    expect_consumer_got_members_events(events, timed, os.path.join(workdir, "b"), summary,
                                       workdir, "the survivor")
    standby = summary["publish"]["standby"]["feeds"][0]
    expect_equal("the survivor", (standby["role"], standby["takeovers"]), ("leader", 1))
    assert a.find("NATS connection is cut"), "the old leader never cut its connection"
    old = old_summary["publish"]["standby"]["feeds"][0]
    expect_equal("the old leader after the heal", (old["role"], old["holder"]), ("follower", "b"))
    print(f"  partition ({net.how}): b resumed after sequence "
          f"{standby['resumed_after_sequence']}; the old leader cut its connection and follows; "
          f"0 doubles")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--receiver", required=True)
    parser.add_argument("--feed", required=True)
    parser.add_argument("--example", required=True, help="example_receiver")
    parser.add_argument("--backends",
                        default="auto,epoll,asio,auto+block1,epoll+block1,epoll+thread")
    parser.add_argument("--verdict", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "md-verdict"))
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--late-join-messages", type=int, default=200000,
                        help="the late-join cases' stream (the issue's full size: 2000000)")
    parser.add_argument("--late-join-rate", type=int, default=100000, help="its messages/s")
    parser.add_argument("--other-backends-share", type=float, default=0.25,
                        help="the late joins' streams on every backend but the first, as a "
                             "share of their size and rate (per_backend_share())")
    parser.add_argument("--five-point-backends", default="auto",
                        help="backends the five-join-point case runs on (\"\": none)")
    parser.add_argument("--per-backend-only", action="store_true",
                        help="only the cases that run on every backend (the af_xdp run)")
    parser.add_argument("--no-time-bounds", action="store_true",
                        help="the binaries are a ThreadSanitizer build: check what the cases "
                             "check but their time bounds (the dev leg checks those)")
    parser.add_argument("--part", default="1/1",
                        help="K/N: part K of N run side by side by one ctest: each takes the "
                             "next case no part has taken (see --share)")
    parser.add_argument("--share", default="",
                        help="the file through which the parts of one run take cases (default: "
                             "every N-th case from the K-th)")
    args = parser.parse_args()
    part, parts = (int(x) for x in args.part.split("/"))
    if not 1 <= part <= parts or parts > 4:
        parser.error("--part K/N needs 1 <= K <= N <= 4")
    set_port_range(part)
    cases = [case_faults_are_counted_exactly, case_ab_lines_fill_each_others_gaps,
             case_forged_packets_do_not_blind_the_feed, case_rerequests_recover_every_gap,
             case_malformed_datagrams_are_counted]
    runs = [(case, backend) for backend in args.backends.split(",") for case in cases]
    for backend in args.backends.split(","):
        runs.append((case_late_join_builds_the_books_of_a_full_run, backend))
        runs.append((case_snapshot_from_the_future_is_refused, backend))
    for backend in args.backends.split(","):
        runs.append((case_mdp3_loss_on_a_b_or_both_is_recovered, backend))
        runs.append((case_mdp3_events_rebuild_the_books, backend))
        runs.append((case_pitch_loss_on_a_b_or_both_is_recovered, backend))
        runs.append((case_pitch_late_join_and_restart_through_spin, backend))
    for backend in filter(None, args.five_point_backends.split(",")):
        runs.append((case_late_join_at_five_points, backend))
    if args.per_backend_only:
        # A killed receiver leaves its XDP program attached: the restart must take it over.
        runs.append((case_killed_receiver_restarts_into_the_full_books,
                     args.backends.split(",")[0]))
        runs = [(case, backend) for case, backend in runs if args.only in case.__name__]
        return run_cases(args, runs, part, parts)
    runs.append((case_killed_receiver_restarts_into_the_full_books, "auto"))
    runs.append((case_pitch_recovery_servers_that_refuse_or_stall_are_counted, "auto"))
    runs.append((case_pitch_consumer_truth_through_grp, "auto"))
    runs.append((case_mdp3_consumer_truth_on_one_line_loss_and_late_join, "auto"))
    runs.append((case_lost_gap_without_rerequests_loads_a_new_snapshot, "auto"))
    runs.append((case_faults_on_both_lines_beside_busy_cpus_are_exact, "auto"))
    runs.append((case_snapshot_server_down_or_refusing_is_counted, "auto"))
    runs.append((case_bad_config_exits_2_naming_the_key, "auto"))
    runs.append((case_replay_binary_file, "auto"))
    runs.append((case_top_redraws_a_live_view_on_a_terminal, "auto"))
    runs.append((case_hostile_answers_never_corrupt_the_session, "auto"))
    runs.append((case_metrics_endpoint_reconciles_with_feed_and_summary, "auto"))
    runs.append((case_record_writes_what_was_delivered_in_sequence, "auto"))
    runs.append((case_wire_bytes_and_book_counters_in_summary, "auto"))
    runs.append((case_sigterm_stops_promptly_at_interval_bounds, "auto"))
    runs.append((case_silent_feeds_warn_rate_limited, "auto"))
    runs.append((case_command_line_errors, "auto"))
    runs.append((case_port_in_use_is_one_clear_error, "auto"))
    runs.append((case_md_feed_replay_and_report_errors, "auto"))
    runs.append((case_low_rate_packets_leave_within_the_heartbeat, "auto"))
    runs.append((case_example_receiver, "auto"))
    runs.append((case_bbo_trades_example, "auto"))
    runs.append((case_shared_memory_readers_see_the_books_and_events, "auto"))
    runs.append((case_shared_memory_slots_are_the_exchange_books_as_of_their_sequence, "auto"))
    runs.append((case_nats_consumers_get_every_event_and_late_ones_the_last_values, "auto"))
    runs.append((case_nats_full_store_and_slow_consumer_leave_the_receiver_unaffected, "auto"))
    runs.append((case_nats_outages_leave_the_receiver_unaffected, "auto"))
    runs.append((case_nats_cluster_keeps_the_last_values_through_a_node_loss, "auto"))
    runs.append((case_nats_standby_pair_takes_over_a_killed_leader_exactly, "auto"))
    runs.append((case_nats_standby_pair_on_two_hosts_takes_over_a_killed_leader_exactly, "auto"))
    runs.append((case_nats_standby_pair_hands_over_on_sigterm, "auto"))
    runs.append((case_nats_standby_short_history_resynchronizes_visibly, "auto"))
    runs.append((case_nats_standby_group_of_three_survives_two_kills, "auto"))
    runs.append((case_nats_standby_partitioned_leader_doubles_nothing, "auto"))
    for backend in ("auto", "epoll", "asio"):
        runs.append((case_feed_socket_keys_reach_the_sockets, backend))
    runs = [(case, backend) for case, backend in runs if args.only in case.__name__]
    # The longest cases first (stable: a case's backends keep their order), so that no part
    # takes one near the end and runs on alone for it while the other has nothing left.
    runs.sort(key=lambda run: LONGEST_FIRST.index(run[0]) if run[0] in LONGEST_FIRST
              else len(LONGEST_FIRST))
    return run_cases(args, runs, part, parts)


# The cases that take 12 to 40 s each in the dev leg (scripts/test-times), the longest first.
LONGEST_FIRST = (
    case_nats_cluster_keeps_the_last_values_through_a_node_loss,
    case_nats_standby_partitioned_leader_doubles_nothing,
    case_nats_standby_pair_on_two_hosts_takes_over_a_killed_leader_exactly,
    case_nats_standby_pair_hands_over_on_sigterm,
    case_nats_standby_short_history_resynchronizes_visibly,
    case_late_join_at_five_points,
    case_nats_standby_group_of_three_survives_two_kills,
    case_nats_standby_pair_takes_over_a_killed_leader_exactly,
    case_late_join_builds_the_books_of_a_full_run,
    case_nats_outages_leave_the_receiver_unaffected,
    case_pitch_late_join_and_restart_through_spin,
)


def run_case(args, case, backend):
    """One run of a case; True if it passed."""
    with tempfile.TemporaryDirectory() as workdir:
        try:
            case(args, workdir, backend)
            return True
        except Exception:
            traceback.print_exc()
            for i, receiver in enumerate(Receiver.running):
                said = [l for l in receiver.lines if "[warning]" in l or "[error]" in l]
                print(f"receiver {i + 1}'s warnings and errors ({len(said)}):\n"
                      + "".join(said[:40]), end="")
            return False
        finally:
            for process in [r.process for r in Receiver.running] + Feed.running + CONSUMERS:
                if process.poll() is None:
                    process.kill()
                    process.wait(timeout=30)
            Receiver.running.clear()
            Feed.running.clear()
            CONSUMERS.clear()


def taken_by(args, runs, part, parts):
    """The runs of this part. With --share, the parts take cases one at a time from one counter
    in that file (under flock), so they end together whatever each case takes; the counter
    belongs to the ctest that started the parts (its pid and start time), so a file an earlier
    run left is started over. Without it, every N-th case from the K-th."""
    if not args.share or parts == 1:
        yield from runs[part - 1::parts]
        return
    with open(f"/proc/{os.getppid()}/stat") as f:
        owner = f"{os.getppid()}:{f.read().rsplit(')', 1)[1].split()[19]}"
    while True:
        with open(args.share, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            held = f.read().split()
            taken = int(held[1]) if len(held) == 2 and held[0] == owner else 0
            f.seek(0)
            f.truncate()
            f.write(f"{owner} {taken + 1}\n")
        if taken >= len(runs):
            return
        yield runs[taken]


def cpu_seconds():
    """CPU time of this process and of every child it has waited for (the receivers, feeds and
    consumers a case ran), user + system."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def run_cases(args, runs, part=1, parts=1):
    passed = failed = 0
    for case, backend in taken_by(args, runs, part, parts):
        label = f"{case.__name__}[{backend}]"
        use_network(backend)
        before = wire_drops()
        started = time.monotonic()
        cpu_before = cpu_seconds()
        ok = run_case(args, case, backend)
        dropped = wire_drops() - before
        for _ in range(2):
            if ok or dropped == 0:
                break
            # The veth pair lost datagrams before any receiver saw them (both lines of a feed
            # cross it: a burst there is a gap no receiver can fill): the wire failed, not the
            # receiver. Twice more at most; a failure with no wire drop is never run again.
            print(f"[  RETRY   ] {label}: the veth pair dropped {dropped} datagrams during "
                  f"the run", flush=True)
            before = wire_drops()
            ok = run_case(args, case, backend)
            dropped = wire_drops() - before
        # scripts/test-times reads the case's wall and CPU time from this line (ctest's
        # LastTest.log); the CPU time misses a process the case left running (none should).
        print(f"[  {'PASSED' if ok else 'FAILED'}  ] {label} ({time.monotonic() - started:.1f} s,"
              f" {cpu_seconds() - cpu_before:.1f} CPU-s)"
              + (f" (the veth pair dropped {dropped} datagrams)" if dropped else ""), flush=True)
        passed += 1 if ok else 0
        failed += 0 if ok else 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
