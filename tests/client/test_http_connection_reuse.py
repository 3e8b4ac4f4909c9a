"""Requests that follow each other on one kept-alive connection, through Triton's own clients.

The HTTP server reuses a connection's request object (its target and header strings keep their
storage) and parses header fields into a 4 KiB per-connection arena (issue 21, fewer allocations
per request). Nothing of one request may leak into the next: a binary request's
Inference-Header-Content-Length or a gzip request's Content-Encoding must not apply to the plain
JSON request after it, and a header larger than the arena (or many fields) still works, as does
the request after it. gRPC runs the same sequence (its metadata takes another path) so both
protocols stay alike."""

import asyncio

import numpy as np
import pytest

from client_support import GrpcServer, aio_clients, clients, grpcclient, httpclient
from helpers import repo


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("examples")], name="client-connection-reuse").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def inputs(module, binary, offset):
    a = (np.arange(16, dtype=np.int32) + offset).reshape(1, 16)
    b = np.full((1, 16), offset, dtype=np.int32)
    ins = [module.InferInput("INPUT0", [1, 16], "INT32"),
           module.InferInput("INPUT1", [1, 16], "INT32")]
    for i, v in zip(ins, (a, b)):
        if module is httpclient:
            i.set_data_from_numpy(v, binary_data=binary)
        else:
            i.set_data_from_numpy(v)
    return a, b, ins


# (binary tensor data, request compression, extra headers) in the order sent on one connection.
SEQUENCE = [
    (True, None, {}),
    (False, None, {}),  # no Inference-Header-Content-Length left from the binary request
    (False, "gzip", {}),
    (False, None, {}),  # no Content-Encoding left from the gzip request
    (False, None, {"x-padding": "p" * 6000}),  # larger than the header arena
    (False, None, {f"x-field-{i}": "v" * 60 for i in range(40)}),  # many fields, together over the arena
    (True, None, {}),
    (False, None, {"x-short": "1"}),
]


def check(result, a, b):
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_consecutive_requests_share_nothing(server):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        for round_ in range(2):  # the second round reuses storage the first one grew
            for step, (binary, compression, headers) in enumerate(SEQUENCE):
                a, b, ins = inputs(module, binary, step + 10 * round_)
                kwargs = {"headers": dict(headers)}  # the HTTP client adds to it
                if module is httpclient and compression:
                    kwargs["request_compression_algorithm"] = compression
                check(c.infer("simple", ins, **kwargs), a, b)
        c.close()


def test_consecutive_requests_share_nothing_asyncio(server):
    async def run():
        for name, c in aio_clients(server):
            module = httpclient if name == "http" else grpcclient
            try:
                for step, (binary, compression, headers) in enumerate(SEQUENCE):
                    a, b, ins = inputs(module, binary, step)
                    kwargs = {"headers": dict(headers)}  # the HTTP client adds to it
                    if module is httpclient and compression:
                        kwargs["request_compression_algorithm"] = compression
                    check(await c.infer("simple", ins, **kwargs), a, b)
            finally:
                await c.close()

    asyncio.run(run())
