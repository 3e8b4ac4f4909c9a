"""Scheduler hardening (issue 22 items 4 and 5), end to end over real sockets.

Item 4: gRPC requests the client cancelled (a unary call, or a whole stream) are dropped from
the sequence batcher's backlog instead of executed, answered CANCELLED and counted as failures
with reason CANCELED; abandoned sequences stop holding their backlog place, so a fresh sequence
is not starved; the sequence batcher's queue is bounded (--max-sequence-backlog-size, Triton's
"Exceeds maximum queue size", 503 / UNAVAILABLE); memory held by a drained burst is returned.
Item 5: a duration field whose nanoseconds overflow an int64 refuses to load, naming the field.

The models are copies of fixtures written into a temporary repository with the settings each test
needs (a one-slot accumulator whose idle sequences hold their slot for a minute, so only END or
cancellation frees it). The tests wait on log lines (--log-verbose=1) and statistics, never on
sleeps.
"""

import json
import os
import re
import shutil
import time

import grpc
import numpy as np
import pytest
import requests

from grpc_helpers import GrpcServer, infer_request, output_array, pbs  # noqa: F401
from helpers import repo

IDLE_US = 60_000_000  # a released-as-idle slot would take a minute per abandoned sequence
SEQ_MODEL = "seq_one_slot"
MAX_US = 9223372036854775  # the largest duration whose nanoseconds fit an int64


def copy_model(src_repo, src, dst_repo, dst, edit):
    """Copies model `src` to `dst_repo/dst`, renamed, with `edit(config_text)` applied."""
    path = os.path.join(dst_repo, dst)
    shutil.copytree(os.path.join(src_repo, src), path)
    cfg = os.path.join(path, "config.pbtxt")
    with open(cfg) as f:
        text = f.read()
    text = text.replace(f'name: "{src}"', f'name: "{dst}"')
    with open(cfg, "w") as f:
        f.write(edit(text))
    return path


def long_idle(text):
    return text.replace("sequence_batching {",
                        f"sequence_batching {{ max_sequence_idle_microseconds: {IDLE_US}", 1)


@pytest.fixture
def seq_repo(tmp_path):
    copy_model(repo("fixtures", "sequence"), "seq_accum_one_slot", str(tmp_path), SEQ_MODEL,
               long_idle)
    return str(tmp_path)


def seq_request(sid, value, start=False, end=False, padding=None):
    params = {"sequence_id": sid}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    if padding:
        params["padding"] = padding
    return infer_request(SEQ_MODEL, [("INPUT", "INT32", np.array([[value]], dtype=np.int32))],
                         parameters=params)


def call(stub, sid, value, start=False, end=False):
    resp = stub.ModelInfer(seq_request(sid, value, start, end), timeout=30)
    return int(output_array(resp).flatten()[0])


def wait_count(server, needle, count, timeout=30.0):
    """Polls the log until `needle` appears `count` times."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.stderr().count(needle) >= count:
            return
        assert server.alive(), server.stderr()[-3000:]
        time.sleep(0.01)
    raise AssertionError(f"{needle!r} appeared {server.stderr().count(needle)} times, not "
                         f"{count}\n{server.stderr()[-3000:]}")


def model_stats(server, model):
    r = server.get(f"/v2/models/{model}/stats")
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]["inference_stats"]


def canceled_failures(server, model):
    text = requests.get(server.metrics_url(), timeout=10).text
    m = re.search(r'nv_inference_request_failure\{[^}]*model="%s"[^}]*reason="CANCELED"[^}]*\} '
                  r'(\d+)' % model, text)
    return int(m.group(1)) if m else 0


def start_server(repo_path, *flags):
    return GrpcServer([repo_path], flags=["--log-verbose=1", *flags], name="security-sched").start()


# ------------------------------------------------------------------------------------- item 4

@pytest.mark.parametrize("how", ["unary", "stream"])
def test_cancelled_backlog_does_not_starve_a_fresh_sequence(pbs, seq_repo, how):  # noqa: F811
    """Five abandoned START requests wait behind the one slot; once cancelled, they never run and
    a fresh sequence gets the slot as soon as it frees. Before the fix each abandoned sequence ran
    and then held the slot for max_sequence_idle (a minute): the fresh one waited five minutes."""
    n = 5
    with start_server(seq_repo) as s:
        stub = s.stub()
        assert call(stub, 1, 1, start=True) == 1  # owns the only slot
        ids = list(range(100, 100 + n))
        if how == "unary":
            futures = [stub.ModelInfer.future(seq_request(i, 7, start=True)) for i in ids]
            for i in ids:
                s.wait_for_log(f"sequence {i} waits in the backlog")
            for f in futures:
                f.cancel()
            wait_count(s, "ModelInfer call cancelled by the client", n)
        else:
            stream = stub.ModelStreamInfer(iter([seq_request(i, 7, start=True) for i in ids]))
            for i in ids:
                s.wait_for_log(f"sequence {i} waits in the backlog")
            stream.cancel()
            wait_count(s, "ModelStreamInfer stream cancelled by the client", 1)
        fresh = stub.ModelInfer.future(seq_request(2, 42, start=True, end=True))
        s.wait_for_log("sequence 2 waits in the backlog")
        assert call(stub, 1, 1, end=True) == 2  # frees the slot
        resp = fresh.result(timeout=30)
        assert int(output_array(resp).flatten()[0]) == 42
        s.wait_for_log(f"dropped {n} cancelled sequence request(s)")
        stats = model_stats(s, SEQ_MODEL)
        assert stats["fail"]["count"] == n
        assert stats["success"]["count"] == 3  # 1 START, 1 END, the fresh sequence
        assert canceled_failures(s, SEQ_MODEL) == n
        # Nothing of the abandoned sequences ran: one execution per successful request.
        assert s.get(f"/v2/models/{SEQ_MODEL}/stats").json()["model_stats"][0][
            "execution_count"] == 3
        # A dropped sequence is forgotten: its next request needs START.
        with pytest.raises(grpc.RpcError) as e:
            call(stub, ids[0], 1)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "START" in e.value.details()


def test_sequence_backlog_is_bounded(pbs, seq_repo):  # noqa: F811
    """--max-sequence-backlog-size=2: a third request that would wait for a slot is refused with
    Triton's queue-full error, 503 over HTTP and UNAVAILABLE over gRPC; the slot holder is never
    refused, and the backlogged requests still run."""
    with start_server(seq_repo, "--max-sequence-backlog-size=2") as s:
        stub = s.stub()
        assert call(stub, 1, 1, start=True) == 1
        b = stub.ModelInfer.future(seq_request(2, 20, start=True, end=True))
        c = stub.ModelInfer.future(seq_request(3, 30, start=True, end=True))
        s.wait_for_log("sequence 2 waits in the backlog")
        s.wait_for_log("sequence 3 waits in the backlog")
        with pytest.raises(grpc.RpcError) as e:
            call(stub, 4, 40, start=True, end=True)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert e.value.details() == "Exceeds maximum queue size"
        body = {"inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1, 1], "data": [5]}],
                "parameters": {"sequence_id": 5, "sequence_start": True}}
        r = s.post(f"/v2/models/{SEQ_MODEL}/infer", data=json.dumps(body))
        assert r.status_code == 503, r.text
        assert r.json() == {"error": "Exceeds maximum queue size"}
        assert call(stub, 1, 4) == 5  # the slot holder goes on
        assert call(stub, 1, 1, end=True) == 6
        assert int(output_array(b.result(timeout=30)).flatten()[0]) == 20
        assert int(output_array(c.result(timeout=30)).flatten()[0]) == 30
        assert call(stub, 4, 40, start=True, end=True) == 40  # room again


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_memory_of_a_cancelled_burst_is_returned(pbs, seq_repo):  # noqa: F811
    """A stream queues 600 backlogged requests carrying 128 KiB each (~77 MiB), then is
    cancelled; once the slot frees they are dropped and the process's resident memory comes back
    near where it was (before the fix they ran one by one, a minute apart)."""
    n, pad = 600, "x" * (128 * 1024)
    with start_server(seq_repo) as s:
        if s.sanitized():
            pytest.skip("a sanitizer build keeps freed memory in its quarantine and never trims")
        stub = s.stub()
        for k in range(50):  # warm the allocator and the gRPC buffers up (the slot is free)
            assert call(stub, 1000 + k, k, start=True, end=True) == k
        assert call(stub, 1, 1, start=True) == 1  # now owns the only slot
        baseline = rss_bytes(s.proc.pid)
        stream = stub.ModelStreamInfer(
            iter([seq_request(10_000 + i, 7, start=True, padding=pad) for i in range(n)]))
        wait_count(s, "waits in the backlog", n, timeout=120)
        grown = rss_bytes(s.proc.pid)
        assert grown > baseline + 50 * 2**20, (baseline, grown)  # the burst is really held
        stream.cancel()
        wait_count(s, "ModelStreamInfer stream cancelled by the client", 1)
        assert call(stub, 1, 1, end=True) == 2
        s.wait_for_log(f"dropped {n} cancelled sequence request(s)", timeout=60)
        s.wait_for_log("the queue drained after a burst; free memory returned")
        after = rss_bytes(s.proc.pid)
        assert after < baseline + 16 * 2**20, (baseline, grown, after)


# ------------------------------------------------------------------------------------- item 5

DURATION_FIELDS = [
    ("batching", "db_scale", "dynamic_batching {",
     "dynamic_batching { max_queue_delay_microseconds: %d ",
     "dynamic_batching.max_queue_delay_microseconds"),
    ("batching", "db_scale", "dynamic_batching {",
     "dynamic_batching { default_queue_policy { default_timeout_microseconds: %d } ",
     "dynamic_batching.default_queue_policy.default_timeout_microseconds"),
    ("sequence", "seq_accum", "sequence_batching {",
     "sequence_batching { max_sequence_idle_microseconds: %d ",
     "sequence_batching.max_sequence_idle_microseconds"),
    ("sequence", "seq_accum", "direct { }",
     "direct { max_queue_delay_microseconds: %d }",
     "sequence_batching.direct.max_queue_delay_microseconds"),
    ("sequence", "seq_accum_oldest", "oldest {",
     "oldest { max_queue_delay_microseconds: %d ",
     "sequence_batching.oldest.max_queue_delay_microseconds"),
]


def test_overflowing_durations_refuse_to_load(tmp_path):
    """Each duration field near 2^63 (and at 2^64 - 1) fails to load with an error naming the
    field; before the fix they loaded, and max_queue_delay_microseconds * 1000 wrapped around
    (the executor spun a core and a request never completed)."""
    from helpers import Server
    names = {}
    for k, (fixture_repo, src, find, repl, field) in enumerate(DURATION_FIELDS):
        for value in (2**63 - 1, 2**64 - 1):
            name = f"overflow_{k}_{value % 10}"
            copy_model(repo("fixtures", fixture_repo), src, str(tmp_path), name,
                       lambda t, find=find, repl=repl, value=value:
                       t.replace(find, repl % value, 1))
            names[name] = (field, value)
    with Server([str(tmp_path)], flags=["--exit-on-error=false", "--strict-readiness=false"],
                name="security-overflow") as s:
        index = {e["name"]: e for e in s.post("/v2/repository/index", data="{}").json()}
        for name, (field, value) in names.items():
            entry = index[name]
            assert entry["state"] == "UNAVAILABLE", entry
            assert f"{field} {value} is too large" in entry["reason"], entry
            assert s.get(f"/v2/models/{name}/ready").status_code != 200


def test_largest_duration_loads_and_serves(tmp_path):
    """The largest accepted value loads; a request with a timeout parameter as large completes
    normally (its deadline saturates instead of wrapping)."""
    from helpers import Server
    copy_model(repo("fixtures", "batching"), "db_scale", str(tmp_path), "db_max_timeout",
               lambda t: t.replace(
                   "dynamic_batching {",
                   "dynamic_batching { default_queue_policy { default_timeout_microseconds: %d "
                   "allow_timeout_override: true } " % MAX_US, 1))
    with Server([str(tmp_path)], name="security-max-duration") as s:
        body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 2],
                            "data": [1.5, 2.0]}],
                "parameters": {"timeout": MAX_US - 1}}
        r = s.post("/v2/models/db_max_timeout/infer", data=json.dumps(body))
        assert r.status_code == 200, r.text
        assert r.json()["outputs"][0]["data"] == [3.0, 4.0]
