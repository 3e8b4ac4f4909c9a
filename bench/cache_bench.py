#!/usr/bin/python3
"""Response cache throughput (issue 16): mlp_fp32 answered from the cache (every request the same,
so every request after the first is a hit) against mlp_fp32 computed (the same model without the
cache: what a miss costs, minus the lookup and insert) and against identity_fp32 (the protocol
alone), at 16 connections; then the p50 of a hit at 1 connection from the local cache and from
Redis (a redis-server on a free loopback port).

nereid is pinned to core 0, wrk to core 1 (bench/http_bench.py's helpers). Needs wrk and
redis-server (scripts/setup installs both).

    scripts/build release && /usr/bin/python3 bench/cache_bench.py [--seconds 5]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_bench import free_port, post, run_wrk, wait_ready  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def body(name, n):
    return json.dumps({"inputs": [{"name": name, "datatype": "FP32", "shape": [1, n],
                                   "data": [0.5] * n}]}).encode()


def start(bin_path, repo, flags):
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", "0", bin_path, f"--model-repository={repo}",
                             f"--http-port={port}", "--http-address=127.0.0.1",
                             "--allow-grpc=false", "--allow-metrics=false"] + flags,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(ROOT, "build/release/test_models")))
    ap.add_argument("--seconds", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nereid-cache-bench-")
    repo = os.path.join(work, "repo")
    examples = os.path.join(args.models, "examples")
    for m in ("mlp_fp32", "identity_fp32"):
        shutil.copytree(os.path.join(examples, m), os.path.join(repo, m))
    shutil.copytree(os.path.join(examples, "mlp_fp32"), os.path.join(repo, "mlp_cached"))
    cfg = os.path.join(repo, "mlp_cached", "config.pbtxt")
    text = open(cfg).read().replace('name: "mlp_fp32"', 'name: "mlp_cached"')
    open(cfg, "w").write(text + "\nresponse_cache { enable: true }\n")
    mlp, ident = body("INPUT0", 256), body("INPUT0", 16)
    rows = []
    proc, port = start(args.bin, repo, ["--cache-config=local,size=67108864"])
    try:
        for model, b in (("mlp_cached", mlp), ("mlp_fp32", mlp), ("identity_fp32", ident)):
            post(port, model, b)
            r = run_wrk(port, model, b, 16, args.seconds, work)
            rows.append(("local", model, 16, r))
        rows.append(("local", "mlp_cached", 1, run_wrk(port, "mlp_cached", mlp, 1, args.seconds,
                                                        work)))
    finally:
        proc.terminate()
        proc.wait()
    redis_bin = shutil.which("redis-server")
    if redis_bin:
        rport = free_port()
        redis = subprocess.Popen(["taskset", "-c", "1", redis_bin, "--port", str(rport),
                                  "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            proc, port = start(args.bin, repo, ["--cache-config=redis,host=127.0.0.1",
                                                f"--cache-config=redis,port={rport}"])
            try:
                post(port, "mlp_cached", mlp)
                rows.append(("redis", "mlp_cached", 1,
                             run_wrk(port, "mlp_cached", mlp, 1, args.seconds, work)))
                rows.append(("redis", "mlp_cached", 16,
                             run_wrk(port, "mlp_cached", mlp, 16, args.seconds, work)))
            finally:
                proc.terminate()
                proc.wait()
        finally:
            redis.terminate()
            redis.wait()
    print("| cache | model | conns | rps | p50 µs | p99 µs | non-2xx |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for cache, model, conns, r in rows:
        print(f"| {cache} | {model} | {conns} | {r['rps']:.0f} | {r['p50_us']:.0f} | "
              f"{r['p99_us']:.0f} | {r['non2xx']} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
