"""The sequence batcher and implicit state end to end (REFERENCE.md §1.3 and §2.3, seeds 000 and
003): sequence parameters and their errors over HTTP, gRPC and gRPC streaming; control inputs of
every kind and type; Direct slots, filler rows, backlog and minimum_slot_utilization; Oldest
batches (never two requests of one sequence); idle release; implicit state with initial_state,
variable dims and state returned to the client; several instances; statistics; shutdown.

Models are in the `sequence` fixture repository (scripts/gen_test_models.py,
tests/fixtures/README.md). The accumulators compute OUTPUT = INPUT on START, else
INPUT + state, so a response shows the whole history of its sequence.
"""

import itertools
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

from grpc_helpers import GrpcServer, infer_request, output_array, pbs, serve_grpc  # noqa: F401
from helpers import assert_error, repo

START_ERR = "must specify the START flag on the first request of the sequence"
CORRID_ERR = "must specify a non-zero or non-empty correlation ID"


@pytest.fixture(scope="module")
def server(pbs):  # noqa: F811
    # --log-verbose=1: the batcher logs each sequence that waits in the backlog, which the backlog
    # tests wait for instead of sleeping.
    yield from serve_grpc([repo("fixtures", "sequence")], "sequence",
                          flags=["--exit-on-error=false", "--strict-readiness=false",
                                 "--log-verbose=1"])


HOLD = 4  # TRITONSERVER_DELAY_SCHEDULER of the `held` server


@pytest.fixture(scope="module")
def held(pbs):  # noqa: F811
    """A server with Triton's test hook TRITONSERVER_DELAY_SCHEDULER=4: a Direct model runs
    nothing until 4 requests wait in its slots; an Oldest one until 4 of an instance's candidate
    sequences have one. Batches then hold exactly what the test sent, whatever the timing."""
    yield from serve_grpc([repo("fixtures", "sequence")], "sequence-held",
                          flags=["--exit-on-error=false", "--strict-readiness=false"],
                          env={"TRITONSERVER_DELAY_SCHEDULER": str(HOLD)})


_ids = itertools.count(1000)


def new_id():
    return next(_ids)


def body(value, sid, start=False, end=False, outputs=None, extra=None):
    params = {"sequence_id": sid}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    params.update(extra or {})
    b = {"inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1, 1], "data": [value]}],
         "parameters": params}
    if outputs:
        b["outputs"] = [{"name": o} for o in outputs]
    return b


def infer(server, model, value, sid, start=False, end=False, outputs=None, extra=None):
    return server.post(f"/v2/models/{model}/infer",
                       json=body(value, sid, start, end, outputs, extra))


def out(resp, name="OUTPUT"):
    assert resp.status_code == 200, resp.text
    for o in resp.json()["outputs"]:
        if o["name"] == name:
            return o["data"][0]
    raise AssertionError(f"no output {name} in {resp.text}")


def run_sequence(server, model, sid, values):
    """Sends one sequence, START on the first and END on the last; returns the outputs."""
    got = []
    for k, v in enumerate(values):
        got.append(out(infer(server, model, v, sid, start=k == 0, end=k == len(values) - 1)))
    return got


def check_concurrent_sequences(server, model, seqs):
    """Runs every sequence of `seqs` (id -> values) on its own thread, all at once; each must give
    the running sums it would give alone."""
    with ThreadPoolExecutor(len(seqs)) as pool:
        results = dict(zip(seqs, pool.map(lambda s: run_sequence(server, model, s, seqs[s]),
                                          seqs)))
    for sid, values in seqs.items():
        assert results[sid] == np.cumsum(values).tolist(), sid


def model_ready(server, model):
    return server.get(f"/v2/models/{model}/ready").status_code == 200


# ------------------------------------------------------------------ accumulator and parameters

def test_accumulator_over_http(server):
    sid = new_id()
    assert run_sequence(server, "seq_accum", sid, [5, 6, 7]) == [5, 11, 18]


def test_string_sequence_id(server):
    sid = f"seq-{new_id()}"
    assert run_sequence(server, "seq_accum", sid, [1, 2, 3]) == [1, 3, 6]


def test_number_and_string_ids_are_different_sequences(server):
    n = new_id()
    assert out(infer(server, "seq_accum", 10, n, start=True)) == 10
    assert out(infer(server, "seq_accum", 1, str(n), start=True)) == 1
    assert out(infer(server, "seq_accum", 1, n, end=True)) == 11
    assert out(infer(server, "seq_accum", 1, str(n), end=True)) == 2


def test_interleaved_sequences_match_running_each_alone(server):
    # 12 sequences on 4 slots: 8 wait in the backlog and take slots as others end.
    rng = np.random.default_rng(7)
    seqs = {new_id(): rng.integers(-50, 50, size=6).tolist() for _ in range(12)}
    check_concurrent_sequences(server, "seq_accum", seqs)


def test_several_instances(server):
    seqs = {new_id(): list(range(k, k + 5)) for k in range(6)}
    check_concurrent_sequences(server, "seq_accum_two_instances", seqs)


def test_missing_zero_and_empty_correlation_id(server):
    r = server.post("/v2/models/seq_accum/infer",
                    json={"inputs": body(1, 1)["inputs"], "parameters": {"sequence_start": True}})
    assert_error(r, 400, CORRID_ERR)
    assert_error(infer(server, "seq_accum", 1, 0, start=True), 400, CORRID_ERR)
    assert_error(infer(server, "seq_accum", 1, "", start=True), 400, CORRID_ERR)


def test_first_request_without_start(server):
    sid = new_id()
    msg = assert_error(infer(server, "seq_accum", 1, sid), 400, START_ERR)
    assert f"sequence {sid} to model 'seq_accum'" in msg


def test_end_without_start(server):
    assert_error(infer(server, "seq_accum", 1, new_id(), end=True), 400, START_ERR)


def test_request_after_end_needs_start(server):
    sid = new_id()
    assert run_sequence(server, "seq_accum", sid, [1, 2]) == [1, 3]
    assert_error(infer(server, "seq_accum", 1, sid), 400, START_ERR)
    assert out(infer(server, "seq_accum", 4, sid, start=True, end=True)) == 4


def test_start_on_a_running_sequence_restarts_it(server):
    sid = new_id()
    assert out(infer(server, "seq_accum", 5, sid, start=True)) == 5
    assert out(infer(server, "seq_accum", 5, sid)) == 10
    assert out(infer(server, "seq_accum", 7, sid, start=True)) == 7  # state reset
    assert out(infer(server, "seq_accum", 1, sid, end=True)) == 8


def test_batch_of_two_is_rejected(server):
    b = body(1, new_id(), start=True)
    b["inputs"][0].update(shape=[2, 1], data=[1, 2])
    assert_error(server.post("/v2/models/seq_accum/infer", json=b), 400,
                 "must specify batch-size 1 due to requirements of sequence batcher")


@pytest.mark.parametrize("params,message", [
    ({"sequence_id": -3}, "Unable to parse 'sequence_id'"),
    ({"sequence_id": 1.5}, "Unable to parse 'sequence_id'"),
    ({"sequence_id": True}, "Unable to parse 'sequence_id'"),
    ({"sequence_id": 1, "sequence_start": "yes"}, "Unable to parse 'sequence_start'"),
    ({"sequence_id": 1, "sequence_end": 1}, "Unable to parse 'sequence_end'"),
])
def test_http_parameter_types(server, params, message):
    r = server.post("/v2/models/seq_accum/infer",
                    json={"inputs": body(1, 1)["inputs"], "parameters": params})
    assert_error(r, 400, message)


# ------------------------------------------------------------------ control inputs

def controls(resp, names=("OUT_START", "OUT_END", "OUT_READY", "OUT_CORRID")):
    return [out(resp, n) for n in names]


def test_control_inputs_int32_fp32_bool_uint64(server):
    sid = new_id()
    assert controls(infer(server, "seq_controls", 1, sid, start=True)) == [1, 0.0, True, sid]
    assert controls(infer(server, "seq_controls", 1, sid)) == [0, 0.0, True, sid]
    assert controls(infer(server, "seq_controls", 1, sid, end=True)) == [0, 1.0, True, sid]


def test_control_inputs_fp32_bool_int32_int64_custom_values(server):
    sid = new_id()
    assert controls(infer(server, "seq_controls_alt", 1, sid, start=True)) == [3.0, False, 7, sid]
    assert controls(infer(server, "seq_controls_alt", 1, sid, end=True)) == [2.0, True, 7, sid]


def test_largest_uint64_sequence_id_over_http(server):
    sid = (1 << 64) - 1
    assert out(infer(server, "seq_controls", 1, sid, start=True, end=True), "OUT_CORRID") == sid


def test_start_and_end_on_one_request(server):
    sid = new_id()
    assert controls(infer(server, "seq_controls", 1, sid, start=True, end=True)) == \
        [1, 1.0, True, sid]


@pytest.mark.parametrize("model,sid", [("seq_corrid_uint32", 4000000000), ("seq_corrid_int32", 12345),
                                       ("seq_corrid_string", "corr-a")])
def test_corrid_data_types(server, model, sid):
    assert out(infer(server, model, 1, sid, start=True, end=True), "OUT_CORRID") == sid


def test_corrid_of_the_wrong_type(server):
    assert_error(infer(server, "seq_corrid_string", 1, 5, start=True), 400,
                 "must specify a string correlation ID")
    assert_error(infer(server, "seq_controls", 1, "abc", start=True), 400,
                 "must specify an unsigned integer correlation ID")


def test_direct_keeps_the_slot_row_and_fills_empty_rows(server):
    # a takes slot 0, b slot 1; once a ends, b still runs in row 1, below it a filler row.
    a, b = new_id(), new_id()
    infer(server, "seq_controls", 1, a, start=True)
    infer(server, "seq_controls", 1, b, start=True)
    infer(server, "seq_controls", 1, a, end=True)
    r = infer(server, "seq_controls", 1, b)
    assert out(r, "BATCH") == 2
    assert out(r, "READY_ROWS") == 1  # the filler row's READY is false
    assert out(r, "DUP") == 1
    assert out(r, "OUT_READY") is True
    infer(server, "seq_controls", 1, b, end=True)


# ------------------------------------------------------------------ Direct slots and backlog

def test_more_sequences_than_slots_queue_in_the_backlog(server):
    a, b = new_id(), new_id()
    assert out(infer(server, "seq_accum_one_slot", 1, a, start=True)) == 1
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(infer, server, "seq_accum_one_slot", 100, b, True, True)
        server.wait_for_log(f"sequence {b} waits in the backlog")
        assert not waiting.done(), "a second sequence ran although the only slot was taken"
        assert out(infer(server, "seq_accum_one_slot", 2, a, end=True)) == 3
        assert out(waiting.result(timeout=10)) == 100


def start_together(server, model, count):
    """Starts `count` sequences at once (one request each, START and END); returns the replies."""
    sids = [new_id() for _ in range(count)]
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda k: infer(server, model, k, sids[k], True, True), range(count)))


def test_delay_hook_makes_a_direct_batch_of_exactly_n(held):
    for r in start_together(held, "seq_controls", HOLD):
        assert out(r, "BATCH") == HOLD
        assert out(r, "READY_ROWS") == HOLD  # every row a real request: no filler
        assert out(r, "DUP") == 1


def test_delay_hook_makes_an_oldest_batch_of_exactly_n(held):
    # Without the hook the first sequence would often run alone or wait the 500 ms delay; held
    # until 4 candidates wait, the preferred batch of 4 goes at once.
    for r in start_together(held, "seq_controls_oldest", HOLD):
        assert out(r, "BATCH") == HOLD
        assert out(r, "READY_ROWS") == HOLD


TIMEOUT_ERR = "timeout of the corresponding sequence has been expired"


@pytest.mark.parametrize("model,slots", [("seq_accum_one_slot", 1), ("seq_accum_oldest", 4)])
def test_request_timeout_expires_a_backlogged_sequence(server, model, slots):
    # Triton: the request's `timeout` bounds its sequence's wait in the backlog; Direct and Oldest.
    holders = [new_id() for _ in range(slots)]
    for sid in holders:
        assert out(infer(server, model, 1, sid, start=True, extra={"timeout": 1})) == 1
    start = time.monotonic()
    late = new_id()
    r = infer(server, model, 5, late, start=True, extra={"timeout": 100000})  # 100 ms
    assert_error(r, 503, TIMEOUT_ERR)
    assert r.json() == {"error": TIMEOUT_ERR}
    assert time.monotonic() - start >= 0.1
    # The slot holders never time out (their own 1 us timeout included), and the expired
    # sequence is forgotten.
    assert_error(infer(server, model, 1, late), 400, START_ERR)
    for sid in holders:
        assert out(infer(server, model, 2, sid, end=True)) == 3


def test_request_timeout_of_a_backlogged_sequence_over_grpc(server):
    holder, late = new_id(), new_id()
    stub = server.stub()
    stub.ModelInfer(grpc_req("seq_accum_one_slot", 1, holder, start=True))
    req = grpc_req("seq_accum_one_slot", 1, late, start=True)
    req.parameters["timeout"].int64_param = 50000
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(req)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert e.value.details() == TIMEOUT_ERR
    stub.ModelInfer(grpc_req("seq_accum_one_slot", 1, holder, end=True))


def test_minimum_slot_utilization_waits_for_the_delay(server):
    start = time.monotonic()
    assert out(infer(server, "seq_accum_util", 3, new_id(), start=True, end=True)) == 3
    assert time.monotonic() - start >= 0.25  # 1 of 4 slots < 0.5: waited max_queue_delay


def test_minimum_slot_utilization_reached_runs_at_once(server):
    a, b = new_id(), new_id()
    barrier = threading.Barrier(2)

    def one(sid):
        barrier.wait()
        t = time.monotonic()
        r = infer(server, "seq_accum_util", 1, sid, start=True, end=True)
        return out(r), time.monotonic() - t

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, [a, b]))
    assert [v for v, _ in results] == [1, 1]
    # Two of four slots reach the 0.5 utilization: at least the second need not wait 300 ms.
    assert min(t for _, t in results) < 0.25


# ------------------------------------------------------------------ idle sequences

def test_idle_sequence_is_released(server):
    sid = new_id()
    assert out(infer(server, "seq_accum_idle", 1, sid, start=True)) == 1
    assert out(infer(server, "seq_accum_idle", 1, sid)) == 2  # well within 300 ms
    time.sleep(0.7)
    assert_error(infer(server, "seq_accum_idle", 1, sid), 400, START_ERR)


def test_idle_release_frees_a_slot_for_the_backlog(server):
    a, b, c = new_id(), new_id(), new_id()
    infer(server, "seq_accum_idle", 1, a, start=True)
    infer(server, "seq_accum_idle", 1, b, start=True)
    t = time.monotonic()
    assert out(infer(server, "seq_accum_idle", 9, c, start=True, end=True)) == 9
    assert time.monotonic() - t >= 0.15  # waited for an idle release (300 ms after a/b)


# ------------------------------------------------------------------ implicit state

def test_state_is_returned_when_listed_among_outputs(server):
    sid = new_id()
    r = infer(server, "seq_accum_state_out", 3, sid, start=True)
    assert out(r, "OUTPUT_STATE") == 3
    r = infer(server, "seq_accum_state_out", 4, sid, end=True, outputs=["OUTPUT_STATE"])
    assert [o["name"] for o in r.json()["outputs"]] == ["OUTPUT_STATE"]
    assert out(r, "OUTPUT_STATE") == 7


def test_state_is_not_returned_by_default_and_cannot_be_asked_for(server):
    sid = new_id()
    r = infer(server, "seq_accum", 3, sid, start=True)
    assert [o["name"] for o in r.json()["outputs"]] == ["OUTPUT"]
    assert_error(infer(server, "seq_accum", 1, sid, outputs=["OUTPUT_STATE"]), 400,
                 "unexpected inference output 'OUTPUT_STATE'")
    assert out(infer(server, "seq_accum", 1, sid, end=True, outputs=["OUTPUT"])) == 4


def test_state_inputs_are_not_client_inputs(server):
    b = body(1, new_id(), start=True)
    b["inputs"].append({"name": "INPUT_STATE", "datatype": "INT32", "shape": [1, 1], "data": [9]})
    assert_error(server.post("/v2/models/seq_accum/infer", json=b), 400)


def test_initial_state_zero_data(server):
    sid = new_id()
    assert run_sequence(server, "seq_initial_zero", sid, [4, 5]) == [4, 9]


def test_initial_state_from_file(server):
    sid = new_id()
    assert run_sequence(server, "seq_initial_file", sid, [4, 5, 6]) == [104, 109, 115]


def test_variable_state_dims_start_at_one(server):
    sid = new_id()
    lengths, sums = [], []
    for k, v in enumerate([1, 2, 3, 4]):
        r = infer(server, "seq_growing_state", v, sid, start=k == 0, end=k == 3)
        lengths.append(out(r, "LENGTH"))
        sums.append(out(r, "SUM"))
    assert lengths == [1, 2, 3, 4]
    assert sums == [0, 1, 3, 6]  # the start state is one uninitialised (zero) element


def test_state_of_the_wrong_shape_from_the_model_fails_the_request(server):
    r = infer(server, "seq_bad_state", 1, new_id(), start=True)
    assert_error(r, 500, "does not match the state dims [1]")


def test_invalid_configurations_do_not_load(server):
    assert model_ready(server, "seq_accum")
    assert not model_ready(server, "seq_bad_two_starts")
    assert not model_ready(server, "seq_bad_initial_path")
    log = server.stderr()
    assert "control kind CONTROL_SEQUENCE_START is specified more than once" in log
    assert "initial_state data_file '../config.pbtxt' must stay within" in log


# ------------------------------------------------------------------ Oldest

def test_oldest_batches_hold_one_request_per_sequence(server):
    # 8 sequences x 3 requests, all 8 candidates; preferred batch 4 with a 500 ms delay.
    seqs = [new_id() for _ in range(8)]
    barrier = threading.Barrier(len(seqs))

    def one(sid):
        rows = []
        for k in range(3):
            if k == 0:
                barrier.wait()
            r = infer(server, "seq_controls_oldest", k, sid, start=k == 0, end=k == 2)
            rows.append((out(r, "DUP"), out(r, "BATCH"), out(r, "OUT_CORRID"), out(r, "OUTPUT"),
                         out(r, "READY_ROWS")))
        return rows

    with ThreadPoolExecutor(len(seqs)) as pool:
        results = list(pool.map(one, seqs))
    batches = []
    for sid, rows in zip(seqs, results):
        for k, (dup, batch, corrid, value, ready_rows) in enumerate(rows):
            assert dup == 1, "two requests of one sequence shared a batch"
            assert corrid == sid and value == k
            assert ready_rows == batch  # Oldest has no filler rows
            batches.append(batch)
    assert max(batches) > 1, f"Oldest never batched: {batches}"
    assert max(batches) <= 4


def test_oldest_accumulators_match_running_each_alone(server):
    seqs = {new_id(): list(range(k, k + 6)) for k in range(10)}  # 10 sequences, 4 candidates
    check_concurrent_sequences(server, "seq_accum_oldest", seqs)


def test_statistics_count_sequence_requests(server):
    if "statistics" not in server.get("/v2").json().get("extensions", []):
        pytest.skip("server has no statistics extension in GET /v2 metadata")
    def stats():
        r = server.get("/v2/models/seq_accum_two_instances/stats")
        assert r.status_code == 200, r.text
        return r.json()["model_stats"][0]
    before = stats()
    run_sequence(server, "seq_accum_two_instances", new_id(), [1, 2, 3])
    after = stats()
    assert after["inference_stats"]["success"]["count"] - \
        before["inference_stats"]["success"]["count"] == 3
    assert after["execution_count"] - before["execution_count"] == 3


# ------------------------------------------------------------------ gRPC

def grpc_req(model, value, sid, start=False, end=False, request_id="", outputs=None):
    params = {"sequence_id": sid}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    return infer_request(model, [("INPUT", "INT32", np.array([[value]], np.int32))],
                         outputs=outputs, request_id=request_id, parameters=params)


def test_grpc_stream_interleaved_sequences(server):
    # Four streams at once, each interleaving the requests of its own 4 sequences (16 sequences
    # on 4 slots: most wait in the backlog). A stream must hand its requests to the scheduler in
    # stream order, or a sequence sees its requests out of order.
    def one_stream(s):
        ids = [new_id(), f"s{new_id()}", new_id(), f"s{new_id()}"]
        steps = 8
        values = {sid: [k * 10 + j for j in range(steps)] for k, sid in enumerate(ids)}
        reqs, expect = [], []
        for step in range(steps):
            for sid in ids:
                reqs.append(grpc_req("seq_accum", values[sid][step], sid, start=step == 0,
                                     end=step == steps - 1, request_id=f"{sid}/{step}"))
                expect.append(sum(values[sid][:step + 1]))
        got = list(server.stub().ModelStreamInfer(iter(reqs)))
        assert [r.error_message for r in got] == [""] * len(reqs)
        assert [int(output_array(r.infer_response)[0][0]) for r in got] == expect

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one_stream, range(4)))


def test_grpc_stream_errors_stay_in_the_stream(server):
    sid = new_id()
    reqs = [grpc_req("seq_accum", 1, sid), grpc_req("seq_accum", 2, sid, start=True),
            grpc_req("seq_accum", 3, 0, start=True), grpc_req("seq_accum", 4, sid, end=True)]
    got = list(server.stub().ModelStreamInfer(iter(reqs)))
    assert START_ERR in got[0].error_message
    assert got[1].error_message == "" and output_array(got[1].infer_response)[0][0] == 2
    assert CORRID_ERR in got[2].error_message
    assert got[3].error_message == "" and output_array(got[3].infer_response)[0][0] == 6


def test_grpc_unary_sequence_and_state_output(server):
    sid = new_id()
    stub = server.stub()
    r = stub.ModelInfer(grpc_req("seq_accum_state_out", 5, sid, start=True))
    assert [o.name for o in r.outputs] == ["OUTPUT", "OUTPUT_STATE"]
    r = stub.ModelInfer(grpc_req("seq_accum_state_out", 6, sid, end=True,
                                 outputs=["OUTPUT_STATE"]))
    assert output_array(r)[0][0] == 11
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(grpc_req("seq_accum", 1, new_id()))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert START_ERR in e.value.details()


def test_grpc_uint64_sequence_id(server):
    req = grpc_req("seq_controls", 1, 0, start=True, end=True)
    req.parameters["sequence_id"].uint64_param = (1 << 63) + 5
    r = server.stub().ModelInfer(req)
    names = [o.name for o in r.outputs]
    assert int(output_array(r, names.index("OUT_CORRID"))[0][0]) == (1 << 63) + 5


@pytest.mark.parametrize("key,setter,message", [
    ("sequence_id", lambda p: setattr(p, "bool_param", True),
     "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."),
    ("sequence_start", lambda p: setattr(p, "int64_param", 1),
     "invalid value type for 'sequence_start' parameter, expected bool_param."),
    ("sequence_end", lambda p: setattr(p, "string_param", "true"),
     "invalid value type for 'sequence_end' parameter, expected bool_param."),
])
def test_grpc_parameter_types(server, key, setter, message):
    req = grpc_req("seq_accum", 1, new_id(), start=True)
    setter(req.parameters[key])
    with pytest.raises(grpc.RpcError) as e:
        server.stub().ModelInfer(req)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details() == message


# ------------------------------------------------------------------ shutdown

def test_shutdown_with_open_and_backlogged_sequences_exits_cleanly(pbs):  # noqa: F811
    s = GrpcServer([repo("fixtures", "sequence")], name="sequence-shutdown",
                   flags=["--exit-on-error=false", "--strict-readiness=false",
                          "--log-verbose=1"]).start()
    try:
        a, b, c = new_id(), new_id(), new_id()
        assert out(infer(s, "seq_accum_idle", 1, a, start=True)) == 1
        assert out(infer(s, "seq_accum_idle", 1, b, start=True)) == 1
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(infer, s, "seq_accum_idle", 5, c, True, True)
            s.wait_for_log(f"sequence {c} waits in the backlog")
            s.send_signal(signal.SIGTERM)
            # In flight at shutdown: it runs once an idle sequence frees a slot.
            assert out(waiting.result(timeout=20)) == 5
    finally:
        rc = s.stop()
    assert rc == 0, s.stderr()[-3000:]


def test_sequence_extension_is_reported(server):
    # Triton's order: classification, sequence, model_repository, ..., schedule_policy, ...
    ext = server.get("/v2").json()["extensions"]
    assert "sequence" in ext
    assert ext.index("sequence") < ext.index("schedule_policy")
