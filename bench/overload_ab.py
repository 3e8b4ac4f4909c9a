#!/usr/bin/python3
"""A/B of two nereid binaries under bench/overload_bench.py's cells, interleaved rounds.

Usage (after `scripts/build release`; needs root for --count-runs' perf uprobe):
    /usr/bin/python3 bench/overload_ab.py --a /work/main/build/release/nereid \\
        --b build/release/nereid [--rounds 3] [--seconds 3] [--levels 16,1024] \\
        [--rate 0 | --paced 0.8] [--no-count-runs] [--json out.json]

Each round runs overload_bench.py once for A, then once for B (so drifting machine load hits both
alike) and the table gives, per cell, the median over the rounds of throughput, p50, p99, server
CPU per request, the queue time per request (statistics API) and the share of jobs the model's executor ran (the rest ran inline on an I/O
thread), with min-max spreads. The paced cell uses --rate if given, else --paced times each run's
own closed-loop peak (as issue21.py does).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import overload_bench  # noqa: E402


def one_run(binary, args, work, tag):
    out = os.path.join(work, f"{tag}.json")
    cmd = ["/usr/bin/python3", os.path.join(HERE, "overload_bench.py"), "--bin", binary,
           "--proto", args.proto, "--levels", args.levels, "--seconds", str(args.seconds),
           "--json", out]
    cmd += ["--rate", str(args.rate)] if args.rate > 0 else ["--paced", str(args.paced)]
    if args.count_runs:
        cmd.append("--count-runs")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        r = json.load(f)
    cells = {f"c={c['level']}": c for c in r["levels"]}
    if r["paced"]:
        cells["paced"] = r["paced"]
    return cells


def figures(c):
    runs = c.get("runs") or {}
    total = sum(runs.values())
    return {"rps": c["rps"], "p50": c["p50"], "p99": c["p99"],
            "cpu_us": sum(t[0] for t in c["threads"].values()),
            "executor_pct": 100 * runs.get("executor", 0) / total if total else float("nan"),
            "queue_us": (c.get("split") or {}).get("queue_us", float("nan"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--proto", default="http", choices=["http", "grpc"])
    ap.add_argument("--levels", default="16,1024")
    ap.add_argument("--paced", type=float, default=0.8)
    ap.add_argument("--rate", type=float, default=0)
    ap.add_argument("--no-count-runs", dest="count_runs", action="store_false")
    ap.add_argument("--json")
    args = ap.parse_args()
    results = {"a": [], "b": []}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for side in ("a", "b"):
                binary = os.path.abspath(getattr(args, side))
                results[side].append(one_run(binary, args, work, f"{side}{r}"))
                print(f"round {r + 1} {side.upper()} done", file=sys.stderr)
    print("| cell | figure | A median (min–max) | B median (min–max) | B/A |")
    print("| --- | --- | --- | --- | --- |")
    for cell in results["a"][0]:
        for key in ("rps", "p50", "p99", "cpu_us", "queue_us", "executor_pct"):
            vals = {s: [figures(run[cell])[key] for run in results[s] if cell in run]
                    for s in ("a", "b")}
            med = {s: statistics.median(v) for s, v in vals.items()}
            ratio = med["b"] / med["a"] if med["a"] else float("nan")
            print(f"| {cell} | {key} | {med['a']:.1f} ({min(vals['a']):.1f}–{max(vals['a']):.1f}) "
                  f"| {med['b']:.1f} ({min(vals['b']):.1f}–{max(vals['b']):.1f}) | {ratio:.2f} |")
    overload_bench.finish(results, args.json)


if __name__ == "__main__":
    main()
