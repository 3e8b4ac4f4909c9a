"""Triton's QA test backend `square` (issue 17 item 2; REFERENCE-2 §9.3) through Triton's own
client: square_int32 as Triton's qa configures it (IN INT32 [1] -> OUT INT32 [1], N = IN[0]
responses of OUT = [N], then a flags-only FINAL) over gRPC ModelStreamInfer, sync and asyncio;
IN = 0 (only the empty final, when asked for); CUSTOM_FAIL_COUNT / CUSTOM_EMPTY_COUNT; the
configuration checks at load; a negative IN; cancellation with CUSTOM_CANCEL_DELAY_NS; and the
statistics of a /generate_stream request on it, read back with the HTTP and gRPC clients."""

import asyncio
import http.client
import json
import time

import numpy as np
import pytest

from client_support import GrpcServer, grpcclient, grpcclient_aio, httpclient
from stream_support import ResultStream, final_flag

SQUARE = """name: "{name}"
backend: "square"
max_batch_size: 0
model_transaction_policy {{
  decoupled: True
}}
input [
  {{
    name: "{input}"
    data_type: {dtype}
    dims: [ 1 ]
  }}
]
output [
  {{
    name: "OUT"
    data_type: TYPE_INT32
    dims: [ 1 ]
  }}
]
{extra}
"""


def param(key, value):
    return f'parameters [{{ key: "{key}" value: {{ string_value: "{value}" }} }}]'


MODELS = {
    "square_int32": {},
    # N = 5, F = 2, E = 1: indexes 0-1 succeed, 2-3 fail, 4 sends nothing.
    "square_fail": {"extra": param("CUSTOM_FAIL_COUNT", "2") + "\n" +
                    param("CUSTOM_EMPTY_COUNT", "1")},
    "square_slow": {"extra": param("CUSTOM_INFER_DELAY_NS", "100000000") + "\n" +
                    param("CUSTOM_CANCEL_DELAY_NS", "1000000")},
    # Not numbers: ignored, as Triton's square does (logged), so the model serves undelayed.
    "square_odd_params": {"extra": param("CUSTOM_INFER_DELAY_NS", "soon") + "\n" +
                          param("CUSTOM_FAIL_COUNT", "-1")},
    # Refused at load with Triton's texts.
    "square_bad_name": {"input": "INPUT"},
    "square_bad_type": {"dtype": "TYPE_FP32"},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("square")
    for name, kw in MODELS.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(SQUARE.format(
            name=name, input=kw.get("input", "IN"), dtype=kw.get("dtype", "TYPE_INT32"),
            extra=kw.get("extra", "")))
    s = GrpcServer([str(root)], flags=["--exit-on-error=false"], name="client-square").start()
    yield s
    s.stop()


def square_input(n, dtype=np.int32):
    t = grpcclient.InferInput("IN", [1], "INT32")
    t.set_data_from_numpy(np.array([n], dtype=dtype))
    return [t]


class Stream(ResultStream):
    """A stream sending square requests."""

    def send(self, model, n, request_id="", empty_final=True):
        self.client.async_stream_infer(model, square_input(n), request_id=request_id,
                                       enable_empty_final_response=empty_final)


@pytest.mark.parametrize("n", [1, 3, 10])
def test_n_responses_then_empty_final(server, n):
    s = Stream(server)
    try:
        s.send("square_int32", n, request_id=f"sq{n}")
        got = s.take(n + 1)
        for result, error in got[:n]:
            assert error is None
            assert result.as_numpy("OUT").tolist() == [n]
            assert result.get_response().id == f"sq{n}"
            assert final_flag(result) is False
        last, error = got[n]
        assert error is None and final_flag(last) is True
        assert list(last.get_response().outputs) == []
        s.nothing_more()
    finally:
        s.close()


def test_zero_sends_only_the_empty_final(server):
    s = Stream(server)
    try:
        s.send("square_int32", 0, request_id="zero")
        (r, e), = s.take(1)
        assert e is None and final_flag(r) is True and r.get_response().id == "zero"
        assert list(r.get_response().outputs) == []
        s.send("square_int32", 0, request_id="silent", empty_final=False)
        s.nothing_more()
    finally:
        s.close()


def test_simulated_failures_and_empty_responses(server):
    s = Stream(server)
    try:
        s.send("square_fail", 5)
        got = s.take(5)  # 2 successes, 2 failures, no response for index 4, the FINAL
        assert [r.as_numpy("OUT").tolist() for r, e in got[:2]] == [[5], [5]]
        for r, e in got[2:4]:
            assert r is None and "simulated failure" in str(e)
        assert got[4][1] is None and final_flag(got[4][0]) is True
        s.nothing_more()
    finally:
        s.close()


def test_unparsable_parameters_are_ignored(server):
    s = Stream(server)
    try:
        s.send("square_odd_params", 2)
        got = s.take(3)
        assert [e for _, e in got] == [None] * 3
        assert [r.as_numpy("OUT").tolist() for r, _ in got[:2]] == [[2], [2]]
    finally:
        s.close()


def test_configuration_checks_at_load(server):
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    index = {m["name"]: m for m in h.get_model_repository_index()}
    assert index["square_bad_name"]["state"] == "UNAVAILABLE"
    assert "expected first input tensor name to be IN, got INPUT" in \
        index["square_bad_name"]["reason"]
    assert index["square_bad_type"]["state"] == "UNAVAILABLE"
    assert "expected IN datatype to be INT32, got TYPE_FP32" in index["square_bad_type"]["reason"]
    assert index["square_int32"]["state"] == "READY"


def test_negative_count_is_an_error_and_the_stream_stays_open(server):
    s = Stream(server)
    try:
        s.send("square_int32", -3)
        (r, e), = s.take(1)
        assert r is None
        assert "unexpected value for IN input: -3" in str(e)
        s.send("square_int32", 1, request_id="after")
        got = s.take(2)
        assert got[0][1] is None and got[0][0].as_numpy("OUT").tolist() == [1]
    finally:
        s.close()


def response_stats(server, model):
    g = grpcclient.InferenceServerClient(server.target())
    try:
        return g.get_inference_statistics(model, as_json=True)["model_stats"][0] \
            .get("response_stats", {})
    finally:
        g.close()


def test_cancelled_stream_ends_with_cancelled(server):
    s = Stream(server)
    s.send("square_slow", 50, request_id="long")  # 50 x 100 ms
    r, e = s.results.get(timeout=20)
    assert e is None and r.as_numpy("OUT").tolist() == [50]
    s.client.stop_stream(cancel_requests=True)
    s.client.close()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        stats = response_stats(server, "square_slow")
        if any(int(v.get("cancel", {}).get("count", 0)) for v in stats.values()):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"square never saw the cancellation: {response_stats(server, 'square_slow')}")
    s2 = Stream(server)
    try:
        s2.send("square_slow", 1)
        got = s2.take(2)
        assert got[0][1] is None and got[0][0].as_numpy("OUT").tolist() == [1]
    finally:
        s2.close()


def test_aio_stream(server):
    async def run():
        client = grpcclient_aio.InferenceServerClient(server.target())

        async def requests():
            for n in (2, 3):
                yield {"model_name": "square_int32", "inputs": square_input(n),
                       "request_id": f"aio{n}"}

        got = {}
        try:
            async for result, error in client.stream_infer(requests()):
                assert error is None
                got.setdefault(result.get_response().id, []).append(
                    result.as_numpy("OUT").tolist())
        finally:
            await client.close()
        # This aio client cannot ask for the empty final: only the N responses arrive.
        assert got == {"aio2": [[2]] * 2, "aio3": [[3]] * 3}

    asyncio.run(run())


def test_generate_stream_counts_in_the_statistics(server):
    def count(client_stats):
        return int(client_stats["model_stats"][0]["inference_stats"]["success"]["count"])

    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    g = grpcclient.InferenceServerClient(server.target())
    before = count(h.get_inference_statistics("square_int32"))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request("POST", "/v2/models/square_int32/generate_stream",
                     body=json.dumps({"IN": 4}))
        r = conn.getresponse()
        assert r.status == 200
        assert r.getheader("Content-Type") == "text/event-stream; charset=utf-8"
        events = [json.loads(b[len("data: "):]) for b in r.read().split(b"\n\n") if b]
        assert [e["OUT"] for e in events] == [4] * 4
    finally:
        conn.close()
    assert count(h.get_inference_statistics("square_int32")) == before + 1
    assert count(g.get_inference_statistics("square_int32", as_json=True)) == before + 1
