"""A server that may run on one CPU only (taskset, a one-CPU cpuset) starts one gRPC
completion-queue thread unless --grpc-infer-thread-count says otherwise (issue 21; the addendum
of docs/adr/0009-http-thread-count.md): two threads on one CPU hand gRPC's poller back and forth.
With one thread no request runs inline on it, so every inference goes through the model's
executor. Through Triton's own client: unary calls (sync and asyncio, many at once), a stream of
several requests, a model load and the health RPCs all work on that one thread.
"""

import asyncio
import os

import numpy as np
import pytest

from client_support import GrpcServer, grpcclient, grpcclient_aio
from helpers import repo
from one_cpu_support import simple_inputs, start_on_one_cpu
from stream_support import ResultStream

ONE = "gRPC: 1 completion-queue thread(s)"
TWO = "gRPC: 2 completion-queue thread(s)"
FLAGS = ["--log-verbose=1", "--model-control-mode=explicit", "--load-model=simple"]


@pytest.fixture(scope="module")
def pinned():
    s = start_on_one_cpu("client-one-cpu", FLAGS)
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def test_pinned_server_starts_one_completion_queue_thread(pinned):
    assert len(os.sched_getaffinity(pinned.proc.pid)) == 1
    pinned.wait_for_log(ONE)
    c = grpcclient.InferenceServerClient(pinned.target())
    assert c.is_server_live() and c.is_server_ready() and c.is_model_ready("simple")
    c.close()


def test_flag_overrides_the_one_cpu_default():
    s = start_on_one_cpu("client-one-cpu-flag", FLAGS + ["--grpc-infer-thread-count=2"])
    try:
        s.wait_for_log(TWO)
        assert ONE not in s.stderr()
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_unpinned_server_keeps_tritons_two_threads():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("this machine gives the tests one CPU")
    s = GrpcServer([repo("examples")], flags=FLAGS, name="client-two-cpus").start()
    try:
        s.wait_for_log(TWO)
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_many_unary_calls_at_once_on_one_thread(pinned):
    async def run():
        c = grpcclient_aio.InferenceServerClient(pinned.target())
        try:
            calls = [simple_inputs(grpcclient_aio, k) for k in range(32)]
            results = await asyncio.gather(*(c.infer("simple", inputs) for _, _, inputs in calls))
            return calls, results
        finally:
            await c.close()

    calls, results = asyncio.run(run())
    for (a, b, _), r in zip(calls, results):
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
    c = grpcclient.InferenceServerClient(pinned.target())
    a, b, inputs = simple_inputs(grpcclient, 7)
    np.testing.assert_array_equal(c.infer("simple", inputs).as_numpy("OUTPUT0"), a + b)
    c.close()


def test_stream_on_one_thread_answers_in_order(pinned):
    stream = ResultStream(pinned)
    try:
        for k in range(8):
            _, _, inputs = simple_inputs(grpcclient, k)
            stream.client.async_stream_infer("simple", inputs, request_id=str(k))
        got = stream.take(8)
    finally:
        stream.close()
    b = np.arange(16, dtype=np.int32).reshape(1, 16)
    for k, (result, error) in enumerate(got):
        assert error is None, error
        assert result.get_response().id == str(k)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), k + b)


def test_model_load_on_one_thread(pinned):
    c = grpcclient.InferenceServerClient(pinned.target())
    try:
        c.load_model("identity_fp32")
        assert c.is_model_ready("identity_fp32")
        x = np.arange(4, dtype=np.float32).reshape(1, 4)
        i = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
        i.set_data_from_numpy(x)
        np.testing.assert_array_equal(c.infer("identity_fp32", [i]).as_numpy("OUTPUT0"), x)
        c.unload_model("identity_fp32")
    finally:
        c.close()
