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

# After `execute` returned (the instance idle), a sender thread asks is_cancelled() and makes a BLS
# call to double_py; its one response OUT = [cancelled] + 2 * IN, FINAL.
IDLE_BLS = '''
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            data = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy().copy()
            threading.Thread(target=self.respond, daemon=True,
                             args=(data, r.get_response_sender())).start()
        return None

    def respond(self, data, sender):
        time.sleep(0.5)
        cancelled = sender.is_cancelled()
        bls = pb_utils.InferenceRequest(model_name="double_py", requested_output_names=["OUT"],
                                        inputs=[pb_utils.Tensor("IN", data)]).exec()
        if bls.has_error():
            sender.send(pb_utils.InferenceResponse(error=bls.error()),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return
        out = pb_utils.get_output_tensor_by_name(bls, "OUT").as_numpy()
        out = np.concatenate([np.array([int(cancelled)], dtype=np.uint8), out])
        sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
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
    for name, code, decoupled in (("idle_bls_py", IDLE_BLS, True),
                                  ("double_py", python_models.DOUBLE_OUT, False)):
        extra = "model_transaction_policy { decoupled: true }" if decoupled else ""
        (tmp_path / name / "1").mkdir(parents=True)
        (tmp_path / name / "config.pbtxt").write_text(python_models.config(
            name, [python_models.io("IN", "TYPE_UINT8", [-1])],
            [python_models.io("OUT", "TYPE_UINT8", [-1])], extra=extra))
        (tmp_path / name / "1" / "model.py").write_text(code)
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


def test_sender_thread_asks_and_calls_bls_after_execute_returned(server):
    data = np.arange(1, 9, dtype=np.uint8)
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        t = grpcclient.InferInput("IN", [data.size], "UINT8")
        t.set_data_from_numpy(data)
        c.async_stream_infer("idle_bls_py", [t], request_id="idle")
        result, error = results.get(timeout=30)
    finally:
        c.stop_stream()
        c.close()
    assert error is None, error
    assert result.as_numpy("OUT").tolist() == [0] + (data * 2).tolist()
