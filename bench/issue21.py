#!/usr/bin/python3
"""Issue 21's goals side by side, in one non-interactive run, as one markdown table.

Usage (after `scripts/build release`):
    /usr/bin/python3 bench/issue21.py [--quick] [--seconds N] [--json out.json]

Every figure is a ratio against a floor measured in the same run (bench/README.md, "Issue 21
side by side"). nereid is pinned to core 0, the load generators to core 1.
  1. HTTP: bench/http_bench.py (nereid vs byte-identical nginx, wrk, identity_fp32 and simple at
     c=1 and c=16) and the server CPU per identity request at c=16 (bench/ab_bench.py's
     /proc schedstat reading over a wrk run), nginx's over the same run beside it.
  2. gRPC: bench/grpc_bench.py (h2load, nereid vs bench/grpc_echo_server at c=1 and c=16).
  3. Batching: bench/batch_bench.py's measure_server / in_process (dynamic batcher per
     CPU-second vs bench/ort_batch_driver).
  4. Footprint: bench/footprint.py's five-model repository (simple, simple_string, vardim_fp32,
     reshape_model, identity_fp32), then the same with mlp_fp32 (26 MiB of weights) for
     reshape_model: exec to ready, VmRSS (at ready, after one request per model, after 5 s of
     traffic) and threads.
  5. Large tensors: 16 MB FP32 identity over binary HTTP (bench/nereid_perf, c=1) vs
     bench/raw_loopback moving the same bytes both ways.
  6. Overload: bench/nereid_perf closed loops at c=16, 64, 256, 1024 (HTTP and gRPC) on
     identity_fp32: throughput vs the sweep's peak, p99/p50 with requests paced at 80% of the
     peak (--request-rate-range, at most 256 outstanding, then 32), VmRSS after each level,
     errors (lost requests) counted by the tool and checked against the statistics API. The same
     cells against a floor driven by the same tool: nginx answering nereid's bytes (HTTP), the
     gRPC echo server (gRPC), paced at nereid's rate.
--quick runs every part with short cells (about 1.5 minutes) as a smoke test; the default (5 s
cells) takes about 5 minutes.
"""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab_bench  # noqa: E402
import batch_bench  # noqa: E402
import footprint  # noqa: E402
import http_bench  # noqa: E402
import perf_report  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "release")
FOOTPRINT_MODELS = ["simple", "identity_fp32", "mlp_fp32", "vardim_fp32", "simple_string"]


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def serve(models, work, name, grpc=False, extra=(), binary=None):
    """nereid (or `binary`) on core 0; returns (proc, http_port, grpc_port, seconds to ready)."""
    port = http_bench.free_port()
    gport = http_bench.free_port() if grpc else None
    args = ["taskset", "-c", "0", binary or os.path.join(BUILD, "nereid"),
            f"--model-repository={models}",
            f"--http-port={port}", "--http-address=127.0.0.1", "--log-info=false",
            "--metrics-port=0"]
    args += [f"--grpc-port={gport}", "--grpc-address=127.0.0.1"] if grpc else ["--allow-grpc=false"]
    t0 = time.monotonic()
    proc = subprocess.Popen(args + list(extra), stderr=open(os.path.join(work, f"{name}.log"), "w"))
    http_bench.wait_ready(port, proc)
    return proc, port, gport, time.monotonic() - t0


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def perf(args):
    """Runs bench/nereid_perf on core 1; {concurrency: figures} and the run totals."""
    out = subprocess.run(["taskset", "-c", "1", os.path.join(BUILD, "bench", "nereid_perf")] + args,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"nereid_perf {' '.join(args)} failed: {out.stderr}")
    return perf_report.parse_levels(out.stdout), perf_report.parse_totals(out.stdout)


def run_json_script(script, seconds, work):
    path = os.path.join(work, os.path.basename(script) + ".json")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", script), "--seconds",
                    str(seconds), "--json", path], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(path) as f:
        return json.load(f)


def part_http(seconds, work, models):
    rows = []
    r = run_json_script("http_bench.py", seconds, work)
    for run in r["runs"]:
        n, g = run["nereid"], run["nginx"]
        label = f"HTTP {run['model']} c={run['conns']}"
        if run["conns"] == 16:
            rows.append((label + " infer/s", f"{n['rps']:.0f}", f"nginx {g['rps']:.0f}",
                         f"{n['rps'] / g['rps']:.2f}", "≥ 0.70"))
        else:
            rows.append((label + " added p50", f"{n['p50_us'] - g['p50_us']:.0f} µs",
                         f"nginx p50 {g['p50_us']:.0f} µs", f"{n['p50_us'] / g['p50_us']:.2f}",
                         "≤ 10 µs added"))
    proc, port, _, _ = serve(models, work, "cpu")
    nginx = None
    try:
        body = json.dumps(http_bench.REQUESTS["identity_fp32"]).encode()
        before = ab_bench.cpu_ns(proc.pid)
        n, _ = ab_bench.run_wrk(port, "identity_fp32", body, 16, seconds, work)
        used = ab_bench.cpu_ns(proc.pid) - before
        # The same wrk run against nginx returning nereid's reply: its CPU per request.
        nport = http_bench.free_port()
        nginx = http_bench.start_nginx(work, nport, {
            "identity_fp32": http_bench.post(port, "identity_fp32", body)})
        time.sleep(0.3)
        before = tree_cpu_ns(nginx.pid)
        gn, _ = ab_bench.run_wrk(nport, "identity_fp32", body, 16, seconds, work)
        gused = tree_cpu_ns(nginx.pid) - before
    finally:
        stop(proc)
        if nginx:
            nginx.terminate()
            nginx.wait(timeout=30)
    mine, floor = used / max(1, n) / 1000, gused / max(1, gn) / 1000
    rows.append(("server CPU per identity request (c=16)", f"{mine:.1f} µs",
                 f"nginx {floor:.1f} µs", f"{mine / floor:.2f}", "≤ 8 µs"))
    return rows


def part_grpc(seconds, work):
    r = run_json_script("grpc_bench.py", seconds, work)
    rows = []
    for c in (1, 16):
        n, e = r[f"nereid_c{c}"], r[f"echo_c{c}"]
        rows.append((f"gRPC identity_fp32 c={c} infer/s", f"{n['rps']:.0f}", f"echo {e['rps']:.0f}",
                     f"{n['rps'] / e['rps']:.2f}", "≥ 0.85" if c == 16 else ""))
    return rows


def part_batch(seconds, work, models):
    batched, unbatched = os.path.join(work, "batched"), os.path.join(work, "unbatched")
    batch_bench.write_repo(models, batched, True)
    lua = batch_bench.request_body(work)
    rps, _, mean, rps_cpu = batch_bench.measure_server(os.path.join(BUILD, "nereid"), batched,
                                                       work, "batched", lua, seconds)
    driver = os.path.join(BUILD, "bench", "ort_batch_driver")
    model_path = os.path.join(models, batch_bench.MODEL, "1", "model.onnx")
    ref, ref_cpu = batch_bench.in_process(driver, model_path, max(1, round(mean or 1)), seconds)
    return [("dynamic batcher infer per CPU-s (mlp_fp32)", f"{rps_cpu:.0f} (batch {mean:.1f})",
             f"in-process {ref_cpu:.0f}", f"{rps_cpu / ref_cpu:.2f}", "≥ 0.90"),
            ("dynamic batcher infer/s wall", f"{rps:.0f}", f"in-process {ref:.0f}",
             f"{rps / ref:.2f}", "")]


def part_footprint(work, models):
    """Goal 4 on footprint.py's five-model repository (the one behind the issue's starting
    figures: simple, simple_string, vardim_fp32, reshape_model, identity_fp32), then on the same
    with mlp_fp32 (26 MiB of weights) in place of reshape_model."""
    rows = []
    small = os.path.join(work, "five")
    footprint.make_repository(os.path.join(BUILD, "test_models"), small, footprint.MODELS)
    heavy = os.path.join(work, "five_mlp")
    os.makedirs(heavy)
    for m in FOOTPRINT_MODELS:
        shutil.copytree(os.path.join(models, m), os.path.join(heavy, m))
    for repo, label in ((small, ""), (heavy, " (mlp_fp32 for reshape_model)")):
        names = sorted(os.listdir(repo))
        readies, rss, threads, rss_served, rss_traffic = [], [], [], [], []
        for i in range(3):
            proc, port, gport, ready = serve(repo, work, f"footprint{i}", grpc=True)
            try:
                time.sleep(0.2)
                readies.append(ready)
                rss.append(proc_status(proc.pid, "VmRSS") / 1024)
                threads.append(proc_status(proc.pid, "Threads"))
                # Start-up pages are released at ready (ADR 0017): what serving maps back counts.
                bodies = {m: footprint.request_body(port, m) for m in names}
                footprint.burst(port, bodies, len(bodies), conns=1)
                rss_served.append(proc_status(proc.pid, "VmRSS") / 1024)
                footprint.traffic(port, gport, bodies, footprint.grpc_requests(port, bodies), 5)
                rss_traffic.append(proc_status(proc.pid, "VmRSS") / 1024)
            finally:
                stop(proc)
        span = lambda v, f: f"{f.format(min(v))}–{f.format(max(v))}"  # noqa: E731
        rows += [
            (f"footprint{label}: ready (5 models, 3 starts)", span(readies, "{:.2f}") + " s",
             "Triton 0.16 s" if not label else "", "", "≤ 0.10 s"),
            (f"footprint{label}: RSS when ready", span(rss, "{:.0f}") + " MiB",
             "Triton 55 MiB" if not label else "", "", "≤ 40 MiB"),
            (f"footprint{label}: RSS after one request per model", span(rss_served, "{:.0f}") +
             " MiB", "", "", "≤ 40 MiB"),
            (f"footprint{label}: RSS after 5 s of HTTP + gRPC traffic",
             span(rss_traffic, "{:.0f}") + " MiB", "", "", "≤ 40 MiB"),
            (f"footprint{label}: threads", span(threads, "{}"), "Triton 56" if not label else "",
             "", "≤ 12")]
    return rows


def part_large(seconds, work, models):
    proc, port, _, _ = serve(models, work, "large")
    try:
        levels, totals = perf(["-m", "identity_fp32", "-u", f"127.0.0.1:{port}", "--binary",
                               "--shape", "INPUT0:1,4194304", "-p", str(seconds * 1000), "-r", "3"])
    finally:
        stop(proc)
    raw = subprocess.run(["taskset", "-c", "1", os.path.join(BUILD, "bench", "raw_loopback"),
                          "--seconds", str(seconds)], capture_output=True, text=True,
                         check=True).stdout
    raw_p50 = int(re.search(r"p50 (\d+) usec", raw).group(1))
    p50 = levels[1]["p50"]
    return [("16 MB FP32 identity, binary HTTP, p50", f"{p50 / 1000:.1f} ms",
             f"raw loopback {raw_p50 / 1000:.1f} ms", f"{p50 / raw_p50:.2f}", "≤ 1.5")]


def tree_cpu_ns(pid):
    """CPU time so far of `pid` and its children (nginx's master and worker), ns."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        kids = []
    return sum(ab_bench.cpu_ns(p) for p in [pid] + kids)


def sweep(url, proto, pid, concurrencies, seconds):
    """nereid_perf closed loops at each level against `url` (server `pid`, on core 0): figures,
    VmRSS, server CPU µs per request and cores used (server / load tool) per level, and the run
    totals summed."""
    levels, rss, cpu, cores, sums = {}, {}, {}, {}, {}
    for c in concurrencies:
        before = tree_cpu_ns(pid)
        kids, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        lv, totals = perf(["-m", "identity_fp32", "-u", url, "-i", proto,
                           "--concurrency-range", str(c), "-p", str(seconds * 1000), "-r", "3"])
        levels.update(lv)
        rss[c] = proc_status(pid, "VmRSS") / 1024
        used = tree_cpu_ns(pid) - before
        cpu[c] = used / max(1, totals.get("client_ok", 0)) / 1000  # the tool's whole run
        # Cores used over the run: a load tool near 1.0 on its one core is the limit, not the
        # server (bench/README.md, "Goal 6").
        wall, now = time.monotonic() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
        cores[c] = (used / 1e9 / wall, (now.ru_utime + now.ru_stime - kids.ru_utime -
                                        kids.ru_stime) / wall)
        for k, v in totals.items():
            sums[k] = sums.get(k, 0) + v
    return levels, rss, cpu, cores, sums


def paced(url, proto, rate, outstanding, seconds):
    """(figures, totals) of requests paced at `rate` per second, at most `outstanding` at once."""
    levels, totals = perf(["-m", "identity_fp32", "-u", url, "-i", proto, "--request-rate-range",
                           f"{rate:.0f}", "--max-outstanding", str(outstanding), "-p",
                           str(seconds * 1000), "-r", "3"])
    (_, f), = levels.items()
    return f, totals


def lost_of(totals):
    return totals.get("client_errors", 0) + totals.get("server_failed", 0)


def start_floor(proto, models, work):
    """The floor server on core 0, ready: nginx answering nereid's bytes (metadata, statistics and
    the identity reply to nereid_perf's request, taken from a nereid) for HTTP, the gRPC echo
    server (2 completion-queue threads, as grpc_bench.py) for gRPC. Returns (process, url)."""
    port = http_bench.free_port()
    if proto == "grpc":
        echo = subprocess.Popen(["taskset", "-c", "0", os.path.join(BUILD, "bench",
                                 "grpc_echo_server"), str(port), "2"], stdout=subprocess.PIPE)
        echo.stdout.readline()  # "listening on <port>"
        return echo, f"127.0.0.1:{port}"
    proc, nport, _, _ = serve(models, work, "floor-source")
    try:
        base = "/v2/models/identity_fp32"
        request = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 1], "datatype": "FP32",
                                          "data": [0.0]}]}).encode()
        paths = {base: http_bench.get(nport, base),
                 base + "/stats": http_bench.get(nport, base + "/stats")}
        responses = {"identity_fp32": http_bench.post(nport, "identity_fp32", request)}
    finally:
        stop(proc)
    nginx = http_bench.start_nginx(work, port, responses, paths)
    time.sleep(0.3)
    return nginx, f"127.0.0.1:{port}"


def floor_run(proto, models, work, seconds, concurrencies, rate):
    """The overload cells against the floor (start_floor): its peak, each level's figures, CPU per
    request and cores used, and p99/p50 paced at `rate` (nereid's 80 %: the same offered load
    and the same work for the load tool) with 256 and 32 outstanding; errors counted."""
    proc, url = start_floor(proto, models, work)
    try:
        levels, _, cpu, cores, totals = sweep(url, proto, proc.pid, concurrencies, seconds)
        pace = {n: paced(url, proto, rate, n, seconds) for n in (256, 32)}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lost = totals.get("client_errors", 0) + sum(t.get("client_errors", 0) for _, t in
                                               pace.values())
    return {"levels": levels, "peak": max(f["rps"] for f in levels.values()), "cpu": cpu,
            "cores": cores, "paced": {n: f for n, (f, _) in pace.items()}, "lost": lost}


def part_overload(seconds, work, models, concurrencies):
    rows = []
    for proto in ("http", "grpc"):
        proc, port, gport, _ = serve(models, work, f"overload-{proto}", grpc=True)
        url = f"127.0.0.1:{gport if proto == 'grpc' else port}"
        try:
            levels, rss, cpu, cores, totals = sweep(url, proto, proc.pid, concurrencies, seconds)
            hwm = proc_status(proc.pid, "VmHWM") / 1024
        finally:
            stop(proc)
        lost, totals_ok = lost_of(totals), totals.get("client_ok") == totals.get("server_ok")
        peak = max(f["rps"] for f in levels.values())
        floor = floor_run(proto, models, work, seconds, concurrencies, 0.8 * peak)
        name = "nginx" if proto == "http" else "echo"
        for c in (256, 1024):
            if c in levels:
                theirs = floor["levels"][c]["rps"] / floor["peak"]
                rows.append((f"overload {proto} c={c} infer/s", f"{levels[c]['rps']:.0f}",
                             f"peak {peak:.0f}; {name} {theirs:.2f} of its peak "
                             f"{floor['peak']:.0f}", f"{levels[c]['rps'] / peak:.2f}", "≥ 0.90"))
        # At 80% of the peak: requests paced at that rate (up to 256 outstanding, then 32), each
        # on a fresh server.
        for outstanding in (256, 32):
            proc, port, gport, _ = serve(models, work, f"paced-{proto}", grpc=True)
            url = f"127.0.0.1:{gport if proto == 'grpc' else port}"
            try:
                f, totals = paced(url, proto, 0.8 * peak, outstanding, seconds)
            finally:
                stop(proc)
            lost += lost_of(totals)
            totals_ok &= totals.get("client_ok") == totals.get("server_ok")
            g = floor["paced"][outstanding]
            ng = (f"{name} at that rate {g['p99']}/{g['p50']} µs = "
                  f"{g['p99'] / max(1, g['p50']):.1f}")
            rows.append((f"overload {proto}: p99/p50 paced at 80% of peak ({0.8 * peak:.0f}/s, "
                         f"got {f['rps']:.0f}/s), ≤ {outstanding} outstanding",
                         f"{f['p99']}/{f['p50']} µs", ng,
                         f"{f['p99'] / max(1, f['p50']):.1f}", "≤ 3"))
        rows.append((f"overload {proto}: RSS per level (peak VmHWM)",
                     ", ".join(f"c={c} {v:.0f}" for c, v in rss.items()) + f" MiB ({hwm:.0f})",
                     "", "", "bounded"))
        rows.append((f"overload {proto}: server CPU per request",
                     ", ".join(f"c={c} {v:.1f}" for c, v in cpu.items()) + " µs",
                     f"{name} " + ", ".join(f"c={c} {v:.1f}" for c, v in floor["cpu"].items()),
                     "", ""))
        rows.append((f"overload {proto}: cores used, server / load tool",
                     ", ".join(f"c={c} {s:.2f}/{t:.2f}" for c, (s, t) in cores.items()),
                     f"{name} " + ", ".join(f"c={c} {s:.2f}/{t:.2f}" for c, (s, t) in
                                          floor["cores"].items()), "", ""))
        rows.append((f"overload {proto}: lost requests", f"{lost}",
                     ("client count = server count" if totals_ok else "COUNTS DIFFER") +
                     f"; {name} {floor['lost']}", "", "0"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short cells: a ~1 minute smoke run")
    ap.add_argument("--seconds", type=int, help="seconds per cell (default 5, --quick 1)")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--only", help="comma list of parts: http,grpc,batch,footprint,large,overload")
    args = ap.parse_args()
    seconds = args.seconds or (1 if args.quick else 5)
    for tool in ("wrk", "nginx", "h2load", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: run scripts/setup")
    for binary in ("nereid", "bench/nereid_perf", "bench/raw_loopback", "bench/grpc_echo_server",
                   "bench/ort_batch_driver"):
        if not os.path.exists(os.path.join(BUILD, binary)):
            sys.exit(f"build/release/{binary} missing: run scripts/build release")
    parts = (args.only or "http,grpc,batch,footprint,large,overload").split(",")
    work = tempfile.mkdtemp(prefix="nereid_issue21_")
    models = os.path.join(work, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, stdout=subprocess.DEVNULL)
    load = os.getloadavg()
    t0 = time.monotonic()
    rows = []
    try:
        for part in parts:
            print(f"[{time.monotonic() - t0:5.0f} s] {part}", file=sys.stderr, flush=True)
            if part == "http":
                rows += part_http(seconds, work, models)
            elif part == "grpc":
                rows += part_grpc(seconds, work)
            elif part == "batch":
                rows += part_batch(seconds, work, models)
            elif part == "footprint":
                rows += part_footprint(work, models)
            elif part == "large":
                rows += part_large(max(2, seconds), work, models)
            elif part == "overload":
                conc = [16, 256, 1024] if args.quick else [16, 64, 256, 1024]
                rows += part_overload(max(1, seconds // 2) if not args.quick else 1, work,
                                      models, conc)
            else:
                sys.exit(f"unknown part {part}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nIssue 21 side by side: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{seconds} s cells, load average before {load[0]:.1f} / after "
          f"{os.getloadavg()[0]:.1f}, {time.monotonic() - t0:.0f} s\n")
    print("| goal | nereid | floor | ratio | target |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
