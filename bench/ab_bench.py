#!/usr/bin/python3
"""A/B cost of two nereid binaries, interleaved to cancel drifting machine load.

Usage: bench/ab_bench.py --a OLD_BIN --b NEW_BIN [--rounds 5] [--seconds 3] [--conns 1,16]
                         [--b-arg=--flag ...] [--b-env NAME=VALUE ...]
(--b-env e.g. LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 to compare an allocator.)

Each round starts A then B (each pinned to core 0, wrk pinned to core 1), runs wrk against
`identity_fp32` and `simple` (same JSON requests as http_bench.py) at each connection count, and
stops the server. Reports, per cell, the median over the rounds of
  * requests/s (wall-clock throughput: sensitive to whatever else the machine runs), and
  * server CPU time per request (the sum of every server thread's run time from
    /proc/<pid>/task/*/schedstat, divided by the requests wrk completed): on a saturated core this
    is the inverse of the throughput the server can reach, and it barely moves when other
    processes compete for the machine,
with min-max spreads and B/A of the medians. Used for the statistics overhead figure in
bench/README.md: compare a build without statistics against one with them.
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import http_bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def thread_cpu_ns(pid):
    """{tid: run time so far in ns} of every thread of `pid` (/proc/<pid>/task/*/schedstat)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that just ended
    return out


def cpu_ns(pid):
    """Run time so far of every thread of `pid` together (ns)."""
    return sum(thread_cpu_ns(pid).values())


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))


def run_wrk(port, model, body, conns, seconds, workdir):
    lua = os.path.join(workdir, f"{model}.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                f"wrk.body = {json.dumps(body.decode())}\n")
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "-s",
                          lua, f"http://127.0.0.1:{port}/v2/models/{model}/infer"],
                         capture_output=True, text=True, check=True).stdout
    assert "Non-2xx" not in out, out
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return requests, float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def serve(binary, models, extra, env=None):
    port = http_bench.free_port()
    proc = subprocess.Popen(["taskset", "-c", "0", binary, f"--model-repository={models}",
                             f"--http-port={port}", "--http-address=127.0.0.1", "--log-info=false",
                             "--allow-grpc=false", "--metrics-port=0"] + extra,
                            stderr=subprocess.DEVNULL, env=env)
    http_bench.wait_ready(port, proc)
    return proc, port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="baseline binary")
    ap.add_argument("--b", required=True, help="candidate binary")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--conns", default="1,16")
    ap.add_argument("--b-arg", action="append", default=[], help="extra flag for B only")
    ap.add_argument("--b-env", action="append", default=[],
                    help="NAME=VALUE in B's environment only (e.g. LD_PRELOAD=...)")
    args = ap.parse_args()
    b_env = dict(os.environ)
    for item in args.b_env:
        name, _, value = item.partition("=")
        b_env[name] = value
    conns = [int(c) for c in args.conns.split(",")]
    work = tempfile.mkdtemp(prefix="nereid_ab_")
    models = os.path.join(work, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, stdout=subprocess.DEVNULL)
    bodies = {m: json.dumps(r).encode() for m, r in http_bench.REQUESTS.items()}
    rps = {}  # (label, model, conns) -> [requests/s per round]
    cpu = {}  # (label, model, conns) -> [server CPU µs per request per round]
    rss = {}  # label -> [server VmRSS KiB after each round's load]
    for r in range(args.rounds):
        for label, binary, extra, env in (("A", args.a, [], None),
                                          ("B", args.b, args.b_arg, b_env)):
            proc, port = serve(binary, models, extra, env)
            try:
                for m, body in bodies.items():
                    for c in conns:
                        before = cpu_ns(proc.pid)
                        n, r_s = run_wrk(port, m, body, c, args.seconds, work)
                        used = cpu_ns(proc.pid) - before
                        rps.setdefault((label, m, c), []).append(r_s)
                        cpu.setdefault((label, m, c), []).append(used / max(1, n) / 1000)
                rss.setdefault(label, []).append(rss_kib(proc.pid))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    def row(table, m, c, fmt):
        a, b = table[("A", m, c)], table[("B", m, c)]
        ma, mb = statistics.median(a), statistics.median(b)
        return (f"{fmt.format(ma):>9} {fmt.format(min(a)) + '-' + fmt.format(max(a)):>15} | "
                f"{fmt.format(mb):>9} {fmt.format(min(b)) + '-' + fmt.format(max(b)):>15} | "
                f"{mb / ma:>5.3f}")

    for title, table, fmt in (("requests/s", rps, "{:.0f}"), ("server CPU us/request", cpu,
                                                               "{:.1f}")):
        print(f"\n{title} (median of {args.rounds} rounds)")
        print(f"{'model':15} {'conns':>5} | {'A':>9} {'A min-max':>15} | {'B':>9} "
              f"{'B min-max':>15} | {'B/A':>5}")
        for m in bodies:
            for c in conns:
                print(f"{m:15} {c:>5} | " + row(table, m, c, fmt))
    print(f"\nserver VmRSS after the load, MiB (median, min-max): "
          f"A {statistics.median(rss['A']) / 1024:.1f} ({min(rss['A']) / 1024:.1f}-"
          f"{max(rss['A']) / 1024:.1f}), B {statistics.median(rss['B']) / 1024:.1f} "
          f"({min(rss['B']) / 1024:.1f}-{max(rss['B']) / 1024:.1f})")


if __name__ == "__main__":
    main()
