#!/usr/bin/python3
"""Model management cost: how long a load / reload takes, and what reloads do to requests.

Usage: scripts/build && /usr/bin/python3 bench/reload_bench.py [--seconds 5] [--reloads 20]

Generates the example repository, starts `nereid` in explicit mode (all models loaded), then:
  1. times `POST /v2/repository/models/<m>/load` (a full reload) for `simple` and `mlp_fp32`;
  2. runs two keep-alive clients against `simple` for --seconds without reloads, then again while
     the main thread reloads `simple` back to back (--reloads times, at least); records request
     latency p50/p99/max and failed requests for both phases.
Prints a Markdown table. No third-party tools; Debian's python3-requests only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "release", "nereid")
BODY = json.dumps({"inputs": [
    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]})


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def clients(url, seconds, stop_early=None):
    lat, failed, lock = [], [0], threading.Lock()
    deadline = time.monotonic() + seconds

    def run():
        s = requests.Session()
        while time.monotonic() < deadline and not (stop_early and stop_early.is_set()):
            t0 = time.perf_counter()
            r = s.post(url, data=BODY, timeout=30)
            dt = (time.perf_counter() - t0) * 1e6
            with lock:
                if r.status_code == 200:
                    lat.append(dt)
                else:
                    failed[0] += 1

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    return threads, lat, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--reloads", type=int, default=20)
    args = ap.parse_args()
    models = tempfile.mkdtemp(prefix="nereid-reload-bench-")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_test_models.py"),
                    "--examples", models], check=True)
    port = 18931
    proc = subprocess.Popen([BIN, f"--model-repository={models}", "--model-control-mode=explicit",
                             "--load-model=*", f"--http-port={port}", "--allow-grpc=false",
                             "--http-address=127.0.0.1"], stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if requests.get(base + "/v2/health/ready", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.05)
        s = requests.Session()
        print("| reload of | n | median ms | min ms | max ms |\n| --- | --- | --- | --- | --- |")
        for model in ("simple", "mlp_fp32"):
            times = []
            for _ in range(args.reloads):
                t0 = time.perf_counter()
                r = s.post(f"{base}/v2/repository/models/{model}/load", timeout=60)
                assert r.status_code == 200, r.content
                times.append((time.perf_counter() - t0) * 1e3)
            print(f"| {model} | {len(times)} | {statistics.median(times):.1f} | "
                  f"{min(times):.1f} | {max(times):.1f} |")
        url = f"{base}/v2/models/simple/infer"
        rows = []
        for phase in ("no reloads", "back-to-back reloads"):
            threads, lat, failed = clients(url, args.seconds)
            reloads = 0
            if phase != "no reloads":
                while any(t.is_alive() for t in threads):
                    assert s.post(f"{base}/v2/repository/models/simple/load",
                                  timeout=60).status_code == 200
                    reloads += 1
            for t in threads:
                t.join()
            rows.append((phase, reloads, len(lat), failed[0], pct(lat, 0.5), pct(lat, 0.99),
                         max(lat)))
        print("\n| phase | reloads | requests ok | failed | p50 µs | p99 µs | max µs |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.0f} | {r[5]:.0f} | {r[6]:.0f} |")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
