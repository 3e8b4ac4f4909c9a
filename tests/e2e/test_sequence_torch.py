"""Implicit state for TorchScript models through the sequence batcher (issue 8 item 4, seed 000:
the PyTorch backend supports implicit state). The TorchScript accumulators of the `torch` fixture
repository take the START control and the state as ordinary `<name>__<index>` forward arguments
and return the new state as an ordinary value; the server carries it from one request of a
sequence to the next exactly as for their ONNX twins in the `sequence` repository, which this
server also loads so every result is compared with the twin's.

forward(INPUT__0, START__1, STATE__2) -> (OUTPUT__0, OUTPUT_STATE__1):
OUTPUT = OUTPUT_STATE = INPUT on START, else INPUT + STATE.
"""

import itertools
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

from grpc_helpers import infer_request, output_array, pbs, serve_grpc  # noqa: F401
from helpers import assert_error, repo

START_ERR = "must specify the START flag on the first request of the sequence"
MODELS = ["seq_accum_torch", "seq_accum_oldest_torch", "seq_accum_state_out_torch",
          "seq_initial_zero_torch", "seq_accum", "seq_accum_oldest", "seq_initial_zero"]
# TorchScript accumulator -> its ONNX twin (same config but for tensor names)
TWINS = {"seq_accum_torch": "seq_accum", "seq_accum_oldest_torch": "seq_accum_oldest",
         "seq_initial_zero_torch": "seq_initial_zero"}


@pytest.fixture(scope="module")
def server(pbs):  # noqa: F811
    flags = ["--model-control-mode=explicit"] + [f"--load-model={m}" for m in MODELS]
    yield from serve_grpc([repo("fixtures", "torch"), repo("fixtures", "sequence")],
                          "sequence-torch", flags=flags)


_ids = itertools.count(50000)


def new_id():
    return next(_ids)


def names(model):
    """(input, output, state output) names of an accumulator: Triton's <name>__<index> for the
    TorchScript models, plain names for the ONNX twins."""
    if model.endswith("_torch"):
        return "INPUT__0", "OUTPUT__0", "OUTPUT_STATE__1"
    return "INPUT", "OUTPUT", "OUTPUT_STATE"


def infer(server, model, value, sid, start=False, end=False, outputs=None):
    params = {"sequence_id": sid}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    b = {"inputs": [{"name": names(model)[0], "datatype": "INT32", "shape": [1, 1],
                     "data": [value]}], "parameters": params}
    if outputs:
        b["outputs"] = [{"name": o} for o in outputs]
    return server.post(f"/v2/models/{model}/infer", json=b)


def out(resp, name):
    assert resp.status_code == 200, resp.text
    for o in resp.json()["outputs"]:
        if o["name"] == name:
            assert o["datatype"] == "INT32" and o["shape"] == [1, 1], o
            return o["data"][0]
    raise AssertionError(f"no output {name} in {resp.text}")


def run_sequence(server, model, sid, values):
    got = []
    for k, v in enumerate(values):
        r = infer(server, model, v, sid, start=k == 0, end=k == len(values) - 1)
        got.append(out(r, names(model)[1]))
    return got


def run_concurrently(server, model, seqs):
    """Every sequence of seqs (id -> values) on its own thread at once; id -> outputs."""
    with ThreadPoolExecutor(len(seqs)) as pool:
        return dict(zip(seqs, pool.map(lambda s: run_sequence(server, model, s, seqs[s]), seqs)))


# ------------------------------------------------------------------ HTTP

def test_torch_accumulator_over_http(server):
    assert run_sequence(server, "seq_accum_torch", new_id(), [5, 6, 7]) == [5, 11, 18]
    assert run_sequence(server, "seq_accum_torch", f"t-{new_id()}", [-1, 2, -3]) == [-1, 1, -2]


@pytest.mark.parametrize("model", ["seq_accum_torch", "seq_accum_oldest_torch"])
def test_interleaved_sequences_match_alone_and_the_onnx_twin(server, model):
    # 12 sequences on 4 slots (Direct) / 4 candidates (Oldest): most wait in the backlog, the
    # rest share batches, so the state rows of several sequences go through one forward.
    rng = np.random.default_rng(11)
    values = [rng.integers(-50, 50, size=6).tolist() for _ in range(12)]
    alone = [run_sequence(server, model, new_id(), v) for v in values[:3]]
    torch_seqs = {new_id(): v for v in values}
    onnx_seqs = {new_id(): v for v in values}
    got_torch = run_concurrently(server, model, torch_seqs)
    got_onnx = run_concurrently(server, TWINS[model], onnx_seqs)
    expect = [np.cumsum(v).tolist() for v in values]
    assert [got_torch[s] for s in torch_seqs] == expect
    assert [got_onnx[s] for s in onnx_seqs] == expect
    assert alone == expect[:3]


def test_start_resets_the_state(server):
    sid = new_id()
    assert out(infer(server, "seq_accum_torch", 10, sid, start=True), "OUTPUT__0") == 10
    assert out(infer(server, "seq_accum_torch", 5, sid), "OUTPUT__0") == 15
    assert out(infer(server, "seq_accum_torch", 3, sid, start=True), "OUTPUT__0") == 3
    assert out(infer(server, "seq_accum_torch", 4, sid, end=True), "OUTPUT__0") == 7
    r = infer(server, "seq_accum_torch", 1, sid)  # ended: forgotten
    assert_error(r, 400, START_ERR)


def test_state_returned_when_listed_among_outputs(server):
    sid = new_id()
    r = infer(server, "seq_accum_state_out_torch", 3, sid, start=True)
    assert [o["name"] for o in r.json()["outputs"]] == ["OUTPUT__0", "OUTPUT_STATE__1"]
    assert out(r, "OUTPUT_STATE__1") == 3
    r = infer(server, "seq_accum_state_out_torch", 4, sid, outputs=["OUTPUT_STATE__1"])
    assert [o["name"] for o in r.json()["outputs"]] == ["OUTPUT_STATE__1"]
    assert out(r, "OUTPUT_STATE__1") == 7
    r = infer(server, "seq_accum_state_out_torch", 5, sid, end=True, outputs=["OUTPUT__0"])
    assert [o["name"] for o in r.json()["outputs"]] == ["OUTPUT__0"]
    assert out(r, "OUTPUT__0") == 12


def test_state_not_listed_is_not_returned_and_cannot_be_asked_for(server):
    sid = new_id()
    r = infer(server, "seq_accum_torch", 3, sid, start=True)
    assert [o["name"] for o in r.json()["outputs"]] == ["OUTPUT__0"]
    assert_error(infer(server, "seq_accum_torch", 1, sid, outputs=["OUTPUT_STATE__1"]), 400,
                 "unexpected inference output 'OUTPUT_STATE__1'")
    assert out(infer(server, "seq_accum_torch", 1, sid, end=True), "OUTPUT__0") == 4


def test_state_and_control_inputs_are_not_client_inputs(server):
    for extra in ("STATE__2", "START__1"):
        b = {"inputs": [{"name": "INPUT__0", "datatype": "INT32", "shape": [1, 1], "data": [1]},
                        {"name": extra, "datatype": "INT32", "shape": [1, 1], "data": [9]}],
             "parameters": {"sequence_id": new_id(), "sequence_start": True}}
        assert_error(server.post("/v2/models/seq_accum_torch/infer", json=b), 400)


def test_initial_state_zero_data(server):
    # No START control: the first request adds the input to the zero initial state.
    values = [4, 5, -2]
    assert run_sequence(server, "seq_initial_zero_torch", new_id(), values) == [4, 9, 7]
    assert run_sequence(server, "seq_initial_zero", new_id(), values) == [4, 9, 7]
    got = run_concurrently(server, "seq_initial_zero_torch",
                           {new_id(): [k, k, k] for k in range(1, 7)})
    assert sorted(got.values()) == [[k, 2 * k, 3 * k] for k in range(1, 7)]


def test_first_request_without_start_fails(server):
    assert_error(infer(server, "seq_accum_torch", 1, new_id()), 400, START_ERR)


# ------------------------------------------------------------------ gRPC

def grpc_req(model, value, sid, start=False, end=False, request_id="", outputs=None):
    params = {"sequence_id": sid}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    return infer_request(model, [(names(model)[0], "INT32", np.array([[value]], np.int32))],
                         outputs=outputs, request_id=request_id, parameters=params)


@pytest.mark.parametrize("model", ["seq_accum_torch", "seq_accum_oldest_torch"])
def test_grpc_streams_interleaved_like_the_onnx_twin(server, model):
    # Four streams at once, each interleaving its own 4 sequences (16 sequences on 4 slots);
    # streams 0 and 2 drive the TorchScript model, 1 and 3 its ONNX twin with the same values.
    models = [model, TWINS[model]]

    def one_stream(args):
        s, m = args
        ids = [new_id(), f"g{new_id()}", new_id(), f"g{new_id()}"]
        steps = 6
        values = {sid: [(k + 1) * (s // 2 + 1) * (-1) ** j + j for j in range(steps)]
                  for k, sid in enumerate(ids)}
        reqs, expect = [], []
        for step in range(steps):
            for sid in ids:
                reqs.append(grpc_req(m, values[sid][step], sid, start=step == 0,
                                     end=step == steps - 1, request_id=f"{sid}/{step}"))
                expect.append(sum(values[sid][:step + 1]))
        got = list(server.stub().ModelStreamInfer(iter(reqs)))
        assert [r.error_message for r in got] == [""] * len(reqs)
        assert [r.infer_response.id for r in got] == [r.id for r in reqs]
        return [int(output_array(r.infer_response)[0][0]) for r in got], expect

    work = [(s, models[s % 2]) for s in range(4)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one_stream, work))
    for got, expect in results:
        assert got == expect
    # streams 0/1 and 2/3 sent the same values to the two models
    assert results[0][0] == results[1][0] and results[2][0] == results[3][0]


def test_grpc_stream_start_resets_and_errors_stay_in_the_stream(server):
    sid = new_id()
    m = "seq_accum_torch"
    reqs = [grpc_req(m, 1, sid), grpc_req(m, 2, sid, start=True), grpc_req(m, 3, sid),
            grpc_req(m, 10, sid, start=True), grpc_req(m, 4, sid, end=True),
            grpc_req(m, 5, sid)]
    got = list(server.stub().ModelStreamInfer(iter(reqs)))
    assert START_ERR in got[0].error_message and START_ERR in got[5].error_message
    assert [int(output_array(r.infer_response)[0][0]) for r in got[1:5]] == [2, 5, 10, 14]


def test_grpc_state_output(server):
    sid = new_id()
    stub = server.stub()
    r = stub.ModelInfer(grpc_req("seq_accum_state_out_torch", 5, sid, start=True))
    assert [o.name for o in r.outputs] == ["OUTPUT__0", "OUTPUT_STATE__1"]
    assert output_array(r, 1)[0][0] == 5
    r = stub.ModelInfer(grpc_req("seq_accum_state_out_torch", 6, sid, end=True,
                                 outputs=["OUTPUT_STATE__1"]))
    assert [o.name for o in r.outputs] == ["OUTPUT_STATE__1"]
    assert output_array(r)[0][0] == 11
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(grpc_req("seq_accum_torch", 1, new_id(), start=True,
                                 outputs=["OUTPUT_STATE__1"]))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unexpected inference output 'OUTPUT_STATE__1'" in e.value.details()
