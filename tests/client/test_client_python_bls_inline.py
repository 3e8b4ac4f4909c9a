"""Issue 18, BLS latency: a BLS call whose called model has an idle instance runs on the calling
instance's thread (ADR 0003's inline run, granted by the core's BLS gate), so it crosses no
thread; a chain of BLS calls (a Python model calling a Python model that calls a C++ model) runs
that way end to end, through Triton's own client."""

import asyncio
import shutil

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient)
from helpers import repo

# Calls NEXT with its INPUT0 and answers NEXT's OUTPUT0 plus one (or NEXT's error).
CALLER = '''import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0")
            res = pb_utils.InferenceRequest(model_name="NEXT", inputs=[x],
                                            requested_output_names=["OUTPUT0"]).exec()
            if res.has_error():
                out.append(pb_utils.InferenceResponse(error=res.error()))
                continue
            y = pb_utils.get_output_tensor_by_name(res, "OUTPUT0").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", y + 1)]))
        return out
'''

CALLS = 5


def add_caller(root, name, next_model):
    shutil.copytree(repo("examples", "identity_fp32"), root / name)
    cfg = root / name / "config.pbtxt"
    cfg.write_text(cfg.read_text().replace('name: "identity_fp32"', f'name: "{name}"')
                   .replace('backend: "identity"', 'backend: "python"'))
    (root / name / "1").mkdir(exist_ok=True)
    (root / name / "1" / "model.py").write_text(CALLER.replace("NEXT", next_model))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("python_bls_inline")
    shutil.copytree(repo("examples", "identity_fp32"), root / "identity_fp32")
    add_caller(root, "middle_py", "identity_fp32")
    add_caller(root, "outer_py", "middle_py")
    add_caller(root, "broken_py", "no_such_model")
    s = GrpcServer([str(root)], ["--backend-config=python,stub-timeout-seconds=10"],
                   name="client-python-bls-inline").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def inputs_of(module, x):
    i = module.InferInput("INPUT0", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    return [i]


def module_of(name):
    return httpclient if name == "http" else grpcclient


def queue_stats(c, name, model):
    """(success count, queue ns) of `model` from the statistics extension."""
    if name == "http":
        stats = c.get_inference_statistics(model)["model_stats"][0]["inference_stats"]
    else:
        stats = c.get_inference_statistics(model, as_json=True)["model_stats"][0][
            "inference_stats"]
    return int(stats["success"].get("count", 0)), int(stats["queue"].get("ns", 0))


def test_a_chain_of_bls_calls_answers(server):
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    for name, c in clients(server):
        out = c.infer("outer_py", inputs_of(module_of(name), x)).as_numpy("OUTPUT0")
        np.testing.assert_array_equal(out, x + 2)


def test_a_chain_of_bls_calls_answers_aio(server):
    x = np.full((2, 16), 3, dtype=np.float32)

    async def run():
        for name, c in aio_clients(server):
            try:
                result = await c.infer("outer_py", inputs_of(module_of(name), x))
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x + 2)
            finally:
                await c.close()
    asyncio.run(run())


def test_bls_calls_to_idle_models_run_without_queueing(server):
    """An inline run starts computing at once: the called models record no queue time (queued
    requests wait for an executor thread to wake, which the statistics count)."""
    x = np.ones((1, 16), dtype=np.float32)
    for name, c in clients(server):
        before = {m: queue_stats(c, name, m) for m in ("middle_py", "identity_fp32")}
        for _ in range(CALLS):
            c.infer("outer_py", inputs_of(module_of(name), x))
        for m in ("middle_py", "identity_fp32"):
            count, queue_ns = queue_stats(c, name, m)
            assert count == before[m][0] + CALLS, (m, count, before[m])
            assert queue_ns == before[m][1], (m, queue_ns, before[m])


def test_bls_call_to_a_missing_model_is_the_callers_error(server):
    x = np.ones((1, 16), dtype=np.float32)
    for name, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            c.infer("broken_py", inputs_of(module_of(name), x))
        assert e.value.message() == "Request for unknown model: 'no_such_model' is not found"
        assert e.value.status() in ("404", "StatusCode.NOT_FOUND"), e.value.status()
