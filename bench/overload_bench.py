#!/usr/bin/python3
"""Where the server's time goes under overload (issue 21 goal 6), per thread, from /proc.

Usage (after `scripts/build release`):
    /usr/bin/python3 bench/overload_bench.py [--proto http|grpc] [--seconds 5]
        [--levels 16,1024] [--paced 0.8] [--bin build/release/nereid] [--env NAME=VALUE ...]
        [--server-arg=--flag ...] [--count-runs] [--json out.json]

One server (pinned to core 0, bench/nereid_perf on core 1) on `identity_fp32`, as issue21.py's
overload part: a closed loop at each of --levels, then, on a fresh server, requests paced at
--paced times the best level's throughput (at most 256 outstanding). For every cell it prints the
throughput, p50/p99, and per server thread (grouped by name) the CPU time per request, the time
spent runnable but waiting for the core per request (schedstat's second field: the time-slicing
that shows as p99 on one core) and the voluntary/involuntary context switches per request, the
server's own queue and compute time per request (statistics API) and, with --count-runs (root, a
perf uprobe on DefaultScheduler::Run), how many jobs ran inline on an I/O thread and how many were
handed to the model's executor. bench/overload_ab.py runs it for two binaries, interleaved.
"""

import argparse
import atexit
import collections
import ctypes
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import issue21  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def threads(pid):
    """{tid: (name, run ns, wait ns, voluntary, involuntary)} for every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            base = f"/proc/{pid}/task/{tid}"
            with open(f"{base}/comm") as f:
                name = f.read().strip()
            with open(f"{base}/schedstat") as f:
                run, wait, _ = map(int, f.read().split())
            vol = inv = 0
            with open(f"{base}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        inv = int(line.split()[1])
            out[tid] = (name, run, wait, vol, inv)
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass  # a thread that just ended
    return out


def per_request(before, after, requests):
    """{thread name: [cpu µs, runqueue wait µs, voluntary, involuntary] per request}."""
    groups = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for tid, (name, run, wait, vol, inv) in after.items():
        _, run0, wait0, vol0, inv0 = before.get(tid, (name, 0, 0, 0, 0))
        g = groups[name]
        g[0] += (run - run0) / 1000 / requests
        g[1] += (wait - wait0) / 1000 / requests
        g[2] += (vol - vol0) / requests
        g[3] += (inv - inv0) / requests
    return {k: v for k, v in groups.items() if v[0] > 0.005 or v[1] > 0.005}


def set_slice(pid, slice_us):
    """Asks the scheduler for a `slice_us` time slice for every thread of pid (EEVDF's custom
    slice, Linux >= 6.12: sched_setattr's sched_runtime for SCHED_OTHER; threads created later
    inherit it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = struct.pack("IIQiIQQQII", 56, 0, 0, 0, 0, slice_us * 1000, 0, 0, 0, 0)
    for tid in os.listdir(f"/proc/{pid}/task"):
        if libc.syscall(314, int(tid), ctypes.create_string_buffer(attr, 56), 0) != 0:
            raise OSError(ctypes.get_errno(), f"sched_setattr on thread {tid}")


RUN_SYMBOL = "nereid::DefaultScheduler::Run(unsigned long, nereid::SchedulerJob&)"


class RunCounter:
    """Counts, per server thread name, the jobs the default scheduler ran (a uprobe on
    DefaultScheduler::Run, recorded with `perf record` for one cell): jobs run on an I/O thread ran
    inline, jobs run on "executor" crossed to the model's executor thread and back. Counts, so the
    machine's load does not blur them. Needs perf and root (perf_event_paranoid permitting)."""

    def __init__(self, binary):
        nm = subprocess.run(["nm", "-C", binary], capture_output=True, text=True, check=True)
        addr = next(line.split()[0] for line in nm.stdout.splitlines()
                    if line.endswith(" T " + RUN_SYMBOL))
        self.binary = binary
        self.full = f"nereidruns:run_{os.getpid()}"
        subprocess.run(["perf", "probe", "-q", "-x", binary, "--add", f"{self.full}=0x{addr}"],
                       check=True)

    def start(self, pid, path):
        self.path = path
        self.rec = subprocess.Popen(["perf", "record", "-q", "-e", self.full, "-p", str(pid),
                                     "-o", path], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # perf attaches before the load starts

    def stop(self):
        self.rec.send_signal(2)
        self.rec.wait(timeout=60)
        out = subprocess.run(["perf", "script", "-F", "comm", "-i", self.path],
                             capture_output=True, text=True)
        return dict(collections.Counter(line.strip() for line in out.stdout.splitlines()
                                        if line.strip()))

    def close(self):
        subprocess.run(["perf", "probe", "-q", "-d", self.full], check=False)


def stats_split(http_port):
    """(requests, queue ns, compute ns) so far for identity_fp32, from the statistics API."""
    url = f"http://127.0.0.1:{http_port}/v2/models/identity_fp32/stats"
    with urllib.request.urlopen(url, timeout=10) as r:
        st = json.load(r)["model_stats"][0]["inference_stats"]
    compute = sum(int(st[k]["ns"]) for k in ("compute_input", "compute_infer", "compute_output"))
    return int(st["success"]["count"]), int(st["queue"]["ns"]), compute


def cell(proc, url, proto, load, seconds, slice_us=0, counter=None, work=None, http_port=None):
    split0 = stats_split(http_port) if http_port else None
    if slice_us > 0:
        set_slice(proc.pid, slice_us)
    if counter:
        counter.start(proc.pid, os.path.join(work, "runs.data"))
    before = threads(proc.pid)
    kids0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    levels, totals = issue21.perf(["-m", "identity_fp32", "-u", url, "-i", proto] + load +
                                  ["-p", str(seconds * 1000), "-r", "3"])
    after = threads(proc.pid)
    kids1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - t0
    runs = counter.stop() if counter else None
    split = None
    if split0:
        split1 = stats_split(http_port)
        done = max(1, split1[0] - split0[0])
        split = {"queue_us": (split1[1] - split0[1]) / done / 1000,
                 "compute_us": (split1[2] - split0[2]) / done / 1000}
    (key, f), = levels.items()
    n = max(1, totals.get("server_ok", 0))
    server_s = sum(a[1] - before.get(t, (0, 0))[1] for t, a in after.items()) / 1e9
    return {"level": key, "rps": f["rps"], "p50": f["p50"], "p99": f["p99"],
            "errors": totals.get("client_errors", 0) + totals.get("server_failed", 0),
            "counts_equal": totals.get("client_ok") == totals.get("server_ok"),
            "rss_mib": issue21.proc_status(proc.pid, "VmRSS") / 1024,
            # Cores used over the whole nereid_perf run (warm-up and every window): the load
            # tool on its one core is the limit when its figure nears 1.0.
            "client_cores": (kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime)
            / wall,
            "server_cores": server_s / wall,
            "threads": per_request(before, after, n), "runs": runs, "split": split}


def show(title, c):
    print(f"\n{title}: {c['rps']:.0f} infer/s, p50 {c['p50']} µs, p99 {c['p99']} µs, "
          f"errors {c['errors']}, counts {'equal' if c['counts_equal'] else 'DIFFER'}, "
          f"RSS {c['rss_mib']:.0f} MiB; cores used: server {c['server_cores']:.2f}, "
          f"load tool {c['client_cores']:.2f}")
    print("  thread            cpu µs/req  runqueue-wait µs/req  vol cs/req  invol cs/req")
    total = [0.0, 0.0]
    for name, (cpu, wait, vol, inv) in sorted(c["threads"].items(), key=lambda kv: -kv[1][0]):
        print(f"  {name:16s} {cpu:11.2f} {wait:21.2f} {vol:11.3f} {inv:13.3f}")
        total[0] += cpu
        total[1] += wait
    print(f"  {'all':16s} {total[0]:11.2f} {total[1]:21.2f}")
    if c.get("split"):
        print(f"  server statistics per request: queue {c['split']['queue_us']:.1f} µs, "
              f"compute {c['split']['compute_us']:.1f} µs")
    if c.get("runs"):
        ran = sum(c["runs"].values())
        where = ", ".join(f"{k} {v} ({100 * v / ran:.1f} %)" for k, v in sorted(c["runs"].items()))
        print(f"  jobs run, by thread: {where}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proto", default="http", choices=["http", "grpc"])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--levels", default="16,1024")
    ap.add_argument("--paced", type=float, default=0.8, help="fraction of the peak; 0: skip")
    ap.add_argument("--rate", type=float, default=0,
                    help="pace at this many requests/s instead of a fraction of the peak")
    ap.add_argument("--slice-us", type=int, default=0,
                    help="experiment: set this scheduler time slice on every server thread "
                         "from outside (sched_setattr), before each cell")
    ap.add_argument("--bin", default=os.path.join(issue21.BUILD, "nereid"))
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    ap.add_argument("--server-arg", action="append", default=[])
    ap.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(issue21.BUILD, "test_models")),
        help="generated test models (the examples/ repository inside is served)")
    ap.add_argument("--count-runs", action="store_true",
                    help="count where the default scheduler ran each job (I/O thread: inline; "
                         "executor: handed over), with a perf uprobe (needs root)")
    ap.add_argument("--json")
    args = ap.parse_args()
    for item in args.env:
        name, value = item.split("=", 1)
        os.environ[name] = value  # inherited by the server (and harmless to nereid_perf)
    models = os.path.join(args.models, "examples")
    results = {"levels": [], "paced": None}
    with tempfile.TemporaryDirectory() as work:
        serve = issue21.serve
        bin_path = os.path.abspath(args.bin)
        counter = RunCounter(bin_path) if args.count_runs else None
        if counter:
            atexit.register(counter.close)
        proc, port, gport, _ = serve(models, work, "overload", grpc=True, extra=args.server_arg,
                                     binary=bin_path)
        url = f"127.0.0.1:{gport if args.proto == 'grpc' else port}"
        try:
            for c in map(int, filter(None, args.levels.split(","))):
                r = cell(proc, url, args.proto, ["--concurrency-range", str(c)], args.seconds,
                         args.slice_us, counter, work, port)
                show(f"{args.proto} c={c}", r)
                results["levels"].append(r)
        finally:
            issue21.stop(proc)
        peak = max((r["rps"] for r in results["levels"]), default=0)
        if args.rate > 0 or args.paced > 0:
            proc, port, gport, _ = serve(models, work, "paced", grpc=True, extra=args.server_arg,
                                         binary=bin_path)
            url = f"127.0.0.1:{gport if args.proto == 'grpc' else port}"
            try:
                rate = args.rate or args.paced * peak
                r = cell(proc, url, args.proto, ["--request-rate-range", f"{rate:.0f}",
                                                 "--max-outstanding", "256"], args.seconds,
                         args.slice_us, counter, work, port)
                show(f"{args.proto} paced at {rate:.0f}/s", r)
                results["paced"] = r
            finally:
                issue21.stop(proc)
    finish(results, args.json)


def finish(results, json_path):
    """Prints the load average (how noisy the run was) and writes `results` to json_path if set."""
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} at the end")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
