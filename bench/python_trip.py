#!/usr/bin/python3
"""Per request of a Python model at one connection: CPU, context switches and system calls of the
server and of its stub, separately (issue 18's latency goal: where the trip to the stub goes).

    /usr/bin/python3 bench/python_trip.py [--bin build/release/nereid] [--seconds 3]
        [--cpus 0] [--model identity_py] [--strace] [--env NAME=VALUE ...]

The server runs under `taskset -c CPUS` (its stub inherits that): `--cpus 0` is python_bench.py's
pinned set-up (server and stub on one core, wrk on core 1), `--cpus 0,1` lets the stub run on the
other core (an unpinned deployment; wrk then shares the cores). Per request it prints, for the
server's threads and for the stub: CPU µs (schedstat), voluntary and involuntary context switches
(/proc/<pid>/task/*/status), and the p50 from wrk. With --strace, a second run under
`strace -c -f` counts each side's system calls per request (strace slows every call: counts
only, not times).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_bench  # noqa: E402
from cache_bench import body, free_port, wait_ready  # noqa: E402
from python_ab_bench import process_tree, wrk  # noqa: E402


def thread_stats(pid):
    """[cpu ns, voluntary, involuntary context switches] summed over `pid`'s threads."""
    out = [0, 0, 0]
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[0] += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                text = f.read()
            out[1] += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", text, re.M).group(1))
            out[2] += int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", text, re.M).group(1))
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def sides(pid):
    """{"server": stats, "stub": stats summed over the server's children}."""
    stub = [0, 0, 0]
    for p in process_tree(pid)[1:]:
        stub = [a + b for a, b in zip(stub, thread_stats(p))]
    return {"server": thread_stats(pid), "stub": stub}


def start(binary, repo, cpus, env):
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", cpus, binary, f"--model-repository={repo}",
                             f"--http-port={port}", "--http-address=127.0.0.1",
                             "--allow-grpc=false", "--allow-metrics=false", "--log-info=false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **env})
    wait_ready(port, proc)
    return proc, port


def strace_counts(pid, seconds, port, model, data, work):
    """System calls per request of the server (its threads) and of the stub (its children)."""
    stub = process_tree(pid)[1:]
    out = {}
    files = {}
    tracers = []
    for side, pids in (("server", [pid]), ("stub", stub)):
        files[side] = os.path.join(work, f"strace-{side}.txt")
        args = ["strace", "-c", "-f", "-o", files[side]]
        for p in pids:
            args += ["-p", str(p)]
        tracers.append(subprocess.Popen(args, stderr=subprocess.DEVNULL))
    time.sleep(0.5)
    n, _ = wrk(port, model, data, 0, seconds, work)
    for t in tracers:
        t.send_signal(2)
        t.wait()
    for side, path in files.items():
        calls = {}
        for line in open(path):
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
            if m and m.group(2) != "total":
                calls[m.group(2)] = int(m.group(1)) / n
        out[side] = calls
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(python_bench.ROOT, "build/release/nereid"))
    ap.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(python_bench.ROOT, "build/release/test_models")))
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--cpus", default="0")
    ap.add_argument("--model", default="identity_py")
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="added to the server's environment (e.g. NEREID_PYTHON_SPIN_US=50)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nereid-python-trip-")
    repo = python_bench.make_repo(args.models, work)
    data = body("INPUT0", 16)
    proc, port = start(args.bin, repo, args.cpus, dict(kv.split("=", 1) for kv in args.env))
    try:
        for model in ("identity_fp32", args.model):
            wrk(port, model, data, 0, 1, work)  # warm-up (and the stub's start)
            before = sides(proc.pid)
            n, p50 = wrk(port, model, data, 0, args.seconds, work)
            after = sides(proc.pid)
            print(f"{model} (server on cpus {args.cpus}): {n} requests, p50 {p50:.0f} µs")
            print("| side | CPU µs/req | voluntary cs/req | involuntary cs/req |")
            print("| --- | --- | --- | --- |")
            for side in ("server", "stub"):
                d = [(a - b) / n for a, b in zip(after[side], before[side])]
                print(f"| {side} | {d[0] / 1000:.1f} | {d[1]:.2f} | {d[2]:.2f} |")
        if args.strace:
            for side, calls in strace_counts(proc.pid, args.seconds, port, args.model, data,
                                             work).items():
                top = sorted(calls.items(), key=lambda kv: -kv[1])[:8]
                print(f"{side} system calls per request: " +
                      ", ".join(f"{name} {k:.2f}" for name, k in top))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
