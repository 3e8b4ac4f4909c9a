"""Issue 18, round 5: the server's BLS gate no longer copies a call's inputs (backend API v8
InferCall::inputs_owner). The called request reads the bytes where the Python instance got them:
the frame's payload (an array the stub made) or the stub's shared-memory pool (the execute input
passed on as it is), which the instance pins for as long as the called request lives. Checked
through Triton's own client: both kinds, small and 1 MiB (the pool grows), HTTP and gRPC, sync
and aio; and a called request still queued when the caller's stub is killed and restarted (its
pool gone) reads the caller's bytes intact."""

import asyncio
import os
import re
import signal
import threading

import numpy as np
import pytest
import requests

from cancel_support import wait_for
from client_support import (InferenceServerException, aio_clients, clients, module_of,
                            serve_repository)
from python_models import config

# Echoes F as O_F and saves it to <dir>/<model>.npy (written whole, then renamed), so a test can
# check the bytes a called request read after its caller was gone.
RECORD = '''
import os
import numpy as np
import triton_python_backend_utils as pb_utils

DIR = DIR_VALUE


class TritonPythonModel:
    def initialize(self, args):
        self.path = os.path.join(DIR, args["model_name"] + ".npy")

    def execute(self, requests):
        out = []
        for r in requests:
            f = pb_utils.get_input_tensor_by_name(r, "F").as_numpy()
            with open(self.path + ".tmp", "wb") as file:
                np.save(file, f)
            os.replace(self.path + ".tmp", self.path)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("O_F", f)]))
        return out
'''

# Calls CALLED with F: MODE 1 as it is (a view of the pool), MODE 2 a copy the stub made (its
# bytes cross the socket); answers the called model's O_F and its own PID. MODE 0 answers F and
# the PID without a call; MODE 3 is MODE 1 after writing <dir>/calling.
CALLER = '''
import os
import numpy as np
import triton_python_backend_utils as pb_utils

DIR = DIR_VALUE


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            f = pb_utils.get_input_tensor_by_name(r, "F")
            mode = int(pb_utils.get_input_tensor_by_name(r, "MODE").as_numpy()[0])
            pid = pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))
            if mode == 0:
                out.append(pb_utils.InferenceResponse([pid, pb_utils.Tensor("O_F", f.as_numpy())]))
                continue
            if mode == 2:
                f = pb_utils.Tensor("F", np.array(f.as_numpy()))
            if mode == 3:
                open(os.path.join(DIR, "calling"), "w").close()
            res = pb_utils.InferenceRequest(model_name=CALLED, inputs=[f],
                                            requested_output_names=["O_F"]).exec()
            if res.has_error():
                raise pb_utils.TritonModelException(res.error().message())
            out.append(pb_utils.InferenceResponse(
                [pid, pb_utils.get_output_tensor_by_name(res, "O_F")]))
        return out
'''

# record_late_py's requests wait this long in its dynamic batcher's queue: longer than
# stub-timeout-seconds, so that its caller gives up first (and, its stub killed, has its stub and
# pool replaced).
QUEUE_DELAY_US = 9_000_000


def tensor(name, dtype, dims="-1"):
    return f'{{ name: "{name}" data_type: {dtype} dims: [ {dims} ] }}'


def record_dir(root):
    return root.parent / f"{root.name}_record"


def write(root):
    record_dir(root).mkdir()
    mode = '{ name: "MODE" data_type: TYPE_INT32 dims: [ 1 ] }'
    models = {
        "record_py": (config("record_py", [tensor("F", "TYPE_FP32")],
                             [tensor("O_F", "TYPE_FP32")], max_batch_size=8), RECORD),
        "record_late_py": (config(
            "record_late_py", [tensor("F", "TYPE_FP32")], [tensor("O_F", "TYPE_FP32")],
            max_batch_size=8,
            extra=f"dynamic_batching {{ max_queue_delay_microseconds: {QUEUE_DELAY_US} "
                  "preferred_batch_size: [ 8 ] }"), RECORD),
        "bls_no_copy_py": (config(
            "bls_no_copy_py", [tensor("F", "TYPE_FP32", "-1, -1"), mode],
            [tensor("O_F", "TYPE_FP32", "-1, -1"), tensor("PID", "TYPE_INT64", "1")]),
            CALLER.replace("CALLED", repr("record_py"))),
        "bls_late_py": (config(
            "bls_late_py", [tensor("F", "TYPE_FP32", "-1, -1"), mode],
            [tensor("O_F", "TYPE_FP32", "-1, -1"), tensor("PID", "TYPE_INT64", "1")]),
            CALLER.replace("CALLED", repr("record_late_py")))}
    for name, (cfg, code) in models.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(cfg)
        (root / name / "1" / "model.py").write_text(
            code.replace("DIR_VALUE", repr(str(record_dir(root)))))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve_repository(tmp_path_factory, "python_bls_no_copy", write,
                                ["--backend-config=python,stub-timeout-seconds=5"],
                                "client-python-bls-no-copy")


def pattern(n, seed):
    return ((np.arange(n, dtype=np.float32) * 0.37 + seed) % 1.0).astype(np.float32).reshape(1, n)


def inputs_of(module, f, mode):
    inputs = []
    for name, data, dtype in (("F", f, "FP32"), ("MODE", np.array([mode], dtype=np.int32),
                                                 "INT32")):
        t = module.InferInput(name, list(data.shape), dtype)
        t.set_data_from_numpy(data)
        inputs.append(t)
    return inputs


# 16 floats and 262,144 (1 MiB: the pool grows); from the pool (1) and from the stub (2).
@pytest.mark.parametrize("n", [16, 262_144])
@pytest.mark.parametrize("mode", [1, 2])
def test_bls_inputs_reach_the_called_model_byte_for_byte(server, n, mode):
    for name, c in clients(server):
        f = pattern(n, mode)
        result = c.infer("bls_no_copy_py", inputs_of(module_of(name), f, mode))
        np.testing.assert_array_equal(result.as_numpy("O_F"), f)


def test_aio_clients_bls_inputs_reach_the_called_model(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                for mode in (1, 2):
                    f = pattern(262_144, 0.5)
                    result = await c.infer("bls_no_copy_py", inputs_of(module_of(name), f, mode))
                    np.testing.assert_array_equal(result.as_numpy("O_F"), f)
            finally:
                await c.close()
    asyncio.run(run())


def pending(server, model):
    """nv_inference_pending_request_count of `model` (its requests waiting in its queue)."""
    text = requests.get(server.metrics_url(), timeout=10).text
    m = re.search(r'^nv_inference_pending_request_count\{model="' + model + r'",[^}]*\} (\S+)$',
                  text, re.M)
    return int(float(m.group(1))) if m else 0


def test_a_called_request_outlives_its_callers_stub_and_pool(server):
    record = record_dir(server.root) / "record_late_py.npy"
    calling = record_dir(server.root) / "calling"
    for name, c in clients(server):
        module = module_of(name)
        record.unlink(missing_ok=True)
        calling.unlink(missing_ok=True)
        pid = int(c.infer("bls_late_py", inputs_of(module, pattern(4, 0), 0)).as_numpy("PID")[0])
        # 1 MiB from the caller's pool, which grows for it. The call waits in record_late_py's
        # queue while the caller's stub is killed: when the caller's execution ends (at its stub
        # timeout), its stub and pool are replaced, and the call runs afterwards on the bytes it
        # was given.
        f = pattern(262_144, 0.25)
        errors = []

        def call():  # a client of its own: the HTTP client stays on the thread that made it
            url = f"127.0.0.1:{server.port}" if name == "http" else server.target()
            try:
                module.InferenceServerClient(url).infer("bls_late_py", inputs_of(module, f, 3))
            except InferenceServerException as e:
                errors.append(e.message())
        caller = threading.Thread(target=call)
        caller.start()
        wait_for(calling.exists, "the BLS call")
        wait_for(lambda: pending(server, "record_late_py") == 1, "the call in the queue")
        os.kill(pid, signal.SIGKILL)
        caller.join(timeout=30)
        assert errors and "Stub process is not healthy." in errors[0], errors
        wait_for(record.exists, "the called request", timeout=30)
        np.testing.assert_array_equal(np.load(record), f)
        assert c.is_server_live()
        wait_for(lambda: c.is_model_ready("bls_late_py"), "the restarted stub", timeout=30)
        g = pattern(1000, 0.75)
        np.testing.assert_array_equal(
            c.infer("bls_no_copy_py", inputs_of(module, g, 1)).as_numpy("O_F"), g)
