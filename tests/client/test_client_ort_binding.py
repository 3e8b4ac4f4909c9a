"""The onnxruntime plugin's ways to run a model, through Triton's own client (HTTP and gRPC, sync
and asyncio): small fixed-shape executions through bindings made once per signature (the add/sub
model, alone and batched by the dynamic batcher), large fixed-shape outputs written in place (the
MLP batched past the staged size), outputs only ONNX Runtime can size (dynamic dims), BYTES, and a
graph output that is the graph input itself (ONNX Runtime does not write a preallocated buffer of
it). Every response must carry its own request's results, whichever path ran it."""

import asyncio
import os
import shutil
import sys

import numpy as np
import pytest

from client_support import (InferenceServerException, aio_clients, clients, module_of,
                            serve_repository)
from helpers import repo

pytest.importorskip("onnx")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "backends",
                                "onnxruntime", "testdata"))
import make_models  # noqa: E402

BATCHER = "\ndynamic_batching { max_queue_delay_microseconds: 200000 }\n"


def copy_model(root, source, name, extra_config=""):
    shutil.copytree(os.path.join(repo("examples"), source), os.path.join(str(root), name))
    path = os.path.join(str(root), name, "config.pbtxt")
    with open(path) as f:
        text = f.read().replace(f'name: "{source}"', f'name: "{name}"')
    with open(path, "w") as f:
        f.write(text + extra_config)


def write_passthrough(root):
    """X float [batch,4] -> X (the graph input itself) and R = relu(X); max_batch_size 8. The
    model is the onnxruntime plugin test's own (backends/onnxruntime/testdata/make_models.py)."""
    version = os.path.join(str(root), "passthrough", "1")
    os.makedirs(version)
    make_models.passthrough(version)
    os.rename(os.path.join(version, "passthrough.onnx"), os.path.join(version, "model.onnx"))
    with open(os.path.join(str(root), "passthrough", "config.pbtxt"), "w") as f:
        f.write('name: "passthrough"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
                'input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
                'output [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] },\n'
                '         { name: "R" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
                'instance_group [ { count: 1 kind: KIND_CPU } ]\n')


def write_repo(root):
    copy_model(root, "simple", "simple")
    copy_model(root, "simple", "simple_batched", BATCHER)
    copy_model(root, "mlp_fp32", "mlp_fp32")
    copy_model(root, "mlp_fp32", "mlp_batched", BATCHER)
    copy_model(root, "vardim_fp32", "vardim_fp32")
    copy_model(root, "simple_string", "simple_string")
    write_passthrough(root)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve_repository(tmp_path_factory, "ort-binding", write_repo, [], "ort-binding")


def tensor(module, name, array, binary=True):
    t = module.InferInput(name, list(array.shape), "BYTES" if array.dtype == object
                          else {np.int32: "INT32", np.float32: "FP32"}[array.dtype.type])
    if module.__name__.endswith("http"):
        t.set_data_from_numpy(array, binary_data=binary)
    else:
        t.set_data_from_numpy(array)
    return t


def simple_pair(seed, rows=1):
    a = (np.arange(16 * rows, dtype=np.int32) * seed).reshape(rows, 16)
    b = np.full((rows, 16), seed - 7, dtype=np.int32)
    return a, b


def test_simple_gives_each_request_its_own_sums(server):
    for name, c in clients(server):
        module = module_of(name)
        for seed in range(1, 6):
            for binary in (True, False):
                a, b = simple_pair(seed)
                result = c.infer("simple", [tensor(module, "INPUT0", a, binary),
                                            tensor(module, "INPUT1", b, binary)])
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
                np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
        # Only one output requested: the other is neither computed nor returned.
        a, b = simple_pair(9)
        result = c.infer("simple", [tensor(module, "INPUT0", a), tensor(module, "INPUT1", b)],
                         outputs=[module.InferRequestedOutput("OUTPUT1")])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
        assert result.as_numpy("OUTPUT0") is None


async def infer_all(c, module, model, requests, outputs=None):
    return await asyncio.gather(*[
        c.infer(model, [tensor(module, n, v) for n, v in inputs], outputs=outputs)
        for inputs in requests])


def test_batched_requests_get_their_own_rows(server):
    """Concurrent requests meet in the dynamic batcher: batches of several sizes of add/sub
    (staged bindings) and of the MLP (1 KiB a row: a batch of more than 16 rows is past the
    staged size, so its output is written in place; the 200 ms delay usually gathers all 24)."""
    rng = np.random.default_rng(7)
    mlp_rows = [rng.standard_normal((1, 256)).astype(np.float32) for _ in range(24)]
    # The reference: each row alone through the unbatched copy.
    for name, c in clients(server):
        module = module_of(name)
        alone = [c.infer("mlp_fp32", [tensor(module, "INPUT0", x)]).as_numpy("OUTPUT0")
                 for x in mlp_rows]
        break

    async def run():
        for name, c in aio_clients(server):
            module = module_of(name)
            try:
                for count in (3, 8, 13):
                    pairs = [simple_pair(seed) for seed in range(1, count + 1)]
                    results = await infer_all(c, module, "simple_batched",
                                              [[("INPUT0", a), ("INPUT1", b)] for a, b in pairs])
                    for (a, b), r in zip(pairs, results):
                        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
                        np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
                results = await infer_all(c, module, "mlp_batched",
                                          [[("INPUT0", x)] for x in mlp_rows])
                for expected, r in zip(alone, results):
                    np.testing.assert_allclose(r.as_numpy("OUTPUT0"), expected, rtol=1e-4,
                                               atol=1e-5)
            finally:
                await c.close()
    asyncio.run(run())
    for name, c in clients(server):
        stats = (c.get_inference_statistics("simple_batched") if name == "http" else
                 c.get_inference_statistics("simple_batched", as_json=True))
        sizes = {int(b["batch_size"]) for s in stats["model_stats"] for b in s["batch_stats"]}
        assert max(sizes) > 1, (name, sizes)  # the batcher did form batches


def test_dynamic_shapes_follow_each_request(server):
    for name, c in clients(server):
        module = module_of(name)
        for n in (1, 5, 300, 2):
            x = np.linspace(-1, 1, 2 * n, dtype=np.float32).reshape(2, n)
            result = c.infer("vardim_fp32", [tensor(module, "INPUT0", x)])
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x * 2)


def test_bytes_tensors(server):
    for name, c in clients(server):
        module = module_of(name)
        for seed in (1, 2):
            a, b = simple_pair(seed)
            sa = np.array([str(v).encode() for v in a.flatten()], dtype=object).reshape(1, 16)
            sb = np.array([str(v).encode() for v in b.flatten()], dtype=object).reshape(1, 16)
            result = c.infer("simple_string", [tensor(module, "INPUT0", sa),
                                               tensor(module, "INPUT1", sb)])
            got = [int(v) for v in result.as_numpy("OUTPUT0").flatten()]
            assert got == list((a + b).flatten()), (name, got)


def test_pass_through_output_is_the_input(server):
    for name, c in clients(server):
        module = module_of(name)
        for seed in (1, -2, 3):
            x = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3) * seed
            result = c.infer("passthrough", [tensor(module, "X", x)])
            np.testing.assert_array_equal(result.as_numpy("X"), x)
            np.testing.assert_array_equal(result.as_numpy("R"), np.maximum(x, 0))


def test_wrong_inputs_are_refused_and_the_model_keeps_serving(server):
    for name, c in clients(server):
        module = module_of(name)
        a, b = simple_pair(3)
        with pytest.raises(InferenceServerException) as e:  # datatype against the config
            c.infer("simple", [tensor(module, "INPUT0", a.astype(np.float32)),
                               tensor(module, "INPUT1", b)])
        assert "INPUT0" in e.value.message(), e.value.message()
        with pytest.raises(InferenceServerException) as e:  # shape against the config
            c.infer("simple", [tensor(module, "INPUT0", np.zeros((1, 8), np.int32)),
                               tensor(module, "INPUT1", np.zeros((1, 8), np.int32))])
        assert "INPUT0" in e.value.message(), e.value.message()
        result = c.infer("simple", [tensor(module, "INPUT0", a), tensor(module, "INPUT1", b)])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
