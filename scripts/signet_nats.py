#!/usr/bin/env python3
"""Reads what a signet receiver publishes to NATS (docs/publishing.md) with the standard library
only: a core NATS subscriber, each message decoded (the binary layout or the JSON object) with its
position, and each feed's chain of positions checked as a consumer must ("Standby groups": what a
consumer sees). A module (Subscriber, decode, Chain) and a command line.

  scripts/signet_nats.py SUBJECT [--server URL[,URL...]]   one JSON line per message
  scripts/signet_nats.py 'signet.itch.>' --chain           and each feed's chain checked: holes
                                                           and doubles on stderr as they come,
                                                           the counts at exit (status 3 if any)
  --count N: exit after N messages; --idle-exit S: exit after S seconds without one.

Each line is the event's fields (as md_receiver --events writes them) plus "feed", "symbol" (the
subject's), "index", "previous" and, when set, "resync": true / "after_loss": true.
"""
import argparse
import json
import os
import signal
import socket
import struct
import sys
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from signet_shm import decode_event  # noqa: E402  (the 64-byte md::event, one decoder)

MAGIC = b"SGEV"
POSITION = struct.Struct("<QIH")  # previous, index, flags at offset 8 (header size >= 24)
RESYNC, AFTER_LOSS = 1, 2


class Subscriber:
    """One core NATS subscription on the first server of `urls` (comma-separated) that answers.
    messages() yields (subject, payload) and None at each `poll_s` without a message."""

    def __init__(self, urls, subject, timeout=5.0, poll_s=0.2):
        errors = []
        for url in urls.split(","):
            parts = urlsplit(url.strip() if "//" in url else "nats://" + url.strip())
            try:
                self.sock = socket.create_connection((parts.hostname or "127.0.0.1",
                                                      parts.port or 4222), timeout=timeout)
                break
            except OSError as e:
                errors.append(f"{url.strip()}: {e}")
        else:
            raise ConnectionError("no NATS server answered (" + "; ".join(errors) + ")")
        self.buffer = bytearray()
        line = self._line()
        if not line.startswith(b"INFO "):
            raise ConnectionError(f"not a NATS server: {line[:80]!r}")
        connect = {"verbose": False, "pedantic": False, "name": "signet_nats.py",
                   "lang": "python", "version": "1", "protocol": 1}
        self.sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\n" +
                          b"SUB " + subject.encode() + b" 1\r\nPING\r\n")
        while (line := self._line()) != b"PONG":  # the server took CONNECT and SUB
            if line.startswith(b"-ERR"):
                raise ConnectionError(line.decode("utf-8", "replace"))
        self.sock.settimeout(poll_s)

    def _fill(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.buffer += data

    def _line(self):
        while (end := self.buffer.find(b"\r\n")) < 0:
            self._fill()
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 2]
        return line

    def messages(self):
        while True:
            try:
                line = self._line()
            except socket.timeout:
                yield None
                continue
            if line.startswith(b"MSG "):  # MSG <subject> <sid> [reply] <size>
                fields = line.split()
                size = int(fields[-1])
                while len(self.buffer) < size + 2:
                    self._fill()
                payload = bytes(self.buffer[:size])
                del self.buffer[:size + 2]
                yield fields[1].decode(), payload
            elif line == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise ConnectionError(line.decode("utf-8", "replace"))
            # +OK, INFO (cluster updates) and PONG need nothing

    def close(self):
        self.sock.close()


def decode(subject, payload):
    """The message's event as a dict with its position ("index", "previous", flags), its feed and
    symbol (from signet.<feed>.<symbol>.<kind>); None when it is not a signet message."""
    if payload[:4] == MAGIC and len(payload) >= 8:
        version, header = struct.unpack_from("<HH", payload, 4)
        if version != 1 or header < 8 or len(payload) < header + 64:
            return None
        e = decode_event(payload[header:header + 64])
        if header >= 8 + POSITION.size:
            previous, index, flags = POSITION.unpack_from(payload, 8)
            e.update(index=index, previous=previous)
            if flags & RESYNC:
                e["resync"] = True
            if flags & AFTER_LOSS:
                e["after_loss"] = True
    elif payload[:1] == b"{":
        try:
            e = json.loads(payload)
        except ValueError:
            return None
    else:
        return None
    parts = subject.split(".")
    if len(parts) >= 4:
        e.setdefault("feed", parts[1])
        e.setdefault("symbol", parts[2])
    return e


class Chain:
    """One feed's chain of positions as a consumer checks it (standby.hpp's nats_position):
    index + 1 within a sequence, else index 0 whose previous is the last sequence; a
    resynchronization's message restarts the chain at its position."""

    def __init__(self):
        self.last = None  # (sequence, index)
        self.messages = self.holes = self.doubles = self.resyncs = self.after_loss = 0

    def take(self, e):
        """Counts the message; returns "hole" or "double" when it does not continue the chain."""
        self.messages += 1
        position = (e["sequence"], e["index"])
        if e.get("resync"):
            self.resyncs += 1
            self.last = position
            return None
        if e.get("after_loss"):
            self.after_loss += 1
        verdict = None
        if self.last is not None:
            if e["index"] > 0:
                ok = position == (self.last[0], self.last[1] + 1)
            else:
                ok = e["previous"] == self.last[0] and e["sequence"] > self.last[0]
            if not ok:
                verdict = "double" if position <= self.last else "hole"
                if verdict == "double":
                    self.doubles += 1
                else:
                    self.holes += 1
        if self.last is None or self.last < position:
            self.last = position
        return verdict

    def summary(self):
        return (f"{self.messages} messages, {self.holes} holes, {self.doubles} doubles, "
                f"{self.resyncs} resynchronization messages, {self.after_loss} after a loss")


def run(args, out):
    subscriber = Subscriber(args.server, args.subject)
    print(f"signet_nats: subscribed to {args.subject}", file=sys.stderr, flush=True)
    chains, seen, idle_since = {}, 0, time.monotonic()
    try:
        for message in subscriber.messages():
            if message is None:
                if args.idle_exit and time.monotonic() - idle_since > args.idle_exit:
                    break
                continue
            idle_since = time.monotonic()
            e = decode(*message)
            if e is None:
                print(f"signet_nats: {message[0]}: not a signet message", file=sys.stderr)
                continue
            if args.chain and "index" in e:
                chain = chains.setdefault(e["feed"], Chain())
                verdict = chain.take(e)
                if verdict and chain.holes + chain.doubles <= 10:
                    print(f"signet_nats: feed {e['feed']}: a {verdict}: sequence {e['sequence']} "
                          f"index {e['index']} (previous {e['previous']}) after sequence "
                          f"{chain.last[0]} index {chain.last[1]}", file=sys.stderr)
            out.write(json.dumps(e) + "\n")
            seen += 1
            if args.count and seen >= args.count:
                break
            if subscriber.buffer.find(b"\r\n") < 0:
                out.flush()  # nothing more at hand: let the reader have it
    except KeyboardInterrupt:
        pass
    finally:
        out.flush()
        subscriber.close()
    for feed, chain in chains.items():
        print(f"signet_nats: feed {feed}: {chain.summary()}", file=sys.stderr)
    return 3 if any(c.holes + c.doubles for c in chains.values()) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("subject", help="e.g. 'signet.itch.>' (a whole feed) or "
                                        "'signet.itch.AAPL.bbo'")
    parser.add_argument("--server", default="nats://127.0.0.1:4222",
                        help="the NATS server (a comma-separated list: the first that answers)")
    parser.add_argument("--chain", action="store_true",
                        help="check each feed's chain of positions (exit 3 on a hole or double)")
    parser.add_argument("--count", type=int, default=0, help="exit after this many messages")
    parser.add_argument("--idle-exit", type=float, default=0,
                        help="exit after this many seconds without a message")
    args = parser.parse_args()
    try:
        return run(args, sys.stdout)
    except (ConnectionError, OSError) as e:
        print(f"signet_nats: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a closed pipe ends it quietly, as Unix tools do
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # the counts, then exit
    sys.exit(main())
