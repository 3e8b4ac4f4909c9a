"""Queue-policy timeouts and Triton's scheduler test hooks, through Triton's own client (issue 13
items 6 and 11): a REJECT timeout is an InferenceServerException with Triton's text and status
(HTTP 503, gRPC UNAVAILABLE) raised while the only instance is still busy; a DELAY timeout keeps
the request; a request `timeout` expires a sequence waiting in the backlog (Direct and Oldest) with
Triton's text; TRITONSERVER_DELAY_SCHEDULER=N makes a batch of exactly N.

Models are from the `batching` and `sequence` fixture repositories (scripts/gen_test_models.py).
"""

import asyncio
import threading
import time

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients, grpcclient,
                            httpclient, module_of)
from helpers import repo

SLOW_N = 8192  # a slow_rows request of this size keeps its instance busy for ~0.3 s or more
REJECTED = "Request timeout expired"
SEQUENCE_EXPIRED = "timeout of the corresponding sequence has been expired"
STATUS = {"http": "503", "grpc": "StatusCode.UNAVAILABLE"}
HOLD = 4
# The fixture repositories hold models that must fail to load.
LENIENT = ["--exit-on-error=false", "--strict-readiness=false"]


@pytest.fixture(scope="module")
def batching():
    # --log-verbose=1: the batcher logs each batch it starts, which tests wait for to know the
    # only instance is busy.
    s = GrpcServer([repo("fixtures", "batching")], flags=LENIENT + ["--log-verbose=1"],
                   name="client-batching").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


@pytest.fixture(scope="module")
def sequence():
    s = GrpcServer([repo("fixtures", "sequence")], flags=LENIENT, name="client-sequence").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


@pytest.fixture
def held():
    # Its own server per test: the hook holds each model once.
    s = GrpcServer([repo("fixtures", "batching")], flags=LENIENT, name="client-held",
                   env={"TRITONSERVER_DELAY_SCHEDULER": str(HOLD)}).start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def fp32_input(module, values):
    x = np.asarray(values, np.float32)
    i = module.InferInput("INPUT0", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    return [i]


def int32_input(module, value):
    i = module.InferInput("INPUT", [1, 1], "INT32")
    i.set_data_from_numpy(np.array([[value]], np.int32))
    return [i]


def wait_log_count(server, needle, count, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.stderr().count(needle) >= count:
            return
        time.sleep(0.005)
    raise AssertionError(f"{needle!r} did not appear {count} times in the server log")


class Occupier:
    """Runs one slow request on `model` (on its own thread, over HTTP) and returns once the only
    instance executes it."""

    def __init__(self, server, model, value=5.0):
        needle = f"model '{model}': executing "
        started = server.stderr().count(needle)
        self.result = None
        self.done_at = None
        self.thread = threading.Thread(target=self._run, args=(server, model, value))
        self.thread.start()
        wait_log_count(server, needle, started + 1)

    def _run(self, server, model, value):
        c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", network_timeout=60)
        self.result = c.infer(model, fp32_input(httpclient, np.full(SLOW_N, value)))
        self.done_at = time.monotonic()

    def join(self):
        self.thread.join(60)
        assert not self.thread.is_alive()
        return self.result.as_numpy("OUTPUT0")[0]


# ------------------------------------------------------------------------------ dynamic batcher


@pytest.mark.parametrize("name", ["http", "grpc"])
def test_reject_timeout_is_unavailable_at_once(batching, name):
    c = dict(clients(batching))[name]
    busy = Occupier(batching, "db_reject")
    with pytest.raises(InferenceServerException) as e:
        c.infer("db_reject", fp32_input(module_of(name), [1.0]), timeout=1000)
    raised_at = time.monotonic()
    assert e.value.message() == REJECTED
    assert e.value.status() == STATUS[name]
    assert busy.join() == 5.0
    assert raised_at < busy.done_at  # on time, not when the instance freed up


def test_reject_timeout_with_asyncio_clients(batching):
    async def run():
        for name, c in aio_clients(batching):
            try:
                busy = await asyncio.to_thread(Occupier, batching, "db_reject")
                with pytest.raises(InferenceServerException) as e:
                    await c.infer("db_reject", fp32_input(module_of(name), [1.0]), timeout=1000)
                raised_at = time.monotonic()
                assert e.value.message() == REJECTED, name
                assert e.value.status() == STATUS[name], name
                assert await asyncio.to_thread(busy.join) == 5.0
                assert raised_at < busy.done_at, name
            finally:
                await c.close()
    asyncio.run(run())


@pytest.mark.parametrize("name", ["http", "grpc"])
def test_delay_timeout_keeps_the_request(batching, name):
    c = dict(clients(batching))[name]
    busy = Occupier(batching, "db_delay_action")
    result = c.infer("db_delay_action", fp32_input(module_of(name), [3.0]), timeout=1000)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [3.0])  # late, but it ran
    assert busy.join() == 5.0


# ------------------------------------------------------------------------------ sequence batcher


def sequence_expiry(c, name, model, slots, sid_base):
    """Fills every slot of `model` with an open sequence, then starts one more with a 100 ms
    timeout: it waits in the backlog and expires. Returns the exception."""
    module = module_of(name)
    holders = [sid_base + k for k in range(slots)]
    for sid in holders:
        c.infer(model, int32_input(module, 1), sequence_id=sid, sequence_start=True)
    try:
        with pytest.raises(InferenceServerException) as e:
            c.infer(model, int32_input(module, 1), sequence_id=sid_base + 100,
                    sequence_start=True, timeout=100000)
        return e.value
    finally:
        for sid in holders:
            c.infer(model, int32_input(module, 1), sequence_id=sid, sequence_end=True)


@pytest.mark.parametrize("model,slots", [("seq_accum_one_slot", 1), ("seq_accum_oldest", 4)])
@pytest.mark.parametrize("name", ["http", "grpc"])
def test_backlogged_sequence_times_out(sequence, name, model, slots):
    c = dict(clients(sequence))[name]
    base = (1 if name == "http" else 2) * 10000 + slots * 1000
    e = sequence_expiry(c, name, model, slots, base)
    assert e.message() == SEQUENCE_EXPIRED
    assert e.status() == STATUS[name]


def test_backlogged_sequence_times_out_with_asyncio_clients(sequence):
    async def run():
        for k, (name, c) in enumerate(aio_clients(sequence)):
            module = module_of(name)
            holder, late = 30000 + k, 31000 + k
            try:
                await c.infer("seq_accum_one_slot", int32_input(module, 1), sequence_id=holder,
                              sequence_start=True)
                with pytest.raises(InferenceServerException) as e:
                    await c.infer("seq_accum_one_slot", int32_input(module, 1), sequence_id=late,
                                  sequence_start=True, timeout=100000)
                assert e.value.message() == SEQUENCE_EXPIRED, name
                assert e.value.status() == STATUS[name], name
                await c.infer("seq_accum_one_slot", int32_input(module, 1), sequence_id=holder,
                              sequence_end=True)
            finally:
                await c.close()
    asyncio.run(run())


# ------------------------------------------------------------------------------ test hooks


def batch_counts(c, model):
    if isinstance(c, grpcclient.InferenceServerClient):
        stats = c.get_inference_statistics(model, as_json=True)["model_stats"][0]
    else:
        stats = c.get_inference_statistics(model)["model_stats"][0]
    return {int(b["batch_size"]): int(b["compute_infer"]["count"])
            for b in stats.get("batch_stats", [])}


@pytest.mark.parametrize("name", ["http", "grpc"])
def test_delay_scheduler_hook_makes_a_batch_of_exactly_n(held, name):
    # db_scale (no delay, no preferred size) would run the first request alone; with
    # TRITONSERVER_DELAY_SCHEDULER=4 the first four requests run as one batch of 4.
    model = "db_scale"
    module = module_of(name)
    results = [None] * HOLD

    def one(k):
        c = dict(clients(held))[name]  # a client per thread: the sync clients are not shared
        results[k] = c.infer(model, fp32_input(module, [[float(k)]])).as_numpy("OUTPUT0")

    threads = [threading.Thread(target=one, args=(k,)) for k in range(HOLD)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for k in range(HOLD):
        np.testing.assert_array_equal(results[k], [[2.0 * k]])
    assert batch_counts(dict(clients(held))[name], model) == {HOLD: 1}
