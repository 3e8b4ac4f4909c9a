"""Issue 18, BLS latency: a BLS call, its answers and a stream's "next" are binary frames
(backends/python/bls_frames.h), and a BLS input that still is a view of the stub's shared-memory
pool is sent by its place there instead of its bytes. Checked through Triton's own client: many
tensors of every kind (large ones that grow the pool, BYTES, derived and non-contiguous arrays,
an answer's tensor passed on to the next call as it is or renamed), error answers, and a stub
restarted after it was killed."""

import asyncio
import os
import queue
import signal

import numpy as np
import pytest

from cancel_support import wait_for
from client_support import (InferenceServerException, aio_clients, clients, grpcclient,
                            module_of, serve_repository)
from python_models import config

# Answers every input X as output O_X (a view of its input: no copy in the stub).
ECHO = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("O_" + t.name(), t.as_numpy()) for t in r.inputs()])
            for r in requests]
'''

# Calls echo_py with its F (as it is: its place in the pool), S (BYTES) and arrays derived from
# F; passes echo_py's O_F on to echo2_py as it is (CHAIN) and, renamed, to echo_py (RENAMED).
# MODE 1: calls a model that does not exist; MODE 2: gives echo_py an input of the wrong type.
# The caller's own errors and echo_py's come back as the response's error.
CALLER = '''
import os
import numpy as np
import triton_python_backend_utils as pb_utils

NAMES = ["O_F", "O_G", "O_S", "O_I8", "O_I64", "O_H", "O_B"]


def call(model, inputs, names):
    res = pb_utils.InferenceRequest(model_name=model, inputs=inputs,
                                    requested_output_names=names).exec()
    if res.has_error():
        raise pb_utils.TritonModelException(
            f"code {res.error().code()}: {res.error().message()}")
    return [pb_utils.get_output_tensor_by_name(res, n) for n in names]


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            f = pb_utils.get_input_tensor_by_name(r, "F")
            s = pb_utils.get_input_tensor_by_name(r, "S")
            mode = int(pb_utils.get_input_tensor_by_name(r, "MODE").as_numpy()[0])
            x = f.as_numpy()
            inputs = [f, pb_utils.Tensor("G", x[::-1] * 2), s,
                      pb_utils.Tensor("I8", (x * 100 % 100).astype(np.int8)),
                      pb_utils.Tensor("I64", np.arange(x.size, dtype=np.int64) * 3),
                      pb_utils.Tensor("H", x.astype(np.float16)),
                      pb_utils.Tensor("B", x > 0.5)]
            model = "echo_py"
            if mode == 1:
                model = "no_such_model"
            if mode == 2:
                inputs[1] = pb_utils.Tensor("G", x.astype(np.float64))
            try:
                outputs = call(model, inputs, NAMES)
                o_f = outputs[0]
                chain = call("echo2_py", [o_f], ["O_O_F"])[0]
                renamed = call("echo_py", [pb_utils.Tensor("F", o_f.as_numpy())], ["O_F"])[0]
            except pb_utils.TritonModelException as e:
                out.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e))))
                continue
            pid = pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))
            out.append(pb_utils.InferenceResponse(
                outputs + [pb_utils.Tensor("CHAIN", chain.as_numpy()),
                           pb_utils.Tensor("RENAMED", renamed.as_numpy()), pid]))
        return out
'''

# Decoupled: a thread sends the input F back twice as O_F (a view of the pool, so by its place),
# after execute returned; the block stays claimed until the FINAL.
STREAM_ECHO = '''
import threading
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "F").as_numpy()
            sender = r.get_response_sender()

            def run(x=x, sender=sender):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("O_F", x)]))
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("O_F", x[::2])]),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            threading.Thread(target=run).start()
        return None
'''

TYPES = {"F": "TYPE_FP32", "G": "TYPE_FP32", "S": "TYPE_STRING", "I8": "TYPE_INT8",
         "I64": "TYPE_INT64", "H": "TYPE_FP16", "B": "TYPE_BOOL"}


def tensor(name, dtype, optional=False):
    return (f'{{ name: "{name}" data_type: {dtype} dims: [ -1 ]'
            f'{" optional: true" if optional else ""} }}')


def write(root):
    models = {
        "echo_py": (config("echo_py", [tensor(n, t, True) for n, t in TYPES.items()],
                           [tensor("O_" + n, t) for n, t in TYPES.items()]), ECHO),
        "echo2_py": (config("echo2_py", [tensor("O_F", "TYPE_FP32")],
                            [tensor("O_O_F", "TYPE_FP32")]), ECHO),
        "bls_frames_py": (config(
            "bls_frames_py",
            [tensor("F", "TYPE_FP32"), tensor("S", "TYPE_STRING"),
             '{ name: "MODE" data_type: TYPE_INT32 dims: [ 1 ] }'],
            [tensor("O_" + n, t) for n, t in TYPES.items()] +
            [tensor("CHAIN", "TYPE_FP32"), tensor("RENAMED", "TYPE_FP32"),
             '{ name: "PID" data_type: TYPE_INT64 dims: [ 1 ] }']), CALLER)}
    models["stream_echo_py"] = (config(
        "stream_echo_py", [tensor("F", "TYPE_FP32")], [tensor("O_F", "TYPE_FP32")],
        extra="model_transaction_policy { decoupled: true }"), STREAM_ECHO)
    for name, (cfg, code) in models.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(cfg)
        (root / name / "1" / "model.py").write_text(code)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve_repository(tmp_path_factory, "python_bls_frames", write,
                                ["--backend-config=python,stub-timeout-seconds=20"],
                                "client-python-bls-frames")


STRINGS = np.array([b"", b"a", "\u00e9t\u00e9".encode(), bytes(range(256)), b"x" * 70000],
                   dtype=np.object_)


def request(module, n, mode=0, strings=STRINGS):
    f = ((np.arange(n, dtype=np.float32) * 0.37) % 1.0).astype(np.float32)
    inputs = []
    for name, data, dtype in (("F", f, "FP32"), ("S", strings, "BYTES"),
                              ("MODE", np.array([mode], dtype=np.int32), "INT32")):
        t = module.InferInput(name, list(data.shape), dtype)
        t.set_data_from_numpy(data)
        inputs.append(t)
    outputs = [module.InferRequestedOutput(n) for n in
               ["O_F", "O_G", "O_S", "O_I8", "O_I64", "O_H", "O_B", "CHAIN", "RENAMED", "PID"]]
    return f, inputs, outputs


def check(result, f, strings=STRINGS):
    np.testing.assert_array_equal(result.as_numpy("O_F"), f)
    np.testing.assert_array_equal(result.as_numpy("O_G"), f[::-1] * 2)
    assert list(result.as_numpy("O_S")) == list(strings)
    np.testing.assert_array_equal(result.as_numpy("O_I8"), (f * 100 % 100).astype(np.int8))
    np.testing.assert_array_equal(result.as_numpy("O_I64"), np.arange(f.size, dtype=np.int64) * 3)
    np.testing.assert_array_equal(result.as_numpy("O_H"), f.astype(np.float16))
    np.testing.assert_array_equal(result.as_numpy("O_B"), f > 0.5)
    np.testing.assert_array_equal(result.as_numpy("CHAIN"), f)
    np.testing.assert_array_equal(result.as_numpy("RENAMED"), f)
    return int(result.as_numpy("PID")[0])


# 16 floats: every tensor small; 300,000 (1.2 MB): past the pool's 1 MiB, which grows, and large
# enough for a renamed view to be found in the pool by its address.
@pytest.mark.parametrize("n", [16, 300_000])
def test_many_tensors_of_every_kind_round_trip_byte_for_byte(server, n):
    for name, c in clients(server):
        f, inputs, outputs = request(module_of(name), n)
        check(c.infer("bls_frames_py", inputs, outputs=outputs), f)


def test_bytes_tensors_of_every_size(server):
    for name, c in clients(server):
        for strings in (np.array([b""], dtype=np.object_),
                        np.array([b"\x00" * 5, b"z"] * 100, dtype=np.object_)):
            f, inputs, outputs = request(module_of(name), 4, strings=strings)
            check(c.infer("bls_frames_py", inputs, outputs=outputs), f, strings)


def test_aio_clients_round_trip(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                f, inputs, outputs = request(module_of(name), 70_000)
                check(await c.infer("bls_frames_py", inputs, outputs=outputs), f)
            finally:
                await c.close()
    asyncio.run(run())


def test_error_answers_carry_the_called_models_error_and_code(server):
    for name, c in clients(server):
        _, inputs, outputs = request(module_of(name), 16, mode=1)
        with pytest.raises(InferenceServerException) as e:
            c.infer("bls_frames_py", inputs, outputs=outputs)
        # NOT_FOUND is pb_utils.TritonError code 2 (Triton's text for an unknown model).
        assert "code 2: Request for unknown model: 'no_such_model' is not found" in \
            e.value.message()
        _, inputs, outputs = request(module_of(name), 16, mode=2)
        with pytest.raises(InferenceServerException) as e:
            c.infer("bls_frames_py", inputs, outputs=outputs)
        assert "code 3: " in e.value.message()  # INVALID_ARG
        assert ("inference input 'G' data-type is 'FP64', but model 'echo_py' expects 'FP32'"
                in e.value.message())
        f, inputs, outputs = request(module_of(name), 16)  # the instance lives on
        check(c.infer("bls_frames_py", inputs, outputs=outputs), f)


def test_a_restarted_stub_makes_bls_calls_with_its_new_pool(server):
    name, c = next(iter(clients(server)))
    f, inputs, outputs = request(module_of(name), 300_000)
    pid = check(c.infer("bls_frames_py", inputs, outputs=outputs), f)
    os.kill(pid, signal.SIGKILL)
    # The instance's watcher reaps it (the version is then not ready) and starts a new stub.
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), "the killed stub reaped")
    wait_for(lambda: c.is_model_ready("bls_frames_py"), "the restarted stub")
    assert check(c.infer("bls_frames_py", inputs, outputs=outputs), f) != pid


def test_a_decoupled_model_sends_views_of_the_pool_after_execute_returned(server):
    c = grpcclient.InferenceServerClient(server.target())
    results = queue.Queue()
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        for n in (16, 300_000):
            f = ((np.arange(n, dtype=np.float32) * 0.37) % 1.0).astype(np.float32)
            t = grpcclient.InferInput("F", [n], "FP32")
            t.set_data_from_numpy(f)
            c.async_stream_infer("stream_echo_py", [t])
            for want in (f, f[::2]):
                result, error = results.get(timeout=20)
                assert error is None, error
                np.testing.assert_array_equal(result.as_numpy("O_F"), want)
    finally:
        c.stop_stream()
