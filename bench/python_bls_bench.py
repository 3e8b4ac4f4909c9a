#!/usr/bin/python3
"""CPU cost of one BLS call (issue 18's goal: ≤ 30 µs per call), A/B of two nereid builds.

    /usr/bin/python3 bench/python_bls_bench.py --a OLD/nereid --b NEW/nereid [--rounds 3]
        [--seconds 2] [--calls 20] [--elements 16] [--source pool|stub]

bench/python_bench.py's identity_py, and bls_n_py: the same model.py making `--calls` BLS calls
to identity_fp32 per request (FP32 [1,16] JSON over HTTP, one connection, the server and its
stubs on core 0, wrk on core 1). Per cell: CPU of the server and its stub processes per request
(bench/python_ab_bench.py's schedstat sum), interleaved A then B each round; the cost of one call
is (bls_n_py - identity_py) / calls, so the calls outweigh the machine's noise on the rest of
the request. `--elements` sets the tensor's size (262144: 1 MiB); `--source stub` makes the BLS
input a new array of the stub's (`np.array(x)` once per request, so it crosses the socket)
instead of the execute input itself (a view of the shared-memory pool, named by its place).
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_ab_bench  # noqa: E402
import python_bench  # noqa: E402
from cache_bench import body, start  # noqa: E402

BLS_N_PY = '''import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0")
            if FROM_STUB:
                x = pb_utils.Tensor("INPUT0", np.array(x.as_numpy()))
            for _ in range(CALLS):
                res = pb_utils.InferenceRequest(model_name="identity_fp32", inputs=[x],
                                                requested_output_names=["OUTPUT0"]).exec()
            out.append(pb_utils.InferenceResponse(
                [pb_utils.get_output_tensor_by_name(res, "OUTPUT0")]))
        return out
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="baseline binary")
    ap.add_argument("--b", required=True, help="candidate binary")
    ap.add_argument("--models", default=os.environ.get(
        "NEREID_MODELS", os.path.join(python_bench.ROOT, "build/release/test_models")))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=2)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--elements", type=int, default=16, help="FP32 elements per tensor")
    ap.add_argument("--source", choices=("pool", "stub"), default="pool",
                    help="BLS input: the execute input (pool) or a new array of the stub's")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nereid-python-bls-")
    repo = python_bench.make_repo(args.models, work)
    shutil.copytree(os.path.join(repo, "identity_py"), os.path.join(repo, "bls_n_py"))
    cfg = os.path.join(repo, "bls_n_py", "config.pbtxt")
    with open(cfg) as f:
        text = f.read().replace('name: "identity_py"', 'name: "bls_n_py"')
    with open(cfg, "w") as f:
        f.write(text)
    with open(os.path.join(repo, "bls_n_py", "1", "model.py"), "w") as f:
        f.write(BLS_N_PY.replace("CALLS", str(args.calls)).replace(
            "FROM_STUB", str(args.source == "stub")))
    # Small tensors as JSON (as before); large ones as a binary tensor, so JSON does not swamp it.
    header_size, data = 0, body("INPUT0", args.elements)
    if args.elements > 1024:
        header, data = python_ab_bench.binary_body(args.elements)
        header_size = len(header)
    per_call = {"A": [], "B": []}
    for _ in range(args.rounds):
        for label, binary in (("A", args.a), ("B", args.b)):
            proc, port = start(binary, repo, ["--log-info=false"])
            try:
                cpu = {}
                for model in ("identity_py", "bls_n_py"):
                    python_ab_bench.wrk(port, model, data, header_size, 1, work)  # warm-up
                    before = python_ab_bench.cpu_ns(proc.pid)
                    n, _ = python_ab_bench.wrk(port, model, data, header_size, args.seconds, work)
                    cpu[model] = (python_ab_bench.cpu_ns(proc.pid) - before) / n / 1000
                per_call[label].append((cpu["bls_n_py"] - cpu["identity_py"]) / args.calls)
            finally:
                proc.terminate()
                proc.wait()
    print(f"{args.rounds} rounds x {args.seconds} s, {args.calls} BLS calls per request, "
          f"{args.elements} FP32 elements from the {args.source}: "
          "CPU µs per BLS call (server + stubs), median (min-max)")
    for label in ("A", "B"):
        v = per_call[label]
        print(f"{label}: {statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
