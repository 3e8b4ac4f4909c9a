#!/usr/bin/python3
"""Soak test: resident memory of a long mixed run, and of model load/unload cycles.

Usage:
  scripts/build && /usr/bin/python3 bench/soak.py [--minutes 30]       # mixed soak
  /usr/bin/python3 bench/soak.py --cycles 200 [--trim]                  # load/unload cycles only
  /usr/bin/python3 bench/soak.py --cycles 200 --bin build/asan/nereid   # the same under LSan

Starts `nereid` (--model-control-mode=explicit) on a temporary copy of three generated models:
`simple` (ONNX add/sub, the traffic model), `cycle_onnx` (a copy of `simple`) and
`cycle_torch` (a copy of the TorchScript `add_sub_torch`).

Mixed soak (default): for --minutes, in parallel, each worker paced to --rate requests/s:
  http-json    POST /v2/models/simple/infer, JSON tensors
  http-binary  the same with binary tensor data (Inference-Header-Content-Length)
  grpc-unary   ModelInfer
  grpc-stream  ModelStreamInfer: a new stream per 20 requests, every response checked
  models       a loop of: unload + load + one inference of cycle_onnx; every 5th turn the same
               for cycle_torch; every 10th turn a reload of `simple` under the traffic above
The server's VmRSS (/proc/<pid>/status) is sampled every --sample-seconds.

Warm-up is the first --warmup-fraction of the run (default 0.2, at least 60 s). The warm-up RSS
is the median of the samples in the first minute after warm-up, the final RSS the median of the
samples in the last minute (medians, because a load of a model briefly adds to the RSS); growth =
final / warm-up - 1. Also printed: the least-squares slope of RSS over the post-warm-up samples.
Exits 1 if growth >= --max-growth (5 %), if any request or model operation failed (every
response is checked for content), or if the server did not exit 0 on SIGTERM.

Cycle mode (--cycles N): no traffic; N times unload + load of cycle_onnx (--cycle-model torch:
cycle_torch) with one inference after each load; prints RSS after each unload and load, the
per-cycle growth (slope over the cycles after the first 10 %), and with --trim the RSS before
and after calling glibc's malloc_trim(0) in the server through gdb. Under an ASan binary it
prints LeakSanitizer's report from the server's exit (ASAN_OPTIONS=detect_leaks=1). Exits 1 if a
cycle failed or the server did not exit 0 (a LeakSanitizer report makes it exit 1; ONNX Runtime's
once-per-process 14 bytes need LSAN_OPTIONS=suppressions=scripts/lsan.supp for a 0).

Only Debian's python3 with python3-requests, python3-grpcio and numpy, and the project's e2e
helpers (tests/e2e: Server, gRPC stubs generated from proto/ at start).
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import numpy as np  # noqa: E402
import requests  # noqa: E402

STREAM_BATCH = 20


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def status_fields(pid, names=("RssAnon", "RssFile", "VmPTE", "Threads")):
    """Selected /proc/<pid>/status fields (kB figures as KiB numbers)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in names:
                out[key] = int(value.split()[0])
    return out


def make_repository(models_root):
    """A temporary repository with simple, cycle_onnx and cycle_torch."""
    out = tempfile.mkdtemp(prefix="nereid-soak-models-")
    sources = {"simple": os.path.join(models_root, "examples", "simple"),
               "cycle_onnx": os.path.join(models_root, "examples", "simple"),
               "cycle_torch": os.path.join(models_root, "fixtures", "torch", "add_sub_torch")}
    for name, src in sources.items():
        if not os.path.isdir(src):
            sys.exit(f"{src} is missing: generate the test models (scripts/gen_test_models.py)")
        dst = os.path.join(out, name)
        shutil.copytree(src, dst)
        cfg = os.path.join(dst, "config.pbtxt")
        with open(cfg) as f:
            text = f.read()
        with open(cfg, "w") as f:
            f.write(re.sub(r'^name: "[^"]*"', f'name: "{name}"', text, count=1, flags=re.M))
    return out


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = {}
        self.failed = {}
        self.first_errors = []

    def add(self, kind, ok, error=None):
        with self.lock:
            d = self.ok if ok else self.failed
            d[kind] = d.get(kind, 0) + 1
            if not ok and len(self.first_errors) < 10:
                self.first_errors.append(f"{kind}: {error}")

    def total_failed(self):
        with self.lock:
            return sum(self.failed.values())


# ------------------------------------------------------------------------------------ requests

def simple_arrays(rng):
    a = rng.integers(-1000, 1000, size=(1, 16), dtype=np.int32)
    b = rng.integers(-1000, 1000, size=(1, 16), dtype=np.int32)
    return a, b


def http_infer(session, server, model, binary, rng, inputs=("INPUT0", "INPUT1"),
               outputs=("OUTPUT0", "OUTPUT1")):
    """One checked HTTP inference of an add/sub model; raises on any mismatch."""
    from helpers import build_infer_request, parse_response, tensor
    a, b = simple_arrays(rng)
    body, headers = build_infer_request(
        [tensor(inputs[0], "INT32", a, binary=binary), tensor(inputs[1], "INT32", b,
                                                              binary=binary)],
        outputs=[(o, binary) for o in outputs])
    r = session.post(server.url(f"/v2/models/{model}/infer"), data=body, headers=headers,
                     timeout=60)
    _, values, _ = parse_response(r)
    np.testing.assert_array_equal(values[outputs[0]], a + b)
    np.testing.assert_array_equal(values[outputs[1]], a - b)


def grpc_request(model, rng):
    from grpc_helpers import infer_request
    a, b = simple_arrays(rng)
    return infer_request(model, [("INPUT0", "INT32", a), ("INPUT1", "INT32", b)]), a, b


def check_grpc_response(resp, a, b):
    from grpc_helpers import output_array
    outs = {o.name: output_array(resp, i) for i, o in enumerate(resp.outputs)}
    np.testing.assert_array_equal(outs["OUTPUT0"], a + b)
    np.testing.assert_array_equal(outs["OUTPUT1"], a - b)


def paced(stop, rate, counts, kind, fn):
    """Calls fn() until stop is set, at most `rate` times a second; counts results."""
    period = 1.0 / rate if rate > 0 else 0.0
    nxt = time.monotonic()
    while not stop.is_set():
        try:
            n = fn()
            for _ in range(n or 1):
                counts.add(kind, True)
        except Exception as e:  # every failure is counted and reported, none is fatal here
            counts.add(kind, False, f"{type(e).__name__}: {str(e)[:300]}")
        nxt += period
        delay = nxt - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            nxt = time.monotonic()


def start_workers(server, stop, counts, rate):
    import grpc_helpers
    stub = server.stub()
    rng_lock = threading.Lock()
    seed = [0]

    def rng():
        with rng_lock:
            seed[0] += 1
            return np.random.default_rng(seed[0])

    def http_worker(binary):
        session = requests.Session()
        r = rng()
        return lambda: http_infer(session, server, "simple", binary, r)

    def grpc_unary():
        r = rng()

        def once():
            req, a, b = grpc_request("simple", r)
            check_grpc_response(stub.ModelInfer(req, timeout=60), a, b)
        return once

    def grpc_stream():
        r = rng()

        def once():
            reqs = [grpc_request("simple", r) for _ in range(STREAM_BATCH)]
            got = list(stub.ModelStreamInfer(iter([q for q, _, _ in reqs]), timeout=120))
            if len(got) != STREAM_BATCH:
                raise AssertionError(f"{len(got)} stream responses for {STREAM_BATCH} requests")
            for g, (_, a, b) in zip(got, reqs):
                if g.error_message:
                    raise AssertionError(f"stream error: {g.error_message}")
                check_grpc_response(g.infer_response, a, b)
            return STREAM_BATCH
        return once

    assert grpc_helpers  # stubs are generated before the threads start (server.stub())
    jobs = [("http-json", http_worker(False), rate), ("http-binary", http_worker(True), rate),
            ("grpc-unary", grpc_unary(), rate), ("grpc-stream", grpc_stream(),
                                                 rate / STREAM_BATCH)]
    threads = [threading.Thread(target=paced, args=(stop, r, counts, kind, fn), daemon=True)
               for kind, fn, r in jobs]
    for t in threads:
        t.start()
    return threads


# ------------------------------------------------------------------------------------ models

def model_op(session, server, op, model):
    r = session.post(server.url(f"/v2/repository/models/{model}/{op}"), timeout=300)
    if r.status_code != 200:
        raise AssertionError(f"{op} {model}: {r.status_code} {r.text[:300]}")


def cycle(session, server, model, rng):
    """Unload, load and one checked inference of an add/sub model."""
    model_op(session, server, "unload", model)
    model_op(session, server, "load", model)
    if model == "cycle_torch":
        http_infer(session, server, model, True, rng, ("INPUT__0", "INPUT__1"),
                   ("OUTPUT__0", "OUTPUT__1"))
    else:
        http_infer(session, server, model, True, rng)


def model_worker(server, stop, counts, pause):
    session = requests.Session()
    rng = np.random.default_rng(1234)
    turn = 0
    while not stop.is_set():
        turn += 1
        steps = [("cycle-onnx", lambda: cycle(session, server, "cycle_onnx", rng))]
        if turn % 5 == 0:
            steps.append(("cycle-torch", lambda: cycle(session, server, "cycle_torch", rng)))
        if turn % 10 == 0:
            steps.append(("reload-simple", lambda: model_op(session, server, "load", "simple")))
        for kind, fn in steps:
            try:
                fn()
                counts.add(kind, True)
            except Exception as e:
                counts.add(kind, False, f"{type(e).__name__}: {str(e)[:300]}")
        stop.wait(pause)


# ------------------------------------------------------------------------------------ runs

def start_server(args, repo_dir):
    os.environ.setdefault("NEREID_BIN", args.bin)
    os.environ.setdefault("NEREID_MODELS", args.models)
    from grpc_helpers import GrpcServer
    env = {}
    if "asan" in os.path.basename(os.path.dirname(os.path.abspath(args.bin))):
        env["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "detect_leaks=1")
    server = GrpcServer([repo_dir], flags=["--model-control-mode=explicit", "--load-model=*"],
                        name="soak", env=env)
    server.start()
    return server


def median_between(samples, t0, t1):
    vals = [r for t, r in samples if t0 <= t <= t1]
    return statistics.median(vals) if vals else float("nan")


def slope_per_minute(samples):
    if len(samples) < 2:
        return float("nan")
    t = np.array([s[0] for s in samples]) / 60.0
    r = np.array([s[1] for s in samples], dtype=float)
    return float(np.polyfit(t, r, 1)[0])


def mib(b):
    return b / (1 << 20)


def run_soak(args, server):
    counts = Counts()
    stop = threading.Event()
    samples = []  # (seconds since start, rss bytes)
    pid = server.proc.pid
    t_start = time.monotonic()
    threads = start_workers(server, stop, counts, args.rate)
    models = threading.Thread(target=model_worker, args=(server, stop, counts, args.cycle_pause),
                              daemon=True)
    models.start()
    duration = args.minutes * 60.0
    warmup = max(60.0, args.warmup_fraction * duration)
    next_report = 0.0
    while True:
        now = time.monotonic() - t_start
        if now >= duration or not server.alive():
            break
        samples.append((now, rss_bytes(pid)))
        if now >= next_report:
            print(f"[{now / 60:5.1f} min] RSS {mib(samples[-1][1]):7.1f} MiB  ok "
                  f"{sum(counts.ok.values())}  failed {counts.total_failed()}", flush=True)
            next_report = now + 60.0
        time.sleep(min(args.sample_seconds, max(0.0, duration - now)))
    stop.set()
    for t in threads + [models]:
        t.join(timeout=180)
    alive = server.alive()
    end = samples[-1][0] if samples else 0.0
    warm_rss = median_between(samples, warmup, warmup + 60.0)
    final_rss = median_between(samples, end - 60.0, end)
    growth = final_rss / warm_rss - 1.0
    post = [s for s in samples if s[0] >= warmup]
    print()
    print(f"run: {end / 60:.1f} min, {len(samples)} RSS samples every {args.sample_seconds} s; "
          f"warm-up: first {warmup / 60:.1f} min")
    print(f"RSS at start {mib(samples[0][1]):.1f} MiB, max {mib(max(r for _, r in samples)):.1f}"
          f" MiB, min after warm-up {mib(min(r for _, r in post)):.1f} MiB")
    print(f"warm-up RSS (median, minute after warm-up) {mib(warm_rss):.1f} MiB; final RSS "
          f"(median, last minute) {mib(final_rss):.1f} MiB; growth {growth * 100:+.2f} %")
    print(f"slope after warm-up (least squares): {slope_per_minute(post) / 1024:+.1f} KiB/min")
    print("requests and model operations (ok / failed):")
    for kind in sorted(set(counts.ok) | set(counts.failed)):
        print(f"  {kind:14s} {counts.ok.get(kind, 0):9d} / {counts.failed.get(kind, 0)}")
    for e in counts.first_errors:
        print("  error:", e)
    rc = server.stop() if alive else server.proc.returncode
    print(f"server exit code: {rc}" + ("" if alive else " (died during the run)"))
    failed = counts.total_failed() > 0 or rc != 0 or growth >= args.max_growth / 100.0
    print("RESULT:", "FAIL" if failed else "PASS",
          f"(growth {growth * 100:+.2f} % vs limit {args.max_growth} %, "
          f"{counts.total_failed()} failed)")
    return 1 if failed else 0


def gdb_trim(pid):
    """Calls malloc_trim(0) inside the server; returns gdb's output."""
    out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int)malloc_trim(0)"],
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip().splitlines()[-1:] if out.returncode == 0 else out.stderr[-500:]


def gdb_malloc_stats(server):
    """glibc's malloc_stats() inside the server (it prints to the server's stderr): returns
    (system bytes, in use bytes, number of arenas), mmapped chunks included."""
    before = len(server.stderr())
    subprocess.run(["gdb", "-p", str(server.proc.pid), "-batch", "-ex",
                    "call (void)malloc_stats()"], capture_output=True, text=True, timeout=120)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = server.stderr()[before:]
        m = re.search(r"Total \(incl. mmap\):\s*system bytes\s*=\s*(\d+)\s*in use bytes\s*=\s*"
                      r"(\d+)", text)
        if m:
            return int(m.group(1)), int(m.group(2)), len(re.findall(r"^Arena \d+:", text, re.M))
        time.sleep(0.1)
    raise RuntimeError("malloc_stats printed nothing (gdb missing or not allowed to attach?)")


def run_cycles(args, server):
    model = "cycle_torch" if args.cycle_model == "torch" else "cycle_onnx"
    session = requests.Session()
    rng = np.random.default_rng(7)
    pid = server.proc.pid
    after_unload, after_load = [], []
    t0 = time.monotonic()
    start = rss_bytes(pid)
    failed = 0
    stats = []
    breakdown = []
    for i in range(args.cycles):
        try:
            model_op(session, server, "unload", model)
            after_unload.append(rss_bytes(pid))
            model_op(session, server, "load", model)
            if model == "cycle_torch":
                http_infer(session, server, model, True, rng, ("INPUT__0", "INPUT__1"),
                           ("OUTPUT__0", "OUTPUT__1"))
            else:
                http_infer(session, server, model, True, rng)
            after_load.append(rss_bytes(pid))
            if i + 1 == max(1, args.cycles // 10):
                breakdown = [(i + 1, status_fields(pid))]
        except Exception as e:
            failed += 1
            print(f"cycle {i}: {type(e).__name__}: {str(e)[:300]}")
        if args.malloc_stats and (i + 1) % max(1, args.cycles // 10) == 0:
            system, in_use, arenas = gdb_malloc_stats(server)
            stats.append((i + 1, system, in_use))
            print(f"cycle {i + 1:4d}: glibc malloc_stats: system {system / 1024:.0f} KiB, in use "
                  f"{in_use / 1024:.0f} KiB, {arenas} arenas")
        if (i + 1) % max(1, args.cycles // 10) == 0 and after_load:
            print(f"cycle {i + 1:4d}: RSS after unload {after_unload[-1] / 1024:9.0f} KiB, after "
                  f"load {after_load[-1] / 1024:9.0f} KiB", flush=True)
    skip = max(1, len(after_load) // 10)
    per_cycle_load = np.polyfit(np.arange(skip, len(after_load)), after_load[skip:], 1)[0]
    per_cycle_unload = np.polyfit(np.arange(skip, len(after_unload)), after_unload[skip:], 1)[0]
    n = len(after_load) - skip
    print(f"\n{args.cycles} cycles of {model} in {time.monotonic() - t0:.0f} s; RSS at start "
          f"{start / 1024:.0f} KiB")
    print(f"after load:   cycle {skip} {after_load[skip] / 1024:.0f} KiB -> last "
          f"{after_load[-1] / 1024:.0f} KiB: {(after_load[-1] - after_load[skip]) / n / 1024:+.1f}"
          f" KiB/cycle (end points), {per_cycle_load / 1024:+.1f} KiB/cycle (least squares)")
    print(f"after unload: cycle {skip} {after_unload[skip] / 1024:.0f} KiB -> last "
          f"{after_unload[-1] / 1024:.0f} KiB: "
          f"{(after_unload[-1] - after_unload[skip]) / n / 1024:+.1f} KiB/cycle (end points), "
          f"{per_cycle_unload / 1024:+.1f} KiB/cycle (least squares)")
    breakdown.append((args.cycles, status_fields(pid)))
    print("  ".join(f"cycle {c}: " + ", ".join(f"{k} {v}" for k, v in f.items())
                    for c, f in breakdown) + " (KiB; Threads a count)")
    if len(stats) >= 2:
        (c0, s0, u0), (c1, s1, u1) = stats[0], stats[-1]
        print(f"glibc heap, cycles {c0} -> {c1}: system {(s1 - s0) / (c1 - c0) / 1024:+.1f} KiB/"
              f"cycle, in use {(u1 - u0) / (c1 - c0) / 1024:+.1f} KiB/cycle")
    if args.trim:
        before = rss_bytes(pid)
        print("gdb:", gdb_trim(pid))
        after = rss_bytes(pid)
        print(f"malloc_trim(0) through gdb: RSS {before / 1024:.0f} KiB -> {after / 1024:.0f} KiB"
              f" ({(after - before) / 1024:+.0f} KiB)")
    rc = server.stop()
    print(f"server exit code: {rc}")
    report = server.stderr()
    if "LeakSanitizer" in report:
        i = report.rfind("\n", 0, report.index("LeakSanitizer")) + 1
        leak_log = os.path.join(tempfile.gettempdir(), f"nereid-soak-lsan-{pid}.txt")
        with open(leak_log, "w") as f:
            f.write(report[i:])
        print(f"LeakSanitizer report ({leak_log}):")
        for line in report[i:].splitlines():
            if line.startswith(("Direct leak", "Indirect leak", "SUMMARY")):
                print(" ", line)
    elif "asan" in args.bin:
        print("no LeakSanitizer report in the server's output")
    return 1 if failed or rc != 0 else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--bin", default=os.environ.get("NEREID_BIN",
                                                   os.path.join(ROOT, "build/release/nereid")))
    p.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(ROOT, "build/release/test_models")))
    p.add_argument("--rate", type=float, default=40.0, help="requests/s per traffic worker")
    p.add_argument("--cycle-pause", type=float, default=0.5, help="seconds between model turns")
    p.add_argument("--sample-seconds", type=float, default=5.0)
    p.add_argument("--warmup-fraction", type=float, default=0.2)
    p.add_argument("--max-growth", type=float, default=5.0, help="percent")
    p.add_argument("--cycles", type=int, default=0, help="cycle mode: N load/unload cycles")
    p.add_argument("--cycle-model", choices=("onnx", "torch"), default="onnx")
    p.add_argument("--trim", action="store_true", help="cycle mode: malloc_trim through gdb")
    p.add_argument("--malloc-stats", action="store_true",
                   help="cycle mode: glibc malloc_stats() through gdb every 10 %% of the cycles")
    args = p.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.models = os.path.abspath(args.models)
    os.environ["NEREID_BIN"] = args.bin
    os.environ["NEREID_MODELS"] = args.models
    repo_dir = make_repository(args.models)
    server = start_server(args, repo_dir)
    try:
        server.stub()  # generates the gRPC stubs now, not inside a worker
        rc = run_cycles(args, server) if args.cycles else run_soak(args, server)
    finally:
        if server.alive():
            server.kill()
        shutil.rmtree(repo_dir, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
