"""The request path after the httpcpu branch's allocation cuts (issue 21 goal 1), through Triton's
own clients: per-thread JSON parser and writer state reused from one request to the next (large
then small, errors in between), replies built inline on the connection's thread or handed over
from an executor, JSON and binary outputs from ONNX Runtime's preallocated output slots, and
requests queued behind a busy instance (which no longer wake its executor)."""

import asyncio
import threading

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient, identity_inputs)
from helpers import repo


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("examples")], name="client-request-path").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def simple_request(module, a, b, binary_out):
    inputs = [module.InferInput("INPUT0", list(a.shape), "INT32"),
              module.InferInput("INPUT1", list(b.shape), "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    if module is httpclient:
        outputs = [module.InferRequestedOutput("OUTPUT0", binary_data=binary_out),
                   module.InferRequestedOutput("OUTPUT1", binary_data=binary_out)]
    else:
        outputs = [module.InferRequestedOutput("OUTPUT0"), module.InferRequestedOutput("OUTPUT1")]
    return inputs, outputs


def test_large_small_and_failing_requests_alternate_on_one_connection(server):
    # 20000 floats make a JSON header of well over 64 KiB (the parser's kept copy is given back
    # after it); the failing requests leave the reused reader mid-document.
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    rng = np.random.default_rng(7)
    for i in range(6):
        large = rng.standard_normal((1, 20000)).astype(np.float32)
        small = rng.standard_normal((1, 4)).astype(np.float32)
        for values in (large, small):
            r = c.infer("identity_fp32", identity_inputs(httpclient, values, binary=False))
            np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), values)
        twice = identity_inputs(httpclient, small, False) + identity_inputs(httpclient, small,
                                                                            False)
        with pytest.raises(InferenceServerException) as e:
            c.infer("identity_fp32", twice)
        assert e.value.message() == "input 'INPUT0' already exists in request", i
        a = np.full((1, 16), i, dtype=np.int32)
        b = np.arange(16, dtype=np.int32).reshape(1, 16)
        inputs, outputs = simple_request(httpclient, a, b, binary_out=i % 2 == 1)
        r = c.infer("simple", inputs, outputs=outputs)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
    c.close()


@pytest.mark.parametrize("binary_out", [False, True])
def test_onnx_outputs_json_and_binary_over_both_protocols(server, binary_out):
    a = np.arange(32, dtype=np.int32).reshape(2, 16)
    b = np.full((2, 16), 3, dtype=np.int32)
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        for _ in range(3):
            inputs, outputs = simple_request(module, a, b, binary_out)
            r = c.infer("simple", inputs, outputs=outputs)
            np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
            np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
        # Only one output asked for: ORT fills one slot.
        inputs, outputs = simple_request(module, a, b, binary_out)
        r = c.infer("simple", inputs, outputs=outputs[1:])
        np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
        assert r.as_numpy("OUTPUT0") is None
        c.close()


def test_asyncio_clients_json_and_binary(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                module = httpclient if name == "http" else grpcclient
                for binary in (False, True):
                    values = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
                    r = await c.infer("identity_fp32", identity_inputs(module, values, binary))
                    np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), values)
            finally:
                await c.close()
    asyncio.run(run())


def test_concurrent_requests_queue_behind_the_busy_instance_and_all_complete(server):
    # 16 connections on one instance per model: most requests find the instance busy (run inline
    # on the other I/O thread or on its executor) and are queued without waking the executor.
    errors = []

    def worker(k):
        try:
            c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
            for i in range(40):
                values = np.full((1, 16), k * 1000 + i, dtype=np.float32)
                r = c.infer("identity_fp32", identity_inputs(httpclient, values, binary=k % 2 == 0))
                np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), values)
                a = np.full((1, 16), k, dtype=np.int32)
                b = np.full((1, 16), i, dtype=np.int32)
                inputs, outputs = simple_request(httpclient, a, b, binary_out=i % 2 == 0)
                r = c.infer("simple", inputs, outputs=outputs)
                np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
            c.close()
        except Exception as e:  # reported below: an assertion in a thread would be lost
            errors.append((k, repr(e)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "requests hung"
    assert errors == []
