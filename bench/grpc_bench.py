#!/usr/bin/python3
"""gRPC load benchmark: Nereid's ModelInfer vs a minimal async echo server, side by side.

For concurrency 1 and 16 (connections, one stream each):
  * nereid runs pinned to core 0 (so its default --grpc-infer-thread-count is 1, ADR 0009),
    serving the identity model `identity_fp32` (identity backend: framework overhead only);
  * bench/grpc_echo_server (same libgrpc++, one completion queue, --echo-threads 2) runs pinned
    to core 0 and answers ModelInfer by copying inputs to outputs;
  * h2load pinned to core 1 POSTs the same pre-encoded gRPC frame (5-byte prefix + serialized
    ModelInferRequest, FP32 [1,16] in raw_input_contents) to both for --seconds each;
  * reports infer/s, p50, p99 (from h2load's per-request log), the nereid/echo throughput ratio
    and the added p50, and each server's CPU time per inference (every thread's run time from
    /proc/<pid>/task/*/schedstat over the run, divided by the inferences answered): on a shared
    machine this moves far less than infer/s, so decide on it;
  * the stream row: h2load opens ModelStreamInfer calls whose body is --stream-messages frames of
    the same request (sent at once, then half-closed) and counts one per call, so a stream row's
    infer/s and CPU are per message (infer/s = calls/s x messages) and its p50/p99 are per call.

--dynamic-batching serves identity_fp32 with `dynamic_batching {}` (batches of up to 8), to measure
the reply path of an executor that answers several requests in a row.
--pingpong adds two rows driven by a Python grpc.aio client (one request outstanding per caller):
py-unary (ModelInfer) and py-stream (one long ModelStreamInfer per caller, write then read), so the
stream's CPU per message is compared with unary's at the same pace; the client is the bottleneck,
so only their CPU columns mean anything.
--rounds N repeats every cell N times, interleaved, and reports medians (min-max of CPU).

Usage: bench/grpc_bench.py [--bin build/release/nereid] [--echo build/release/bench/grpc_echo_server]
                           [--seconds 10] [--rounds 1] [--stream-messages 32] [--no-stream]
                           [--conns 1,16] [--dynamic-batching] [--pingpong]
                           [--server-arg=--grpc-infer-thread-count=2] [--echo-threads 2]
                           [--json out.json]
Needs h2load (nghttp2-client), protoc + grpc_python_plugin and Debian's python3-grpcio.
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_bench import cpu_ns  # noqa: E402
PATH = "/inference.GRPCInferenceService/ModelInfer"
STREAM_PATH = "/inference.GRPCInferenceService/ModelStreamInfer"


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


def check_stream_answer(port, req):
    import grpc
    from grpc_helpers import stubs
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = stubs().pb_grpc.GRPCInferenceServiceStub(ch)
        replies = list(stub.ModelStreamInfer(iter([req, req]), timeout=10))
    assert len(replies) == 2, "wrong number of stream replies"
    for r in replies:
        assert not r.error_message, r.error_message
        assert r.infer_response.raw_output_contents[0] == req.raw_input_contents[0], "wrong answer"


def run_pingpong(port, req, conns, seconds, pid, stream):
    """`conns` grpc.aio callers (one channel each) for `seconds`, each with one request
    outstanding at a time: unary ModelInfer calls, or writes and reads on one long
    ModelStreamInfer per caller. Returns messages/s and the server's CPU µs per message. The
    client (Python, on core 1) is the bottleneck here: compare the server's CPU per message of the
    two modes, not their rates with the h2load rows."""
    import asyncio
    import grpc
    from grpc_helpers import stubs

    async def caller(stub, stop_at, counts):
        n = 0
        if stream:
            call = stub.ModelStreamInfer()
            while time.monotonic() < stop_at:
                await call.write(req)
                r = await call.read()
                assert not r.error_message, r.error_message
                n += 1
            await call.done_writing()
            await call.read()  # EOF once the server has finished the stream
        else:
            while time.monotonic() < stop_at:
                await stub.ModelInfer(req)
                n += 1
        counts.append(n)

    async def run():
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _ in range(conns)]
        stub_list = [stubs().pb_grpc.GRPCInferenceServiceStub(ch) for ch in channels]
        counts = []
        await asyncio.gather(*(caller(st, time.monotonic() + 0.5, []) for st in stub_list))
        before = cpu_ns(pid)
        start = time.monotonic()
        await asyncio.gather(*(caller(st, start + seconds, counts) for st in stub_list))
        used = cpu_ns(pid) - before
        elapsed = time.monotonic() - start
        for ch in channels:
            await ch.close()
        return sum(counts), used, elapsed

    os.sched_setaffinity(0, {1})
    n, used, elapsed = asyncio.run(run())
    return {"rps": n / elapsed, "p50_us": float("nan"), "p99_us": float("nan"),
            "succeeded": n, "cpu_us": used / 1000 / n}


def run_h2load(port, frame_file, conns, seconds, workdir, path=PATH, pid=None, messages=1):
    log = os.path.join(workdir, f"h2load-{port}-{conns}-{os.path.basename(path)}.log")
    proc = subprocess.Popen(
        ["taskset", "-c", "1", "h2load", "-t1", f"-c{conns}", "-m1", f"-D{seconds}",
         "--warm-up-time=1", f"--data={frame_file}", "-H", "content-type: application/grpc",
         "-H", "te: trailers", f"--log-file={log}", f"http://127.0.0.1:{port}{path}"],
        stdout=subprocess.PIPE, text=True)
    # The server's CPU over h2load's measuring period (after its 1 s warm-up).
    time.sleep(1.0)
    before = cpu_ns(pid) if pid else 0
    out, _ = proc.communicate()
    used = cpu_ns(pid) - before if pid else 0
    assert proc.returncode == 0, out
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded", out)
    lat = []
    with open(log) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] == "200":
                lat.append(int(parts[2]))
    lat.sort()
    done = int(m.group(4))
    assert done > 0 and int(m.group(3)) == done, out
    rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))
    cpu_us = used / 1000 / (done * messages) if pid else float("nan")

    def pct(p):
        return float(lat[min(len(lat) - 1, int(len(lat) * p / 100))]) if lat else float("nan")
    return {"rps": rps * messages, "p50_us": pct(50), "p99_us": pct(99), "succeeded": done,
            "cpu_us": cpu_us}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--echo", default=os.path.join(ROOT, "build/release/bench/grpc_echo_server"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--stream-messages", type=int, default=32)
    ap.add_argument("--no-stream", action="store_true")
    ap.add_argument("--pingpong", action="store_true",
                    help="also compare unary and stream one message at a time (Python client)")
    ap.add_argument("--dynamic-batching", action="store_true",
                    help="serve identity_fp32 with dynamic_batching {} (max_batch_size 8)")
    ap.add_argument("--conns", default="1,16")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--server-arg", action="append", default=[])
    ap.add_argument("--echo-threads", type=int, default=2,
                    help="completion-queue threads of the echo server")
    args = ap.parse_args()
    for tool in ("h2load", "taskset", "protoc", "grpc_python_plugin"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found")
    conns_list = [int(c) for c in args.conns.split(",")]
    workdir = tempfile.mkdtemp(prefix="nereid-grpc-bench-")
    models = os.path.join(workdir, "models")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, capture_output=True)
    if args.dynamic_batching:
        with open(os.path.join(models, "identity_fp32", "config.pbtxt"), "a") as f:
            f.write("dynamic_batching {}\n")
    req = request_message()
    body = req.SerializeToString()
    frame = b"\0" + struct.pack(">I", len(body)) + body
    frame_file = os.path.join(workdir, "frame.bin")
    with open(frame_file, "wb") as f:
        f.write(frame)
    stream_file = os.path.join(workdir, "stream.bin")
    with open(stream_file, "wb") as f:
        f.write(frame * args.stream_messages)

    nport, eport = free_port(), free_port()
    nereid = subprocess.Popen(
        ["taskset", "-c", "0", args.bin, f"--model-repository={models}",
         "--http-address=127.0.0.1", f"--http-port={free_port()}", "--allow-metrics=false",
         "--grpc-address=127.0.0.1", f"--grpc-port={nport}", "--log-info=false"] +
        args.server_arg, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    echo = subprocess.Popen(["taskset", "-c", "0", args.echo, str(eport), str(args.echo_threads)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # (server, conns) -> results of each round; "stream" is nereid's ModelStreamInfer.
    cells = [("nereid", nport, nereid.pid, PATH, frame_file, 1),
             ("echo", eport, echo.pid, PATH, frame_file, 1)]
    if not args.no_stream:
        cells.append(("stream", nport, nereid.pid, STREAM_PATH, stream_file,
                      args.stream_messages))
    results = {}
    try:
        wait_port(nport, nereid)
        wait_port(eport, echo)
        check_answer(nport, req)
        check_answer(eport, req)
        if not args.no_stream:
            check_stream_answer(nport, req)
        for r in range(args.rounds):
            for conns in conns_list:
                for name, port, pid, path, data, messages in cells:
                    results.setdefault(f"{name}_c{conns}", []).append(
                        run_h2load(port, data, conns, args.seconds, workdir, path, pid, messages))
                if args.pingpong:
                    for name, stream in (("py-unary", False), ("py-stream", True)):
                        results.setdefault(f"{name}_c{conns}", []).append(
                            run_pingpong(nport, req, conns, args.seconds, nereid.pid, stream))
            if args.rounds > 1:
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for p in (nereid, echo):
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()

    def med(key, field):
        return statistics.median(r[field] for r in results[key])

    def spread(key, field):
        vals = [r[field] for r in results[key]]
        return f"{min(vals):.1f}-{max(vals):.1f}"

    print(f"frame: {len(frame)} bytes; {args.seconds} s per run; {args.rounds} round(s), medians; "
          f"stream: {args.stream_messages} messages per call; "
          f"{'dynamic batching; ' if args.dynamic_batching else ''}"
          f"server args: {' '.join(args.server_arg) or '(defaults)'}; "
          f"echo threads: {args.echo_threads}")
    print(f"{'conc':>4} {'server':>7} {'infer/s':>10} {'p50 us':>8} {'p99 us':>8} "
          f"{'CPU us/infer':>12} {'CPU min-max':>12}")
    names = [c[0] for c in cells] + (["py-unary", "py-stream"] if args.pingpong else [])
    for conns in conns_list:
        for name in names:
            key = f"{name}_c{conns}"
            print(f"{conns:>4} {name:>7} {med(key, 'rps'):>10.0f} {med(key, 'p50_us'):>8.0f} "
                  f"{med(key, 'p99_us'):>8.0f} {med(key, 'cpu_us'):>12.1f} "
                  f"{spread(key, 'cpu_us'):>12}")
        n, e = f"nereid_c{conns}", f"echo_c{conns}"
        line = (f"{conns:>4}   ratio {med(n, 'rps') / med(e, 'rps'):>10.2f}  added p50 "
                f"{med(n, 'p50_us') - med(e, 'p50_us'):.0f} us; CPU per infer nereid/echo "
                f"{med(n, 'cpu_us') / med(e, 'cpu_us'):.2f}")
        if not args.no_stream:
            line += f"; stream/unary CPU per message {med(f'stream_c{conns}', 'cpu_us') / med(n, 'cpu_us'):.2f}"
        if args.pingpong:
            line += (f"; one-at-a-time stream/unary CPU per message "
                     f"{med(f'py-stream_c{conns}', 'cpu_us') / med(f'py-unary_c{conns}', 'cpu_us'):.2f}")
        print(line)
    if args.json:
        # "<server>_c<conns>": the medians (the shape bench/issue21.py reads); "rounds": each run.
        out = {key: {field: statistics.median(r[field] for r in runs)
                     for field in ("rps", "p50_us", "p99_us", "cpu_us")}
               for key, runs in results.items()}
        out["rounds"] = results
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
