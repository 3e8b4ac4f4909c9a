#!/usr/bin/python3
"""System shared memory vs binary HTTP vs gRPC for one large tensor (issue 19).

A 16 MiB FP32 tensor ([1, 4194304]) through the identity backend (`identity_fp32` of the examples
repository) with Triton's own Python client, one request at a time (concurrency 1), in these
modes:

  http_binary      HTTP, binary tensor data both ways (the client serializes the array each time)
  grpc             gRPC raw_input_contents / raw_output_contents
  http_shm         HTTP, input and output in system shared memory regions registered once; the
                   client wrote the input into its region once (as perf_analyzer does)
  grpc_shm         the same over gRPC
  http_shm_write   http_shm, the client also copying the array into its region before each request

The server is pinned to core 0 and the client to core 1 (taskset / sched_setaffinity). Modes are
interleaved round by round so drift on a shared machine shows as spread between rounds. Each round
prints per mode the p50 and p90 latency (ms) and the throughput (requests/s = 1 / mean latency).

Usage: bench/shm_bench.py [--bin build/release/nereid] [--models DIR] [--rounds 3] [--requests 30]
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.normpath(os.path.join(ROOT, "..", "shared", "tritonclient")))
import tritonclient.grpc as grpcclient  # noqa: E402
import tritonclient.http as httpclient  # noqa: E402
import tritonclient.utils.shared_memory as shm  # noqa: E402

N = 4 * 1024 * 1024  # FP32 elements: 16 MiB
MODEL = "identity_fp32"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, models, workdir):
    http_port, grpc_port = free_port(), free_port()
    log = open(os.path.join(workdir, "server.log"), "w")
    proc = subprocess.Popen(
        ["taskset", "-c", "0", binary, f"--model-repository={models}/examples",
         f"--http-port={http_port}", "--http-address=127.0.0.1", f"--grpc-port={grpc_port}",
         "--grpc-address=127.0.0.1", "--allow-metrics=false", "--allow-client-shm=true"],
        stdout=log, stderr=subprocess.STDOUT)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}")
    for _ in range(200):
        try:
            if client.is_server_ready():
                return proc, http_port, grpc_port
        except Exception:  # noqa: BLE001
            pass
        time.sleep(0.05)
    proc.kill()
    sys.exit("server did not become ready; see " + log.name)


class Bench:
    def __init__(self, http_port, grpc_port):
        self.http = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}",
                                                     connection_timeout=120, network_timeout=120)
        self.grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        self.data = np.random.default_rng(0).random((1, N), dtype=np.float32)
        key = f"/nereid_shm_bench_{os.getpid()}"
        self.region = shm.create_shared_memory_region("bench", key, 8 * N)
        shm.set_shared_memory_region(self.region, [self.data])
        self.http.register_system_shared_memory("bench", key, 8 * N)

    def close(self):
        self.http.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(self.region)

    def check(self, out):
        if not np.array_equal(out, self.data):
            sys.exit("wrong output")

    def http_binary(self):
        inp = httpclient.InferInput("INPUT0", [1, N], "FP32")
        inp.set_data_from_numpy(self.data, binary_data=True)
        out = httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)
        return self.http.infer(MODEL, [inp], outputs=[out]).as_numpy("OUTPUT0")

    def grpc_raw(self):
        inp = grpcclient.InferInput("INPUT0", [1, N], "FP32")
        inp.set_data_from_numpy(self.data)
        return self.grpc.infer(MODEL, [inp]).as_numpy("OUTPUT0")

    def _shm(self, module, client, write):
        if write:
            shm.set_shared_memory_region(self.region, [self.data])
        inp = module.InferInput("INPUT0", [1, N], "FP32")
        inp.set_shared_memory("bench", 4 * N)
        out = module.InferRequestedOutput("OUTPUT0")
        out.set_shared_memory("bench", 4 * N, offset=4 * N)
        client.infer(MODEL, [inp], outputs=[out])
        return shm.get_contents_as_numpy(self.region, np.float32, [1, N], offset=4 * N)

    def http_shm(self):
        return self._shm(httpclient, self.http, False)

    def grpc_shm(self):
        return self._shm(grpcclient, self.grpc, False)

    def http_shm_write(self):
        return self._shm(httpclient, self.http, True)


MODES = ["http_binary", "grpc", "http_shm", "grpc_shm", "http_shm_write"]


def run_mode(bench, mode, requests):
    fn = {"grpc": bench.grpc_raw}.get(mode) or getattr(bench, mode)
    for _ in range(3):
        bench.check(fn())
    times = []
    for _ in range(requests):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    p50 = statistics.median(times) * 1e3
    p90 = times[int(0.9 * (len(times) - 1))] * 1e3
    return p50, p90, len(times) / sum(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "nereid"))
    ap.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(ROOT, "build", "release", "test_models")))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=30)
    args = ap.parse_args()
    os.sched_setaffinity(0, {1})
    with tempfile.TemporaryDirectory() as workdir:
        proc, http_port, grpc_port = start_server(args.bin, args.models, workdir)
        bench = Bench(http_port, grpc_port)
        results = {m: [] for m in MODES}
        try:
            for r in range(args.rounds):
                order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
                for mode in order:
                    results[mode].append(run_mode(bench, mode, args.requests))
                print(f"round {r + 1}, load average {os.getloadavg()[0]:.1f}:")
                for mode in MODES:
                    p50, p90, rps = results[mode][-1]
                    print(f"  {mode:15s} p50 {p50:8.2f} ms  p90 {p90:8.2f} ms  {rps:7.1f} req/s")
        finally:
            bench.close()
            proc.terminate()
            proc.wait(30)
    print("over the rounds (min-max):")
    base = [p50 for p50, _, _ in results["http_binary"]]
    for mode in MODES:
        p50s = [p for p, _, _ in results[mode]]
        rps = [x for _, _, x in results[mode]]
        ratio = [a / b for a, b in zip(p50s, base)]
        print(f"  {mode:15s} p50 {min(p50s):7.2f}-{max(p50s):7.2f} ms  "
              f"{min(rps):6.1f}-{max(rps):6.1f} req/s  p50 / http_binary p50 "
              f"{min(ratio):.3f}-{max(ratio):.3f}")


if __name__ == "__main__":
    main()
