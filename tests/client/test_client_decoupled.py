"""Decoupled models (issue 17, REFERENCE-2 §9) through Triton's own client: Triton's QA `repeat`
backend (repeat_int32 as qa/L0_decoupled configures it) over gRPC ModelStreamInfer with
`triton_final_response`, empty final responses on request, 0/1/many responses, interleaved
requests on one stream, per-response errors with the stream kept open, and the refusal of
decoupled models by unary ModelInfer and HTTP /infer."""

import asyncio
import time

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, grpcclient, grpcclient_aio,
                            httpclient)
from stream_support import ResultStream, final_flag
from tritonclient.grpc._utils import _get_inference_request  # Triton's client's own builder

REPEAT_CONFIG = """name: "repeat_int32"
backend: "repeat"
max_batch_size: 0
model_transaction_policy {
  decoupled: True
}
input [
  {
    name: "IN"
    data_type: TYPE_INT32
    dims: [ -1 ]
  },
  {
    name: "DELAY"
    data_type: TYPE_UINT32
    dims: [ -1 ]
  },
  {
    name: "WAIT"
    data_type: TYPE_UINT32
    dims: [ 1 ]
  }
]
output [
  {
    name: "OUT"
    data_type: TYPE_INT32
    dims: [ 1 ]
  },
  {
    name: "IDX"
    data_type: TYPE_UINT32
    dims: [ 1 ]
  }
]
instance_group [{ kind: KIND_CPU }]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("decoupled")
    (root / "repeat_int32" / "1").mkdir(parents=True)
    (root / "repeat_int32" / "config.pbtxt").write_text(REPEAT_CONFIG)
    s = GrpcServer([str(root)], name="client-decoupled").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def repeat_inputs(values, delays=None, wait=0, delay_dtype=np.uint32):
    values = np.array(values, dtype=np.int32)
    delays = np.array(delays if delays is not None else [0] * len(values), dtype=delay_dtype)
    tensors = []
    for name, array in (("IN", values), ("DELAY", delays),
                        ("WAIT", np.array([wait], dtype=np.uint32))):
        t = grpcclient.InferInput(name, list(array.shape),
                                  "INT32" if array.dtype == np.int32 else "UINT32")
        t.set_data_from_numpy(array)
        tensors.append(t)
    return tensors


class Stream(ResultStream):
    """A stream sending repeat_int32 requests."""

    def send(self, values, request_id="", delays=None, empty_final=False, **kw):
        self.client.async_stream_infer("repeat_int32", repeat_inputs(values, delays, **kw),
                                       request_id=request_id,
                                       enable_empty_final_response=empty_final)


@pytest.mark.parametrize("count", [1, 5, 100])
def test_one_to_many_with_final_flag(server, count):
    s = Stream(server)
    try:
        s.send(list(range(10, 10 + count)), request_id="r", empty_final=True)
        got = s.take(count + 1)
        for i, (result, error) in enumerate(got[:count]):
            assert error is None
            assert result.as_numpy("OUT").tolist() == [10 + i]
            assert result.as_numpy("IDX").tolist() == [i]
            assert result.get_response().id == "r"
            assert final_flag(result) is False
        last, error = got[count]
        assert error is None
        response = last.get_response()
        assert final_flag(last) is True
        assert list(response.outputs) == []
        assert (response.id, response.model_name, response.model_version) == \
            ("r", "repeat_int32", "1")
        s.nothing_more()
    finally:
        s.close()


def test_flags_only_final_dropped_unless_asked(server):
    s = Stream(server)
    try:
        s.send([7, 8], request_id="a")
        got = s.take(2)
        assert [r.as_numpy("OUT").tolist() for r, _ in got] == [[7], [8]]
        assert [final_flag(r) for r, _ in got] == [False, False]
        s.nothing_more()
        s.send([], request_id="none")  # one-to-none: nothing at all without the empty final
        s.nothing_more()
        s.send([], request_id="none2", empty_final=True)
        (r, e), = s.take(1)
        assert e is None and final_flag(r) is True and r.get_response().id == "none2"
    finally:
        s.close()


def test_requests_on_one_stream_keep_their_order(server):
    s = Stream(server)
    try:
        for k in range(4):
            s.send([k * 10 + i for i in range(5)], request_id=f"r{k}", delays=[5] * 5,
                   empty_final=True)
        got = s.take(4 * 6)
        per_id = {}
        for r, e in got:
            assert e is None
            per_id.setdefault(r.get_response().id, []).append(r)
        assert sorted(per_id) == ["r0", "r1", "r2", "r3"]
        for k in range(4):
            rs = per_id[f"r{k}"]
            assert [r.as_numpy("OUT").tolist()[0] for r in rs[:5]] == [k * 10 + i for i in
                                                                        range(5)]
            assert [final_flag(r) for r in rs] == [False] * 5 + [True]
    finally:
        s.close()


def test_responses_of_requests_interleave(server):
    s = Stream(server)
    try:
        s.send([1, 2, 3], request_id="slow", delays=[300, 300, 300])
        s.send([7, 8, 9], request_id="fast")
        got = [r.get_response().id for r, _ in s.take(6)]
        # The fast request's responses are not held back behind the slow request.
        assert got[:3] == ["fast"] * 3, got
        assert got[3:] == ["slow"] * 3, got
    finally:
        s.close()


def test_error_response_keeps_the_stream_open(server):
    s = Stream(server)
    try:
        s.send([1, 2], delays=[0])  # IN [2], DELAY [1]: the backend refuses the request
        (r, e), = s.take(1)
        assert r is None
        assert "expected IN and DELAY shape to match, got [2] and [1]" in str(e)
        s.send([3], request_id="after")
        (r, e), = s.take(1)
        assert e is None and r.as_numpy("OUT").tolist() == [3]
    finally:
        s.close()


def test_error_ends_the_stream_with_triton_grpc_error(server):
    s = Stream(server, headers={"triton_grpc_error": "true"})
    try:
        s.send([1, 2], delays=[0])
        (r, e), = s.take(1)
        assert r is None
        assert "expected IN and DELAY shape to match" in str(e)
    finally:
        s.close()


def send_raw(stream, parameters):
    """Sends a request with `triton_*` parameters, which Triton's client itself refuses to send:
    the client's own request builder, then the parameters set on the message."""
    request = _get_inference_request(model_name="repeat_int32", inputs=repeat_inputs([1]),
                                     model_version="", request_id="", outputs=None,
                                     sequence_id=0, sequence_start=False, sequence_end=False,
                                     priority=0, timeout=None, parameters=None)
    for key, set_value in parameters.items():
        set_value(request.parameters[key])
    stream.client._stream._enqueue_request(request)


def test_wrong_type_for_empty_final_parameter(server):
    s = Stream(server)
    try:
        send_raw(s, {"triton_enable_empty_final_response":
                     lambda p: setattr(p, "string_param", "yes")})
        (r, e), = s.take(1)
        assert r is None
        assert "invalid value type for 'triton_enable_empty_final_response' parameter, " \
               "expected bool_param." in str(e)
        send_raw(s, {"triton_other": lambda p: setattr(p, "bool_param", True)})
        (r, e), = s.take(1)
        assert r is None
        assert "parameter keys starting with 'triton_' are reserved for Triton usage. Only the " \
               "following keys starting with 'triton_' are allowed: " \
               "triton_enable_empty_final_response" in str(e)
        # The stream is still open.
        s.send([4], request_id="ok")
        (r, e), = s.take(1)
        assert e is None and r.as_numpy("OUT").tolist() == [4]
    finally:
        s.close()


def test_unary_protocols_refuse_decoupled_models(server):
    g = grpcclient.InferenceServerClient(server.target())
    with pytest.raises(InferenceServerException) as e:
        g.infer("repeat_int32", repeat_inputs([1]))
    assert "ModelInfer RPC doesn't support models with decoupled transaction policy" in str(e.value)
    assert e.value.status() == "StatusCode.UNIMPLEMENTED"
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    inputs = []
    for name, array in (("IN", np.array([1], dtype=np.int32)),
                        ("DELAY", np.array([0], dtype=np.uint32)),
                        ("WAIT", np.array([0], dtype=np.uint32))):
        t = httpclient.InferInput(name, [1], "INT32" if name == "IN" else "UINT32")
        t.set_data_from_numpy(array)
        inputs.append(t)
    with pytest.raises(InferenceServerException) as e:
        h.infer("repeat_int32", inputs)
    assert "HTTP end point doesn't support models with decoupled transaction policy" in \
        str(e.value)


def response_stats(server):
    g = grpcclient.InferenceServerClient(server.target())
    try:
        return g.get_inference_statistics("repeat_int32", as_json=True)["model_stats"][0] \
            .get("response_stats", {})
    finally:
        g.close()


def test_cancelled_stream_stops_the_backend(server):
    s = Stream(server)
    s.send(list(range(50)), delays=[100] * 50, request_id="long")
    r, e = s.results.get(timeout=20)
    assert e is None
    s.client.stop_stream(cancel_requests=True)
    s.client.close()
    # The backend sees IsCancelled within its 5 ms poll and ends the request with CANCELLED
    # (counted as `cancel` in response_stats) long before its 50 responses (5 s) would have been sent.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if any(int(v.get("cancel", {}).get("count", 0)) > 0 for v in response_stats(server).values()):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the backend never saw the cancellation: {response_stats(server)}")
    # The server stays healthy and the model serves the next stream.
    s2 = Stream(server)
    try:
        s2.send([5], request_id="next")
        (r, e), = s2.take(1)
        assert e is None and r.as_numpy("OUT").tolist() == [5]
    finally:
        s2.close()


def test_response_stats_by_index(server):
    s = Stream(server)
    try:
        s.send([1, 2, 3], request_id="stats", empty_final=True)
        s.take(4)
    finally:
        s.close()
    rs = response_stats(server)
    for key in ("0", "1", "2"):
        assert int(rs[key]["success"]["count"]) >= 1
    # The flags-only FINAL is an empty response (compute_infer and empty_response only).
    assert int(rs["3"]["empty_response"]["count"]) >= 1
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    over_http = h.get_inference_statistics("repeat_int32")["model_stats"][0]["response_stats"]
    assert int(over_http["2"]["success"]["count"]) == int(rs["2"]["success"]["count"])


def test_aio_stream_many_responses(server):
    async def run():
        client = grpcclient_aio.InferenceServerClient(server.target())

        async def requests():
            for k in range(2):
                # This aio client has no enable_empty_final_response: the flags-only FINALs are
                # not written, and the stream ends once both requests are done.
                yield {"model_name": "repeat_int32", "inputs": repeat_inputs([k, k + 1, k + 2]),
                       "request_id": f"aio{k}"}

        got = {}
        try:
            async for result, error in client.stream_infer(requests()):
                assert error is None
                response = result.get_response()
                got.setdefault(response.id, []).append(result)
        finally:
            await client.close()
        for k in range(2):
            rs = got[f"aio{k}"]
            assert [r.as_numpy("OUT").tolist()[0] for r in rs[:3]] == [k, k + 1, k + 2]
            assert [final_flag(r) for r in rs] == [False, False, False]

    asyncio.run(run())
