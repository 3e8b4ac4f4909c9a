"""A decoupled Python model's instance is free once `execute` returns (Triton's): the next request
runs on the same single instance while earlier requests' sender threads still send, their
responses reach the right request, and the pool blocks those requests view stay intact.

The model (FREE) logs "start <id>" when `execute` takes a request and "final <id>" just before
that request's FINAL. Each request's thread waits (up to 10 s) until two requests have started,
then sends 3 responses OUT = [k] + IN (IN read from its input's shared-memory view at that
moment), the last one FINAL 1 s later. An instance that waited for the first FINAL would log
"final a" before "start b"."""

import asyncio
import queue

import numpy as np
import pytest

from client_support import GrpcServer, grpcclient, grpcclient_aio
import python_models

FREE = '''
import os
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


class TritonPythonModel:
    def initialize(self, args):
        self.log = os.path.join(args["model_repository"], "order.log")
        self.lock = threading.Lock()
        self.started = threading.Condition(self.lock)
        self.count = 0

    def write(self, line):
        with open(self.log, "a") as f:
            f.write(line + "\\n")

    def execute(self, requests):
        for r in requests:
            data = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()  # a view, no copy
            with self.lock:
                self.write("start " + r.request_id())
                self.count += 1
                self.started.notify_all()
            threading.Thread(target=self.respond, daemon=True,
                             args=(r.request_id(), data, r.get_response_sender())).start()
        return None

    def respond(self, rid, data, sender):
        with self.lock:
            self.started.wait_for(lambda: self.count >= 2, timeout=10)
        for k in range(2):
            out = np.concatenate([np.array([k], dtype=np.uint8), data])
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
            time.sleep(0.05)
        time.sleep(1)
        out = np.concatenate([np.array([2], dtype=np.uint8), data])
        with self.lock:
            self.write("final " + rid)
        sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]), flags=FINAL)
'''

SIZE = 256 * 1024  # large enough to travel in the shared-memory pool, not the socket


def payload(seed):
    return np.random.default_rng(seed).integers(0, 256, SIZE, dtype=np.uint8)


@pytest.fixture
def server(tmp_path):
    cfg = python_models.config("free_py", [python_models.io("IN", "TYPE_UINT8", [-1])],
                               [python_models.io("OUT", "TYPE_UINT8", [-1])],
                               extra="model_transaction_policy { decoupled: true }\n"
                                     "instance_group [{ count: 1, kind: KIND_CPU }]")
    (tmp_path / "free_py" / "1").mkdir(parents=True)
    (tmp_path / "free_py" / "config.pbtxt").write_text(cfg)
    (tmp_path / "free_py" / "1" / "model.py").write_text(FREE)
    s = GrpcServer([str(tmp_path)], name="client-python-decoupled-free").start()
    s.order_log = tmp_path / "free_py" / "order.log"
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def check(server, got, data):
    lines = server.order_log.read_text().split()
    events = [" ".join(lines[i:i + 2]) for i in range(0, len(lines), 2)]
    # b started on the single instance before a's FINAL.
    assert events.index("start b") < events.index("final a"), events
    assert sorted(events) == ["final a", "final b", "start a", "start b"], events
    for rid in ("a", "b"):
        outs = got[rid]
        assert [int(o[0]) for o in outs] == [0, 1, 2], (rid, [o[:1] for o in outs])
        for o in outs:  # the pool block of the input survived the other request's execution
            np.testing.assert_array_equal(o[1:], data[rid])


def test_next_request_runs_while_earlier_one_sends_sync(server):
    data = {"a": payload(1), "b": payload(2)}
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        for rid in ("a", "b"):
            t = grpcclient.InferInput("IN", [SIZE], "UINT8")
            t.set_data_from_numpy(data[rid])
            c.async_stream_infer("free_py", [t], request_id=rid)
        got = {}
        for _ in range(6):
            result, error = results.get(timeout=30)
            assert error is None, error
            got.setdefault(result.get_response().id, []).append(result.as_numpy("OUT"))
    finally:
        c.stop_stream()
        c.close()
    check(server, got, data)


def test_next_request_runs_while_earlier_one_sends_aio(server):
    data = {"a": payload(3), "b": payload(4)}

    async def run():
        client = grpcclient_aio.InferenceServerClient(server.target())

        async def requests():
            for rid in ("a", "b"):
                t = grpcclient_aio.InferInput("IN", [SIZE], "UINT8")
                t.set_data_from_numpy(data[rid])
                yield {"model_name": "free_py", "inputs": [t], "request_id": rid}

        got = {}
        try:
            async for result, error in client.stream_infer(requests()):
                assert error is None, error
                got.setdefault(result.get_response().id, []).append(result.as_numpy("OUT"))
        finally:
            await client.close()
        return got

    check(server, asyncio.run(run()), data)
