#!/usr/bin/python3
"""gRPC load benchmark: Nereid's ModelInfer vs a minimal async echo server, side by side.

For concurrency 1 and 16 (connections, one stream each):
  * nereid runs pinned to core 0 (default --grpc-infer-thread-count=2), serving the identity
    model `identity_fp32` (identity backend: framework overhead only);
  * bench/grpc_echo_server (same libgrpc++, one completion queue, 2 threads) runs pinned to core
    0 and answers ModelInfer by copying inputs to outputs;
  * h2load pinned to core 1 POSTs the same pre-encoded gRPC frame (5-byte prefix + serialized
    ModelInferRequest, FP32 [1,16] in raw_input_contents) to both for --seconds each;
  * reports infer/s, p50, p99 (from h2load's per-request log), the nereid/echo throughput ratio
    and the added p50.

Usage: bench/grpc_bench.py [--bin build/release/nereid] [--echo build/release/bench/grpc_echo_server]
                           [--seconds 10] [--server-arg=--grpc-infer-thread-count=1]
Needs h2load (nghttp2-client), protoc + grpc_python_plugin and Debian's python3-grpcio.
"""
import argparse
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
PATH = "/inference.GRPCInferenceService/ModelInfer"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited during start-up")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError(f"port {port} not open in time")


def request_message():
    from grpc_helpers import stubs
    pb = stubs().pb
    req = pb.ModelInferRequest(model_name="identity_fp32")
    req.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 16])
    req.raw_input_contents.append(struct.pack("<16f", *range(16)))
    return req


def check_answer(port, req):
    import grpc
    from grpc_helpers import stubs
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        r = stubs().pb_grpc.GRPCInferenceServiceStub(ch).ModelInfer(req, timeout=10)
    assert r.raw_output_contents[0] == req.raw_input_contents[0], "wrong answer"


def run_h2load(port, frame_file, conns, seconds, workdir, path=PATH):
    log = os.path.join(workdir, f"h2load-{port}-{conns}-{os.path.basename(path)}.log")
    out = subprocess.run(
        ["taskset", "-c", "1", "h2load", "-t1", f"-c{conns}", "-m1", f"-D{seconds}",
         "--warm-up-time=1", f"--data={frame_file}", "-H", "content-type: application/grpc",
         "-H", "te: trailers", f"--log-file={log}", f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True, check=True).stdout
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded", out)
    lat = []
    with open(log) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] == "200":
                lat.append(int(parts[2]))
    lat.sort()
    done = int(m.group(4))
    rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))

    def pct(p):
        return float(lat[min(len(lat) - 1, int(len(lat) * p / 100))]) if lat else float("nan")
    return {"rps": rps, "p50_us": pct(50), "p99_us": pct(99), "succeeded": done,
            "failed": int(m.group(1)) - done if False else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--echo", default=os.path.join(ROOT, "build/release/bench/grpc_echo_server"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--server-arg", action="append", default=[])
    args = ap.parse_args()
    for tool in ("h2load", "taskset", "protoc", "grpc_python_plugin"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found")
    workdir = tempfile.mkdtemp(prefix="nereid-grpc-bench-")
    models = os.path.join(workdir, "models")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, capture_output=True)
    req = request_message()
    body = req.SerializeToString()
    frame_file = os.path.join(workdir, "frame.bin")
    with open(frame_file, "wb") as f:
        f.write(b"\0" + struct.pack(">I", len(body)) + body)

    nport, eport = free_port(), free_port()
    nereid = subprocess.Popen(
        ["taskset", "-c", "0", args.bin, f"--model-repository={models}",
         "--http-address=127.0.0.1", f"--http-port={free_port()}", "--allow-metrics=false",
         "--grpc-address=127.0.0.1", f"--grpc-port={nport}", "--log-info=false"] +
        args.server_arg, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    echo = subprocess.Popen(["taskset", "-c", "0", args.echo, str(eport), "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {}
    try:
        wait_port(nport, nereid)
        wait_port(eport, echo)
        check_answer(nport, req)
        check_answer(eport, req)
        for conns in (1, 16):
            for name, port in (("nereid", nport), ("echo", eport)):
                results[f"{name}_c{conns}"] = run_h2load(port, frame_file, conns, args.seconds,
                                                         workdir)
    finally:
        for p in (nereid, echo):
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"frame: {os.path.getsize(frame_file)} bytes; {args.seconds} s per run; "
          f"server args: {' '.join(args.server_arg) or '(defaults)'}")
    print(f"{'conc':>4} {'server':>7} {'infer/s':>10} {'p50 us':>8} {'p99 us':>8}")
    for conns in (1, 16):
        for name in ("nereid", "echo"):
            r = results[f"{name}_c{conns}"]
            print(f"{conns:>4} {name:>7} {r['rps']:>10.0f} {r['p50_us']:>8.0f} {r['p99_us']:>8.0f}")
        n, e = results[f"nereid_c{conns}"], results[f"echo_c{conns}"]
        print(f"{conns:>4}   ratio {n['rps'] / e['rps']:>10.2f}  added p50 "
              f"{n['p50_us'] - e['p50_us']:.0f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
