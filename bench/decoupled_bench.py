#!/usr/bin/python3
"""Decoupled streaming benchmark (issue 17): Triton's `repeat` backend producing 100 responses per
request over gRPC ModelStreamInfer, against unary ModelInfer of `identity_fp32` on the same core.

  * nereid runs pinned to core 0 (default thread counts) with the examples and the `decoupled`
    fixtures (scripts/gen_test_models.py);
  * throughput: h2load pinned to core 1 sends, on each HTTP/2 stream, one pre-encoded request and
    half-closes; for ModelStreamInfer the request is repeat_int32 with IN = 100 elements, DELAY 0,
    WAIT 0, so each stream carries 100 responses (no flags-only FINAL is written). responses/s =
    100 x streams/s; compared with h2load's infer/s of unary identity_fp32 (FP32 [1,16]);
  * gaps: --streams client processes pinned to core 1 each keep one ModelStreamInfer stream and
    send the next request when the previous one's 100 responses arrived; every gap between two
    consecutive responses of one request is recorded (python3-grpcio, so the client's own cost is
    in the figure); then the same with one measuring client among streams-1 h2load streams.

Usage: bench/decoupled_bench.py [--bin build/release/nereid] [--seconds 10] [--streams 16]
Needs h2load (nghttp2-client), protoc + grpc_python_plugin and Debian's python3-grpcio.
"""
import argparse
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from grpc_bench import free_port, request_message, run_h2load, wait_port  # noqa: E402

STREAM_PATH = "/inference.GRPCInferenceService/ModelStreamInfer"
RESPONSES = 100


def repeat_message(n=RESPONSES):
    from grpc_helpers import stubs
    pb = stubs().pb
    req = pb.ModelInferRequest(model_name="repeat_int32")
    req.inputs.add(name="IN", datatype="INT32", shape=[n])
    req.inputs.add(name="DELAY", datatype="UINT32", shape=[n])
    req.inputs.add(name="WAIT", datatype="UINT32", shape=[1])
    req.raw_input_contents.append(struct.pack(f"<{n}i", *range(n)))
    req.raw_input_contents.append(bytes(4 * n))
    req.raw_input_contents.append(bytes(4))
    return req


def frame(path, message):
    body = message.SerializeToString()
    with open(path, "wb") as f:
        f.write(b"\0" + struct.pack(">I", len(body)) + body)
    return path


def gap_client(port, seconds, out):
    """One stream; returns (gaps in ns, responses) through `out`."""
    import grpc
    from grpc_helpers import stubs
    s = stubs()
    req = repeat_message()
    gaps, count = [], 0
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = s.pb_grpc.GRPCInferenceServiceStub(ch)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            last = None
            for r in stub.ModelStreamInfer(iter([req]), timeout=60):
                now = time.perf_counter_ns()
                if r.error_message:
                    raise RuntimeError(r.error_message)
                if last is not None:
                    gaps.append(now - last)
                last = now
                count += 1
    out.put((gaps, count))


def run_gaps(port, streams, seconds):
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=gap_client, args=(port, seconds, q))
             for _ in range(streams)]
    start = time.monotonic()
    for p in procs:
        p.start()
    gaps, count = [], 0
    for _ in procs:
        g, c = q.get(timeout=seconds + 120)
        gaps += g
        count += c
    elapsed = time.monotonic() - start
    for p in procs:
        p.join()
    gaps.sort()

    def pct(v):
        return gaps[min(len(gaps) - 1, int(len(gaps) * v / 100))] / 1000 if gaps else float("nan")
    return {"responses_per_s": count / elapsed, "p50_us": pct(50), "p99_us": pct(99),
            "p999_us": pct(99.9), "gaps": len(gaps)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--streams", type=int, default=16)
    args = ap.parse_args()
    for tool in ("h2load", "taskset", "protoc", "grpc_python_plugin"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found")
    workdir = tempfile.mkdtemp(prefix="nereid-decoupled-bench-")
    models = os.path.join(workdir, "models")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", os.path.join(models, "examples"),
                    "--fixtures", os.path.join(models, "fixtures")],
                   check=True, capture_output=True)
    unary = frame(os.path.join(workdir, "unary.bin"), request_message())
    stream = frame(os.path.join(workdir, "stream.bin"), repeat_message())
    port = free_port()
    nereid = subprocess.Popen(
        ["taskset", "-c", "0", args.bin, f"--model-repository={models}/examples",
         f"--model-repository={models}/fixtures/decoupled",
         "--http-address=127.0.0.1", f"--http-port={free_port()}", "--allow-metrics=false",
         "--grpc-address=127.0.0.1", f"--grpc-port={port}", "--log-info=false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, nereid)
        unary16 = run_h2load(port, unary, 16, args.seconds, workdir)
        stream16 = run_h2load(port, stream, 16, args.seconds, workdir, path=STREAM_PATH)
        stream1 = run_h2load(port, stream, 1, args.seconds, workdir, path=STREAM_PATH)
        os.sched_setaffinity(0, {1})  # the gap clients inherit core 1
        gaps = run_gaps(port, args.streams, args.seconds)
        # One measuring stream among streams-1 that h2load keeps busy (h2load's cost per
        # response is far below a Python client's, so the server sets the pace).
        import threading
        background = threading.Thread(target=run_h2load, args=(
            port, stream, args.streams - 1, args.seconds + 2, workdir, STREAM_PATH))
        background.start()
        time.sleep(1.5)
        mixed = run_gaps(port, 1, args.seconds)
        background.join()
    finally:
        nereid.terminate()
        try:
            nereid.wait(30)
        except subprocess.TimeoutExpired:
            nereid.kill()
    print(f"{args.seconds} s per run, nereid on core 0, clients on core 1")
    print(f"unary identity_fp32 c=16: {unary16['rps']:.0f} infer/s "
          f"(p50 {unary16['p50_us']:.0f} us, p99 {unary16['p99_us']:.0f} us)")
    for name, r in (("c=1", stream1), ("c=16", stream16)):
        print(f"stream repeat x{RESPONSES} {name}: {r['rps']:.0f} requests/s = "
              f"{r['rps'] * RESPONSES:.0f} responses/s, ratio to unary c=16 "
              f"{r['rps'] * RESPONSES / unary16['rps']:.2f} (p50 {r['p50_us']:.0f} us per request)")
    print(f"gaps between consecutive responses, {args.streams} streams (python clients): "
          f"p50 {gaps['p50_us']:.0f} us, p99 {gaps['p99_us']:.0f} us, p99.9 {gaps['p999_us']:.0f} us "
          f"over {gaps['gaps']} gaps, {gaps['responses_per_s']:.0f} responses/s")
    print(f"gaps on 1 python stream among {args.streams - 1} h2load streams: "
          f"p50 {mixed['p50_us']:.0f} us, p99 {mixed['p99_us']:.0f} us, "
          f"p99.9 {mixed['p999_us']:.0f} us over {mixed['gaps']} gaps")
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
