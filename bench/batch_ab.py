#!/usr/bin/python3
"""A/B of two nereid binaries on bench/batch_bench.py's batched row (issue 21 goal 3), interleaved.

Usage: bench/batch_ab.py --a OLD_BIN --b NEW_BIN [--rounds 5] [--seconds 4] [--format binary]
                         [--driver build/release/bench/ort_batch_driver] [--perf-b FILE]

Each round serves mlp_fp32 with `dynamic_batching {}` (one instance, intra-op 1) from A then from
B, each pinned to core 0 with wrk on core 1 at 64 connections sending one [1,256] FP32 sample per
request (--format binary: binary tensor data, as batch_bench.py; json: the same sample as a JSON
`data` array), then runs the in-process driver (bench/ort_batch_driver) on core 0 for as long.
Reports per side the median over the rounds (min-max) of:
  * server CPU µs per inference (every thread, from /proc/<pid>/task/*/schedstat),
  * the busiest thread's (the executor running the model) and the other threads' (HTTP I/O),
  * inferences per server CPU-second / the driver's in the same round (goal >= 0.90),
and B/A of the medians. CPU per inference barely moves with other processes' load, wall-clock
throughput does. --perf-b FILE records `perf record -g` of B's server during its last round (whose
figures then include perf's overhead).
"""
import argparse
import json
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import batch_bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def json_lua(work):
    """The sample of batch_bench.request_body as a JSON request (binary output kept off)."""
    random.seed(1)
    values = [random.gauss(0, 1) for _ in range(batch_bench.WIDTH)]
    # Round-trip through FP32 so the text is what a client holding float32 data would send.
    values = list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32",
                                   "shape": [1, batch_bench.WIDTH], "data": values}],
                       "outputs": [{"name": "OUTPUT0"}]}).encode()
    body_path = os.path.join(work, "body.json")
    with open(body_path, "wb") as f:
        f.write(body)
    lua = os.path.join(work, "mlp_json.lua")
    with open(lua, "w") as f:
        f.write(f'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                f'local f = io.open("{body_path}", "rb")\nwrk.body = f:read("*all")\nf:close()\n')
    return lua


def measure(args, work):
    """{(side, figure): [value per round]} of args.rounds interleaved rounds."""
    models = os.path.join(work, "examples")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, stdout=subprocess.DEVNULL)
    repo = os.path.join(work, "batched")
    batch_bench.write_repo(models, repo, True)
    lua = batch_bench.request_body(work) if args.format == "binary" else json_lua(work)
    model_path = os.path.join(models, batch_bench.MODEL, "1", "model.onnx")
    cells = {}  # (side, figure) -> [value per round]
    for r in range(args.rounds):
        driver_cpu = None
        for side, binary in (("A", args.a), ("B", args.b)):
            perf = args.perf_b if side == "B" and r == args.rounds - 1 else None
            rps, _, mean, rps_cpu, split = batch_bench.measure_server_split(
                binary, repo, work, "batched", lua, args.seconds, perf_file=perf)
            if driver_cpu is None:
                _, driver_cpu = batch_bench.in_process(args.driver, model_path,
                                                       max(1, round(mean)), args.seconds)
            for name, value in (("server us/inf", 1e6 / rps_cpu), ("executor us/inf", split[0]),
                                ("other us/inf", split[1]), ("mean batch", mean),
                                ("ratio per CPU-s", rps_cpu / driver_cpu),
                                ("driver us/inf", 1e6 / driver_cpu)):
                cells.setdefault((side, name), []).append(value)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    return cells


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="baseline binary")
    ap.add_argument("--b", required=True, help="candidate binary")
    ap.add_argument("--driver", default=os.path.join(ROOT, "build/release/bench/ort_batch_driver"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--format", default="binary", choices=("binary", "json"))
    ap.add_argument("--perf-b", help="write perf record -g of B's last round to this file")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nereid_batch_ab_")
    try:
        cells = measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'figure':16} | {'A':>7} {'A min-max':>15} | {'B':>7} {'B min-max':>15} | B/A")
    for name in ("server us/inf", "executor us/inf", "other us/inf", "mean batch",
                 "ratio per CPU-s", "driver us/inf"):
        a, b = cells[("A", name)], cells[("B", name)]
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{name:16} | {ma:>7.2f} {f'{min(a):.2f}-{max(a):.2f}':>15} | {mb:>7.2f} "
              f"{f'{min(b):.2f}-{max(b):.2f}':>15} | {mb / ma:.3f}")
    print(json.dumps({f"{s} {n}": v for (s, n), v in cells.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
