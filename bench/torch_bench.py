#!/usr/bin/python3
"""TorchScript throughput: Nereid's pytorch backend vs an in-process `forward` loop, same run.

Model: mlp_torch (scripts/torch_models.py Mlp: 256->2048->2048->1024->16, the ONNX mlp_fp32's
twin), one instance with the default INTRA_OP_THREAD_COUNT (1).

  * server side: nereid pinned to core 0, wrk pinned to core 1 POSTing a JSON request of batch
    --batch (default 1) at 1 and 4 connections for --seconds each;
  * in-process floor: python3-torch (the same Debian libtorch the server's runtime links, so the
    same kernels) pinned to core 0 with the server's thread settings (torch.set_num_threads(1),
    one inter-op thread, inference mode) calling forward on batches of the server's mean batch
    size for --seconds. Without the dynamic batcher (issue 6) the server's mean batch size is the
    request's batch size; batching figures come once it lands.
  * ratio = server samples/s / in-process samples/s (goal: >= 0.90).
Also records start-up to ready and RSS with and without TorchScript models (LibTorch is loaded on
the first TorchScript model load only).

Usage: bench/torch_bench.py [--bin build/release/nereid] [--seconds 10] [--batch 1]
Needs wrk and taskset (scripts/setup). Everything stays on 127.0.0.1.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_bench import ROOT, free_port, rss_kib, run_wrk, wait_ready  # noqa: E402

MAX_BATCH = 32  # mlp_torch's max_batch_size (scripts/gen_test_models.py)

IN_PROCESS = r"""
import sys, time, torch
path, batch, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
torch.set_num_threads(1)
torch.set_num_interop_threads(1)
m = torch.jit.load(path)
x = torch.randn(batch, 256, generator=torch.Generator().manual_seed(0))
with torch.inference_mode():
    for _ in range(5):
        m(x)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        m(x)
        n += 1
    dt = time.perf_counter() - t0
print(n * batch / dt)
"""


def start_server(binary, repo, workdir, name):
    port = free_port()
    t0 = time.monotonic()
    proc = subprocess.Popen(["taskset", "-c", "0", binary, f"--model-repository={repo}",
                             f"--http-port={port}", "--http-address=127.0.0.1",
                             "--allow-grpc=false", "--log-info=false"],
                            stderr=open(os.path.join(workdir, f"{name}.log"), "w"))
    wait_ready(port, proc)
    return proc, port, (time.monotonic() - t0) * 1000, rss_kib(proc.pid) / 1024


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


def model_stats(port):
    url = f"http://127.0.0.1:{port}/v2/models/mlp_torch/stats"
    with urllib.request.urlopen(url, timeout=5) as r:
        s = json.loads(r.read())["model_stats"][0]
    return int(s["inference_count"]), int(s["execution_count"])


def batched(port, body, args, work, in_process):
    """Dynamic batching: 2 x max_batch_size connections, then the in-process loop on batches of
    the server's mean executed batch size (rounded), bracketing the server run."""
    conns = 2 * MAX_BATCH
    run_wrk(port, "mlp_torch", body, conns, 2, work)  # warm-up
    i0, e0 = model_stats(port)
    n = run_wrk(port, "mlp_torch", body, conns, args.seconds, work)
    i1, e1 = model_stats(port)
    mean = (i1 - i0) / max(1, e1 - e0)
    batch = max(1, round(mean))
    before = in_process(batch)
    after = in_process(batch)
    samples = n["rps"] * args.batch
    ratio = samples / ((before + after) / 2)
    print(f"dynamic batching, {conns} conns: server {samples:.1f} samples/s (p50 "
          f"{n['p50_us'] / 1000:.1f} ms, p99 {n['p99_us'] / 1000:.1f} ms), mean batch {mean:.1f}; "
          f"in-process at batch {batch}: {before:.1f} / {after:.1f}; ratio {ratio:.3f}"
          + (f"  ({n['non2xx']} non-2xx!)" if n["non2xx"] else ""))
    return [{"conns": conns, "server": n, "mean_batch": mean, "in_process_before": before,
             "in_process_after": after, "ratio": ratio}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--dynamic-batching", action="store_true",
                    help="enable dynamic_batching on mlp_torch, load it with 2 x max_batch_size "
                         "connections, and run the in-process loop on the server's mean batch")
    args = ap.parse_args()
    for tool in ("wrk", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: run scripts/setup")
    work = tempfile.mkdtemp(prefix="nereid_torch_bench_")
    try:
        gen = os.path.join(work, "gen")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                        "--examples", os.path.join(gen, "examples"),
                        "--fixtures", os.path.join(gen, "fixtures")], check=True)
        repo = os.path.join(work, "torch_repo")
        os.makedirs(repo)
        shutil.copytree(os.path.join(gen, "fixtures", "torch", "mlp_torch"),
                        os.path.join(repo, "mlp_torch"))
        model_file = os.path.join(repo, "mlp_torch", "1", "model.pt")
        if args.dynamic_batching:
            with open(os.path.join(repo, "mlp_torch", "config.pbtxt"), "a") as f:
                f.write("\ndynamic_batching {}\n")

        proc, _, onnx_ms, onnx_rss = start_server(args.bin, os.path.join(gen, "examples"), work,
                                                  "examples")
        stop(proc)
        proc, port, torch_ms, torch_rss = start_server(args.bin, repo, work, "torch")
        results = {"startup_ms": {"examples (no TorchScript)": onnx_ms, "mlp_torch": torch_ms},
                   "rss_mib": {"examples (no TorchScript)": onnx_rss, "mlp_torch": torch_rss},
                   "batch": args.batch, "runs": []}
        print(f"start-up to ready: examples (no TorchScript) {onnx_ms:.0f} ms, RSS "
              f"{onnx_rss:.0f} MiB; mlp_torch {torch_ms:.0f} ms, RSS {torch_rss:.0f} MiB")
        x = [[(i % 17) / 17.0 for i in range(256)] for _ in range(args.batch)]
        body = json.dumps({"inputs": [{"name": "INPUT__0", "datatype": "FP32",
                                       "shape": [args.batch, 256], "data": x}]}).encode()
        def in_process(batch=args.batch):
            return float(subprocess.run(
                ["taskset", "-c", "0", "/usr/bin/python3", "-c", IN_PROCESS, model_file,
                 str(batch), str(args.seconds)],
                capture_output=True, text=True, check=True).stdout.strip())

        if args.dynamic_batching:
            try:
                results["runs"] = batched(port, body, args, work, in_process)
            finally:
                stop(proc)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
            return

        try:
            # In-process runs bracket each server run, so drift (other load on the machine) shows.
            print(f"{'conns':>5} | {'in-process before':>17} {'server':>8} {'p50 ms':>7} "
                  f"{'p99 ms':>7} {'in-process after':>16} | ratio (server / mean in-process)")
            before = in_process()
            for conns in (1, 4):
                n = run_wrk(port, "mlp_torch", body, conns, args.seconds, work)
                after = in_process()
                samples = n["rps"] * args.batch
                ratio = samples / ((before + after) / 2)
                print(f"{conns:>5} | {before:>17.1f} {samples:>8.1f} {n['p50_us'] / 1000:>7.2f} "
                      f"{n['p99_us'] / 1000:>7.2f} {after:>16.1f} | {ratio:.3f}"
                      + (f"  ({n['non2xx']} non-2xx!)" if n["non2xx"] else ""))
                results["runs"].append({"conns": conns, "server": n, "in_process_before": before,
                                        "in_process_after": after, "ratio": ratio})
                before = after
        finally:
            stop(proc)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
