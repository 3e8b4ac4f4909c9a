#!/usr/bin/python3
"""System calls and context switches per HTTP inference request, A against B (issue 21, goal 1).

Usage: bench/syscall_counts.py --a OLD_BIN [--b NEW_BIN] [--nginx] [--models identity_fp32,simple]
                               [--conns 1,16] [--seconds 3] [--rounds 2]

For each round, binary, model and connection count: starts the server pinned to core 0
(ab_bench.py's flags) on a generated examples repository, warms it with wrk (core 1, the JSON
request of http_bench.py), then counts with `perf stat -p` while wrk runs again: every system
call, epoll_wait, epoll_ctl, recvmsg/recvfrom/read, the calls that failed with EAGAIN (a
receive that found the socket empty), sendmsg/sendto/writev/write, futex, timerfd_settime,
setsockopt/getsockopt, the rest ("other") and the server's context switches; printed per request
(the median over rounds). With --nginx, nginx (one worker pinned to core 0, returning nereid's
byte-identical reply as bench/http_bench.py does) is counted the same way as the floor. Counts,
not timings: comparable on a loaded machine. Needs perf with tracepoints (root, or
perf_event_paranoid <= 1).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import ab_bench  # noqa: E402
import http_bench  # noqa: E402

EVENTS = {
    "syscalls": "raw_syscalls:sys_enter",
    "epoll_wait": "syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait",
    "epoll_ctl": "syscalls:sys_enter_epoll_ctl",
    "recv": "syscalls:sys_enter_recvmsg,syscalls:sys_enter_recvfrom,syscalls:sys_enter_read",
    "EAGAIN": "raw_syscalls:sys_exit",  # filtered: ret == -EAGAIN (see perf_events)
    "send": "syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto,syscalls:sys_enter_writev,"
            "syscalls:sys_enter_write",
    "futex": "syscalls:sys_enter_futex",
    "timerfd": "syscalls:sys_enter_timerfd_settime",
    "sockopt": "syscalls:sys_enter_setsockopt,syscalls:sys_enter_getsockopt",
    "cswitch": "context-switches",
}
# Columns that are system calls; "other" is every system call not in one of them.
CALLS = ["epoll_wait", "epoll_ctl", "recv", "send", "futex", "timerfd", "sockopt"]


def perf_events():
    """perf stat's -e/--filter arguments for EVENTS (the EAGAIN column counts failed exits)."""
    args = []
    for column, names in EVENTS.items():
        for name in names.split(","):
            args += ["-e", name]
            if column == "EAGAIN":
                args += ["--filter", "ret == -11"]
    return args


def count_pid(pid, seconds, run_load, work):
    """{column: count per request} while run_load() (returning the requests it made) runs."""
    out = os.path.join(work, "perf_stat.csv")
    perf = subprocess.Popen(["perf", "stat", "-x,", "-o", out] + perf_events() +
                            ["-p", str(pid), "--", "sleep", str(seconds)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    requests = run_load()
    perf.wait()
    raw = {}
    with open(out) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) < 3 or not parts[0].replace(".", "").isdigit():
                continue
            raw[parts[2]] = float(parts[0])
    per = {}
    for column, names in EVENTS.items():
        per[column] = sum(raw.get(n, 0.0) for n in names.split(",")) / max(requests, 1)
    per["other"] = per["syscalls"] - sum(per[c] for c in CALLS)
    return per


def count(binary, models, model, conns, seconds, work):
    """{column: count per request} of one server run."""
    proc, port = ab_bench.serve(binary, models, [])
    try:
        body = json.dumps(http_bench.REQUESTS[model]).encode()
        ab_bench.run_wrk(port, model, body, conns, 1, work)
        return count_pid(proc.pid, seconds,
                         lambda: ab_bench.run_wrk(port, model, body, conns, seconds, work)[0], work)
    finally:
        proc.terminate()
        proc.wait()


def nginx_replies(binary, models, model_names):
    """{model: nereid's reply body}: what nginx returns, byte for byte (http_bench.py)."""
    proc, port = ab_bench.serve(binary, models, [])
    try:
        return {m: http_bench.post(port, m, json.dumps(http_bench.REQUESTS[m]).encode())
                for m in model_names}
    finally:
        proc.terminate()
        proc.wait()


def count_nginx(replies, model, conns, seconds, work):
    """count() for nginx's one worker, answering with nereid's reply."""
    port = http_bench.free_port()
    master = http_bench.start_nginx(work, port, replies)
    try:
        time.sleep(0.3)
        worker = int(subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True,
                                    text=True, check=True).stdout.split()[0])
        body = json.dumps(http_bench.REQUESTS[model]).encode()
        ab_bench.run_wrk(port, model, body, conns, 1, work)
        return count_pid(worker, seconds,
                         lambda: ab_bench.run_wrk(port, model, body, conns, seconds, work)[0], work)
    finally:
        master.terminate()
        master.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b")
    ap.add_argument("--nginx", action="store_true", help="also count nginx (the floor)")
    ap.add_argument("--models", default="identity_fp32,simple")
    ap.add_argument("--conns", default="1,16")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    work, models = ab_bench.example_repository("nereid_syscalls_")
    binaries = [("A", args.a)] + ([("B", args.b)] if args.b else [])
    replies = nginx_replies(args.a, models, args.models.split(",")) if args.nginx else None
    columns = list(EVENTS) + ["other"]
    cells = {}
    for _ in range(args.rounds):
        for model in args.models.split(","):
            for conns in [int(c) for c in args.conns.split(",")]:
                for name, binary in binaries:  # interleaved: A then B in every round
                    per = count(binary, models, model, conns, args.seconds, work)
                    for column, v in per.items():
                        cells.setdefault((model, conns, name, column), []).append(v)
                if replies:
                    per = count_nginx(replies, model, conns, args.seconds, work)
                    for column, v in per.items():
                        cells.setdefault((model, conns, "nginx", column), []).append(v)
    names = [name for name, _ in binaries] + (["nginx"] if replies else [])
    print("| model | conns | bin | " + " | ".join(columns) + " |")
    print("| --- | --- | --- |" + " --- |" * len(columns))
    for model in args.models.split(","):
        for conns in [int(c) for c in args.conns.split(",")]:
            for name in names:
                row = [f"{statistics.median(cells[(model, conns, name, c)]):.2f}" for c in columns]
                print(f"| {model} | {conns} | {name} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
