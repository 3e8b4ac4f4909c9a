#!/usr/bin/python3
"""Start-up time, resident memory and threads of nereid on a five-model repository.

Usage: bench/footprint.py [--bin build/release/nereid] [--models DIR] [--runs 5] [--burst 2000]
                          [--traffic-seconds 10] [--repository five|no-onnx] [--mappings N]
                          [--server-arg=--flag=value ...] [--json OUT.json]

The repository (issue 21's "bars-like" five models, copied into a temporary directory from the
generated test models, `NEREID_MODELS` or build/release/test_models, generated there when
missing): `simple` (ONNX add/sub, INT32), `simple_string` (ONNX add/sub on strings),
`vardim_fp32` (ONNX, variable dims), `reshape_model` (ONNX with reshape) and `identity_fp32`
(identity backend). Four ONNX Runtime sessions and one non-ONNX backend. `--repository no-onnx`
serves `identity_fp32` alone instead: a server that never needs ONNX Runtime (the plugin maps it
only with the first ONNX model).

The server is started as a user would (HTTP, gRPC and metrics on, default flags; only the ports
are free ones). Per run it measures exec -> `/v2/health/ready` = 200, then takes four snapshots:
`ready` (nothing served yet), `one request` (after one JSON inference over HTTP and one over gRPC
per model), `burst` (after `--burst` more HTTP requests from 8 concurrent keep-alive connections,
spread over the models) and `traffic` (after `--traffic-seconds` of HTTP from 4 keep-alive
connections and gRPC from one channel, every model in turn; 0 skips it). Memory that start-up only
defers to the first requests shows in the later snapshots.
Each snapshot holds VmRSS, a breakdown of the resident memory (/proc/pid/smaps: heap, anonymous
mappings other than thread stacks, thread stacks, libonnxruntime, other libraries, the nereid
binary, the rest) and the threads by name (/proc/pid/task/*/comm). A thread's stack is the
mapping holding its stack pointer (read from /proc/pid/task/tid/syscall while it sleeps in a
system call). Times vary with the machine's load (report the spread); RSS and threads barely
move between runs (the median is printed). `--mappings N` also prints, for the first run at
ready and at the last snapshot, the N largest mappings by file (/proc/pid/smaps summed per
library: Rss, Private_Dirty, Shared_Clean, Private_Clean and the resident share of executable
pages) and smaps_rollup's Pss.
"""

import argparse
import collections
import http.client
import itertools
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))  # grpc_helpers: stubs made with protoc

# (source directory under the generated test models, model name)
MODELS = [
    ("examples/simple", "simple"),
    ("examples/simple_string", "simple_string"),
    ("examples/vardim_fp32", "vardim_fp32"),
    ("fixtures/features/reshape_model", "reshape_model"),
    ("examples/identity_fp32", "identity_fp32"),
]
NO_ONNX = [("examples/identity_fp32", "identity_fp32")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_repository(models_root, dest, models):
    if not os.path.isdir(os.path.join(models_root, "examples")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                        "--examples", os.path.join(models_root, "examples"), "--fixtures",
                        os.path.join(models_root, "fixtures")], check=True,
                       stdout=subprocess.DEVNULL)
    for src, name in models:
        shutil.copytree(os.path.join(models_root, src), os.path.join(dest, name))


def get(port, path, body=None, conn=None):
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        if body is None:
            conn.request("GET", path)
        else:
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        if own:
            conn.close()


def wait_ready(port, proc, started, timeout=60.0):
    while time.monotonic() < started + timeout:
        if proc.poll() is not None:
            raise RuntimeError("server exited during start-up")
        try:
            if get(port, "/v2/health/ready")[0] == 200:
                return time.monotonic() - started
        except OSError:
            pass
        time.sleep(0.001)
    raise RuntimeError("server not ready in time")


def request_body(port, model):
    """A JSON inference request for `model` built from its metadata (every -1 dimension is 1)."""
    status, raw = get(port, f"/v2/models/{model}")
    assert status == 200, raw
    meta = json.loads(raw)
    inputs = []
    for t in meta["inputs"]:
        shape = [1 if d < 0 else d for d in t["shape"]]
        n = 1
        for d in shape:
            n *= d
        value = {"BYTES": "1", "BOOL": True, "FP32": 1.0, "FP64": 1.0, "FP16": 1.0}.get(
            t["datatype"], 1)
        inputs.append({"name": t["name"], "datatype": t["datatype"], "shape": shape,
                       "data": [value] * n})
    return json.dumps({"inputs": inputs}).encode()


def grpc_request(meta):
    """A ModelInferRequest for the model of `meta` (its metadata), values in the typed contents."""
    from grpc_helpers import stubs
    req = stubs().pb.ModelInferRequest(model_name=meta["name"])
    fields = {"BYTES": ("bytes_contents", b"1"), "BOOL": ("bool_contents", True),
              "FP32": ("fp32_contents", 1.0), "FP64": ("fp64_contents", 1.0),
              "INT64": ("int64_contents", 1), "UINT64": ("uint64_contents", 1),
              "UINT32": ("uint_contents", 1), "UINT8": ("uint_contents", 1),
              "UINT16": ("uint_contents", 1)}
    for t in meta["inputs"]:
        shape = [1 if d < 0 else d for d in t["shape"]]
        n = 1
        for d in shape:
            n *= d
        field, value = fields.get(t["datatype"], ("int_contents", 1))
        inp = req.inputs.add(name=t["name"], datatype=t["datatype"], shape=shape)
        getattr(inp.contents, field).extend([value] * n)
    return req


def grpc_requests(port, models):
    return {name: grpc_request(json.loads(get(port, f"/v2/models/{name}")[1])) for name in models}


def stack_pointers(pid):
    """tid -> stack pointer, for every thread sleeping in a system call."""
    sps = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                fields = f.read().split()
        except OSError:
            continue
        if len(fields) >= 9 and fields[0] not in ("running", "-1"):
            sps[int(tid)] = int(fields[7], 16)
    return sps


def thread_names(pid):
    names = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names[f.read().strip()] += 1
        except OSError:
            pass
    return names


def read_smaps(pid):
    """[(start, end, perms, path, rss_kib)] for every mapping."""
    maps = []
    with open(f"/proc/{pid}/smaps") as f:
        cur = None
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                lo, hi = head[0].split("-")
                path = head[5] if len(head) > 5 else ""
                cur = [int(lo, 16), int(hi, 16), head[1], path, 0]
                maps.append(cur)
            elif head[0] == "Rss:":
                cur[4] = int(head[1])
    return maps


def mappings(pid):
    """{file basename or [anon]/[heap]/...: Counter(Rss, Private_Dirty, ..., Rss_exec)} in KiB."""
    per = collections.defaultdict(collections.Counter)
    key, executable = None, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                key = os.path.basename(head[5]) if len(head) > 5 else "[anon]"
                executable = "x" in head[1]
            elif head[0] in ("Rss:", "Private_Dirty:", "Shared_Clean:", "Private_Clean:"):
                per[key][head[0][:-1]] += int(head[1])
                if head[0] == "Rss:" and executable:
                    per[key]["Rss_exec"] += int(head[1])
    return per


def print_mappings(pid, n, phase="ready"):
    per = mappings(pid)
    with open(f"/proc/{pid}/smaps_rollup") as f:
        pss = next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
    cols = ["Rss", "Private_Dirty", "Shared_Clean", "Private_Clean", "Rss_exec"]
    print(f"\n| mapping at {phase}, KiB (first run; Pss of the process {pss}) | " + " | ".join(cols) +
          " |")
    print("| --- |" + " ---: |" * len(cols))
    for key, c in sorted(per.items(), key=lambda kv: -kv[1]["Rss"])[:n]:
        print(f"| {key} | " + " | ".join(str(c[k]) for k in cols) + " |")


def status_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return -1


def snapshot(pid, binary):
    sps = stack_pointers(pid)
    maps = read_smaps(pid)
    stacks = set()
    for sp in sps.values():
        for i, m in enumerate(maps):
            if m[0] <= sp < m[1]:
                stacks.add(i)
                break
    parts = collections.Counter()
    for i, (lo, hi, perms, path, rss) in enumerate(maps):
        base = os.path.basename(path)
        if i in stacks or path == "[stack]":
            key = "thread stacks"
        elif path == "[heap]":
            key = "heap (brk)"
        elif path == "" or path.startswith("[anon"):
            key = "other anonymous (arenas, mmap)"
        elif "libonnxruntime" in base:
            key = "libonnxruntime"
        elif os.path.realpath(path) == os.path.realpath(binary):
            key = "nereid binary"
        elif ".so" in base:
            key = "other libraries"
        else:
            key = "other"
        parts[key] += rss
    with open(f"/proc/{pid}/smaps_rollup") as f:
        pss = next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
    return {"rss_kib": status_field(pid, "VmRSS"), "rss_anon_kib": status_field(pid, "RssAnon"),
            "pss_kib": pss,
            "rss_file_kib": status_field(pid, "RssFile"), "parts_kib": dict(parts),
            "threads": dict(thread_names(pid)), "thread_count": sum(thread_names(pid).values()),
            "stacks_found": len(stacks), "threads_in_syscall": len(sps)}


def run_all(threads, errors):
    """Starts and joins `threads`; raises if they recorded failed requests in `errors`."""
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, first: {errors[0][:200]!r}")


def http_requests(port, bodies, indices, errors):
    """One keep-alive connection sending request i % len(bodies) for each i of `indices`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    names = list(bodies)
    for i in indices:
        model = names[i % len(names)]
        status, raw = get(port, f"/v2/models/{model}/infer", bodies[model], conn)
        if status != 200:
            errors.append(raw)
    conn.close()


def burst(port, bodies, total, conns=8):
    errors = []
    run_all([threading.Thread(target=http_requests,
                              args=(port, bodies, range(k, total, conns), errors))
             for k in range(conns)], errors)


def traffic(port, grpc_port, bodies, grpc_reqs, seconds):
    """HTTP from 4 keep-alive connections and gRPC from one channel for `seconds`."""
    import grpc
    from grpc_helpers import stubs
    stop_at = time.monotonic() + seconds
    errors = []

    def until_stop(k):
        return itertools.takewhile(lambda _: time.monotonic() < stop_at, itertools.count(k))

    def grpc_worker():
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as ch:
            stub = stubs().pb_grpc.GRPCInferenceServiceStub(ch)
            reqs = list(grpc_reqs.values())
            i = 0
            while time.monotonic() < stop_at:
                stub.ModelInfer(reqs[i % len(reqs)], timeout=30)
                i += 1

    threads = [threading.Thread(target=http_requests, args=(port, bodies, until_stop(k), errors))
               for k in range(4)]
    run_all(threads + [threading.Thread(target=grpc_worker)], errors)


def one_run(args, repo, models, first):
    port = free_port()
    grpc_port = free_port()
    cmd = [args.bin, f"--model-repository={repo}", f"--http-port={port}",
           f"--grpc-port={grpc_port}", f"--metrics-port={free_port()}"] + args.server_arg
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready_s = wait_ready(port, proc, started)
        time.sleep(0.2)  # let threads started at ready settle into their waits
        snaps = {"ready": snapshot(proc.pid, args.bin)}
        if first and args.mappings:
            print_mappings(proc.pid, args.mappings)
        bodies = {name: request_body(port, name) for _, name in models}
        for name, body in bodies.items():
            status, raw = get(port, f"/v2/models/{name}/infer", body)
            if status != 200:
                raise RuntimeError(f"{name}: {status} {raw[:200]!r}")
        import grpc
        from grpc_helpers import stubs
        grpc_reqs = grpc_requests(port, bodies)
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as ch:
            stub = stubs().pb_grpc.GRPCInferenceServiceStub(ch)
            for req in grpc_reqs.values():
                stub.ModelInfer(req, timeout=30)
        time.sleep(0.1)
        snaps["one request"] = snapshot(proc.pid, args.bin)
        burst(port, bodies, args.burst)
        time.sleep(0.1)
        snaps["burst"] = snapshot(proc.pid, args.bin)
        if args.traffic_seconds > 0:
            traffic(port, grpc_port, bodies, grpc_reqs, args.traffic_seconds)
            time.sleep(0.1)
            snaps["traffic"] = snapshot(proc.pid, args.bin)
        if first and args.mappings:
            print_mappings(proc.pid, args.mappings, list(snaps)[-1])
        return ready_s, snaps
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(ROOT, "build/release/test_models")))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--burst", type=int, default=2000)
    ap.add_argument("--traffic-seconds", type=float, default=10.0,
                    help="HTTP and gRPC traffic before the last snapshot (0: none)")
    ap.add_argument("--server-arg", action="append", default=[])
    ap.add_argument("--repository", choices=["five", "no-onnx"], default="five")
    ap.add_argument("--mappings", type=int, default=0,
                    help="print the N largest mappings at ready and at the end (first run)")
    ap.add_argument("--json", help="write every run's figures here")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    work = tempfile.mkdtemp(prefix="nereid_footprint_")
    try:
        repo = os.path.join(work, "models")
        models = MODELS if args.repository == "five" else NO_ONNX
        make_repository(args.models, repo, models)
        runs = [one_run(args, repo, models, i == 0) for i in range(args.runs)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    times = sorted(r[0] * 1000 for r in runs)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"exec -> ready: median {statistics.median(times):.0f} ms, min {times[0]:.0f}, "
          f"max {times[-1]:.0f} over {len(times)} runs (load average {load})")
    phases = list(runs[0][1])

    def med(phase, fn):
        return statistics.median(fn(r[1][phase]) for r in runs)

    print("\n| MiB (median of runs) | " + " | ".join(phases) + " |")
    print("| --- |" + " --- |" * len(phases))
    rows = [("VmRSS", lambda s: s["rss_kib"]), ("RssAnon", lambda s: s["rss_anon_kib"]),
            ("RssFile", lambda s: s["rss_file_kib"]), ("Pss", lambda s: s["pss_kib"])]
    keys = sorted({k for r in runs for s in r[1].values() for k in s["parts_kib"]})
    rows += [(f"  {k}", lambda s, k=k: s["parts_kib"].get(k, 0)) for k in keys]
    for label, fn in rows:
        print(f"| {label} | " + " | ".join(f"{med(p, fn) / 1024:.1f}" for p in phases) + " |")
    print("\n| threads (first run) | " + " | ".join(phases) + " |")
    print("| --- |" + " --- |" * len(phases))
    snaps = runs[0][1]
    print("| total | " + " | ".join(str(snaps[p]["thread_count"]) for p in phases) + " |")
    names = sorted({n for s in snaps.values() for n in s["threads"]})
    for n in names:
        print(f"| {n} | " + " | ".join(str(snaps[p]["threads"].get(n, 0)) for p in phases) + " |")
    s = snaps["ready"]
    print(f"\n(thread stacks located for {s['stacks_found']} mappings of "
          f"{s['threads_in_syscall']} threads in a system call)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ready_ms": times, "runs": [r[1] for r in runs]}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
