#!/usr/bin/python3
"""HTTP load benchmark: Nereid vs nginx returning the byte-identical response, side by side.

For each model (identity_fp32, simple) and each concurrency (1, 16):
  * nereid runs pinned to core 0, nginx (one worker) pinned to core 0, wrk pinned to core 1;
  * wrk POSTs the same KServe v2 JSON request to both for --seconds each;
  * reports infer/s, p50, p99 and the nereid/nginx throughput ratio and added p50.
Also measures start-up time (exec -> /v2/health/ready == 200) and resident memory once ready.

Usage: bench/http_bench.py [--bin build/release/nereid] [--seconds 10]
Needs wrk and nginx-light (scripts/setup installs them). Everything stays on 127.0.0.1.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REQUESTS = {
    "identity_fp32": {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                                  "data": [float(i) for i in range(16)]}]},
    "simple": {"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]},
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, proc, timeout=30.0):
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/v2/health/ready"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited during start-up")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.002)
    raise RuntimeError("server not ready in time")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def post(port, model, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/{model}/infer",
                                 data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return r.read()


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}") as r:
        return r.read()


def start_nginx(workdir, port, responses, paths=None):
    """One nginx worker on core 0 answering POST /v2/models/<m>/infer with responses[m], and each
    path of `paths` (path -> body) with its body (bench/issue21.py's floor for nereid_perf,
    which also reads the model's metadata and statistics)."""
    bodies = {f"/v2/models/{model}/infer": body for model, body in responses.items()}
    bodies.update(paths or {})
    locations = []
    for path, body in bodies.items():
        escaped = body.decode().replace("\\", "\\\\").replace("'", "\\'")
        locations.append(f"location = {path} {{ default_type application/json;"
                         f" return 200 '{escaped}'; }}")
    conf = os.path.join(workdir, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off; worker_processes 1; pid {workdir}/nginx.pid;
error_log {workdir}/nginx_error.log;
worker_rlimit_nofile 8192;
events {{ worker_connections 4096; }}
http {{ access_log off; keepalive_requests 1000000000;
  client_body_temp_path {workdir}/body; proxy_temp_path {workdir}/proxy;
  fastcgi_temp_path {workdir}/fcgi; uwsgi_temp_path {workdir}/uwsgi; scgi_temp_path {workdir}/scgi;
  server {{ listen 127.0.0.1:{port}; {' '.join(locations)} }} }}
""")
    return subprocess.Popen(["taskset", "-c", "0", "nginx", "-c", conf, "-p", workdir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_wrk(port, model, body, conns, seconds, workdir):
    lua = os.path.join(workdir, f"{model}.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                f"wrk.body = {json.dumps(body.decode())}\n")
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{seconds}s",
                          "--latency", "-s", lua, f"http://127.0.0.1:{port}/v2/models/{model}/infer"],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)\b", out)
        scale = {"us": 1, "ms": 1000, "s": 1e6}[m.group(2)]
        return float(m.group(1)) * scale
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50_us": pct(50), "p99_us": pct(99),
            "non2xx": int(errors.group(1)) if errors else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="extra nereid flag, e.g. --server-arg=--http-thread-count=2")
    args = ap.parse_args()
    for tool in ("wrk", "nginx", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: run scripts/setup")
    work = tempfile.mkdtemp(prefix="nereid_bench_")
    models = os.path.join(work, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True)
    port = free_port()
    t0 = time.monotonic()
    server = subprocess.Popen(["taskset", "-c", "0", args.bin, f"--model-repository={models}",
                               f"--http-port={port}", "--http-address=127.0.0.1",
                               "--log-info=false", "--metrics-port=0"] + args.server_arg, stderr=open(os.path.join(work, "server.log"), "w"))
    nginx = None
    try:
        wait_ready(port, server)
        startup_ms = (time.monotonic() - t0) * 1000
        rss = rss_kib(server.pid)
        bodies = {m: json.dumps(r).encode() for m, r in REQUESTS.items()}
        responses = {m: post(port, m, b) for m, b in bodies.items()}
        nport = free_port()
        nginx = start_nginx(work, nport, responses)
        time.sleep(0.3)
        for m, b in bodies.items():
            assert post(nport, m, b) == responses[m], "nginx body differs from nereid's"
        print(f"start-up to ready: {startup_ms:.0f} ms; RSS when ready: {rss / 1024:.1f} MiB")
        print(f"{'model':15} {'conns':>5} | {'nereid rps':>10} {'p50us':>7} {'p99us':>7} | "
              f"{'nginx rps':>10} {'p50us':>7} {'p99us':>7} | {'ratio':>5} {'+p50us':>7}")
        results = {"startup_ms": startup_ms, "rss_mib": rss / 1024, "runs": []}
        for m, b in bodies.items():
            for conns in (1, 16):
                n = run_wrk(port, m, b, conns, args.seconds, work)
                g = run_wrk(nport, m, b, conns, args.seconds, work)
                ratio = n["rps"] / g["rps"]
                print(f"{m:15} {conns:>5} | {n['rps']:>10.0f} {n['p50_us']:>7.0f} {n['p99_us']:>7.0f} | "
                      f"{g['rps']:>10.0f} {g['p50_us']:>7.0f} {g['p99_us']:>7.0f} | {ratio:>5.2f} "
                      f"{n['p50_us'] - g['p50_us']:>7.0f}"
                      + (f"  ({n['non2xx']} non-2xx!)" if n["non2xx"] else ""))
                results["runs"].append({"model": m, "conns": conns, "nereid": n, "nginx": g})
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        server.send_signal(signal.SIGTERM)
        if nginx:
            nginx.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
