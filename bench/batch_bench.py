#!/usr/bin/python3
"""Dynamic batcher benchmark on the generated MLP model (mlp_fp32, max_batch_size 32), side by side:

  * server: nereid pinned to core 0 serving mlp_fp32 with `dynamic_batching {}` (one instance,
    ONNX Runtime intra-op 1), wrk pinned to core 1 at 2 x max_batch_size = 64 connections sending
    one sample ([1,256] FP32, binary tensor data) per request; infer/s from wrk, and the mean
    executed batch size = delta inference_count / delta execution_count from
    GET /v2/models/mlp_fp32/stats;
  * in-process: bench/ort_batch_driver (ONNX Runtime C++ API, the backend's default session
    settings) pinned to core 0, running batches of that mean size (rounded) for as long;
  * unbatched: the same server and load without dynamic_batching (the default scheduler).

Reports server/in-process (goal >= 0.90) and batched/unbatched. --repeat N repeats the three
measurements N times and prints each, so the noise is visible. Because the machine may be shared,
it also reports inferences per CPU-second of the process doing the work (the server's whole
process, all its threads; the driver's): other processes' load changes wall-clock throughput
but hardly this.

Below each row: CPU µs per inference of the server (split into its busiest thread, the executor
running the model, and all other threads: HTTP I/O, timers) and of the in-process driver.

Usage: bench/batch_bench.py [--seconds 10] [--repeat 3] [--bin build/release/nereid]
Needs wrk and taskset; the statistics endpoint (GET /v2/models/{m}/stats) for the batch size.
Everything stays on 127.0.0.1.
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
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_bench import thread_cpu_ns  # noqa: E402
from http_bench import free_port, wait_ready  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "mlp_fp32"
MAX_BATCH = 32
WIDTH = 256


def write_repo(models, dest, batching):
    """A repository with mlp_fp32 only: one instance, intra-op 1, with or without batching."""
    src = os.path.join(models, MODEL)
    path = os.path.join(dest, MODEL)
    shutil.copytree(src, path)
    cfg_path = os.path.join(path, "config.pbtxt")
    with open(cfg_path) as f:
        cfg = f.read()
    cfg = re.sub(r"instance_group \[.*?\]\n", "", cfg, flags=re.S)
    cfg += "instance_group [ { count: 1 kind: KIND_CPU } ]\n"
    cfg += 'parameters { key: "intra_op_thread_count" value: { string_value: "1" } }\n'
    if batching:
        cfg += "dynamic_batching { }\n"
    with open(cfg_path, "w") as f:
        f.write(cfg)


def request_body(work):
    """One sample as binary tensor data; returns (lua script path, header length)."""
    import random
    import struct
    random.seed(1)
    data = struct.pack(f"<{WIDTH}f", *[random.gauss(0, 1) for _ in range(WIDTH)])
    header = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, WIDTH],
                                     "parameters": {"binary_data_size": len(data)}}],
                         "outputs": [{"name": "OUTPUT0",
                                      "parameters": {"binary_data": True}}]}).encode()
    body_path = os.path.join(work, "body.bin")
    with open(body_path, "wb") as f:
        f.write(header + data)
    lua = os.path.join(work, "mlp.lua")
    with open(lua, "w") as f:
        f.write(f'wrk.method = "POST"\n'
                f'wrk.headers["Content-Type"] = "application/octet-stream"\n'
                f'wrk.headers["Inference-Header-Content-Length"] = "{len(header)}"\n'
                f'local f = io.open("{body_path}", "rb")\nwrk.body = f:read("*all")\nf:close()\n')
    return lua


def stats(port):
    url = f"http://127.0.0.1:{port}/v2/models/{MODEL}/stats"
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            s = json.loads(r.read())["model_stats"][0]
    except Exception as e:  # no statistics extension in this build
        raise SystemExit(f"cannot read {url}: {e}; the benchmark needs the statistics API")
    return int(s["inference_count"]), int(s["execution_count"])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_wrk(port, lua, conns, seconds):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{seconds}s",
                          "--latency", "-s", lua,
                          f"http://127.0.0.1:{port}/v2/models/{MODEL}/infer"],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"wrk saw {errors.group(1)} error responses:\n{out}")
    m = re.search(r"\s50%\s+([\d.]+)(us|ms|s)\b", out)
    p50_ms = float(m.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[m.group(2)]
    return rps, p50_ms


SERVER_CORES = "0"


def serve(binary, repo, work, name, extra):
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", SERVER_CORES, binary, f"--model-repository={repo}",
                             f"--http-port={port}", "--http-address=127.0.0.1", "--log-info=false",
                             "--allow-grpc=false"] + extra,
                            stderr=open(os.path.join(work, f"{name}.log"), "w"))
    wait_ready(port, proc)
    return proc, port


def measure_server(binary, repo, work, name, lua, seconds, extra=()):
    """(infer/s, p50 ms, mean batch size, inferences per CPU-second) of one server run."""
    return measure_server_split(binary, repo, work, name, lua, seconds, extra)[:4]


def measure_server_split(binary, repo, work, name, lua, seconds, extra=(), perf_file=None):
    """measure_server's figures and the CPU µs per inference of (the busiest thread, the rest).
    perf_file: also `perf record -g` the server into that file while wrk measures."""
    proc, port = serve(binary, repo, work, name, list(extra))
    perf = None
    try:
        run_wrk(port, lua, 2 * MAX_BATCH, 2)  # warm-up
        i0, e0 = stats(port) if name == "batched" else (0, 0)
        if perf_file:
            perf = subprocess.Popen(["perf", "record", "-q", "-g", "-o", perf_file, "-p",
                                     str(proc.pid)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        c0 = cpu_seconds(proc.pid)
        t0 = thread_cpu_ns(proc.pid)
        rps, p50 = run_wrk(port, lua, 2 * MAX_BATCH, seconds)
        cpu = cpu_seconds(proc.pid) - c0
        t1 = thread_cpu_ns(proc.pid)
        i1, e1 = stats(port) if name == "batched" else (0, 0)
    finally:
        if perf is not None:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    mean = (i1 - i0) / (e1 - e0) if e1 > e0 else None
    # The busiest thread (the executor: it runs the model) and all the others (HTTP I/O threads,
    # ONNX Runtime, timers), in µs of CPU per inference.
    used = sorted((t1[t] - t0.get(t, 0) for t in t1), reverse=True)
    n = max(1.0, rps * seconds)
    split = (used[0] / 1000 / n, sum(used[1:]) / 1000 / n) if used else (0.0, 0.0)
    return rps, p50, mean, rps * seconds / cpu, split


def in_process(driver, model_path, batch, seconds):
    out = subprocess.run(["taskset", "-c", "0", driver, model_path, "INPUT0", "OUTPUT0",
                          str(WIDTH), str(batch), str(seconds)],
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out)
    return r["infer_per_s"], r["runs"] * r["batch"] / r["cpu_seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--driver", default=os.path.join(ROOT, "build/release/bench/ort_batch_driver"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--server-arg", action="append", default=[],
                    help="extra nereid flag, e.g. --server-arg=--http-thread-count=2")
    ap.add_argument("--server-cores", default="0",
                    help="cores the server may use (taskset list); the in-process driver always "
                         "gets core 0 and wrk core 1")
    args = ap.parse_args()
    global SERVER_CORES
    SERVER_CORES = args.server_cores
    for tool in ("wrk", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: run scripts/setup")
    work = tempfile.mkdtemp(prefix="nereid_batch_bench_")
    try:
        models = os.path.join(work, "examples")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                        "--examples", models], check=True)
        batched, unbatched = os.path.join(work, "batched"), os.path.join(work, "unbatched")
        write_repo(models, batched, True)
        write_repo(models, unbatched, False)
        lua = request_body(work)
        model_path = os.path.join(models, MODEL, "1", "model.onnx")
        print("wall: infer/s; cpu: infer per CPU-second of the working process")
        print(f"{'run':>3} | {'batched wall':>12} {'cpu':>6} {'p50 ms':>7} {'mean batch':>10} | "
              f"{'in-proc wall':>12} {'cpu':>6} | {'ratio wall':>10} {'cpu':>5} | "
              f"{'unbatched wall':>14} {'cpu':>6} | {'gain wall':>9} {'cpu':>5}")
        for run in range(args.repeat):
            rps, p50, mean, rps_cpu, split = measure_server_split(
                args.bin, batched, work, "batched", lua, args.seconds, args.server_arg)
            batch = max(1, round(mean))
            ref, ref_cpu = in_process(args.driver, model_path, batch, args.seconds)
            base, _, _, base_cpu = measure_server(args.bin, unbatched, work, "unbatched", lua,
                                                  args.seconds, args.server_arg)
            print(f"{run + 1:>3} | {rps:>12.0f} {rps_cpu:>6.0f} {p50:>7.2f} {mean:>10.2f} | "
                  f"{ref:>12.0f} {ref_cpu:>6.0f} | {rps / ref:>10.2f} {rps_cpu / ref_cpu:>5.2f} | "
                  f"{base:>14.0f} {base_cpu:>6.0f} | {rps / base:>9.2f} {rps_cpu / base_cpu:>5.2f}",
                  flush=True)
            print(f"    CPU us per inference: server {1e6 / rps_cpu:.1f} (busiest thread "
                  f"{split[0]:.1f}, other threads {split[1]:.1f}), in-process {1e6 / ref_cpu:.1f}",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
