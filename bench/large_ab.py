#!/usr/bin/python3
"""Issue 21 goal 5 as an A/B: 16 MB FP32 through identity over binary HTTP (c=1), two nereid
binaries interleaved round by round, beside bench/raw_loopback moving the same bytes.

Usage: bench/large_ab.py --a OLD_BIN --b NEW_BIN [--rounds 5] [--seconds 3] [--json out.json]
       bench/large_ab.py --b NEW_BIN            (B and the raw loopback only)

Each round starts A, then B, on core 0 (nereid_perf on core 1, `--shape INPUT0:1,4194304`), then
runs raw_loopback on core 1. Per binary it reports the median over the rounds (and the min-max
spread) of the client's p50, the server CPU time per request (all threads' run time from
/proc/<pid>/task/*/schedstat over the requests the server completed: what the server spends, which
barely moves when other processes compete for the machine) and VmHWM (peak resident memory).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import ab_bench  # noqa: E402
import issue21  # noqa: E402


def run_one(binary, models, work, seconds):
    port = issue21.http_bench.free_port()
    proc = start(binary, models, work, port)
    try:
        before = ab_bench.cpu_ns(proc.pid)
        levels, totals = issue21.perf(["-m", "identity_fp32", "-u", f"127.0.0.1:{port}",
                                       "--binary", "--shape", "INPUT0:1,4194304",
                                       "-p", str(seconds * 1000), "-r", "3"])
        cpu = ab_bench.cpu_ns(proc.pid) - before
        hwm = issue21.proc_status(proc.pid, "VmHWM") / 1024
    finally:
        issue21.stop(proc)
    done = max(1, totals.get("server_ok", 0))
    return {"p50_ms": levels[1]["p50"] / 1000, "cpu_ms_per_req": cpu / done / 1e6,
            "hwm_mib": hwm}


def start(binary, models, work, port):
    args = ["taskset", "-c", "0", binary, f"--model-repository={models}", f"--http-port={port}",
            "--http-address=127.0.0.1", "--log-info=false", "--metrics-port=0",
            "--allow-grpc=false"]
    proc = subprocess.Popen(args, stderr=open(os.path.join(work, "large-ab.log"), "w"))
    issue21.http_bench.wait_ready(port, proc)
    return proc


def raw_p50_ms(seconds):
    out = subprocess.run(["taskset", "-c", "1", os.path.join(issue21.BUILD, "bench",
                                                             "raw_loopback"),
                          "--seconds", str(seconds)], capture_output=True, text=True,
                         check=True).stdout
    return int(issue21.re.search(r"p50 (\d+) usec", out).group(1)) / 1000


def spread(values, fmt="{:.1f}"):
    return (f"{fmt.format(statistics.median(values))} "
            f"({fmt.format(min(values))}–{fmt.format(max(values))})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", help="baseline nereid binary (optional)")
    ap.add_argument("--b", default=os.path.join(issue21.BUILD, "nereid"), help="candidate binary")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--json", help="write the per-round figures here")
    args = ap.parse_args()
    for tool in ("taskset",):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: run scripts/setup")
    work = tempfile.mkdtemp(prefix="nereid_large_ab_")
    models = os.path.join(work, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(issue21.ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, stdout=subprocess.DEVNULL)
    binaries = [("A", os.path.abspath(args.a))] if args.a else []
    binaries.append(("B", os.path.abspath(args.b)))
    rounds = {name: [] for name, _ in binaries}
    raw = []
    load = os.getloadavg()
    try:
        for r in range(args.rounds):
            for name, binary in binaries:
                rounds[name].append(run_one(binary, models, work, args.seconds))
            raw.append(raw_p50_ms(args.seconds))
            print(f"round {r + 1}: " + ", ".join(
                f"{n} p50 {rounds[n][-1]['p50_ms']:.1f} ms cpu {rounds[n][-1]['cpu_ms_per_req']:.1f}"
                f" ms" for n, _ in binaries) + f", raw {raw[-1]:.1f} ms", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average before {load[0]:.1f}, after {os.getloadavg()[0]:.1f}; "
          f"{args.rounds} rounds of {args.seconds} s\n")
    print("| binary | p50 ms | p50 / raw loopback | server CPU ms per request | VmHWM MiB |")
    print("| --- | --- | --- | --- | --- |")
    raw_med = statistics.median(raw)
    for name, binary in binaries:
        f = rounds[name]
        ratios = [x["p50_ms"] / y for x, y in zip(f, raw)]
        print(f"| {name} `{binary}` | {spread([x['p50_ms'] for x in f])} | "
              f"{spread(ratios, '{:.2f}')} | {spread([x['cpu_ms_per_req'] for x in f])} | "
              f"{spread([x['hwm_mib'] for x in f], '{:.0f}')} |")
    print(f"| raw loopback | {spread(raw)} | 1.00 | | |")
    print(f"\nraw loopback median {raw_med:.1f} ms")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"rounds": rounds, "raw_p50_ms": raw}, out, indent=1)


if __name__ == "__main__":
    main()
