"""`async def execute` of a decoupled Python model runs in the background on the instance's event
loop (Triton >= 24.04): `execute` returns at once and the single instance takes the next request
while earlier coroutines still sleep and send. An exception in a background coroutine is logged and
its requests that have not sent FINAL get it as an error response.

The model (ASYNC) logs "start <id>" when its coroutine starts and "final <id>" just before the
FINAL. Each coroutine waits (asyncio, up to 10 s) until two coroutines have started, then sends
OUT = [k] + IN for k = 0, 1, 2, sleeping 0.5 s between them (1 s in all). An instance that
awaited the coroutine would log "final a" before "start b"."""

import asyncio
import queue

import numpy as np
import pytest

from client_support import GrpcServer, InferenceServerException, grpcclient, grpcclient_aio
import python_models

ASYNC = '''
import asyncio
import os

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def initialize(self, args):
        self.log = os.path.join(args["model_repository"], "order.log")
        self.started = 0

    def write(self, line):
        with open(self.log, "a") as f:
            f.write(line + "\\n")

    async def execute(self, requests):
        for r in requests:
            rid = r.request_id()
            data = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy().copy()
            sender = r.get_response_sender()
            self.write("start " + rid)
            self.started += 1
            for _ in range(200):  # until both coroutines started (10 s at most): no timing
                if self.started >= 2:
                    break
                await asyncio.sleep(0.05)
            for k in range(3):
                out = np.concatenate([np.array([k], dtype=np.uint8), data])
                if k == 2:
                    if rid.startswith("boom"):
                        raise ValueError("coroutine of " + rid + " failed")
                    self.write("final " + rid)
                    sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]),
                                flags=FINAL)
                else:
                    sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
                    await asyncio.sleep(0.5)
'''

DATA = {"a": np.array([1, 2, 3], dtype=np.uint8), "b": np.array([4, 5], dtype=np.uint8),
        "boom": np.array([7], dtype=np.uint8), "after": np.array([9], dtype=np.uint8)}


@pytest.fixture
def server(tmp_path):
    (tmp_path / "async_py" / "1").mkdir(parents=True)
    (tmp_path / "async_py" / "config.pbtxt").write_text(python_models.config(
        "async_py", [python_models.io("IN", "TYPE_UINT8", [-1])],
        [python_models.io("OUT", "TYPE_UINT8", [-1])],
        extra="model_transaction_policy { decoupled: true }\n"
              "instance_group [{ count: 1, kind: KIND_CPU }]"))
    (tmp_path / "async_py" / "1" / "model.py").write_text(ASYNC)
    s = GrpcServer([str(tmp_path)], name="client-python-async-execute").start()
    s.order_log = tmp_path / "async_py" / "order.log"
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def events(server):
    lines = server.order_log.read_text().split()
    return [" ".join(lines[i:i + 2]) for i in range(0, len(lines), 2)]


def check_outputs(got, rids):
    for rid in rids:
        outs = got[rid]
        assert [int(o[0]) for o in outs] == [0, 1, 2], (rid, outs)
        for o in outs:
            np.testing.assert_array_equal(o[1:], DATA[rid])


def stream_sync(server, rids, expected):
    """Sends `rids` on one stream; returns {id: [OUT arrays]} and the errors, after `expected`
    callbacks."""
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    got, errors = {}, []
    try:
        for rid in rids:
            t = grpcclient.InferInput("IN", [len(DATA[rid])], "UINT8")
            t.set_data_from_numpy(DATA[rid])
            c.async_stream_infer("async_py", [t], request_id=rid)
        for _ in range(expected):
            result, error = results.get(timeout=30)
            if error is not None:
                errors.append(error)
                continue
            got.setdefault(result.get_response().id, []).append(result.as_numpy("OUT"))
    finally:
        c.stop_stream()
        c.close()
    return got, errors


async def stream_aio(server, rids):
    client = grpcclient_aio.InferenceServerClient(server.target())

    async def requests():
        for rid in rids:
            t = grpcclient_aio.InferInput("IN", [len(DATA[rid])], "UINT8")
            t.set_data_from_numpy(DATA[rid])
            yield {"model_name": "async_py", "inputs": [t], "request_id": rid}

    got, errors = {}, []
    try:
        async for result, error in client.stream_infer(requests()):
            if error is not None:
                errors.append(error)
                continue
            got.setdefault(result.get_response().id, []).append(result.as_numpy("OUT"))
    finally:
        await client.close()
    return got, errors


def test_second_coroutine_starts_before_the_first_ends_sync(server):
    got, errors = stream_sync(server, ["a", "b"], 6)
    assert errors == []
    order = events(server)
    assert order.index("start b") < order.index("final a"), order
    assert sorted(order) == ["final a", "final b", "start a", "start b"], order
    check_outputs(got, ["a", "b"])


def test_second_coroutine_starts_before_the_first_ends_aio(server):
    got, errors = asyncio.run(stream_aio(server, ["a", "b"]))
    assert errors == []
    order = events(server)
    assert order.index("start b") < order.index("final a"), order
    check_outputs(got, ["a", "b"])


def boom_text():
    return ("Failed to process the request(s) for model 'async_py_0_0', message: "
            "ValueError: coroutine of boom failed")


def check_boom(server, got, errors):
    assert [int(o[0]) for o in got["boom"]] == [0, 1], got
    assert len(errors) == 1, errors
    assert isinstance(errors[0], InferenceServerException)
    assert boom_text() in str(errors[0]), str(errors[0])
    check_outputs(got, ["after"])  # the instance lives and serves the next request
    assert boom_text() in server.stderr()  # logged, as Triton logs the traceback


def test_exception_in_background_coroutine_sync(server):
    got, errors = stream_sync(server, ["boom", "after"], 6)
    check_boom(server, got, errors)


def test_exception_in_background_coroutine_aio(server):
    got, errors = asyncio.run(stream_aio(server, ["boom", "after"]))
    check_boom(server, got, errors)
