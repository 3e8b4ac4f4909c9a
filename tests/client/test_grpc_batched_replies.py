"""Replies of one executed dynamic batch, through Triton's own client (issue 21, goal 2): the
executor answers a batch's requests one after another, the HTTP replies queued together for the
I/O threads (CompletionBatch) and the gRPC ones finished from the executor (a unary call's Finish,
a stream's next Write). Every request must get its own answer, in order on a stream, whatever mix
of frontends and call kinds shares the batch.

TRITONSERVER_DELAY_SCHEDULER=N holds each model until N requests are queued, so the batch is
exactly the N requests sent (db_scale answers OUTPUT0 = 2 x INPUT0).
"""

import asyncio
import threading

import numpy as np
import pytest

from client_support import GrpcServer, grpcclient, grpcclient_aio, httpclient
from helpers import repo
from stream_support import ResultStream

N = 8
MODEL = "db_scale"
LENIENT = ["--exit-on-error=false", "--strict-readiness=false"]


@pytest.fixture
def held():
    # Its own server per test: the hook holds each model once.
    s = GrpcServer([repo("fixtures", "batching")], flags=LENIENT, name="client-batched-replies",
                   env={"TRITONSERVER_DELAY_SCHEDULER": str(N)}).start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def fp32_input(module, value):
    i = module.InferInput("INPUT0", [1, 1], "FP32")
    i.set_data_from_numpy(np.array([[value]], np.float32))
    return [i]


def batch_counts(server):
    c = grpcclient.InferenceServerClient(server.target())
    stats = c.get_inference_statistics(MODEL, as_json=True)["model_stats"][0]
    c.close()
    return {int(b["batch_size"]): int(b["compute_infer"]["count"])
            for b in stats.get("batch_stats", [])}


def run_threads(fns):
    threads = [threading.Thread(target=f) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)


def test_grpc_unary_replies_of_one_batch(held):
    results = {}

    def one(k):
        c = grpcclient.InferenceServerClient(held.target())  # the sync client is not shared
        results[k] = c.infer(MODEL, fp32_input(grpcclient, float(k)), request_id=str(k))
        c.close()

    run_threads([lambda k=k: one(k) for k in range(N)])
    for k in range(N):
        assert results[k].get_response().id == str(k)
        np.testing.assert_array_equal(results[k].as_numpy("OUTPUT0"), [[2.0 * k]])
    assert batch_counts(held) == {N: 1}


def test_grpc_aio_replies_of_one_batch(held):
    async def run():
        c = grpcclient_aio.InferenceServerClient(held.target())
        try:
            return await asyncio.gather(*(
                c.infer(MODEL, fp32_input(grpcclient_aio, float(k)), request_id=str(k))
                for k in range(N)))
        finally:
            await c.close()

    for k, r in enumerate(asyncio.run(run())):
        assert r.get_response().id == str(k)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), [[2.0 * k]])
    assert batch_counts(held) == {N: 1}


def test_stream_replies_of_one_batch_keep_their_order(held):
    # One stream's N requests are one batch; its N responses come back in request order.
    stream = ResultStream(held)
    try:
        for k in range(N):
            stream.client.async_stream_infer(MODEL, fp32_input(grpcclient, float(k)),
                                             request_id=str(k))
        got = stream.take(N)
        stream.nothing_more()
    finally:
        stream.close()
    for k, (result, error) in enumerate(got):
        assert error is None, error
        assert result.get_response().id == str(k)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [[2.0 * k]])
    assert batch_counts(held) == {N: 1}


def test_one_batch_answers_http_unary_and_streams_together(held):
    # Two frontends and both gRPC call kinds in one batch: each frontend gets its replies.
    streams = [ResultStream(held) for _ in range(2)]
    results = {}

    def http_one(k):
        c = httpclient.InferenceServerClient(f"127.0.0.1:{held.port}")
        results[k] = c.infer(MODEL, fp32_input(httpclient, float(k))).as_numpy("OUTPUT0")
        c.close()

    def grpc_one(k):
        c = grpcclient.InferenceServerClient(held.target())
        results[k] = c.infer(MODEL, fp32_input(grpcclient, float(k))).as_numpy("OUTPUT0")
        c.close()

    try:
        for s, k in ((streams[0], 100), (streams[0], 101), (streams[1], 200)):
            s.client.async_stream_infer(MODEL, fp32_input(grpcclient, float(k)),
                                        request_id=str(k))
        run_threads([lambda k=k: http_one(k) for k in (0, 1, 2)] +
                    [lambda k=k: grpc_one(k) for k in (3, 4)])
        first, second = streams[0].take(2), streams[1].take(1)
    finally:
        for s in streams:
            s.close()
    for k in range(5):
        np.testing.assert_array_equal(results[k], [[2.0 * k]])
    for (result, error), k in zip(first + second, (100, 101, 200)):
        assert error is None, error
        assert result.get_response().id == str(k)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), [[2.0 * k]])
    assert batch_counts(held) == {N: 1}
