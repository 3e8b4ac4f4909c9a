"""Sequence models and the dynamic batcher under model unload and reload through the repository
API (issue 7 item 7; EXPLICIT mode, docs/model_management.md). Sequences in flight when the model
is unloaded finish or fail cleanly with Triton's errors and nothing hangs; requests after the
unload fail with the unknown-model error; after a reload a new sequence works and an old
sequence ID without START fails with Triton's START error; requests queued in the dynamic
batcher at unload complete; ten load/unload cycles of a sequence model leave no threads behind.

Models: `seq_accum`, `seq_accum_idle` (2 slots, 300 ms idle release) and `seq_accum_one_slot`
of the `sequence` fixture repository, `db_delay` (preferred batch 4, 300 ms queue delay) of
`batching`. The accumulators answer OUTPUT = INPUT on START, else INPUT + state.
"""

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

from grpc_helpers import GrpcServer, infer_request, output_array, pbs  # noqa: F401
from helpers import assert_error, build_infer_request, new_session, parse_response, repo, tensor
from mm_helpers import index_entry, load, unload, wait_until

START_ERR = "must specify the START flag on the first request of the sequence"


def unknown_err(model):
    return f"Request for unknown model: '{model}' has no available versions"


@pytest.fixture(scope="module")
def server(pbs):  # noqa: F811
    s = GrpcServer([repo("fixtures", "sequence"), repo("fixtures", "batching"),
                    repo("fixtures", "torch")],
                   name="sequence-unload",
                   flags=["--model-control-mode=explicit", "--log-verbose=1"]).start()
    try:
        yield s
    finally:
        rc = s.stop()
    assert rc == 0, s.stderr()[-4000:]


_ids = iter(range(70000, 10 ** 9))


def new_id():
    return next(_ids)


def infer(server, model, value, sid, start=False, end=False, session=None):
    params = {"sequence_id": sid}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    body = {"inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1, 1], "data": [value]}],
            "parameters": params}
    if session is None:
        return server.post(f"/v2/models/{model}/infer", json=body)
    return session.post(server.url(f"/v2/models/{model}/infer"), json=body, timeout=60)


def out(resp):
    assert resp.status_code == 200, resp.text
    return resp.json()["outputs"][0]["data"][0]


def loaded(server, model):
    r = load(server, model)
    assert r.status_code == 200, r.text


def unloaded(server, model):
    """Unloads and waits until the version is released (UNAVAILABLE / "unloaded")."""
    assert unload(server, model).status_code == 200
    wait_until(lambda: [(e["state"], e["reason"]) for e in index_entry(server, model)] ==
               [("UNAVAILABLE", "unloaded")], timeout=20, what=f"{model} to be released")


def grpc_req(model, value, sid, start=False, end=False):
    params = {"sequence_id": sid}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    return infer_request(model, [("INPUT", "INT32", np.array([[value]], np.int32))],
                         request_id=f"{sid}", parameters=params)


# ------------------------------------------------------------------ sequences

def test_open_sequence_after_unload_and_reload(server):
    loaded(server, "seq_accum")
    a, b = new_id(), new_id()
    assert out(infer(server, "seq_accum", 5, a, start=True)) == 5
    assert out(infer(server, "seq_accum", 1, b, start=True)) == 1
    unloaded(server, "seq_accum")
    # The open sequence's next request, and a new one, fail with Triton's unknown-model error.
    assert_error(infer(server, "seq_accum", 1, a), 503, unknown_err("seq_accum"))
    assert_error(infer(server, "seq_accum", 1, new_id(), start=True), 503,
                 unknown_err("seq_accum"))
    assert server.get("/v2/models/seq_accum/ready").status_code == 400
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(grpc_req("seq_accum", 1, a))
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert e.value.details() == unknown_err("seq_accum")
    loaded(server, "seq_accum")
    # The reloaded model has no memory of a and b: without START they fail, with START they
    # begin again from nothing.
    assert_error(infer(server, "seq_accum", 1, a), 400, START_ERR)
    assert_error(infer(server, "seq_accum", 1, b, end=True), 400, START_ERR)
    assert out(infer(server, "seq_accum", 7, a, start=True)) == 7
    assert out(infer(server, "seq_accum", 3, a, end=True)) == 10
    c = new_id()
    assert [out(infer(server, "seq_accum", v, c, start=k == 0, end=k == 2))
            for k, v in enumerate([2, 3, 4])] == [2, 5, 9]
    unloaded(server, "seq_accum")


def test_backlogged_sequence_in_flight_at_unload_finishes(server):
    # Two slots, both held by open sequences; a third sequence's START waits in the backlog
    # when the model is unloaded. It is in flight on the old version: it runs once an open
    # sequence is released as idle (300 ms), and the version is then released.
    loaded(server, "seq_accum_idle")
    a, b, c = new_id(), new_id(), new_id()
    assert out(infer(server, "seq_accum_idle", 1, a, start=True)) == 1
    assert out(infer(server, "seq_accum_idle", 1, b, start=True)) == 1
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(infer, server, "seq_accum_idle", 5, c, True, False,
                              new_session())
        server.wait_for_log(f"sequence {c} waits in the backlog")
        assert unload(server, "seq_accum_idle").status_code == 200
        assert_error(infer(server, "seq_accum_idle", 1, a), 503, unknown_err("seq_accum_idle"))
        assert out(waiting.result(timeout=20)) == 5
    wait_until(lambda: [e["state"] for e in index_entry(server, "seq_accum_idle")] ==
               ["UNAVAILABLE"], timeout=20, what="seq_accum_idle to be released")
    loaded(server, "seq_accum_idle")
    assert_error(infer(server, "seq_accum_idle", 1, c, end=True), 400, START_ERR)
    assert out(infer(server, "seq_accum_idle", 4, c, start=True, end=True)) == 4
    unloaded(server, "seq_accum_idle")


def test_many_sequences_in_flight_at_unload_finish_or_fail_cleanly(server):
    # 4 client threads drive sequences of 60 requests on seq_accum_idle (2 slots: two sequences
    # wait in the backlog) and the model is unloaded under them once a few requests have run.
    # Every request ends in a response: the running sum so far, or, once the unload took effect,
    # Triton's unknown-model error (and from then on only that). The backlogged sequences are in
    # flight on the old version: they start when the open sequences, cut off by the unload, are
    # released as idle (300 ms). Nothing hangs.
    loaded(server, "seq_accum_idle")
    ran = threading.Semaphore(0)

    def drive(sid):
        got = []
        session = new_session()
        for k in range(60):
            r = infer(server, "seq_accum_idle", 1, sid, start=k == 0, end=k == 59,
                      session=session)
            got.append(r)
            if r.status_code == 200:
                ran.release()
        return got

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(drive, new_id()) for _ in range(4)]
        for _ in range(6):
            assert ran.acquire(timeout=20)
        assert unload(server, "seq_accum_idle").status_code == 200
        results = [f.result(timeout=60) for f in futures]
    failures = 0
    for got in results:
        codes = [r.status_code for r in got]
        oks = codes.count(200)
        assert codes == [200] * oks + [503] * (len(got) - oks), [r.text for r in got[oks:]][:2]
        assert [out(r) for r in got[:oks]] == list(range(1, oks + 1))  # 1, 1+1, ...
        for r in got[oks:]:
            assert_error(r, 503, unknown_err("seq_accum_idle"))
        failures += len(got) - oks
    assert failures > 0, "the unload took effect after every sequence had finished"
    wait_until(lambda: [e["state"] for e in index_entry(server, "seq_accum_idle")] ==
               ["UNAVAILABLE"], timeout=20, what="seq_accum_idle to be released")


def test_grpc_stream_across_unload_and_reload(server):
    # One stream drives a sequence; the model is unloaded and reloaded between two batches of
    # the stream's requests. The stream stays open: the request after the unload gets the
    # unknown-model error in the stream, after the reload the old ID without START gets the
    # START error and a new START works.
    loaded(server, "seq_accum")
    sid = new_id()
    requests = []
    cond = threading.Condition()

    def gen():
        i = 0
        while True:
            with cond:
                cond.wait_for(lambda: len(requests) > i)
                req = requests[i]
            if req is None:
                return
            yield req
            i += 1

    def send(req):
        with cond:
            requests.append(req)
            cond.notify_all()

    responses = server.stub().ModelStreamInfer(gen())
    try:
        send(grpc_req("seq_accum", 3, sid, start=True))
        assert int(output_array(next(responses).infer_response)[0][0]) == 3
        send(grpc_req("seq_accum", 4, sid))
        assert int(output_array(next(responses).infer_response)[0][0]) == 7
        unloaded(server, "seq_accum")
        send(grpc_req("seq_accum", 1, sid))
        assert unknown_err("seq_accum") in next(responses).error_message
        loaded(server, "seq_accum")
        send(grpc_req("seq_accum", 1, sid))
        assert START_ERR in next(responses).error_message
        send(grpc_req("seq_accum", 9, sid, start=True))
        assert int(output_array(next(responses).infer_response)[0][0]) == 9
        send(grpc_req("seq_accum", 1, sid, end=True))
        assert int(output_array(next(responses).infer_response)[0][0]) == 10
    finally:
        send(None)
    assert list(responses) == []
    unloaded(server, "seq_accum")


# ------------------------------------------------------------------ dynamic batcher

def scale_body(value):
    return build_infer_request([tensor("INPUT0", "FP32", np.array([[value]], np.float32))])


def test_requests_queued_in_the_dynamic_batcher_complete_at_unload(server):
    # db_delay waits up to 300 ms for a batch of 4: three requests sit in its queue when the
    # model is unloaded. They run on the old version; new requests fail at once.
    loaded(server, "db_delay")
    before = server.stderr().count("HTTP request: POST /v2/models/db_delay/infer")

    def one(v):
        body, headers = scale_body(v)
        return new_session().post(server.url("/v2/models/db_delay/infer"), data=body,
                                     headers=headers, timeout=60)

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(one, float(v)) for v in (1, 2, 3)]
        wait_until(lambda: server.stderr().count("HTTP request: POST /v2/models/db_delay/infer")
                   >= before + 3, timeout=10, what="three requests dispatched")
        t = time.monotonic()
        assert unload(server, "db_delay").status_code == 200
        body, headers = scale_body(9.0)
        assert_error(server.post("/v2/models/db_delay/infer", data=body, headers=headers), 503,
                     unknown_err("db_delay"))
        results = [f.result(timeout=20) for f in futures]
    for v, r in zip((1, 2, 3), results):
        assert r.status_code == 200, r.content
        _, values, _ = parse_response(r)
        assert values["OUTPUT0"].tolist() == [[2.0 * v]]
    assert time.monotonic() - t < 5
    wait_until(lambda: [e["state"] for e in index_entry(server, "db_delay")] ==
               ["UNAVAILABLE"], timeout=20, what="db_delay to be released")
    loaded(server, "db_delay")
    body, headers = scale_body(4.0)
    r = server.post("/v2/models/db_delay/infer", data=body, headers=headers)
    assert r.status_code == 200 and parse_response(r)[1]["OUTPUT0"].tolist() == [[8.0]]
    unloaded(server, "db_delay")


def test_requests_queued_behind_an_execution_complete_at_unload(server):
    # db_prio: one instance of the slow_rows identity (~150 ms for 4096 elements). One request
    # executes, three wait in the queue when the model is unloaded; all four complete.
    loaded(server, "db_prio")
    data = [np.full(4096, float(v), np.float32) for v in range(4)]
    before = server.stderr().count("model 'db_prio': request '' queued")

    def one(x):
        body, headers = build_infer_request([tensor("INPUT0", "FP32", x)])
        return new_session().post(server.url("/v2/models/db_prio/infer"), data=body,
                                  headers=headers, timeout=60)

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(one, x) for x in data]
        wait_until(lambda: server.stderr().count("model 'db_prio': request '' queued")
                   >= before + 4, timeout=10, what="four requests queued")
        assert unload(server, "db_prio").status_code == 200
        assert [e["state"] for e in index_entry(server, "db_prio")] == ["UNLOADING"]
        results = [f.result(timeout=30) for f in futures]
    for x, r in zip(data, results):
        assert r.status_code == 200, r.content
        np.testing.assert_array_equal(parse_response(r)[1]["OUTPUT0"], x)
    wait_until(lambda: [e["state"] for e in index_entry(server, "db_prio")] ==
               ["UNAVAILABLE"], timeout=20, what="db_prio to be released")


# ------------------------------------------------------------------ leaks

def threads(server):
    return len(os.listdir(f"/proc/{server.proc.pid}/task"))


def fds(server):
    return len(os.listdir(f"/proc/{server.proc.pid}/fd"))


@pytest.mark.parametrize("model", ["seq_accum_two_instances", "seq_accum_torch"])
def test_load_unload_cycles_leave_no_threads_behind(server, model):
    # One warm-up cycle (lazily created pools: ONNX Runtime's, LibTorch's, the HTTP sessions'),
    # then ten cycles that each run a sequence and leave one open at the unload; the process's
    # thread and file descriptor counts must come back to the warm values.
    inp = "INPUT__0" if model.endswith("_torch") else "INPUT"

    def req(value, sid, start=False, end=False):
        params = {"sequence_id": sid, "sequence_start": start, "sequence_end": end}
        return out(server.post(f"/v2/models/{model}/infer", json={
            "inputs": [{"name": inp, "datatype": "INT32", "shape": [1, 1], "data": [value]}],
            "parameters": params}))

    def cycle():
        loaded(server, model)
        sid = new_id()
        assert req(2, sid, start=True) == 2
        assert req(3, sid, end=True) == 5
        assert req(1, new_id(), start=True) == 1
        unloaded(server, model)

    cycle()
    warm_threads, warm_fds = threads(server), fds(server)
    for _ in range(10):
        cycle()
    # Destruction runs on a background thread after the version is released: poll briefly.
    wait_until(lambda: threads(server) <= warm_threads and fds(server) <= warm_fds, timeout=10,
               what=f"threads/fds back to {warm_threads}/{warm_fds} "
                    f"(now {threads(server)}/{fds(server)})")
