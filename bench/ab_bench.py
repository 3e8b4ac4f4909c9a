#!/usr/bin/python3
"""A/B cost of two nereid binaries, interleaved to cancel drifting machine load.

Usage: bench/ab_bench.py --a OLD_BIN --b NEW_BIN [--rounds 5] [--seconds 3] [--conns 1,16]
                         [--formats json[,binary]] [--b-arg=--flag ...] [--b-env NAME=VALUE ...]
                         [--grpc [--stream-messages 32]]
(--b-env e.g. LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 to compare an allocator.)

Each round starts A then B (each pinned to core 0, wrk pinned to core 1), runs wrk against
`identity_fp32` and `simple` (same JSON requests as http_bench.py) at each connection count, and
stops the server. --formats binary adds the same requests with binary tensor data (inputs and
outputs, `Inference-Header-Content-Length`), as nereid_perf --binary sends them. Reports, per cell, the median over the rounds of
  * requests/s (wall-clock throughput: sensitive to whatever else the machine runs), and
  * server CPU time per request (the sum of every server thread's run time from
    /proc/<pid>/task/*/schedstat, divided by the requests wrk completed): on a saturated core this
    is the inverse of the throughput the server can reach, and it barely moves when other
    processes compete for the machine,
with min-max spreads and B/A of the medians. Used for the statistics overhead figure in
bench/README.md: compare a build without statistics against one with them.

--grpc measures the gRPC frontend instead, with h2load pinned to core 1 (bench/grpc_bench.py's
pre-encoded ModelInfer of `identity_fp32`, FP32 [1,16] in raw_input_contents): a `unary` row
(ModelInfer) and a `stream` row (ModelStreamInfer calls of --stream-messages requests sent at
once; its requests/s and CPU are per message). Needs h2load, protoc and grpc_python_plugin.
AB_DEBUG=1 shows the servers' stderr (a server that exits at start-up says why).
"""

import argparse
import json
import os
import re
import signal
import statistics
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import http_bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def thread_cpu_ns(pid):
    """{tid: run time so far in ns} of every thread of `pid` (/proc/<pid>/task/*/schedstat)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that just ended
    return out


def cpu_ns(pid):
    """Run time so far of every thread of `pid` together (ns)."""
    return sum(thread_cpu_ns(pid).values())


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))


def binary_request(request):
    """(body, JSON header length) of `request` (http_bench.REQUESTS form) with binary tensors."""
    header = {"inputs": [], "parameters": {"binary_data_output": True}}
    raw = b""
    for t in request["inputs"]:
        data = struct.pack(f"<{len(t['data'])}" + ("f" if t["datatype"] == "FP32" else "i"),
                           *t["data"])
        header["inputs"].append({"name": t["name"], "datatype": t["datatype"], "shape": t["shape"],
                                 "parameters": {"binary_data_size": len(data)}})
        raw += data
    text = json.dumps(header).encode()
    return text + raw, len(text)


def lua_string(data):
    """`data` (bytes) as a Lua string literal."""
    return '"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\' else f"\\{b:03d}"
                         for b in data) + '"'


def run_wrk(port, model, body, conns, seconds, workdir, header_length=None):
    lua = os.path.join(workdir, f"{model}.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\n')
        if header_length is None:
            f.write('wrk.headers["Content-Type"] = "application/json"\n')
        else:
            f.write('wrk.headers["Content-Type"] = "application/octet-stream"\n'
                    f'wrk.headers["Inference-Header-Content-Length"] = "{header_length}"\n')
        f.write(f"wrk.body = {lua_string(body)}\n")
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "-s",
                          lua, f"http://127.0.0.1:{port}/v2/models/{model}/infer"],
                         capture_output=True, text=True, check=True).stdout
    assert "Non-2xx" not in out, out
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return requests, float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def example_repository(prefix):
    """(a new temporary folder, the examples repository generated inside it)."""
    work = tempfile.mkdtemp(prefix=prefix)
    models = os.path.join(work, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, stdout=subprocess.DEVNULL)
    return work, models


def serve(binary, models, extra, env=None, grpc_port=None):
    """The server pinned to core 0; with `grpc_port`, its gRPC frontend listens there."""
    port = http_bench.free_port()
    grpc_args = (["--allow-grpc=false"] if grpc_port is None else
                 ["--grpc-address=127.0.0.1", f"--grpc-port={grpc_port}"])
    proc = subprocess.Popen(["taskset", "-c", "0", binary, f"--model-repository={models}",
                             f"--http-port={port}", "--http-address=127.0.0.1", "--log-info=false",
                             "--metrics-port=0"] + grpc_args + extra,
                            stderr=None if os.environ.get("AB_DEBUG") else subprocess.DEVNULL,
                            env=env)
    http_bench.wait_ready(port, proc)
    return proc, port


def grpc_cells(work, stream_messages):
    """{row name: (h2load path, frame file, messages per call)} of the --grpc mode."""
    import grpc_bench
    body = grpc_bench.request_message().SerializeToString()
    frame = b"\0" + struct.pack(">I", len(body)) + body
    cells = {}
    for name, path, count in (("unary", grpc_bench.PATH, 1),
                              ("stream", grpc_bench.STREAM_PATH, stream_messages)):
        if count == 0:
            continue
        data = os.path.join(work, f"{name}.bin")
        with open(data, "wb") as f:
            f.write(frame * count)
        cells[name] = (path, data, count)
    return cells


def measure_grpc(proc, grpc_port, cells, conns, seconds, work):
    """{(row, conns): (requests/s, server CPU us per request)} over h2load's measuring period."""
    import grpc_bench
    out = {}
    for name, (path, data, count) in cells.items():
        for c in conns:
            r = grpc_bench.run_h2load(grpc_port, data, c, seconds, work, path, proc.pid, count)
            out[(name, c)] = (r["rps"], r["cpu_us"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="baseline binary")
    ap.add_argument("--b", required=True, help="candidate binary")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--conns", default="1,16")
    ap.add_argument("--formats", default="json", help="json, binary or json,binary")
    ap.add_argument("--b-arg", action="append", default=[], help="extra flag for B only")
    ap.add_argument("--b-env", action="append", default=[],
                    help="NAME=VALUE in B's environment only (e.g. LD_PRELOAD=...)")
    ap.add_argument("--grpc", action="store_true",
                    help="gRPC ModelInfer and ModelStreamInfer through h2load instead of HTTP")
    ap.add_argument("--stream-messages", type=int, default=32,
                    help="--grpc: requests per ModelStreamInfer call (0: no stream row)")
    args = ap.parse_args()
    b_env = dict(os.environ)
    for item in args.b_env:
        name, _, value = item.partition("=")
        b_env[name] = value
    conns = [int(c) for c in args.conns.split(",")]
    work, models = example_repository("nereid_ab_")
    bodies = {}  # row name -> (model, body, Inference-Header-Content-Length or None)
    if args.grpc:
        bodies = grpc_cells(work, args.stream_messages)
    for fmt in ([] if args.grpc else args.formats.split(",")):
        for m, r in http_bench.REQUESTS.items():
            if fmt == "json":
                bodies[m] = (m, json.dumps(r).encode(), None)
            else:
                bodies[f"{m} bin"] = (m, *binary_request(r))
    rps = {}  # (label, model, conns) -> [requests/s per round]
    cpu = {}  # (label, model, conns) -> [server CPU µs per request per round]
    rss = {}  # label -> [server VmRSS KiB after each round's load]
    for r in range(args.rounds):
        for label, binary, extra, env in (("A", args.a, [], None),
                                          ("B", args.b, args.b_arg, b_env)):
            grpc_port = http_bench.free_port() if args.grpc else None
            proc, port = serve(binary, models, extra, env, grpc_port)
            try:
                if args.grpc:
                    import grpc_bench
                    grpc_bench.wait_port(grpc_port, proc)
                    for (m, c), (r_s, us) in measure_grpc(proc, grpc_port, bodies, conns,
                                                          args.seconds, work).items():
                        rps.setdefault((label, m, c), []).append(r_s)
                        cpu.setdefault((label, m, c), []).append(us)
                for m, (model, body, header_length) in ({} if args.grpc else bodies).items():
                    for c in conns:
                        before = cpu_ns(proc.pid)
                        n, r_s = run_wrk(port, model, body, c, args.seconds, work, header_length)
                        used = cpu_ns(proc.pid) - before
                        rps.setdefault((label, m, c), []).append(r_s)
                        cpu.setdefault((label, m, c), []).append(used / max(1, n) / 1000)
                rss.setdefault(label, []).append(rss_kib(proc.pid))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    def row(table, m, c, fmt):
        a, b = table[("A", m, c)], table[("B", m, c)]
        ma, mb = statistics.median(a), statistics.median(b)
        return (f"{fmt.format(ma):>9} {fmt.format(min(a)) + '-' + fmt.format(max(a)):>15} | "
                f"{fmt.format(mb):>9} {fmt.format(min(b)) + '-' + fmt.format(max(b)):>15} | "
                f"{mb / ma:>5.3f}")

    for title, table, fmt in (("requests/s", rps, "{:.0f}"), ("server CPU us/request", cpu,
                                                               "{:.1f}")):
        print(f"\n{title} (median of {args.rounds} rounds)")
        print(f"{'model':15} {'conns':>5} | {'A':>9} {'A min-max':>15} | {'B':>9} "
              f"{'B min-max':>15} | {'B/A':>5}")
        for m in bodies:
            for c in conns:
                print(f"{m:15} {c:>5} | " + row(table, m, c, fmt))
    print(f"\nserver VmRSS after the load, MiB (median, min-max): "
          f"A {statistics.median(rss['A']) / 1024:.1f} ({min(rss['A']) / 1024:.1f}-"
          f"{max(rss['A']) / 1024:.1f}), B {statistics.median(rss['B']) / 1024:.1f} "
          f"({min(rss['B']) / 1024:.1f}-{max(rss['B']) / 1024:.1f})")


if __name__ == "__main__":
    main()
