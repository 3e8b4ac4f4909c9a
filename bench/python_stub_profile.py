#!/usr/bin/python3
"""Where a small request's time goes inside the Python stub (issue 18's latency goal).

Runs the real stub code (backends/python/resources/nereid_python_stub.py, its Channel and Stub)
in this process, with bench/python_bench.py's identity model.py, over a socketpair and a memfd
pool like the server's: each round writes one execute frame for one FP32 [1,16] request as the
server sends it (JSON or binary, whichever the stub speaks), then times the stub's phases with
perf_counter_ns: reading the frame, building the request objects, the model's execute(),
encoding the result and writing it. The server's side of the round is not timed.

    /usr/bin/python3 bench/python_stub_profile.py [--rounds 20000] [--cprofile]
"""

import argparse
import os
import socket
import statistics
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "backends/python/resources"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import nereid_python_stub as stub_mod  # noqa: E402
import nereid_stub_frames as frames  # noqa: E402
import python_bench  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402

def execute_frame(stub_mod):
    """One execute frame for one FP32 [1,16] request whose bytes are at offset 0 of the pool, as
    the server sends it (EncodeExecute and StubProcess::WriteBinary)."""
    header = frames._EXEC_HEAD.pack(frames._EXECUTE, 0, 64, 1 << 20, 0, 1)
    header += frames._REQ_HEAD.pack(0, 0, 0, 0, 2, 1, 1) + b"{}"
    header += frames._U16.pack(7) + b"OUTPUT0"
    header += frames._IN_HEAD.pack(6, 11, 2, 0, 64) + b"INPUT0" + frames._DIMS[2].pack(1, 16)
    return frames._HEADER.pack(len(header), 0) + header


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--cprofile", action="store_true", help="cProfile the rounds instead")
    ap.add_argument("--bls", action="store_true",
                    help="bench/python_bench.py's bls_py model: one BLS call per request, "
                         "answered by the fake server (a bls_result frame written in advance)")
    args = ap.parse_args()

    server, stub_end = socket.socketpair()
    shm_fd = os.memfd_create("nereid-profile")
    os.ftruncate(shm_fd, 1 << 20)
    x = np.full((1, 16), 0.5, dtype=np.float32)
    os.pwrite(shm_fd, x.tobytes(), 0)

    channel = frames.Channel(stub_end.detach(), shm_fd)
    stub = stub_mod.Stub(channel, "")
    pb_utils._stub = stub
    scope = {}
    exec(python_bench.BLS_PY if args.bls else python_bench.IDENTITY_PY, scope)
    stub.model = scope["TritonPythonModel"]()
    tags = iter(range(1, 1 << 62))

    def bls_answer():
        """The answer to the next BLS call, as stub_questions.cc writes it (bls_frames.h: the
        output in the pool block at 64)."""
        name = b"OUTPUT0"
        body = frames._ANSWER_HEAD.pack(frames._BLS_ANSWER, 1, 0, 0, 1, 0, next(tags), 64, 64,
                                          1 << 20)
        body += frames._OUT_HEAD.pack(len(name), 11, 2, 64) + name + frames._DIMS[2].pack(1, 16)
        return frames._HEADER.pack(len(body), 0) + body
    stub.model_name, stub.instance_name = "identity_py", "identity_py_0_0"  # initialize()
    stub.execute_thread = threading.get_ident()  # inside execute(), as serve() sets it
    frame = execute_frame(stub_mod)

    phases = {"read": [], "requests": [], "execute": [], "encode": [], "write": []}
    clock = time.perf_counter_ns

    server.setblocking(False)

    def drain():
        while True:
            try:
                server.recv(65536)
            except BlockingIOError:
                return

    def one_round(record):
        server.sendall(frame + bls_answer() if args.bls else frame)
        t0 = clock()
        msg, payload = channel.read()
        t1 = clock()
        requests = stub.make_requests(msg, payload)
        t2 = clock()
        result = stub.model.execute(requests)
        t3 = clock()
        header, chunks = stub.encode_result(msg, requests, result)
        t4 = clock()
        channel.write(header, chunks)
        t5 = clock()
        drain()
        if record:
            for name, a, b in (("read", t0, t1), ("requests", t1, t2), ("execute", t2, t3),
                               ("encode", t3, t4), ("write", t4, t5)):
                phases[name].append(b - a)

    for _ in range(2000):
        one_round(False)
    if args.cprofile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.rounds):
            one_round(False)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    start = clock()
    for _ in range(args.rounds):
        one_round(True)
    total = (clock() - start) / args.rounds / 1000
    print("| phase | median µs | p90 µs |")
    print("| --- | --- | --- |")
    for name, v in phases.items():
        v.sort()
        print(f"| {name} | {statistics.median(v) / 1000:.2f} | {v[len(v) * 9 // 10] / 1000:.2f} |")
    print(f"whole round (with the socket writes and reads of the fake server): {total:.2f} µs")


if __name__ == "__main__":
    main()
