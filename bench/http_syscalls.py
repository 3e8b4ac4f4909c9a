#!/usr/bin/python3
"""System calls per HTTP request of one or more nereid variants, server pinned to one core.

Usage: bench/http_syscalls.py --variant LABEL=BIN[,FLAG...] [--variant ...] [--seconds 3]
                              [--conns 1,16] [--rounds 1]
e.g.   bench/http_syscalls.py --variant 2threads=build/release/nereid,--http-thread-count=2 \
                              --variant 1thread=build/release/nereid,--http-thread-count=1

Each variant's server runs pinned to core 0 (wrk on core 1, as bench/ab_bench.py), is warmed up
for one second, then `strace -c -f -p PID` (every thread) counts its system calls while wrk sends
`identity_fp32` and `simple` JSON requests for --seconds at each connection count. Prints, per
cell, the calls per request of the calls on the request path (and the receives' errors: the
EAGAIN of a speculative receive; Asio's synchronous read_some receives with recvfrom). strace slows the server several-fold, so the counts, not the rates, are
the figures; how often a speculative receive finds no data still depends on the client's pace.

With --paced, no strace: per variant and model, bench/nereid_perf (on core 1) finds the peak of a
closed loop at c=16, then paces requests at 80% of it on a fresh server (at most 256 outstanding)
and prints p50/p99 there (issue 21 goal 6's measure).
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import ab_bench  # noqa: E402
import http_bench  # noqa: E402
import issue21  # noqa: E402

CALLS = ["recvmsg", "recvmsg EAGAIN", "recvfrom", "recvfrom EAGAIN", "sendmsg", "epoll_wait",
         "epoll_ctl", "futex", "total"]


def strace_counts(text):
    """{syscall: calls, 'NAME EAGAIN': errors} from `strace -c` output."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        # % time, seconds, usecs/call, calls, [errors,] syscall
        if len(f) >= 5 and re.fullmatch(r"[\d.]+", f[0]) and f[-1].isidentifier():
            calls = int(f[3])
            errors = int(f[4]) if len(f) == 6 else 0
            out[f[-1]] = calls
            out[f[-1] + " EAGAIN"] = errors
        elif len(f) >= 4 and f[-1] == "total":
            out["total"] = int(f[3])
    return out


def measure(binary, extra, models, model, body, conns, seconds, work):
    proc, port = ab_bench.serve(binary, models, extra)
    try:
        ab_bench.run_wrk(port, model, body, conns, 1, work)  # warm-up
        out = os.path.join(work, "strace.txt")
        st = subprocess.Popen(["strace", "-c", "-f", "-p", str(proc.pid), "-o", out],
                              stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # attached to every thread
        n, _ = ab_bench.run_wrk(port, model, body, conns, seconds, work)
        st.send_signal(signal.SIGINT)
        st.wait(timeout=30)
        with open(out) as f:
            counts = strace_counts(f.read())
        return n, counts
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def paced(binary, extra, models, model, seconds):
    """(peak infer/s at c=16, {p50, p99, rps} paced at 80% of it), each on a fresh server."""
    window = ["-p", str(seconds * 1000), "-r", "3"]
    proc, port = ab_bench.serve(binary, models, extra)
    try:
        levels, _ = issue21.perf(["-m", model, "-u", f"127.0.0.1:{port}", "--concurrency-range",
                                  "16"] + window)
    finally:
        issue21.stop(proc)
    peak = levels[16.0]["rps"]
    proc, port = ab_bench.serve(binary, models, extra)
    try:
        levels, _ = issue21.perf(["-m", model, "-u", f"127.0.0.1:{port}", "--request-rate-range",
                                  f"{0.8 * peak:.0f}", "--max-outstanding", "256"] + window)
    finally:
        issue21.stop(proc)
    (f,) = levels.values()
    return peak, f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", action="append", required=True,
                    help="LABEL=BINARY[,FLAG...] (flags for that server only)")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--conns", default="1,16")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--paced", action="store_true", help="p50/p99 at 80%% of peak instead")
    args = ap.parse_args()
    variants = []
    for v in args.variant:
        label, _, rest = v.partition("=")
        binary, *flags = rest.split(",")
        variants.append((label, binary, flags))
    conns = [int(c) for c in args.conns.split(",")]
    work = tempfile.mkdtemp(prefix="nereid_sys_")
    models = os.path.join(work, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ab_bench.ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, stdout=subprocess.DEVNULL)
    bodies = {m: json.dumps(r).encode() for m, r in http_bench.REQUESTS.items()}
    if args.paced:
        print(f"{'variant':12} {'model':14} | {'peak c=16':>10} {'paced at':>9} {'got':>9} "
              f"{'p50 us':>7} {'p99 us':>7} {'p99/p50':>7}")
        for _ in range(args.rounds):
            for m in bodies:
                for label, binary, flags in variants:
                    peak, f = paced(binary, flags, models, m, args.seconds)
                    print(f"{label:12} {m:14} | {peak:>10.0f} {0.8 * peak:>9.0f} {f['rps']:>9.0f} "
                          f"{f['p50']:>7} {f['p99']:>7} {f['p99'] / max(1, f['p50']):>7.1f}",
                          flush=True)
        return
    print(f"{'variant':12} {'model':14} {'c':>3} {'requests':>8} | " +
          " ".join(f"{c:>15}" for c in CALLS))
    for _ in range(args.rounds):
        for m, body in bodies.items():
            for c in conns:
                for label, binary, flags in variants:
                    n, counts = measure(binary, flags, models, m, body, c, args.seconds, work)
                    per = [counts.get(k, 0) / max(1, n) for k in CALLS]
                    print(f"{label:12} {m:14} {c:>3} {n:>8} | " +
                          " ".join(f"{p:>15.2f}" for p in per), flush=True)


if __name__ == "__main__":
    main()
