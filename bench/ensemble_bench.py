#!/usr/bin/python3
"""Ensemble benchmark (issue 15): the example ensemble `mlp_pipeline` (identity_fp32 ->
mlp_fp32 -> identity_fp32) against a client that makes the same three calls itself, over HTTP
(wrk) and gRPC (h2load), at concurrency 1 and 16, nereid pinned to core 0 and the load tool to
core 1.

The client-chained figures are derived from the three calls measured one model at a time with the
same tool, request format and concurrency: a chain's throughput is 1 / (sum of 1/rps of its
calls) and its p50 the sum of their p50s (each call waits for the previous one). This is the
server's cost of the chain without a client's own work between calls, so it flatters the chain a
little. Goals (issue 15, not assertions): ensemble throughput >= 2x the chain at c=16; ensemble
p50 at c=1 within 15 us per step of mlp_fp32 alone.

Requests are one sample: FP32 [1,256] in, as JSON over HTTP and raw_input_contents over gRPC.

The same comparison is made for `identity3`, an ensemble of three identity_fp32 steps on FP32
[1,16] written into the benchmark's repository, where the framework's cost is all there is (the
MLP's ~0.5-1.3 ms of compute per sample hides it in mlp_pipeline).

Usage: bench/ensemble_bench.py [--seconds 5] [--bin build/release/nereid] [--json out.json]
Needs wrk, h2load, taskset, protoc + grpc_python_plugin and python3-grpcio.
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from grpc_bench import PATH, run_h2load, wait_port  # noqa: E402
from http_bench import free_port, post, run_wrk, wait_ready  # noqa: E402

# (name, model, input name, element count) of each call; the chain is the first three.
CALLS = [("pre", "identity_fp32", "INPUT0", 256), ("mlp", "mlp_fp32", "INPUT0", 256),
         ("post", "identity_fp32", "INPUT0", 16)]
ENSEMBLE = ("ensemble", "mlp_pipeline", "INPUT", 256)
ID_CALL = ("id16", "identity_fp32", "INPUT0", 16)
ID_ENSEMBLE = ("identity3", "identity3", "INPUT0", 16)
IDENTITY3 = """name: "identity3"
platform: "ensemble"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
ensemble_scheduling { step [
  { model_name: "identity_fp32" model_version: -1 input_map { key: "INPUT0" value: "INPUT0" }
    output_map { key: "OUTPUT0" value: "a" } },
  { model_name: "identity_fp32" model_version: -1 input_map { key: "INPUT0" value: "a" }
    output_map { key: "OUTPUT0" value: "b" } },
  { model_name: "identity_fp32" model_version: -1 input_map { key: "INPUT0" value: "b" }
    output_map { key: "OUTPUT0" value: "OUTPUT0" } } ] }
"""


def values(n):
    random.seed(n)
    return [round(random.gauss(0, 1), 4) for _ in range(n)]


def http_body(name, n):
    return json.dumps({"inputs": [{"name": name, "shape": [1, n], "datatype": "FP32",
                                   "data": values(n)}]}).encode()


def grpc_frame(model, name, n, path):
    from grpc_helpers import stubs
    pb = stubs().pb
    req = pb.ModelInferRequest(model_name=model)
    req.inputs.add(name=name, datatype="FP32", shape=[1, n])
    req.raw_input_contents.append(struct.pack(f"<{n}f", *values(n)))
    body = req.SerializeToString()
    with open(path, "wb") as f:
        f.write(b"\0" + struct.pack(">I", len(body)) + body)


def chain_of(results):
    return {"rps": 1.0 / sum(1.0 / r["rps"] for r in results),
            "p50_us": sum(r["p50_us"] for r in results)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    for tool in ("wrk", "h2load", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found")
    work = tempfile.mkdtemp(prefix="nereid-ensemble-bench-")
    models = os.path.join(work, "models")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, capture_output=True)
    os.makedirs(os.path.join(models, "identity3", "1"))
    with open(os.path.join(models, "identity3", "config.pbtxt"), "w") as f:
        f.write(IDENTITY3)
    hport, gport = free_port(), free_port()
    server = subprocess.Popen(
        ["taskset", "-c", "0", args.bin, f"--model-repository={models}",
         "--http-address=127.0.0.1", f"--http-port={hport}", "--allow-metrics=false",
         "--grpc-address=127.0.0.1", f"--grpc-port={gport}", "--log-info=false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {}
    try:
        wait_ready(hport, server)
        wait_port(gport, server)
        everything = CALLS + [ENSEMBLE, ID_CALL, ID_ENSEMBLE]
        for name, model, tensor, n in everything:
            post(hport, model, http_body(tensor, n))  # warm up and check it answers
        for conns in (1, 16):
            for name, model, tensor, n in everything:
                results[f"http_{name}_c{conns}"] = run_wrk(hport, model, http_body(tensor, n),
                                                           conns, args.seconds, work)
                frame = os.path.join(work, f"{name}.bin")
                grpc_frame(model, tensor, n, frame)
                results[f"grpc_{name}_c{conns}"] = run_h2load(gport, frame, conns, args.seconds,
                                                              work)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    print("| ensemble | protocol | conns | ensemble rps | ensemble p50 us | chained rps | chained p50 us |"
          " ratio | one call alone p50 us | added p50 per step us |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, ens_name, chain_names, alone in (
            ("mlp_pipeline", "ensemble", [c[0] for c in CALLS], "mlp"),
            ("identity3", "identity3", ["id16"] * 3, "id16")):
        for proto in ("http", "grpc"):
            for conns in (1, 16):
                ens = results[f"{proto}_{ens_name}_c{conns}"]
                chain = chain_of([results[f"{proto}_{c}_c{conns}"] for c in chain_names])
                one = results[f"{proto}_{alone}_c{conns}"]
                print(f"| {label} | {proto} | {conns} | {ens['rps']:.0f} | {ens['p50_us']:.0f} | "
                      f"{chain['rps']:.0f} | {chain['p50_us']:.0f} | "
                      f"{ens['rps'] / chain['rps']:.2f} | {one['p50_us']:.0f} | "
                      f"{(ens['p50_us'] - one['p50_us']) / 3:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
