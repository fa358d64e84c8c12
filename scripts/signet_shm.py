#!/usr/bin/env python3
"""Reads a signet receiver's shared-memory segment (config `[publish] shm = "NAME"`; layout
version 1, docs/publishing.md) with the standard library only: a module (Segment) and a command line.

  scripts/signet_shm.py NAME                 every instrument's book (10 levels a side), once
  scripts/signet_shm.py NAME --json          the same as one JSON document
  scripts/signet_shm.py NAME --events        the events from now on, one JSON line each
  scripts/signet_shm.py NAME --events --from-start   the events the ring still holds first

The mapping is read-only: a reader can neither slow nor corrupt the receiver. Consistency is
the segment's protocol: an instrument is copied until its seqlock version was even and unchanged
across the copy; an event until its slot's sequence said it was whole before and after. (CPython
reads each 8-byte word in one load on x86-64, and the re-check after the copy catches a writer
that was in the middle.)
"""
import argparse
import json
import mmap
import os
import signal
import struct
import sys
import time

MAGIC = b"SIGNETMD"
VERSION = 1
HEADER = struct.Struct("<8sIIQQIIIII76x")  # segment_header up to its feed entries (128 bytes)
FEED_ENTRY = struct.Struct("<32sQIIQQ64x")  # 128 bytes
FEED_HEADER = struct.Struct("<QQQI")  # written, updated_ns, unslotted, book_state
LEVEL = struct.Struct("<qQI4x")  # 24 bytes
SLOT_HEAD = struct.Struct("<Q20sbBBBBB6sqQQQQ")  # 80 bytes, then the levels
SLOT_SIZE = 576
DEPTH = 10
EVENT_SLOT = 72
EVENT_HEAD = struct.Struct("<BcHIQQQ")  # md::event's 32-byte header

KINDS = ["instrument_definition", "trading_status", "order_add", "order_modify", "order_delete",
         "order_execute", "level_update", "bbo", "trade", "book_clear", "snapshot_begin",
         "snapshot_end", "instrument_stale", "instrument_recovered", "events_lost"]
STATES = ["unknown", "pre_open", "open", "paused", "halted", "closed", "quote_only"]
BOOK_STATES = ["none", "complete", "recovering", "stale"]
ALL_INSTRUMENTS = 0xFFFFFFFF


class Lapped(Exception):
    """The writer overwrote events this reader had not read: re-read the books."""


class Segment:
    """One mapping of /dev/shm/NAME, read-only."""

    def __init__(self, name):
        self.path = "/dev/shm/" + name.lstrip("/")
        fd = os.open(self.path, os.O_RDONLY)
        try:
            self.map = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        (magic, version, _, self.generation, size, _, feeds, slot_size, event_size,
         depth) = HEADER.unpack_from(self.map, 0)
        if magic != MAGIC or version != VERSION:
            raise ValueError(f"{self.path} is not a version-{VERSION} signet segment")
        if self.state() == "creating":
            raise ValueError(f"{self.path} is still being created")
        if slot_size != SLOT_SIZE or event_size != EVENT_SLOT or depth != DEPTH or size > len(self.map):
            raise ValueError(f"{self.path} has an inconsistent header")
        self.feeds = []
        for i in range(feeds):
            name_, offset, instruments, events, slots_at, ring_at = FEED_ENTRY.unpack_from(
                self.map, 128 + i * FEED_ENTRY.size)
            self.feeds.append({"name": name_.rstrip(b"\0").decode(), "offset": offset,
                               "instruments": instruments, "events": events,
                               "slots": slots_at, "ring": ring_at})

    def state(self):
        return ["creating", "live", "closed"][struct.unpack_from("<I", self.map, 32)[0]]

    def replaced(self):
        """The name now opens another segment (a restarted receiver) or none."""
        try:
            with open(self.path, "rb") as f:
                head = f.read(HEADER.size)
        except FileNotFoundError:
            return True
        return len(head) < HEADER.size or HEADER.unpack(head)[3] != self.generation

    def feed_header(self, feed):
        written, updated_ns, unslotted, book_state = FEED_HEADER.unpack_from(
            self.map, self.feeds[feed]["offset"])
        return {"written": written, "updated_ns": updated_ns, "unslotted": unslotted,
                "book_state": BOOK_STATES[book_state] if book_state < 4 else book_state}

    def instrument(self, feed, id):
        """A consistent copy of an instrument's slot as a dict; None if never written."""
        at = self.feeds[feed]["slots"] + id * SLOT_SIZE
        while True:
            version = struct.unpack_from("<Q", self.map, at)[0]
            if version == 0:
                return None
            if version & 1:
                continue
            raw = self.map[at:at + SLOT_SIZE]
            if struct.unpack_from("<Q", self.map, at)[0] == version:
                return decode_slot(raw)

    def instruments(self, feed):
        """Every written instrument of a feed: (id, slot dict)."""
        for id in range(self.feeds[feed]["instruments"]):
            s = self.instrument(feed, id)
            if s is not None:
                yield id, s

    def events(self, feed, position=None):
        """Yields (position, event dict) from `position` (default: the next written) for as long
        as events are there; raises Lapped when the writer overtook this reader."""
        info = self.feeds[feed]
        if position is None:
            position = self.feed_header(feed)["written"]
        mask = info["events"] - 1
        while True:
            at = info["ring"] + (position & mask) * EVENT_SLOT
            want = 2 * position + 2
            seen = struct.unpack_from("<Q", self.map, at)[0]
            if seen < want:
                return
            raw = self.map[at + 8:at + EVENT_SLOT]
            if seen != want or struct.unpack_from("<Q", self.map, at)[0] != want:
                raise Lapped(position)
            yield position, decode_event(raw)
            position += 1

    def oldest(self, feed):
        """The ring position of the oldest event still whole (a half ring behind the writer)."""
        written = self.feed_header(feed)["written"]
        return max(0, written - self.feeds[feed]["events"] // 2)


def text(raw):
    return raw.split(b"\0", 1)[0].decode("ascii", "replace").rstrip()


def decode_slot(raw):
    (_, symbol, exponent, state, stale, defined, bid_levels, ask_levels, code, tick, sequence,
     receive_ns, exchange_ns, updates) = SLOT_HEAD.unpack_from(raw, 0)
    def levels(at, count):
        return [dict(zip(("price", "size", "orders"), LEVEL.unpack_from(raw, at + i * LEVEL.size)))
                for i in range(count)]
    return {"symbol": text(symbol), "price_exponent": exponent,
            "trading_state": STATES[state] if state < len(STATES) else state,
            "status_code": text(code), "stale": bool(stale), "defined": bool(defined),
            "tick": tick, "sequence": sequence, "receive_ns": receive_ns,
            "exchange_ns": exchange_ns, "updates": updates,
            "bids": levels(SLOT_HEAD.size, bid_levels),
            "asks": levels(SLOT_HEAD.size + DEPTH * LEVEL.size, ask_levels)}


def decode_event(raw):
    kind, side, flags, instrument, sequence, receive_ns, exchange_ns = EVENT_HEAD.unpack_from(raw)
    name = KINDS[kind] if kind < len(KINDS) else str(kind)
    e = {"kind": name, "instrument": "all" if instrument == ALL_INSTRUMENTS else instrument,
         "sequence": sequence, "receive_ns": receive_ns, "exchange_ns": exchange_ns}
    if side != b"\0":
        e["side"] = side.decode("ascii", "replace")
    if flags:
        e["flags"] = flags
    body = raw[32:]
    if name == "instrument_definition":
        symbol, exponent, tick = struct.unpack_from("<20sb3xq", body)
        e.update(symbol=text(symbol), price_exponent=exponent, tick=tick)
    elif name == "trading_status":
        state, code, reason = struct.unpack_from("<B7s8s", body)
        e.update(state=STATES[state] if state < len(STATES) else state, code=text(code),
                 reason=text(reason))
    elif name in ("order_add", "order_modify", "order_delete"):
        id, price, quantity, mpid, priority = struct.unpack_from("<QqI4sQ", body)
        e.update(id=id, price=price, quantity=quantity, priority=priority)
        if text(mpid):
            e["mpid"] = text(mpid)
    elif name == "order_execute":
        id, price, executed, remaining, match = struct.unpack_from("<QqIIQ", body)
        e.update(id=id, price=price, executed=executed, remaining=remaining, match=match)
    elif name == "level_update":
        price, size, orders, depth = struct.unpack_from("<qQIH", body)
        e.update(price=price, size=size, orders=orders, depth=depth)
    elif name == "bbo":
        bid_price, bid_size, ask_price, ask_size = struct.unpack_from("<qQqQ", body)
        e.update(bid_price=bid_price, bid_size=bid_size, ask_price=ask_price, ask_size=ask_size)
    elif name == "trade":
        price, quantity, match, order_id = struct.unpack_from("<qQQQ", body)
        e.update(price=price, quantity=quantity, match=match, order_id=order_id)
    elif name == "events_lost":
        e["count"] = struct.unpack_from("<Q", body)[0]
    return e


def books(segment):
    out = {"generation": segment.generation, "state": segment.state(), "feeds": []}
    for i, feed in enumerate(segment.feeds):
        out["feeds"].append({"name": feed["name"], **segment.feed_header(i),
                             "instruments": {str(id): s for id, s in segment.instruments(i)}})
    return out


def print_books(doc):
    for feed in doc["feeds"]:
        print(f"feed {feed['name']}: book {feed['book_state']}, {feed['written']} events")
        for id, s in feed["instruments"].items():
            bid = s["bids"][0] if s["bids"] else None
            ask = s["asks"][0] if s["asks"] else None
            scale = 10.0 ** s["price_exponent"]
            def side(l):
                return f"{l['size']} @ {l['price'] * scale:.4f}" if l else "-"
            print(f"  {s['symbol'] or '#' + id:<12} {s['trading_state']:<10}"
                  f"{' stale' if s['stale'] else ''} bid {side(bid)}  ask {side(ask)}  "
                  f"({len(s['bids'])}x{len(s['asks'])} levels)")


def follow(segment, from_start, out):
    """Prints each feed's events as JSON lines until the receiver stops or is replaced."""
    positions = [segment.oldest(i) if from_start else segment.feed_header(i)["written"]
                 for i in range(len(segment.feeds))]
    while True:
        idle = True
        for i, feed in enumerate(segment.feeds):
            try:
                for positions[i], e in segment.events(i, positions[i]):
                    positions[i] += 1
                    idle = False
                    e["feed"] = feed["name"]
                    out.write(json.dumps(e) + "\n")
            except Lapped:
                resume = segment.oldest(i)
                out.write(json.dumps({"kind": "events_lost", "feed": feed["name"],
                                      "count": max(0, resume - positions[i])}) + "\n")
                positions[i] = resume
        out.flush()
        if idle:
            if segment.state() == "closed" or segment.replaced():
                return
            time.sleep(0.001)  # a poll period: the ring is read, nothing waits on it


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the segment's name ([publish] shm)")
    parser.add_argument("--json", action="store_true", help="the books as one JSON document")
    parser.add_argument("--events", action="store_true", help="follow the events (JSON lines)")
    parser.add_argument("--from-start", action="store_true",
                        help="with --events: begin with what the ring still holds")
    args = parser.parse_args()
    try:
        segment = Segment(args.name)
    except (OSError, ValueError) as e:
        print(f"signet_shm: {e}", file=sys.stderr)
        return 1
    if args.events:
        try:
            follow(segment, args.from_start, sys.stdout)
        except (KeyboardInterrupt, BrokenPipeError):
            pass
        return 0
    doc = books(segment)
    if args.json:
        print(json.dumps(doc))
    else:
        print_books(doc)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a closed pipe ends it quietly, as Unix tools do
    sys.exit(main())
