"""Issue 17 item 6 through Triton's own client: decoupled models under the dynamic and the sequence
batcher. A batch of requests is one execution with one response sender per request, so each
request's 0..N responses flow on the gRPC stream under its own id, with `triton_final_response`;
statistics count one execution per batch and one inference per request, and `response_stats` by
response index. Models: the `decoupled` fixture repository (scripts/gen_test_models.py
fixture_decoupled): `repeat_dynamic` (max_batch_size 8, preferred batch 4, 300 ms delay),
`repeat_sequence` (max_batch_size 2, Direct, START control) and `identity_decoupled_dynamic` (a
plugin that knows no senders: its batched outputs are split into one FINAL per request)."""

import asyncio

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, grpcclient, grpcclient_aio,
                            httpclient)
from helpers import repo
from stream_support import ResultStream as Stream
from stream_support import final_flag


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("fixtures", "decoupled")], name="client-decoupled-batching").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def repeat_inputs(values, delays=None, wait=0, client=grpcclient):
    values = np.array([values], dtype=np.int32)
    delays = np.array([delays if delays is not None else [0] * values.shape[1]], dtype=np.uint32)
    tensors = []
    for name, array in (("IN", values), ("DELAY", delays),
                        ("WAIT", np.array([[wait]], dtype=np.uint32))):
        t = client.InferInput(name, list(array.shape),
                              "INT32" if array.dtype == np.int32 else "UINT32")
        t.set_data_from_numpy(array)
        tensors.append(t)
    return tensors


def by_request(got):
    """{request id: [(OUT, IDX) or 'FINAL']} in arrival order; fails on any error."""
    out = {}
    for result, error in got:
        assert error is None, error
        response = result.get_response()
        if final_flag(result) and not response.outputs:
            out.setdefault(response.id, []).append("FINAL")
            continue
        out.setdefault(response.id, []).append(
            (result.as_numpy("OUT").tolist(), result.as_numpy("IDX").tolist()))
        assert final_flag(result) is False
    return out


def stats(server, model):
    g = grpcclient.InferenceServerClient(server.target())
    try:
        return g.get_inference_statistics(model, as_json=True)["model_stats"][0]
    finally:
        g.close()


def counts(server, model):
    s = stats(server, model)
    return int(s.get("execution_count", 0)), int(s.get("inference_count", 0))


def test_dynamic_batch_gives_each_request_its_responses(server):
    before = counts(server, "repeat_dynamic")
    s = Stream(server)
    try:
        for k in range(4):  # equal shapes, preferred batch size 4: one execution
            s.client.async_stream_infer("repeat_dynamic", repeat_inputs([k, k + 10, k + 20]),
                                        request_id=f"r{k}", enable_empty_final_response=True)
        got = by_request(s.take(4 * 4))
        s.nothing_more()
    finally:
        s.close()
    for k in range(4):
        assert got[f"r{k}"] == [([k + 10 * e], [e]) for e in range(3)] + ["FINAL"]
    executions, inferences = counts(server, "repeat_dynamic")
    assert (executions - before[0], inferences - before[1]) == (1, 4)
    rs = stats(server, "repeat_dynamic")["response_stats"]
    assert int(rs["2"]["success"]["count"]) >= 4  # every request's third response
    assert int(rs["3"]["empty_response"]["count"]) >= 4  # and its flags-only FINAL


def test_dynamic_batch_responses_flow_per_request(server):
    # r0 is slow (2 responses, 400 ms apart), r1 fast: r1 finishes while r0 still streams, in the
    # same execution.
    s = Stream(server)
    try:
        s.client.async_stream_infer("repeat_dynamic", repeat_inputs([7, 8], [0, 400]),
                                    request_id="slow")
        for k in range(3):
            s.client.async_stream_infer("repeat_dynamic", repeat_inputs([k, k]),
                                        request_id=f"fast{k}")
        got = s.take(8)
        assert all(e is None for r, e in got), got
        order = [r.get_response().id for r, e in got]
    finally:
        s.close()
    assert order[0] in ("slow", "fast0", "fast1", "fast2")
    assert order[-1] == "slow"  # its second response comes 400 ms after everything else
    assert sorted(order) == ["fast0"] * 2 + ["fast1"] * 2 + ["fast2"] * 2 + ["slow"] * 2


def test_dynamic_batch_aio_stream(server):
    async def run():
        client = grpcclient_aio.InferenceServerClient(server.target())

        async def requests():
            for k in range(4):
                yield {"model_name": "repeat_dynamic",
                       "inputs": repeat_inputs([k, k + 10], client=grpcclient_aio),
                       "request_id": f"aio{k}"}

        got = {}
        try:
            async for result, error in client.stream_infer(requests()):
                assert error is None
                got.setdefault(result.get_response().id, []).append(
                    result.as_numpy("OUT").tolist())
                if sum(len(v) for v in got.values()) == 8:
                    break
        finally:
            await client.close()
        return got

    got = asyncio.run(run())
    assert got == {f"aio{k}": [[k], [k + 10]] for k in range(4)}


def test_batch_size_above_one_is_an_error_on_the_stream(server):
    s = Stream(server)
    try:
        tensors = []
        for name, array in (("IN", np.zeros((2, 1), np.int32)), ("DELAY", np.zeros((2, 1), np.uint32)),
                            ("WAIT", np.zeros((2, 1), np.uint32))):
            t = grpcclient.InferInput(name, list(array.shape),
                                      "INT32" if array.dtype == np.int32 else "UINT32")
            t.set_data_from_numpy(array)
            tensors.append(t)
        s.client.async_stream_infer("repeat_dynamic", tensors, request_id="two")
        (result, error), = s.take(1)
        assert isinstance(error, InferenceServerException)
        assert "the repeat backend batches only requests of batch size 1" in error.message()
        # The stream stays open and the model keeps serving.
        s.client.async_stream_infer("repeat_dynamic", repeat_inputs([3]), request_id="after")
        (result, error), = s.take(1)
        assert error is None and result.as_numpy("OUT").tolist() == [3]
    finally:
        s.close()


def test_unary_protocols_refuse_batched_decoupled_models(server):
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    with pytest.raises(InferenceServerException) as e:
        h.infer("repeat_dynamic", repeat_inputs([1], client=httpclient))
    assert "HTTP end point doesn't support models with decoupled transaction policy" in str(e.value)
    g = grpcclient.InferenceServerClient(server.target())
    with pytest.raises(InferenceServerException) as e:
        g.infer("repeat_sequence", repeat_inputs([1]), sequence_id=5, sequence_start=True)
    assert "ModelInfer RPC doesn't support models with decoupled transaction policy" in str(e.value)
    g.close()


def test_sequence_batcher_streams_per_request(server):
    before = counts(server, "repeat_sequence")
    s = Stream(server)
    try:
        for step in range(2):
            for seq in (1, 2):
                s.client.async_stream_infer(
                    "repeat_sequence", repeat_inputs([100 * seq + step, 100 * seq + step + 1]),
                    request_id=f"s{seq}-{step}", sequence_id=seq, sequence_start=(step == 0),
                    sequence_end=(step == 1), enable_empty_final_response=True)
        got = by_request(s.take(4 * 3))
        s.nothing_more()
    finally:
        s.close()
    for seq in (1, 2):
        for step in range(2):
            v = 100 * seq + step
            assert got[f"s{seq}-{step}"] == [([v], [0]), ([v + 1], [1]), "FINAL"]
    executions, inferences = counts(server, "repeat_sequence")
    assert inferences - before[1] == 4
    assert 2 <= executions - before[0] <= 4  # the two sequences share executions when they meet


def test_sequence_batcher_aio_stream(server):
    async def run():
        client = grpcclient_aio.InferenceServerClient(server.target())

        async def requests():
            for step in range(3):
                yield {"model_name": "repeat_sequence",
                       "inputs": repeat_inputs([step] * (step + 1), client=grpcclient_aio),
                       "request_id": f"q{step}", "sequence_id": 77,
                       "sequence_start": step == 0, "sequence_end": step == 2}

        got = []
        try:
            async for result, error in client.stream_infer(requests()):
                assert error is None
                got.append((result.get_response().id, result.as_numpy("IDX").tolist()))
                if len(got) == 6:
                    break
        finally:
            await client.close()
        return got

    got = asyncio.run(run())
    # Each request's responses keep their order. Responses of consecutive requests may
    # interleave: the sequence's next request runs once the previous Execute returned, while
    # that request's sending thread may still be answering (as in Triton).
    per_request = {}
    for request_id, idx in got:
        per_request.setdefault(request_id, []).append(idx[0])
    assert per_request == {"q0": [0], "q1": [0, 1], "q2": [0, 1, 2]}, got


def test_plugin_without_senders_answers_each_request_of_a_batch(server):
    before = counts(server, "identity_decoupled_dynamic")
    s = Stream(server)
    try:
        for k in range(3):  # preferred batch size 3: one execution
            data = np.array([[10 * k]], dtype=np.int32)
            t = grpcclient.InferInput("INPUT0", [1, 1], "INT32")
            t.set_data_from_numpy(data)
            s.client.async_stream_infer("identity_decoupled_dynamic", [t], request_id=f"i{k}")
        got = {}
        for result, error in s.take(3):
            assert error is None
            assert final_flag(result) is True
            got[result.get_response().id] = result.as_numpy("OUTPUT0").tolist()
        s.nothing_more()
    finally:
        s.close()
    assert got == {"i0": [[0]], "i1": [[10]], "i2": [[20]]}
    executions, inferences = counts(server, "identity_decoupled_dynamic")
    assert (executions - before[0], inferences - before[1]) == (1, 3)
    rs = stats(server, "identity_decoupled_dynamic")["response_stats"]
    assert int(rs["0"]["success"]["count"]) >= 3
