#!/usr/bin/python3
"""Where one HTTP inference request's server CPU goes: `perf record` on the server.

Usage: bench/http_profile.py [--bin build/release/nereid] [--model identity_fp32]
                             [--conns 16] [--seconds 4] [--binary] [--top 40] [--kernel-top 0]

Starts the server pinned to core 0 (ab_bench.py's flags), drives it with bench/nereid_perf pinned
to core 1 (JSON, or binary tensor data with --binary), records the server's samples for
--seconds once the load runs (`perf record -F 2999 -p PID`), and prints:
  * the split by object (kernel, nereid, libc, libstdc++, backends, ...) in % of all samples,
  * with --kernel-top N, the top kernel symbols by self time,
  * the top user-space symbols by self time, in % of all samples and in ns per request
    (share x server CPU per request, from /proc/<pid>/task/*/schedstat over the same window),
  * user-space samples grouped by what they do (malloc/free, JSON decode, JSON encode, Asio,
    Beast parser, std::function/shared_ptr, scheduling, ...; GROUPS below).
Non-interactive; needs `perf` and permission to attach (root here).
"""

import argparse
import collections
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import ab_bench  # noqa: E402
import http_bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (group, regex on "dso symbol"), first match wins.
GROUPS = [
    ("malloc/free", r"libc\.so.*(malloc|free|_int_|tcache|cfree|realloc|calloc)|operator new|"
                    r"operator delete|BlockRecycler"),
    ("memcpy/memset/str*", r"libc\.so.*(mem|str)"),
    ("JSON request decode", r"rapidjson::GenericReader|ParseInferRequestJson|RequestHandler|GenericReader|JsonEvent|"
                            r"FinishInput|FinishJsonData|DecodeInferRequest|json_request|"
                            r"ParseJsonNumber|InputBuilder|strtod|from_chars|NameSet"),
    ("JSON response encode", r"Encode|rapidjson::Writer|Grisu|dtoa|WriteTensorJson|Prettify|WriteOutput|"
                             r"EstimateJsonSize|json_response"),
    ("clock reads", r"clock_gettime|steady_clock|NowNs"),
    ("HTTP wire (head write, parse)", r"beast|WriteResponseHead|http_wire|HttpHeaders|"
                                      r"Session::(Parse|PrepareHeader|OnHeaderDone)"),
    ("Asio (reactor, strand, scheduler)", r"asio|beast::basic_stream"),
    ("pthread/futex", r"pthread|futex|__lll"),
    ("std::function/shared_ptr", r"_Function_handler|_Sp_counted|shared_ptr|_M_release|"
                                 r"_M_manager"),
    ("core (server, model, scheduler, stats)", r"InferAsync|ModelVersion|Scheduler|RunOnInstance|"
                                               r"PrepareInputs|ValidateRequest|ModelStats|"
                                               r"Admission|ResponseOutputs|IndexMarks|"
                                               r"ClassifyRequest|InstanceRunner|Record"),
    ("HTTP handler/responder/router", r"HandleInfer|Responder|Router|RouteParams|BuildReply|"
                                      r"Session::|http_detail"),
    ("identity backend", r"identity"),
]


def parse_report(text):
    """[(percent, dso, symbol)] from `perf report --stdio --sort dso,sym` (no children)."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[([.k])\]\s+(.*)$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3) == "k", m.group(4).strip()))
    return rows


def strip_templates(sym):
    """`sym` without template arguments and parameter lists, so groups match the function."""
    out, depth = [], 0
    for ch in sym:
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--perf-tool", default=None, help="nereid_perf (default: beside --bin)")
    ap.add_argument("--model", default="identity_fp32")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--binary", action="store_true")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--kernel-top", type=int, default=0,
                    help="also list this many kernel symbols (self time)")
    args = ap.parse_args()
    tool = args.perf_tool or os.path.join(os.path.dirname(os.path.abspath(args.bin)),
                                          "bench/nereid_perf")
    work = tempfile.mkdtemp(prefix="nereid_prof_")
    models = os.path.join(work, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/gen_test_models.py"),
                    "--examples", models], check=True, stdout=subprocess.DEVNULL)
    proc, port = ab_bench.serve(args.bin, models, [])
    load = None
    try:
        cmd = ["taskset", "-c", "1", tool, "-m", args.model, "-u", f"127.0.0.1:{port}",
               "--concurrency-range", str(args.conns), "-p", str((args.seconds + 4) * 1000),
               "-r", "1", "-s", "100"]
        if args.binary:
            cmd.append("--binary")
        load = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)  # warm up
        data = os.path.join(work, "perf.data")
        stats_before = http_bench_count(port, args.model)
        cpu_before = ab_bench.cpu_ns(proc.pid)
        subprocess.run(["perf", "record", "-F", "2999", "-o", data, "-p", str(proc.pid), "--",
                        "sleep", str(args.seconds)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        cpu_used = ab_bench.cpu_ns(proc.pid) - cpu_before
        requests = http_bench_count(port, args.model) - stats_before
    finally:
        if load is not None:
            load.kill()
            load.wait()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    report = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                             "--sort", "dso,sym", "--percent-limit", "0.01"],
                            capture_output=True, text=True).stdout
    rows = parse_report(report)
    per_req_ns = cpu_used / max(1, requests)
    fmt = "binary" if args.binary else "JSON"
    print(f"{args.model} {fmt} c={args.conns}: {requests} requests in {args.seconds} s, server "
          f"CPU {per_req_ns / 1000:.2f} us/request")
    by_dso = collections.Counter()
    for pct, dso, kernel, _ in rows:
        by_dso["[kernel]" if kernel else dso] += pct
    print("\nby object (% of samples): " +
          ", ".join(f"{d} {p:.1f}" for d, p in by_dso.most_common(8)))
    if args.kernel_top:
        print(f"\ntop kernel symbols (self; % of all samples, ns per request):")
        for pct, _, _, sym in [r for r in rows if r[2]][:args.kernel_top]:
            print(f"  {pct:5.2f}%  {pct / 100 * per_req_ns:7.0f} ns  {sym[:110]}")
    user = [r for r in rows if not r[2]]
    print(f"\ntop user-space symbols (self; % of all samples, ns per request):")
    for pct, dso, _, sym in user[:args.top]:
        print(f"  {pct:5.2f}%  {pct / 100 * per_req_ns:7.0f} ns  {dso:22.22} {sym[:110]}")
    groups = collections.Counter()
    others = []
    for pct, dso, _, sym in user:
        key = f"{dso} {strip_templates(sym)}"
        for name, rx in GROUPS:
            if re.search(rx, key):
                groups[name] += pct
                break
        else:
            groups["other user space"] += pct
            others.append((pct, dso, sym))
    print("\nuser space by what it does (% of all samples, ns per request):")
    for name, pct in groups.most_common():
        print(f"  {pct:5.1f}%  {pct / 100 * per_req_ns:7.0f} ns  {name}")
    print("  (largest of the others: " + "; ".join(
        f"{strip_templates(sym)[:60]} {pct:.2f}%" for pct, dso, sym in others[:8]) + ")")
    print(f"  {sum(groups.values()):5.1f}%  {sum(groups.values()) / 100 * per_req_ns:7.0f} ns  "
          "all user space")


def http_bench_count(port, model):
    """Successful inferences the server has counted for `model` (statistics API)."""
    import json
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/models/{model}/stats") as r:
        stats = json.load(r)
    return sum(int(s["inference_stats"]["success"]["count"]) for s in stats["model_stats"])


if __name__ == "__main__":
    main()
