#!/usr/bin/env python3
"""Where a latency point's tail comes from: spread over many packets, or a few stalls.

Reads the file `signet_packet_rate --trace-latency FILE` appends to (a "# design=..." line per
point, then "feed send_ns latency_ns" per timed packet) and prints, per point: the percentiles,
the packets over a threshold (the point's own p99 unless --over is given), and those packets
grouped into bursts by send time (packets over the threshold less than --join-ms apart belong to
one burst). A tail made of a few long bursts is a stall (the receiver did not run); a tail spread
evenly over the run is a per-packet cost.

    bench/packet_rate/latency_trace.py /tmp/trace.txt [--over 50] [--join-ms 1] [--top 3]
"""
import argparse
import statistics
import sys


def read_points(path):
    points = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                points.append({"name": line[1:].strip(), "samples": []})
                continue
            if not line.strip() or not points:
                continue
            _, sent, latency = line.split()
            points[-1]["samples"].append((int(sent), int(latency)))
    return points


def percentile(sorted_values, q):
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def bursts(samples, over_ns, join_ns):
    """Bursts of packets whose latency exceeds over_ns, by send time: [start, end, count, max]."""
    out = []
    for sent, latency in sorted(samples):
        if latency <= over_ns:
            continue
        if out and sent - out[-1][1] <= join_ns:
            burst = out[-1]
            burst[1] = sent
            burst[2] += 1
            burst[3] = max(burst[3], latency)
        else:
            out.append([sent, sent, 1, latency])
    return out


def summarize(point, over_us, join_ms, top):
    samples = point["samples"]
    latencies = sorted(latency for _, latency in samples)
    if not latencies:
        return f"{point['name']}: no samples"
    p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
    over_ns = int(over_us * 1000) if over_us is not None else p99
    found = bursts(samples, over_ns, int(join_ms * 1e6))
    first = min(sent for sent, _ in samples)
    lines = [
        f"{point['name']}",
        f"  {len(samples)} packets: p50 {p50 / 1e3:.1f} us, p99 {p99 / 1e3:.1f} us, "
        f"p99.9 {percentile(latencies, 0.999) / 1e3:.1f} us, max {latencies[-1] / 1e3:.1f} us",
    ]
    total_over = sum(b[2] for b in found)
    lines.append(f"  over {over_ns / 1e3:.1f} us: {total_over} packets in {len(found)} bursts "
                 f"(joined when < {join_ms} ms apart)")
    if not found:
        return "\n".join(lines)
    largest = sorted(found, key=lambda b: b[2], reverse=True)
    in_top = sum(b[2] for b in largest[:top])
    lines.append(f"  the {min(top, len(found))} largest hold {in_top} of them "
                 f"({100.0 * in_top / total_over:.0f}%):")
    for start, end, count, worst in largest[:top]:
        lines.append(f"    at {(start - first) / 1e6:8.1f} ms: {count} packets over "
                     f"{(end - start) / 1e6:.2f} ms, worst {worst / 1e3:.1f} us")
    if len(found) > 2:
        starts = [b[0] for b in found]
        gaps = [(b - a) / 1e6 for a, b in zip(starts, starts[1:])]
        lines.append(f"  between burst starts: median {statistics.median(gaps):.2f} ms")
    # What the p99 would be without the largest burst: does one stall make the tail?
    biggest = largest[0]
    rest = sorted(latency for sent, latency in samples
                  if not (biggest[0] <= sent <= biggest[1] and latency > over_ns))
    lines.append(f"  p99 without the largest burst: {percentile(rest, 0.99) / 1e3:.1f} us")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="the file --trace-latency wrote")
    parser.add_argument("--over", type=float, help="threshold in us (default: each point's p99)")
    parser.add_argument("--join-ms", type=float, default=1.0,
                        help="packets over the threshold closer than this are one burst")
    parser.add_argument("--top", type=int, default=3, help="largest bursts to list")
    args = parser.parse_args()
    points = read_points(args.trace)
    if not points:
        sys.exit(f"{args.trace}: no points")
    print("\n".join(summarize(p, args.over, args.join_ms, args.top) for p in points))


if __name__ == "__main__":
    main()
