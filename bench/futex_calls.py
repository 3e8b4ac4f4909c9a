#!/usr/bin/python3
"""Futex calls per HTTP inference request, and who makes them (issue 21, goal 1).

Usage: bench/futex_calls.py [--bin build/release/nereid] [--model identity_fp32] [--conns 1,16]
                            [--seconds 2] [--top 8]

Starts the server pinned to core 0 (ab_bench.py's flags) on a generated examples repository,
warms it with wrk (core 1, http_bench.py's JSON request), then records every futex system call
of the server (`perf record -e syscalls:sys_enter_futex --call-graph dwarf`) while wrk runs
again, and prints per connection count: requests, futex calls per request, and the most frequent
call sites (thread name, futex op, the first project/Boost/pthread frames). Needs root (or
perf_event_paranoid <= 1) and linux-perf. Counts, not timings: comparable across a loaded machine.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import ab_bench  # noqa: E402
import http_bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEEP = ("nereid", "boost", "pthread", "std::")


def call_sites(script_text):
    """Counter of (thread, op, first frames) over `perf script` output."""
    sites = collections.Counter()
    for event in script_text.split("\n\n"):
        lines = [ln.strip() for ln in event.split("\n") if ln.strip()]
        if not lines:
            continue
        op = re.search(r"op: (0x[0-9a-f]+)", lines[0])
        frames = [re.sub(r"^[0-9a-f]+ ", "", ln) for ln in lines[1:]]
        frames = [re.sub(r"\s*\(.*\)$", "", f) for f in frames if any(k in f for k in KEEP)]
        sites[(lines[0].split()[0], op.group(1) if op else "?",
               " <- ".join(f[:60] for f in frames[:3]))] += 1
    return sites


def measure(binary, models, model, conns, seconds, work):
    proc, port = ab_bench.serve(binary, models, [])
    try:
        body = json.dumps(http_bench.REQUESTS[model]).encode()
        ab_bench.run_wrk(port, model, body, conns, 1, work)
        data = os.path.join(work, f"futex_{conns}.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "syscalls:sys_enter_futex",
                                 "--call-graph", "dwarf,16384", "-p", str(proc.pid), "-o", data,
                                 "--", "sleep", str(seconds)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        requests, _ = ab_bench.run_wrk(port, model, body, conns, seconds, work)
        perf.wait()
        text = subprocess.run(["perf", "script", "-i", data], capture_output=True, text=True,
                              check=True).stdout
        return requests, call_sites(text)
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--model", default="identity_fp32", choices=sorted(http_bench.REQUESTS))
    ap.add_argument("--conns", default="1,16")
    ap.add_argument("--seconds", type=int, default=2)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    work, models = ab_bench.example_repository("nereid_futex_")
    for conns in [int(c) for c in args.conns.split(",")]:
        requests, sites = measure(args.bin, models, args.model, conns, args.seconds, work)
        total = sum(sites.values())
        print(f"{args.model} c={conns}: {requests} requests, {total} futex calls, "
              f"{total / max(requests, 1):.3f} per request (perf window ~ wrk run)")
        for (thread, op, frames), n in sites.most_common(args.top):
            print(f"  {n:7d} {thread:10s} {op} {frames}")


if __name__ == "__main__":
    main()
