#!/usr/bin/python3
"""Sequence batcher (Oldest) against the dynamic batcher on the same stateless model, in one run.

The generated MLP (mlp_fp32: 256->2048->2048->1024->16, max_batch_size 32, one instance, ONNX
Runtime intra-op 1) is served twice, one server after the other, each pinned to core 0 with wrk
pinned to core 1:
  * sequence: `sequence_batching { oldest { max_candidate_sequences: N preferred_batch_size: [32] } }`
    with an idle timeout of an hour; N sequences are started first (one START request each), then
    wrk sends N connections' worth of requests cycling over the N sequence IDs (no START/END);
  * dynamic: `dynamic_batching {}`, the same wrk script and request bodies (the dynamic batcher
    ignores sequence_id).
Requests are one sample ([1,256] FP32) as binary tensor data. Reports wall-clock infer/s, infer
per CPU-second of the server process (the VM is shared; see bench/README.md), and
sequence/dynamic for both (goal: >= 0.85). --repeat N alternates the two N times. A last,
untimed run of each with --log-verbose=1 reports the mean number of requests per execution.

Usage: bench/sequence_bench.py [--seconds 10] [--repeat 3] [--sequences 64]
Needs wrk and taskset. Everything stays on 127.0.0.1.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import batch_bench  # noqa: E402
from batch_bench import MAX_BATCH, MODEL, WIDTH, cpu_seconds, run_wrk, serve  # noqa: E402
from http_bench import free_port, wait_ready  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_repo(models, dest, scheduling):
    """batch_bench's repository (one instance, intra-op 1) without batching, plus `scheduling`."""
    batch_bench.write_repo(models, dest, False)
    with open(os.path.join(dest, MODEL, "config.pbtxt"), "a") as f:
        f.write(scheduling + "\n")


def sample():
    import random
    import struct
    random.seed(1)
    return struct.pack(f"<{WIDTH}f", *[random.gauss(0, 1) for _ in range(WIDTH)])


def write_lua(work, sequences):
    """wrk script: every request names the next of `sequences` IDs, round robin."""
    data_path = os.path.join(work, "sample.bin")
    with open(data_path, "wb") as f:
        f.write(sample())
    lua = os.path.join(work, "seq.lua")
    with open(lua, "w") as f:
        f.write(f'''
local f = io.open("{data_path}", "rb")
local data = f:read("*all")
f:close()
local counter = 0
request = function()
  counter = counter + 1
  local id = (counter % {sequences}) + 1
  local header = '{{"inputs":[{{"name":"INPUT0","datatype":"FP32","shape":[1,{WIDTH}],' ..
    '"parameters":{{"binary_data_size":{WIDTH * 4}}}}}],"parameters":{{"sequence_id":' .. id ..
    '}},"outputs":[{{"name":"OUTPUT0","parameters":{{"binary_data":true}}}}]}}'
  return wrk.format("POST", nil, {{["Content-Type"] = "application/octet-stream",
    ["Inference-Header-Content-Length"] = tostring(#header)}}, header .. data)
end
''')
    return lua


def start_sequences(port, sequences):
    data = list(__import__("struct").unpack(f"<{WIDTH}f", sample()))
    for sid in range(1, sequences + 1):
        body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, WIDTH],
                                       "data": data}],
                           "parameters": {"sequence_id": sid, "sequence_start": True}}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/{MODEL}/infer",
                                     data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200


def measure(binary, repo, work, name, lua, seconds, sequences, is_sequence):
    proc, port = serve(binary, repo, work, name, [])
    try:
        if is_sequence:
            start_sequences(port, sequences)
        run_wrk(port, lua, sequences, 2)  # warm-up
        c0 = cpu_seconds(proc.pid)
        rps, p50 = run_wrk(port, lua, sequences, seconds)
        cpu = cpu_seconds(proc.pid) - c0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    return rps, p50, rps * seconds / cpu


BATCH_LINES = {  # what each scheduler logs per execution at --log-verbose=1
    True: re.compile(r"executes (\d+) sequence request\(s\)"),
    False: re.compile(r"executing (\d+) request\(s\) as a batch"),
}


def mean_batch(binary, repo, work, name, lua, sequences, is_sequence):
    """A separate 2 s run with --log-verbose=1 (not timed): the mean requests per execution."""
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", "0", binary, f"--model-repository={repo}",
                             f"--http-port={port}", "--http-address=127.0.0.1",
                             "--allow-grpc=false", "--log-verbose=1"],
                            stderr=open(os.path.join(work, f"{name}-verbose.log"), "w"))
    wait_ready(port, proc)
    try:
        if is_sequence:
            start_sequences(port, sequences)
        run_wrk(port, lua, sequences, 2)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    with open(os.path.join(work, f"{name}-verbose.log")) as f:
        sizes = [int(m.group(1)) for m in BATCH_LINES[is_sequence].finditer(f.read())]
    return sum(sizes) / len(sizes) if sizes else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--sequences", type=int, default=2 * MAX_BATCH)
    args = ap.parse_args()
    for tool in ("wrk", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: run scripts/setup")
    work = tempfile.mkdtemp(prefix="nereid_sequence_bench_")
    try:
        models = os.path.join(work, "examples")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                        "--examples", models], check=True)
        seq_repo, dyn_repo = os.path.join(work, "sequence"), os.path.join(work, "dynamic")
        write_repo(models, seq_repo,
                   "sequence_batching { max_sequence_idle_microseconds: 3600000000 oldest { "
                   f"max_candidate_sequences: {args.sequences} preferred_batch_size: [ {MAX_BATCH} ] }} }}")
        write_repo(models, dyn_repo, "dynamic_batching { }")
        lua = write_lua(work, args.sequences)
        print(f"{args.sequences} sequences / connections; wall: infer/s; cpu: infer per server CPU-s")
        print(f"{'run':>3} | {'oldest wall':>11} {'cpu':>6} {'p50 ms':>7} | "
              f"{'dynamic wall':>12} {'cpu':>6} {'p50 ms':>7} | {'ratio wall':>10} {'cpu':>5}")
        for run in range(args.repeat):
            s_rps, s_p50, s_cpu = measure(args.bin, seq_repo, work, "sequence", lua, args.seconds,
                                          args.sequences, True)
            d_rps, d_p50, d_cpu = measure(args.bin, dyn_repo, work, "dynamic", lua, args.seconds,
                                          args.sequences, False)
            print(f"{run + 1:>3} | {s_rps:>11.0f} {s_cpu:>6.0f} {s_p50:>7.2f} | "
                  f"{d_rps:>12.0f} {d_cpu:>6.0f} {d_p50:>7.2f} | {s_rps / d_rps:>10.2f} "
                  f"{s_cpu / d_cpu:>5.2f}", flush=True)
        s_mean = mean_batch(args.bin, seq_repo, work, "sequence", lua, args.sequences, True)
        d_mean = mean_batch(args.bin, dyn_repo, work, "dynamic", lua, args.sequences, False)
        print(f"mean requests per execution (separate verbose run): oldest {s_mean:.1f}, "
              f"dynamic {d_mean:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
