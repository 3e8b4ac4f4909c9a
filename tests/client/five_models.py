"""bench/footprint.py's five-model repository (issue 21 goal 4) and helpers of the footprint tests."""

import os
import shutil
import time

import numpy as np
import pytest

from client_support import InferenceServerException, aio_clients

from helpers import repo

# (source under the generated test models, name): four ONNX Runtime sessions and one identity model
FIVE = [("examples", "simple"), ("examples", "simple_string"), ("examples", "vardim_fp32"),
        ("fixtures/features", "reshape_model"), ("examples", "identity_fp32")]


def copy_model(root, name):
    """Copies the model `name` of the five into the repository directory `root`."""
    src = next(s for s, n in FIVE if n == name)
    shutil.copytree(os.path.join(repo(src.split("/")[0]), *src.split("/")[1:], name),
                    os.path.join(root, name))


def make_five_repo(tmp_path_factory):
    """Copies the five models into a new temporary directory; returns its path."""
    root = str(tmp_path_factory.mktemp("five"))
    for _, name in FIVE:
        copy_model(root, name)
    return root


def simple_inputs(module):
    """`simple`'s two INT32 [1,16] inputs for a client module: (a, b, inputs)."""
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
              module.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return a, b, inputs


def check_simple(client, module):
    """One `simple` inference: OUTPUT0 = a + b, OUTPUT1 = a - b."""
    a, b, inputs = simple_inputs(module)
    result = client.infer("simple", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def wait_for(predicate, timeout=10.0):
    """Polls `predicate` until it holds or `timeout` seconds passed; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


async def aio_loads_fail(server, model, text):
    """Loading `model` through both asyncio clients fails with an error containing `text`."""
    for name, c in aio_clients(server):
        try:
            with pytest.raises(InferenceServerException) as e:
                await c.load_model(model)
            assert text in e.value.message(), (name, e.value.message())
        finally:
            await c.close()
