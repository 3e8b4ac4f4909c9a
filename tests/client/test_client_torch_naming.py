"""Issue 13 item 9 through Triton's own client: a TorchScript model whose configured tensor names
are neither forward's argument names nor `<name>__<index>` loads and binds them in configuration
order (Triton's STRICT_CONFIG_ORDERING fallback) with Triton's warning in the log; where the counts
disagree the load fails with a clear error."""

import asyncio

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient)
from helpers import repo

FIRST = np.array([[5, 7, 9]], np.float32)
SECOND = np.array([[1, 2, 4]], np.float32)


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("fixtures", "torch")],
                   ["--model-control-mode=explicit", "--load-model=config_order_torch"],
                   name="client-torch-naming").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


@pytest.fixture(scope="module")
def broken_server():
    s = GrpcServer([repo("fixtures", "torch_broken")], ["--model-control-mode=explicit"],
                   name="client-torch-naming-broken").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def order_inputs(module):
    inputs = [module.InferInput("first", list(FIRST.shape), "FP32"),
              module.InferInput("second", list(SECOND.shape), "FP32")]
    inputs[0].set_data_from_numpy(FIRST)
    inputs[1].set_data_from_numpy(SECOND)
    return inputs


def check_order_result(result):
    # forward(minuend, subtrahend) -> (minuend - subtrahend, minuend * subtrahend): `first` is
    # the first argument and `difference` the first returned value, by configuration order only.
    np.testing.assert_array_equal(result.as_numpy("difference"), FIRST - SECOND)
    np.testing.assert_array_equal(result.as_numpy("product"), FIRST * SECOND)


def test_names_matching_neither_convention_load_in_configuration_order(server):
    server.wait_for_log(
        "input 'first' or previous input(s) are neither an input argument to the model "
        "'config_order_torch' nor do they follow the <name>__<index> naming convention. Falling "
        "back to enforcing strict ordering from model configuration.")
    server.wait_for_log(
        "output 'difference' or previous output(s) of the model 'config_order_torch' do not "
        "follow the <name>__<index> naming convention. Falling back to enforcing strict ordering "
        "from model configuration.")
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        assert c.is_model_ready("config_order_torch"), name
        check_order_result(c.infer("config_order_torch", order_inputs(module)))


def test_configuration_order_with_asyncio_clients(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                module = httpclient if name == "http" else grpcclient
                check_order_result(await c.infer("config_order_torch", order_inputs(module)))
            finally:
                await c.close()
    asyncio.run(run())


@pytest.mark.parametrize("model,message", [
    ("unnamed_inputs_count",
     "unable to load model 'unnamed_inputs_count', configuration expects 3 inputs, model "
     "provides 2"),
    ("unnamed_outputs_count",
     "unable to load model 'unnamed_outputs_count', output 'product' refers to output index 2, "
     "but the model's forward returns 2 value(s)"),
])
def test_configuration_order_with_disagreeing_counts_fails_the_load(broken_server, model,
                                                                     message):
    for name, c in clients(broken_server):
        with pytest.raises(InferenceServerException) as e:
            c.load_model(model)
        assert message in e.value.message(), (name, e.value.message())
        assert not c.is_model_ready(model), name
