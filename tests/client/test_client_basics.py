"""Triton's own client against the examples repository: health, metadata, config, inference over
HTTP and gRPC, sync and asyncio, JSON and binary tensors. The baseline every other tests/client
module builds on: if this fails, the harness (not a feature) is broken."""

import asyncio

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient)
from helpers import repo


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("examples")], name="client-basics").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def simple_inputs(module, binary):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    inputs = [module.InferInput("INPUT0", [1, 16], "INT32"),
              module.InferInput("INPUT1", [1, 16], "INT32")]
    if module is httpclient:
        inputs[0].set_data_from_numpy(a, binary_data=binary)
        inputs[1].set_data_from_numpy(b, binary_data=binary)
    else:
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
    return a, b, inputs


@pytest.mark.parametrize("binary", [False, True])
def test_health_metadata_and_infer(server, binary):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        assert c.is_server_live() and c.is_server_ready()
        assert c.is_model_ready("simple")
        meta = c.get_model_metadata("simple")
        inputs_meta = meta["inputs"] if name == "http" else [
            {"name": i.name} for i in meta.inputs]
        assert [i["name"] for i in inputs_meta] == ["INPUT0", "INPUT1"]
        a, b, inputs = simple_inputs(module, binary)
        result = c.infer("simple", inputs)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_unknown_model_is_an_exception(server):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        _, _, inputs = simple_inputs(module, False)
        with pytest.raises(InferenceServerException) as e:
            c.infer("no_such_model", inputs)
        assert "no_such_model" in e.value.message(), (name, e.value.message())


def test_asyncio_clients(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                module = httpclient if name == "http" else grpcclient
                assert await c.is_server_live()
                a, b, inputs = simple_inputs(module, True)
                result = await c.infer("simple", inputs)
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
            finally:
                await c.close()
    asyncio.run(run())
