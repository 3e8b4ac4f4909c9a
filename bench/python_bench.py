#!/usr/bin/python3
"""Python backend overhead (issue 18): a Python identity model (backend "python", model.py copies
INPUT0 to OUTPUT0) against the C++ identity backend (identity_fp32), FP32 [1,16] JSON requests
over HTTP at 1 and 16 connections; a Python model making one BLS call to identity_fp32 per
request (bls_py) at 1 connection, whose p50 minus identity_py's is the cost of a BLS call; then what the same execute() costs in-process (pb_utils
objects and a numpy copy, no server), so the gap splits into socket + stub and the Python work.

nereid is pinned to core 0 (its stub processes inherit that: the whole server on one core), wrk
to core 1 (bench/http_bench.py's helpers). Needs wrk (scripts/setup installs it).

    scripts/build release && /usr/bin/python3 bench/python_bench.py [--seconds 5]
"""

import argparse
import os
import shutil
import sys
import tempfile
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cache_bench import body, start  # noqa: E402
from http_bench import post, run_wrk  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

IDENTITY_PY = '''import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''

# The same, but OUTPUT0 comes from identity_fp32 through a BLS call.
BLS_PY = '''import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0")
            res = pb_utils.InferenceRequest(model_name="identity_fp32", inputs=[x],
                                            requested_output_names=["OUTPUT0"]).exec()
            out.append(pb_utils.InferenceResponse(
                [pb_utils.get_output_tensor_by_name(res, "OUTPUT0")]))
        return out
'''


def in_process_us():
    """µs per execute() of IDENTITY_PY on one request, in this process (no server, no socket)."""
    sys.path.insert(0, os.path.join(ROOT, "backends/python/resources"))
    import numpy as np
    import triton_python_backend_utils as pb_utils
    scope = {}
    exec(IDENTITY_PY, scope)
    model = scope["TritonPythonModel"]()
    x = np.full((1, 16), 0.5, dtype=np.float32)

    def once():
        req = pb_utils.InferenceRequest(inputs=[pb_utils.Tensor("INPUT0", x)])
        model.execute([req])
    n = 20000
    return min(timeit.repeat(once, number=n, repeat=3)) / n * 1e6


def make_repo(models, work):
    """identity_fp32 (C++ identity backend), identity_py and bls_py in `work`/repo."""
    repo = os.path.join(work, "repo")
    shutil.copytree(os.path.join(models, "examples", "identity_fp32"),
                    os.path.join(repo, "identity_fp32"))
    for name, code in (("identity_py", IDENTITY_PY), ("bls_py", BLS_PY)):
        os.makedirs(os.path.join(repo, name, "1"))
        cfg = open(os.path.join(repo, "identity_fp32", "config.pbtxt")).read()
        cfg = cfg.replace('name: "identity_fp32"', f'name: "{name}"')
        cfg = cfg.replace('backend: "identity"', 'backend: "python"')
        open(os.path.join(repo, name, "config.pbtxt"), "w").write(cfg)
        open(os.path.join(repo, name, "1", "model.py"), "w").write(code)
    return repo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/nereid"))
    ap.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(ROOT, "build/release/test_models")))
    ap.add_argument("--seconds", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nereid-python-bench-")
    repo = make_repo(args.models, work)
    b = body("INPUT0", 16)
    rows = []
    proc, port = start(args.bin, repo, ["--log-info=false"])
    try:
        for conns in (1, 16):
            for model in ("identity_fp32", "identity_py"):
                post(port, model, b)
                rows.append((model, conns, run_wrk(port, model, b, conns, args.seconds, work)))
        post(port, "bls_py", b)
        bls = run_wrk(port, "bls_py", b, 1, args.seconds, work)
    finally:
        proc.terminate()
        proc.wait()
    print("| model | conns | rps | p50 µs | p99 µs | non-2xx |")
    print("| --- | --- | --- | --- | --- | --- |")
    for model, conns, r in rows:
        print(f"| {model} | {conns} | {r['rps']:.0f} | {r['p50_us']:.0f} | {r['p99_us']:.0f} | "
              f"{r['non2xx']} |")
    print(f"| bls_py | 1 | {bls['rps']:.0f} | {bls['p50_us']:.0f} | {bls['p99_us']:.0f} | "
          f"{bls['non2xx']} |")
    for conns in (1, 16):
        c, p = [r for m, k, r in rows if k == conns]
        print(f"added p50 at c={conns}: {p['p50_us'] - c['p50_us']:.0f} µs")
    py1 = [r for m, k, r in rows if m == "identity_py" and k == 1][0]
    print(f"BLS call (bls_py - identity_py, p50 at c=1): {bls['p50_us'] - py1['p50_us']:.0f} µs")
    print(f"in-process execute() of the same model.py: {in_process_us():.1f} µs per request")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
