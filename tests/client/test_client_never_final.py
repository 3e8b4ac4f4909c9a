"""A decoupled plugin that never sends FINAL (issue 17, "Bad input"): the request it holds is
held as long as the model is loaded (as in Triton), and failed at once, never leaked, when the
model unloads or the server stops (the backend API v6 unload notice); the server stays healthy.
The plugin is a Python model.py (backends/python) that answers OUT = IN once and keeps its
response senders; its single instance is free once `execute` returns (Triton's), so a second
request runs while the first is held."""

import os
import queue
import signal
import threading
import time

import numpy as np

from client_support import GrpcServer, InferenceServerException, grpcclient, httpclient
import python_models

STUB_TIMEOUT_S = 3


# Sends OUT = [k] for k in 0..4 one second apart from a thread, the last with FINAL: 4 s in all,
# longer than stub-timeout-seconds, but never silent that long.
SLOW_STREAM = '''
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            threading.Thread(target=self.respond, args=(r.get_response_sender(),),
                             daemon=True).start()
        return None

    def respond(self, sender):
        for k in range(5):
            flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if k == 4 else 0
            sender.send(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUT", np.array([k], dtype=np.int32))]), flags=flags)
            if k < 4:
                time.sleep(1)
'''


def write_model(root):
    cfg = python_models.config("never_final_py", [python_models.io("IN", "TYPE_INT32", [1])],
                               [python_models.io("OUT", "TYPE_INT32", [1])],
                               extra="model_transaction_policy { decoupled: true }")
    (root / "never_final_py" / "1").mkdir(parents=True)
    (root / "never_final_py" / "config.pbtxt").write_text(cfg)
    (root / "never_final_py" / "1" / "model.py").write_text(python_models.NEVER_FINAL)
    cfg = python_models.config("slow_stream_py", [python_models.io("IN", "TYPE_INT32", [1])],
                               [python_models.io("OUT", "TYPE_INT32", [1])],
                               extra="model_transaction_policy { decoupled: true }")
    (root / "slow_stream_py" / "1").mkdir(parents=True)
    (root / "slow_stream_py" / "config.pbtxt").write_text(cfg)
    (root / "slow_stream_py" / "1" / "model.py").write_text(SLOW_STREAM)


def start(tmp_path, name, stub_timeout_s=STUB_TIMEOUT_S):
    write_model(tmp_path)
    return GrpcServer([str(tmp_path)], ["--model-control-mode=explicit", "--load-model=*",
                                        f"--backend-config=python,stub-timeout-seconds="
                                        f"{stub_timeout_s}"], name=name).start()


def open_stream(server):
    """Two held requests on one stream: each got its one response (the second ran on the single
    instance while the first still held its sender)."""
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    for k in (1, 2):
        t = grpcclient.InferInput("IN", [1], "INT32")
        t.set_data_from_numpy(np.array([k], dtype=np.int32))
        c.async_stream_infer("never_final_py", [t], request_id=f"held{k}")
    got = {}
    for _ in range(2):
        result, error = results.get(timeout=20)
        assert error is None, error
        got[result.get_response().id] = result.as_numpy("OUT").tolist()
    assert got == {"held1": [1], "held2": [2]}
    return c, results


def held_errors(results, n=2):
    """The errors the held requests end with (unload, stop or a dead stub)."""
    errors = []
    for _ in range(n):
        result, error = results.get(timeout=20)
        assert isinstance(error, InferenceServerException), (result, error)
        errors.append(error.message())
    return errors


# What a request still without FINAL ends with when its model unloads or the server stops
# (Triton's would hold the unload forever); the core's own `released a request without sending a
# final response` is for a plugin that drops its sender.
HELD = ("Failed to process the request(s) for model instance 'never_final_py_0', message: the "
        "model is unloading and the request had not sent its final response.")
# ... and when its stub dies.
KILLED = ("Failed to process the request(s) for model instance 'never_final_py_0', message: Stub "
          "process is not healthy.")


def test_unload_fails_the_held_request(tmp_path):
    # stub-timeout-seconds 60: the unload notice ends the held requests, not a timeout.
    s = start(tmp_path, "client-never-final-unload", stub_timeout_s=60)
    try:
        c, results = open_stream(s)
        time.sleep(0.5)
        assert results.empty()  # held: no FINAL
        h = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        h.unload_model("never_final_py")
        assert held_errors(results) == [HELD, HELD]
        c.stop_stream()
        c.close()
        # The model is gone, the server healthy, and the model loads and holds again.
        assert h.is_server_live() and h.is_server_ready()
        assert not h.is_model_ready("never_final_py")
        h.load_model("never_final_py")
        assert h.is_model_ready("never_final_py")
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_server_stop_fails_the_held_request(tmp_path):
    s = start(tmp_path, "client-never-final-stop", stub_timeout_s=60)
    c, results = open_stream(s)
    time.sleep(0.5)
    assert results.empty()
    rc = []
    stopper = threading.Thread(target=lambda: rc.append(s.stop()))
    stopper.start()
    try:
        assert held_errors(results) == [HELD, HELD]
    finally:
        c.stop_stream()
        c.close()
        stopper.join()
    assert rc == [0], s.stderr()[-4000:]


def test_held_request_outlives_stub_timeout(tmp_path):
    """Silent held requests are held past stub-timeout-seconds (Triton's never end); the stub is
    not restarted, serves the next request meanwhile, and an unload then ends all of them."""
    s = start(tmp_path, "client-never-final-silence")
    try:
        c, results = open_stream(s)
        time.sleep(STUB_TIMEOUT_S + 1.5)
        assert results.empty()  # still held, no error
        t = grpcclient.InferInput("IN", [1], "INT32")
        t.set_data_from_numpy(np.array([7], dtype=np.int32))
        c.async_stream_infer("never_final_py", [t], request_id="after")
        result, error = results.get(timeout=20)
        assert error is None and result.as_numpy("OUT").tolist() == [7], error
        assert "restart" not in s.stderr()
        httpclient.InferenceServerClient(f"127.0.0.1:{s.port}").unload_model("never_final_py")
        assert held_errors(results, 3) == [HELD] * 3
        c.stop_stream()
        c.close()
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_stream_longer_than_stub_timeout_completes_while_it_sends(tmp_path):
    s = start(tmp_path, "client-never-final-slow-stream")
    try:
        results = queue.Queue()
        c = grpcclient.InferenceServerClient(s.target())
        c.start_stream(callback=lambda result, error: results.put((result, error)))
        t = grpcclient.InferInput("IN", [1], "INT32")
        t.set_data_from_numpy(np.array([1], dtype=np.int32))
        c.async_stream_infer("slow_stream_py", [t], request_id="slow",
                             enable_empty_final_response=True)
        outs = []
        final = False
        while not final:
            result, error = results.get(timeout=20)
            assert error is None, error
            final = result.get_response().parameters["triton_final_response"].bool_param
            if result.as_numpy("OUT") is not None:
                outs.append(int(result.as_numpy("OUT")[0]))
        assert outs == [0, 1, 2, 3, 4]
        c.stop_stream()
        c.close()
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_stub_killed_while_requests_are_held_fails_them(tmp_path):
    """The held requests of earlier executions fail when their stub dies while the instance is idle
    (long before the 60 s stub timeout); the stub is restarted."""
    s = start(tmp_path, "client-never-final-killed", stub_timeout_s=60)
    try:
        c, results = open_stream(s)
        [pid] = python_models.stub_pids(s, "never_final_py")
        os.kill(pid, signal.SIGKILL)
        assert held_errors(results) == [KILLED, KILLED]
        c.stop_stream()
        c.close()
        h = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        for _ in range(200):  # the watcher restarts the stub
            if h.is_model_ready("never_final_py"):
                break
            time.sleep(0.1)
        assert h.is_model_ready("never_final_py")
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]
