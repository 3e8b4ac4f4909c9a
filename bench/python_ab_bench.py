#!/usr/bin/python3
"""A/B CPU cost of the Python backend in two nereid builds, interleaved to cancel machine load.

    /usr/bin/python3 bench/python_ab_bench.py --a OLD/nereid --b NEW/nereid [--rounds 5] [--seconds 3]
        [--cpus 0] [--small-only] [--b-env NAME=VALUE ...]

Each round starts A then B (pinned to core 0 with their stub processes, wrk on core 1) on the
repository bench/python_bench.py builds (identity_fp32: the C++ identity backend; identity_py: the
same in model.py; bls_py: model.py calling identity_fp32 through BLS) and runs wrk at one
connection for FP32 [1,16] JSON requests and FP32 [1,262144] (1 MiB) binary-tensor requests.
Per cell it reports the median over rounds of the CPU time per request of the server *and its
stub processes* (/proc/<pid>/task/*/schedstat, the stubs found as the server's children), which
barely moves when other processes compete for the machine, and of the p50 latency (which does).
Rows: identity_py - identity_fp32 is what the Python step adds; bls_py - identity_py what one
BLS call adds. `--cpus 0,1` runs the servers unpinned on this 2-core machine (the stub may run on
the other core, as in an unpinned deployment; wrk shares core 1); `--small-only` skips the 1 MiB
cells; `--b-env NEREID_PYTHON_SPIN_US=50` starts B with that in its environment (the same binary
as A then compares the doorbell on and off).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_bench  # noqa: E402
from cache_bench import body, free_port, wait_ready  # noqa: E402

ROOT = python_bench.ROOT


def start(binary, repo, flags, cpus="0", env=None):
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", cpus, binary, f"--model-repository={repo}",
                             f"--http-port={port}", "--http-address=127.0.0.1",
                             "--allow-grpc=false", "--allow-metrics=false"] + flags,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})})
    wait_ready(port, proc)
    return proc, port


def process_tree(pid):
    pids = [pid]
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                for child in f.read().split():
                    pids += process_tree(int(child))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return pids


def cpu_ns(pid):
    total = 0
    for p in process_tree(pid):
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread or process that just ended
    return total


def binary_body(n):
    header = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, n],
                                     "parameters": {"binary_data_size": 4 * n}}],
                         "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]})
    return header.encode(), header.encode() + struct.pack(f"<{n}f", *([0.5] * n))


def lua_string(data):
    return '"' + "".join(f"\\{b:03d}" for b in data) + '"'


def wrk(port, model, data, header_size, seconds, work):
    lua = os.path.join(work, f"{model}.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\n')
        if header_size:
            f.write(f'wrk.headers["Inference-Header-Content-Length"] = "{header_size}"\n'
                    'wrk.headers["Content-Type"] = "application/octet-stream"\n')
        else:
            f.write('wrk.headers["Content-Type"] = "application/json"\n')
        f.write(f"wrk.body = {lua_string(data)}\n")
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c1", f"-d{seconds}s", "--latency",
                          "-s", lua, f"http://127.0.0.1:{port}/v2/models/{model}/infer"],
                         capture_output=True, text=True, check=True).stdout
    assert "Non-2xx" not in out, out
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    m = re.search(r"\s50%\s+([\d.]+)(us|ms|s)\b", out)
    return requests, float(m.group(1)) * {"us": 1, "ms": 1000, "s": 1e6}[m.group(2)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="baseline binary")
    ap.add_argument("--b", required=True, help="candidate binary")
    ap.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(ROOT, "build/release/test_models")))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--cpus", default="0", help="the servers' CPUs (taskset -c)")
    ap.add_argument("--small-only", action="store_true", help="only the [1,16] cells")
    ap.add_argument("--b-env", action="append", default=[], metavar="NAME=VALUE",
                    help="added to B's environment")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nereid-python-ab-")
    repo = python_bench.make_repo(args.models, work)
    small = (body("INPUT0", 16), 0)
    big_header, big = binary_body(262144)
    cells = [("identity_fp32", "16", small), ("identity_py", "16", small),
             ("bls_py", "16", small), ("identity_fp32", "1Mi", (big, len(big_header))),
             ("identity_py", "1Mi", (big, len(big_header))),
             ("bls_py", "1Mi", (big, len(big_header)))]
    if args.small_only:
        cells = cells[:3]
    results = {}  # (binary, model, size) -> [(cpu us per request, p50 us)]
    for _ in range(args.rounds):
        b_env = dict(kv.split("=", 1) for kv in args.b_env)
        for label, binary, env in (("A", args.a, {}), ("B", args.b, b_env)):
            proc, port = start(binary, repo, ["--log-info=false"], args.cpus, env)
            try:
                for model, size, (data, header_size) in cells:
                    wrk(port, model, data, header_size, 1, work)  # warm-up
                    before = cpu_ns(proc.pid)
                    n, p50 = wrk(port, model, data, header_size, args.seconds, work)
                    cpu = (cpu_ns(proc.pid) - before) / n / 1000
                    results.setdefault((label, model, size), []).append((cpu, p50))
            finally:
                proc.terminate()
                proc.wait()
    print(f"{args.rounds} rounds x {args.seconds} s per cell, one connection; median (min-max)")
    print("| model | tensor | A CPU µs/req | B CPU µs/req | A p50 µs | B p50 µs |")
    print("| --- | --- | --- | --- | --- | --- |")
    med = {}
    for model, size, _ in cells:
        row = [model, size]
        for i in (0, 1):
            for label in ("A", "B"):
                vals = [r[i] for r in results[(label, model, size)]]
                med[(label, model, size, i)] = statistics.median(vals)
                row.append(f"{statistics.median(vals):.0f} ({min(vals):.0f}-{max(vals):.0f})")
        print("| " + " | ".join(row) + " |")
    for size in sorted({size for _, size, _ in cells}):
        for label in ("A", "B"):
            added = med[(label, "identity_py", size, 0)] - med[(label, "identity_fp32", size, 0)]
            bls = med[(label, "bls_py", size, 0)] - med[(label, "identity_py", size, 0)]
            print(f"{label} [{size}]: Python step adds {added:.0f} µs CPU/request, "
                  f"a BLS call {bls:.0f} µs")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
