"""HTTP I/O threads on a server that may run on one CPU only (issue 21; the second addendum of
docs/adr/0009-http-thread-count.md). Measured there, one HTTP I/O thread on one CPU costs 9-22%
more CPU per request than two (it may not run a model inline, ADR 0003, so every inference pays
the hand-off to the model's executor and back), so the default stays 2 on one CPU, and an
explicit --http-thread-count=1 is obeyed. Through Triton's own clients: a pinned server runs two
`http-io` threads by default; with the flag it runs one, and HTTP (sync and asyncio, many calls at
once) and gRPC inferences, health and a model load all work on it.
"""

import asyncio
import os

import numpy as np
import pytest

from client_support import (InferenceServerException, clients, grpcclient, httpclient,
                            httpclient_aio)
from one_cpu_support import simple_inputs, start_on_one_cpu

FLAGS = ["--model-control-mode=explicit", "--load-model=simple"]


def io_threads(pid):
    """How many of the process's threads are named `http-io` (src/common/thread_name.h)."""
    n = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                n += f.read().strip() == "http-io"
        except FileNotFoundError:
            pass  # a thread that just ended
    return n


@pytest.fixture(scope="module")
def one_thread():
    s = start_on_one_cpu("client-http-one-thread", FLAGS + ["--http-thread-count=1"])
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def check_simple(module, client, k):
    a, b, inputs = simple_inputs(module, k)
    r = client.infer("simple", inputs)
    np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)


def test_pinned_server_keeps_two_io_threads_by_default():
    s = start_on_one_cpu("client-http-one-cpu", FLAGS)
    try:
        assert len(os.sched_getaffinity(s.proc.pid)) == 1
        assert io_threads(s.proc.pid) == 2
        for name, c in clients(s):
            module = httpclient if name == "http" else grpcclient
            for k in range(4):
                check_simple(module, c, k)
            c.close()
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_explicit_one_thread_is_obeyed_on_one_cpu(one_thread):
    assert len(os.sched_getaffinity(one_thread.proc.pid)) == 1
    assert io_threads(one_thread.proc.pid) == 1


def test_sync_clients_on_one_io_thread(one_thread):
    for name, c in clients(one_thread):
        module = httpclient if name == "http" else grpcclient
        assert c.is_server_live() and c.is_server_ready() and c.is_model_ready("simple")
        for k in range(8):  # one keep-alive connection: every request after a reply
            check_simple(module, c, k)
        c.close()


def test_many_http_calls_at_once_on_one_io_thread(one_thread):
    async def run():
        c = httpclient_aio.InferenceServerClient(f"127.0.0.1:{one_thread.port}")
        try:
            calls = [simple_inputs(httpclient_aio, k) for k in range(32)]
            results = await asyncio.gather(*(c.infer("simple", inputs) for _, _, inputs in calls),
                                           c.is_server_ready())
            return calls, results
        finally:
            await c.close()

    calls, results = asyncio.run(run())
    assert results[-1] is True
    for (a, b, _), r in zip(calls, results[:-1]):
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)


def test_model_load_and_errors_on_one_io_thread(one_thread):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{one_thread.port}")
    try:
        c.load_model("identity_fp32")
        assert c.is_model_ready("identity_fp32")
        x = np.arange(4, dtype=np.float32).reshape(1, 4)
        i = httpclient.InferInput("INPUT0", [1, 4], "FP32")
        i.set_data_from_numpy(x)
        np.testing.assert_array_equal(c.infer("identity_fp32", [i]).as_numpy("OUTPUT0"), x)
        c.unload_model("identity_fp32")
        with pytest.raises(InferenceServerException, match="unknown model"):  # the connection stays usable
            c.infer("identity_fp32", [i])
        check_simple(httpclient, c, 3)
    finally:
        c.close()
