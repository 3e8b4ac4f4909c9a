"""Issue 21 goal 1 (ioctx): one event loop per HTTP I/O thread, through Triton's own clients.

Each HTTP connection lives on one I/O thread's loop from accept to close; every loop accepts, and
a new connection goes to the least loaded loop that is not inside a handler. With
--http-thread-count 1, 2 and 4, 64 connections at once (64 sync clients on threads, 64 asyncio
clients) all get their own right answers while gRPC clients run beside them; replies completed
on executor threads come back to the right connection. A server stopped with requests in flight
on several connections (so several loops) still answers them all before it exits, and a model
held on one loop leaves the other connections served."""

import asyncio
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from client_support import GrpcServer, grpcclient, grpcclient_aio, httpclient, httpclient_aio
from helpers import repo

CONNECTIONS = 64
ROUNDS = 3


def simple_inputs(module, offset):
    a = (np.arange(16, dtype=np.int32) + offset).reshape(1, 16)
    b = np.full((1, 16), offset % 7, dtype=np.int32)
    ins = [module.InferInput("INPUT0", [1, 16], "INT32"),
           module.InferInput("INPUT1", [1, 16], "INT32")]
    ins[0].set_data_from_numpy(a)
    ins[1].set_data_from_numpy(b)
    return a, b, ins


def check(result, a, b):
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


@pytest.fixture(scope="module", params=[1, 2, 4], ids=lambda n: f"threads{n}")
def server(request):
    s = GrpcServer([repo("examples")], [f"--http-thread-count={request.param}"],
                   name=f"client-io-loops-{request.param}").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def grpc_beside(server, stop):
    """gRPC inferences while the HTTP load runs; returns how many were right."""
    ok = 0
    c = grpcclient.InferenceServerClient(server.target())
    try:
        k = 0
        while not stop.is_set():
            a, b, ins = simple_inputs(grpcclient, 100000 + k)
            check(c.infer("simple", ins), a, b)
            ok += 1
            k += 1
    finally:
        c.close()
    return ok


def test_64_sync_connections_each_get_their_own_answers(server):
    # 64 clients, each with its own connection, all open at once: every loop serves some.
    http = [httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
            for _ in range(CONNECTIONS)]
    barrier = threading.Barrier(CONNECTIONS)
    stop = threading.Event()

    def run(i):
        barrier.wait(timeout=30)
        for r in range(ROUNDS):
            a, b, ins = simple_inputs(httpclient, 1000 * i + r)
            check(http[i].infer("simple", ins), a, b)
        return True

    try:
        with ThreadPoolExecutor(CONNECTIONS + 1) as pool:
            grpc_done = pool.submit(grpc_beside, server, stop)
            results = list(pool.map(run, range(CONNECTIONS)))
            stop.set()
            assert grpc_done.result() > 0
        assert results == [True] * CONNECTIONS
    finally:
        for c in http:
            c.close()


def test_64_asyncio_connections_each_get_their_own_answers(server):
    async def one(client, i):
        for r in range(ROUNDS):
            a, b, ins = simple_inputs(httpclient_aio, 1000 * i + r)
            check(await client.infer("simple", ins), a, b)

    async def grpc_one(client, i):
        a, b, ins = simple_inputs(grpcclient_aio, 50000 + i)
        check(await client.infer("simple", ins), a, b)

    async def run():
        http = [httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")
                for _ in range(CONNECTIONS)]
        grpc = grpcclient_aio.InferenceServerClient(server.target())
        try:
            await asyncio.gather(*(one(c, i) for i, c in enumerate(http)),
                                 *(grpc_one(grpc, i) for i in range(16)))
        finally:
            for c in http:
                await c.close()
            await grpc.close()

    asyncio.run(run())


def test_one_asyncio_client_with_many_connections(server):
    # One aiohttp pool opening up to 64 connections for 256 requests in flight together.
    async def run():
        c = httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}", conn_limit=CONNECTIONS)
        try:
            async def one(i):
                a, b, ins = simple_inputs(httpclient_aio, i)
                check(await c.infer("simple", ins), a, b)
            await asyncio.gather(*(one(i) for i in range(4 * CONNECTIONS)))
        finally:
            await c.close()

    asyncio.run(run())


def slow_inputs(module, value):
    x = np.array([value], dtype=np.float32)
    i = module.InferInput("INPUT0", [1], "FP32")
    i.set_data_from_numpy(x)
    return x, [i]


@pytest.mark.parametrize("threads", [2, 4])
def test_stop_answers_requests_in_flight_on_every_loop(threads):
    # slow_identity (~300 ms, one instance): one request runs, the others wait for the instance;
    # each on a connection of its own, so on different loops. SIGTERM: all are answered, exit 0.
    s = GrpcServer([repo("fixtures", "features")],
                   [f"--http-thread-count={threads}", "--log-verbose=1"],
                   name=f"client-io-loops-stop-{threads}").start()
    try:
        n = threads + 1
        http = [httpclient.InferenceServerClient(f"127.0.0.1:{s.port}", network_timeout=60)
                for _ in range(n)]
        results = [None] * n

        def send(i):
            x, ins = slow_inputs(httpclient, 0.5 + i)
            try:
                results[i] = (x, http[i].infer("slow_identity", ins))
            except Exception as e:  # reported below
                results[i] = e

        senders = [threading.Thread(target=send, args=(i,)) for i in range(n)]
        for t in senders:
            t.start()
        # Every request has reached the server (--log-verbose=1 logs each) before the signal.
        deadline = time.monotonic() + 20
        while s.stderr().count("POST /v2/models/slow_identity/infer") < n:
            assert time.monotonic() < deadline, s.stderr()[-4000:]
            time.sleep(0.01)
        s.send_signal(signal.SIGTERM)
        for t in senders:
            t.join(60)
            assert not t.is_alive(), "a request in flight was never answered"
        for i, r in enumerate(results):
            assert not isinstance(r, Exception), f"request {i} failed: {r!r}"
            x, result = r
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
        assert s.wait() == 0, s.stderr()[-4000:]
        for c in http:
            c.close()
    finally:
        s.kill()


def test_a_model_running_on_one_loop_leaves_the_others_serving():
    # With two I/O threads slow_identity may run inline on one loop (docs/adr/0003); connections
    # opened meanwhile go to the other loop and are answered before it finishes, sync and asyncio.
    s = GrpcServer([repo("examples"), repo("fixtures", "features")],
                   ["--http-thread-count=2", "--log-verbose=1"],
                   name="client-io-loops-inline").start()
    try:
        # Slow requests on connections of their own: one runs inline, the others wait for the
        # only instance (~300 ms each, ~1.8 s in all: the fast requests below, a new sync and a
        # new asyncio client, must finish within that also in a sanitizer build on a busy machine;
        # two slow requests, ~600 ms, left too small a margin for that).
        slow_clients = [httpclient.InferenceServerClient(f"127.0.0.1:{s.port}", network_timeout=60)
                        for _ in range(6)]
        x, ins = slow_inputs(httpclient, 7.5)
        pool = ThreadPoolExecutor(len(slow_clients))
        slow = [pool.submit(c.infer, "slow_identity", ins) for c in slow_clients]
        s.wait_for_log("/v2/models/slow_identity/infer")
        fast = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        a, b, fins = simple_inputs(httpclient, 3)
        check(fast.infer("simple", fins), a, b)

        async def aio():
            c = httpclient_aio.InferenceServerClient(f"127.0.0.1:{s.port}")
            try:
                a, b, ains = simple_inputs(httpclient_aio, 4)
                check(await c.infer("simple", ains), a, b)
            finally:
                await c.close()

        asyncio.run(aio())
        assert not all(f.done() for f in slow), \
            "the slow requests finished first: nothing shows a loop was held"
        for f in slow:
            np.testing.assert_array_equal(f.result(60).as_numpy("OUTPUT0"), x)
        fast.close()
        for c in slow_clients:
            c.close()
        assert s.stop() == 0, s.stderr()[-4000:]
    finally:
        s.kill()
