"""A Python model's optional `is_ready()` (sync or async, REFERENCE-2 §10.1): asked whenever
readiness is (HTTP and gRPC model ready, the repository index, pb_utils.is_model_ready). True:
ready; False: not ready, the index shows UNAVAILABLE with `Model '<inst>' is not ready
(user-defined check failed).`; a non-bool result: `is_ready() must return a boolean value`; an
exception: its Python text. A model asking its own readiness from `execute` gets the last answer
(the stub is busy with that execute) instead of waiting for itself."""

import asyncio
import queue

import numpy as np
import pytest

from client_support import GrpcServer, aio_clients, clients, grpcclient, httpclient
import python_models

MODELS = {
    "ready_true_py": '''
    def is_ready(self):
        return True
''',
    "ready_false_py": '''
    async def is_ready(self):
        await asyncio.sleep(0)
        return False
''',
    "ready_raise_py": '''
    def is_ready(self):
        raise RuntimeError("not yet")
''',
    "ready_nonbool_py": '''
    def is_ready(self):
        return 1
''',
    # Ready while the file "ready.flag" is in the model folder: asked again at every check.
    "ready_flag_py": '''
    def initialize(self, args):
        self.flag = os.path.join(args["model_repository"], "ready.flag")

    def is_ready(self):
        return os.path.exists(self.flag)
''',
    # No is_ready(): ready as any model.
    "ready_plain_py": "",
}

HEAD = '''
import asyncio
import os

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        # Its own readiness, asked while this execute runs: the last answer, no waiting.
        ready = pb_utils.is_model_ready(MODEL_NAME)
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", np.array([int(ready)], dtype=np.int32))]) for _ in requests]
'''

# Decoupled, async: its coroutine sends OUT = [k] for k = 0..5 over about 1 s in the background
# while readiness is asked: the instance reads those responses while it waits for is_ready()'s
# answer.
DECOUPLED = '''
import asyncio

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        for r in requests:
            sender = r.get_response_sender()
            for k in range(6):
                await asyncio.sleep(0.2)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor(
                    "OUT", np.array([k], dtype=np.int32))]),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if k == 5 else 0)

    async def is_ready(self):
        return True
'''

NOT_READY = {
    "ready_false_py": "Model 'ready_false_py_0_0' is not ready (user-defined check failed).",
    "ready_nonbool_py": "is_ready() must return a boolean value",
    "ready_raise_py": "RuntimeError: not yet",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("is_ready")
    for name, body in MODELS.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(python_models.config(
            name, [python_models.io("IN", "TYPE_INT32", [1])],
            [python_models.io("OUT", "TYPE_INT32", [1])],
            extra="instance_group [{ count: 1, kind: KIND_CPU }]"))
        code = HEAD.replace("MODEL_NAME", repr(name)) + body
        (root / name / "1" / "model.py").write_text(code)
    (root / "ready_flag_py" / "ready.flag").write_text("")
    (root / "ready_decoupled_py" / "1").mkdir(parents=True)
    (root / "ready_decoupled_py" / "config.pbtxt").write_text(python_models.config(
        "ready_decoupled_py", [python_models.io("IN", "TYPE_INT32", [1])],
        [python_models.io("OUT", "TYPE_INT32", [1])],
        extra="model_transaction_policy { decoupled: true }\n"
              "instance_group [{ count: 1, kind: KIND_CPU }]"))
    (root / "ready_decoupled_py" / "1" / "model.py").write_text(DECOUPLED)
    s = GrpcServer([str(root)], name="client-python-is-ready").start()
    s.root = root
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def index_of(kind, client):
    if kind == "http":
        models = client.get_model_repository_index()
    else:
        models = client.get_model_repository_index(as_json=True)["models"]
    return {m["name"]: m for m in models}


@pytest.mark.parametrize("model", ["ready_true_py", "ready_plain_py"])
def test_ready_models(server, model):
    for kind, c in clients(server):
        assert c.is_model_ready(model), kind
        entry = index_of(kind, c)[model]
        assert entry["state"] == "READY", (kind, entry)
        c.close()


@pytest.mark.parametrize("model", sorted(NOT_READY))
def test_not_ready_models(server, model):
    for kind, c in clients(server):
        assert not c.is_model_ready(model), kind
        entry = index_of(kind, c)[model]
        assert entry["state"] == "UNAVAILABLE", (kind, entry)
        assert NOT_READY[model] in entry["reason"], (kind, entry)
        c.close()


def test_not_ready_models_aio(server):
    async def run():
        for kind, c in aio_clients(server):
            try:
                for model in NOT_READY:
                    assert not await c.is_model_ready(model), (kind, model)
                assert await c.is_model_ready("ready_true_py"), kind
            finally:
                await c.close()
    asyncio.run(run())


def test_readiness_is_asked_at_every_check(server):
    flag = server.root / "ready_flag_py" / "ready.flag"
    for kind, c in clients(server):
        assert c.is_model_ready("ready_flag_py"), kind
        flag.unlink()
        assert not c.is_model_ready("ready_flag_py"), kind
        assert index_of(kind, c)["ready_flag_py"]["reason"] == (
            "Model 'ready_flag_py_0_0' is not ready (user-defined check failed).")
        flag.write_text("")
        assert c.is_model_ready("ready_flag_py"), kind
        assert index_of(kind, c)["ready_flag_py"]["state"] == "READY"
        c.close()


@pytest.mark.parametrize("model,expected", [("ready_true_py", 1), ("ready_false_py", 0)])
def test_own_readiness_from_execute_is_the_last_answer(server, model, expected):
    for kind, c in clients(server):
        assert c.is_model_ready(model) == bool(expected)  # the last answer
        mod = httpclient if kind == "http" else grpcclient
        t = mod.InferInput("IN", [1], "INT32")
        t.set_data_from_numpy(np.array([5], dtype=np.int32))
        out = c.infer(model, [t]).as_numpy("OUT")  # inference is not refused
        assert out.tolist() == [expected], (kind, out)
        c.close()


def test_readiness_asked_while_a_decoupled_coroutine_sends(server):
    results = queue.Queue()
    g = grpcclient.InferenceServerClient(server.target())
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    g.start_stream(callback=lambda result, error: results.put((result, error)))
    got, asked = [], 0
    try:
        t = grpcclient.InferInput("IN", [1], "INT32")
        t.set_data_from_numpy(np.array([1], dtype=np.int32))
        g.async_stream_infer("ready_decoupled_py", [t])
        while len(got) < 6:
            assert h.is_model_ready("ready_decoupled_py")
            assert g.is_model_ready("ready_decoupled_py")
            asked += 1
            try:
                result, error = results.get(timeout=0.05)
            except queue.Empty:
                continue
            assert error is None, error
            got.append(int(result.as_numpy("OUT")[0]))
    finally:
        g.stop_stream()
        g.close()
        h.close()
    assert got == [0, 1, 2, 3, 4, 5]
    assert asked >= 6
