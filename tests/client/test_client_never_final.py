"""A decoupled plugin that never sends FINAL (issue 17, "Bad input"): the request it holds is
failed, never leaked, when the model unloads or the server stops, and the server stays healthy.
The plugin is a Python model.py (backends/python) that keeps its response senders."""

import queue
import threading
import time

import numpy as np
import pytest

from client_support import GrpcServer, InferenceServerException, grpcclient, httpclient
import python_models

STUB_TIMEOUT_S = 3


def write_model(root):
    cfg = python_models.config("never_final_py", [python_models.io("IN", "TYPE_INT32", [1])],
                               [python_models.io("OUT", "TYPE_INT32", [1])],
                               extra="model_transaction_policy { decoupled: true }")
    (root / "never_final_py" / "1").mkdir(parents=True)
    (root / "never_final_py" / "config.pbtxt").write_text(cfg)
    (root / "never_final_py" / "1" / "model.py").write_text(python_models.NEVER_FINAL)


def start(tmp_path, name):
    write_model(tmp_path)
    return GrpcServer([str(tmp_path)], ["--model-control-mode=explicit", "--load-model=*",
                                        f"--backend-config=python,stub-timeout-seconds="
                                        f"{STUB_TIMEOUT_S}"], name=name).start()


def open_stream(server):
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    t = grpcclient.InferInput("IN", [1], "INT32")
    t.set_data_from_numpy(np.array([1], dtype=np.int32))
    c.async_stream_infer("never_final_py", [t], request_id="held")
    return c, results


# Execute of the Python backend waits for every request's FINAL; it gives up after
# stub-timeout-seconds, restarts the stub and fails the request with this text (the core's own
# `released a request without sending a final response` is for a plugin that drops its sender).
HELD = ("Failed to process the request(s) for model instance 'never_final_py_0', message: Stub "
        "process is not healthy.")


def test_unload_fails_the_held_request(tmp_path):
    s = start(tmp_path, "client-never-final-unload")
    try:
        c, results = open_stream(s)
        time.sleep(0.5)
        assert results.empty()  # held: no response, no FINAL
        h = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        h.unload_model("never_final_py")
        result, error = results.get(timeout=STUB_TIMEOUT_S + 20)
        assert isinstance(error, InferenceServerException) and error.message() == HELD, error
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
    s = start(tmp_path, "client-never-final-stop")
    c, results = open_stream(s)
    time.sleep(0.5)
    assert results.empty()
    rc = []
    stopper = threading.Thread(target=lambda: rc.append(s.stop()))
    stopper.start()
    try:
        result, error = results.get(timeout=STUB_TIMEOUT_S + 20)
        assert isinstance(error, InferenceServerException) and error.message() == HELD, error
    finally:
        c.stop_stream()
        c.close()
        stopper.join()
    assert rc == [0], s.stderr()[-4000:]
