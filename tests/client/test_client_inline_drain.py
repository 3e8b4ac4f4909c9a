"""Issue 21 goal 6 (tail latency), through Triton's own client: the default scheduler's inline
drain. A request that runs inline on an HTTP I/O thread also runs, on that thread, the requests
that queued behind it meanwhile (other connections found the one instance busy), within a budget
of jobs and of their compute time; the rest goes to the model's executor as before
(src/core/scheduler/default_scheduler.h, bench/README.md "tail").

Whatever ran where, each request must be answered exactly once with its own values, nothing may
be left pending, and the statistics must count every request once, over HTTP and gRPC, sync and
asyncio. The slow model (20 ms per execution, one instance) makes requests queue behind an inline
run and hits the compute-time budget (one drained job at most); the fast one drains by count.

Since round 4 (ADR 0003's third addendum) a drain past its shared part (8 jobs or 25 µs of
compute) goes on only while the draining HTTP loop's other connections have nothing to read: the
1 ms model passes that part after one drained job, so with many keep-alive connections busy on
the same loops every drain asks, usually stops, and leaves the rest to the executor."""

import asyncio
import threading

import numpy as np
import pytest

from client_support import (GrpcServer, grpcclient, grpcclient_aio, httpclient, httpclient_aio,
                            module_of)
from ensemble_repo import identity

SLOW = "drain_slow"
FAST = "drain_fast"
MILLI = "drain_1ms"
DIMS = 16


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("inline_drain")
    identity(root, SLOW, dtype="TYPE_FP32", dims=(DIMS,), max_batch=0,
             extra='parameters { key: "execute_delay_ms" value: { string_value: "20" } }')
    identity(root, FAST, dtype="TYPE_FP32", dims=(DIMS,), max_batch=0)
    identity(root, MILLI, dtype="TYPE_FP32", dims=(DIMS,), max_batch=0,
             extra='parameters { key: "execute_delay_ms" value: { string_value: "1" } }')
    s = GrpcServer([str(root)], name="client-inline-drain").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def values(i):
    """Distinct per request, so a reply crossing to another request cannot pass."""
    return np.arange(DIMS, dtype=np.float32) + i * 100.0


def inputs(module, i):
    x = module.InferInput("INPUT0", [DIMS], "FP32")
    x.set_data_from_numpy(values(i))
    return [x]


def counts(server, model):
    """(success, execution count) from the statistics API, read with both clients (they agree)."""
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    g = grpcclient.InferenceServerClient(server.target())
    try:
        by_http = h.get_inference_statistics(model)["model_stats"][0]
        by_grpc = g.get_inference_statistics(model, as_json=True)["model_stats"][0]
    finally:
        h.close()
        g.close()
    def pair(stats):  # gRPC's JSON leaves out zero counts
        return (int(stats["inference_stats"]["success"].get("count", 0)),
                int(stats.get("execution_count", 0)))

    assert pair(by_http) == pair(by_grpc)
    assert int(by_http["inference_stats"]["queue"]["count"]) == pair(by_http)[0]
    return pair(by_http)


def sync_clients_each_answered_once(server, model, n_http, n_grpc, per_client):
    """n_http HTTP and n_grpc gRPC sync clients (a thread and a connection each) send per_client
    requests in a row to `model`, all starting at once; checks every reply and the statistics."""
    before = counts(server, model)
    results, errors = {}, []
    start = threading.Barrier(n_http + n_grpc)

    def call(c_index, name):
        module = module_of(name)
        c = (httpclient.InferenceServerClient(f"127.0.0.1:{server.port}") if name == "http"
             else grpcclient.InferenceServerClient(server.target()))
        try:
            start.wait()
            for k in range(per_client):
                i = c_index * per_client + k
                results[i] = c.infer(model, inputs(module, i)).as_numpy("OUTPUT0")
        except Exception as e:  # noqa: BLE001 - reported below with the client's index
            errors.append((c_index, name, e))
        finally:
            c.close()

    threads = [threading.Thread(target=call, args=(c, "http" if c < n_http else "grpc"))
               for c in range(n_http + n_grpc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    total = (n_http + n_grpc) * per_client
    assert sorted(results) == list(range(total))
    for i, out in results.items():
        np.testing.assert_array_equal(out, values(i))
    after = counts(server, model)
    assert (after[0] - before[0], after[1] - before[1]) == (total, total)


def aio_requests_each_answered_once(server, model, n_http, n_grpc, conn_limit):
    """n_http asyncio HTTP requests (on up to conn_limit connections) and n_grpc asyncio gRPC ones
    at once on `model`; checks every reply and the statistics."""

    async def run():
        h = httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}",
                                                 conn_limit=conn_limit)
        g = grpcclient_aio.InferenceServerClient(server.target())
        try:
            calls = [h.infer(model, inputs(httpclient_aio, i)) for i in range(n_http)]
            calls += [g.infer(model, inputs(grpcclient_aio, n_http + i)) for i in range(n_grpc)]
            return await asyncio.gather(*calls)
        finally:
            await h.close()
            await g.close()

    before = counts(server, model)
    replies = asyncio.run(run())
    assert len(replies) == n_http + n_grpc
    for i, r in enumerate(replies):
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), values(i))
    after = counts(server, model)
    assert (after[0] - before[0], after[1] - before[1]) == (n_http + n_grpc, n_http + n_grpc)


def test_requests_queued_behind_a_slow_inline_run_are_each_answered_once(server):
    """12 sync clients (8 HTTP, 4 gRPC, one connection each) hit the one-instance slow model at
    once: one request runs inline, the others queue behind it; the inline thread drains at most
    one of them (20 ms is over the compute-time budget), the executor the rest."""
    sync_clients_each_answered_once(server, SLOW, n_http=8, n_grpc=4, per_client=1)


def test_many_concurrent_asyncio_requests_on_a_fast_model_are_each_answered_once(server):
    """200 concurrent asyncio requests per protocol on the fast one-instance model: queues form
    behind inline runs and are drained by count (up to 128 jobs a turn) or by the executor."""
    aio_requests_each_answered_once(server, FAST, n_http=200, n_grpc=200, conn_limit=64)


def test_drains_cut_short_by_the_loops_other_connections_lose_no_request(server):
    """24 HTTP keep-alive connections (a thread each, 8 requests in a row) and 8 gRPC ones on the
    one-instance 1 ms model: every HTTP loop has other connections with a request to read while
    it drains, so drains stop after their shared part and the executor takes what is left. Each
    request is answered once with its own values; the statistics count each once."""
    sync_clients_each_answered_once(server, MILLI, n_http=24, n_grpc=8, per_client=8)


def test_asyncio_requests_on_the_1ms_model_are_each_answered_once(server):
    """The same over asyncio: 96 HTTP requests on up to 32 connections and 32 gRPC ones at once
    on the 1 ms model; drains ask the loop, stop, and the executor answers the rest."""
    aio_requests_each_answered_once(server, MILLI, n_http=96, n_grpc=32, conn_limit=32)
