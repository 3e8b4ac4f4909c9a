"""Cancellation (issue 17 item 5) through Triton's own client: a cancelled gRPC stream, a unary
gRPC call that times out or whose asyncio task is cancelled, and an HTTP client that disconnects
remove their queued requests from the default scheduler and the dynamic batcher (counted as
`reason="CANCELED"` in nv_inference_request_failure, never executed); stream response order
(decoupled: as the responses come; non-decoupled: request order, as Triton's stream handler);
--grpc-max-response-pool-size keeping a stream that is not read from growing the server."""

import asyncio
import json
import queue
import socket
import threading
import time

import numpy as np
import pytest

from cancel_support import canceled, executions, wait_for
from client_support import (GrpcServer, InferenceServerException, grpcclient, grpcclient_aio,
                            httpclient, httpclient_aio)
from ensemble_repo import ensemble, identity, step, write_model
from test_client_decoupled import REPEAT_CONFIG, final_flag, repeat_inputs

SLOW_MS = 800
SLOW = f'parameters {{ key: "execute_delay_ms" value: {{ string_value: "{SLOW_MS}" }} }}\n'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("cancellation")
    write_model(root, "repeat_int32", REPEAT_CONFIG)
    identity(root, "slow_default", dims=(4,), max_batch=1, extra=SLOW)
    identity(root, "slow_dynamic", dims=(4,), max_batch=1, extra=SLOW + "dynamic_batching {}")
    identity(root, "slow_sequence", dims=(4,), max_batch=1, extra=SLOW + "sequence_batching {}")
    identity(root, "fast", dims=(4,), max_batch=1)
    ensemble(root, "slow_ensemble", [("INPUT0", "TYPE_INT32", (4,))],
             [("OUTPUT0", "TYPE_INT32", (4,))],
             [step("slow_dynamic", {"INPUT0": "INPUT0"}, {"OUTPUT0": "OUTPUT0"})], max_batch=1)
    s = GrpcServer([str(root)], ["--log-verbose=1"], name="client-cancellation").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def four(module, value=1):
    i = module.InferInput("INPUT0", [1, 4], "INT32")
    i.set_data_from_numpy(np.full((1, 4), value, dtype=np.int32))
    return [i]


def expect_one_cancelled(server, model, canceled_before, executions_before):
    """The queued request was dropped (CANCELED) and only the running one executed."""
    wait_for(lambda: canceled(server, model) == canceled_before + 1, "one CANCELED failure")
    wait_for(lambda: executions(server, model) == executions_before + 1, "the running request")
    time.sleep(SLOW_MS / 1000 + 0.3)  # had the cancelled one run, it would have by now
    assert executions(server, model) == executions_before + 1
    assert canceled(server, model) == canceled_before + 1
    # Healthy, and the model serves the next request.
    c = grpcclient.InferenceServerClient(server.target())
    assert c.is_server_live() and c.is_model_ready(model)
    seq = {"sequence_id": 999, "sequence_start": True, "sequence_end": True} \
        if model == "slow_sequence" else {}
    assert c.infer(model, four(grpcclient, 3), **seq).as_numpy("OUTPUT0").tolist() == [[3] * 4]
    c.close()


# ----------------------------------------------------------------------------- stream ordering

def test_decoupled_final_response_does_not_wait_for_earlier_requests(server):
    c = grpcclient.InferenceServerClient(server.target())
    results = queue.Queue()
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        c.async_stream_infer("repeat_int32", repeat_inputs([1], delays=[1500]), request_id="slow",
                             enable_empty_final_response=True)
        c.async_stream_infer("repeat_int32", repeat_inputs([7]), request_id="fast",
                             enable_empty_final_response=True)
        got = [results.get(timeout=20) for _ in range(4)]
        assert all(e is None for _, e in got), got
        order = [(r.get_response().id, final_flag(r)) for r, _ in got]
        # The fast request is complete (its flags-only FINAL too) before the slow one answers.
        assert order == [("fast", False), ("fast", True), ("slow", False), ("slow", True)], order
    finally:
        c.stop_stream()
        c.close()


def test_non_decoupled_responses_keep_request_order_on_a_stream(server):
    c = grpcclient.InferenceServerClient(server.target())
    results = queue.Queue()
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        c.async_stream_infer("slow_default", four(grpcclient, 1), request_id="slow")
        c.async_stream_infer("fast", four(grpcclient, 2), request_id="fast")
        got = [results.get(timeout=20) for _ in range(2)]
        assert [r.get_response().id for r, _ in got] == ["slow", "fast"]
    finally:
        c.stop_stream()
        c.close()


# ------------------------------------------------------------------------------ cancellation

@pytest.mark.parametrize("model", ["slow_default", "slow_dynamic"])
def test_cancelled_stream_drops_its_queued_request(server, model):
    before = (canceled(server, model), executions(server, model))
    # The running request comes over HTTP: a stream's next request is read only once the one
    # before it was handed over, which may have been run inline on the completion-queue thread.
    occupy = post_infer(server.port, model, 1)
    time.sleep(0.2)
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: None)
    c.async_stream_infer(model, four(grpcclient, 2), request_id="queued")
    time.sleep(0.2)  # it waits for the one instance
    c.stop_stream(cancel_requests=True)
    c.close()
    occupy.settimeout(10)
    assert occupy.recv(65536).startswith(b"HTTP/1.1 200")
    occupy.close()
    expect_one_cancelled(server, model, *before)


@pytest.mark.parametrize("model", ["slow_default", "slow_dynamic"])
def test_unary_call_past_its_client_timeout_is_dropped(server, model):
    before = (canceled(server, model), executions(server, model))
    c = grpcclient.InferenceServerClient(server.target())
    first = threading.Thread(target=lambda: c.infer(model, four(grpcclient, 1)))
    first.start()
    time.sleep(0.2)
    with pytest.raises(InferenceServerException) as e:
        c.infer(model, four(grpcclient, 2), client_timeout=0.2)
    assert "Deadline Exceeded" in str(e.value)
    first.join()
    c.close()
    expect_one_cancelled(server, model, *before)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_cancelled_aio_task_drops_its_queued_request(server, protocol):
    model = "slow_dynamic"
    before = (canceled(server, model), executions(server, model))

    async def run():
        if protocol == "grpc":
            client, module = grpcclient_aio.InferenceServerClient(server.target()), grpcclient_aio
        else:
            client = httpclient_aio.InferenceServerClient(f"127.0.0.1:{server.port}")
            module = httpclient_aio
        try:
            running = asyncio.ensure_future(client.infer(model, four(module, 1)))
            await asyncio.sleep(0.2)
            queued = asyncio.ensure_future(client.infer(model, four(module, 2)))
            await asyncio.sleep(0.2)
            queued.cancel()
            with pytest.raises(asyncio.CancelledError):
                await queued
            await running
        finally:
            await client.close()

    asyncio.run(run())
    expect_one_cancelled(server, model, *before)


def post_infer(port, model, value):
    request = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 4],
                           "data": [value] * 4}]}
    if model == "slow_sequence":  # a whole sequence in one request: the slot frees after it
        request["parameters"] = {"sequence_id": 100 + value, "sequence_start": True,
                                 "sequence_end": True}
    body = json.dumps(request).encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"POST /v2/models/{model}/infer HTTP/1.1\r\nHost: x\r\n"
              f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
              + body)
    return s


@pytest.mark.parametrize("model",
                         ["slow_default", "slow_dynamic", "slow_sequence", "slow_ensemble"])
@pytest.mark.parametrize("how", ["close", "reset"])
def test_http_client_disconnect_drops_its_queued_request(server, model, how):
    # An ensemble's step request carries its parent's cancellation: the step's model drops it.
    counted = "slow_dynamic" if model == "slow_ensemble" else model
    before = (canceled(server, counted), executions(server, counted))
    running = post_infer(server.port, counted, 1)
    time.sleep(0.2)
    queued = post_infer(server.port, model, 2)
    time.sleep(0.2)
    if how == "reset":  # SO_LINGER 0: the close sends a reset
        queued.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    queued.close()
    running.settimeout(10)
    reply = running.recv(65536)
    running.close()
    assert reply.startswith(b"HTTP/1.1 200"), reply
    expect_one_cancelled(server, counted, *before)


def test_http_client_that_stays_gets_its_reply(server):
    """Only a disconnect cancels: a request queued behind another still runs."""
    model = "slow_default"
    before = (canceled(server, model), executions(server, model))
    a = post_infer(server.port, model, 1)
    b = post_infer(server.port, model, 2)
    for s in (a, b):
        s.settimeout(10)
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
        s.close()
    assert canceled(server, model) == before[0]
    assert executions(server, model) == before[1] + 2


# ------------------------------------------------------------------ sequences (Triton's rule)

@pytest.mark.parametrize("later", ["grpc", "http"])
def test_cancelled_sequence_request_cancels_the_sequences_later_requests(server, later):
    """As Triton's sequence batcher (ReleaseSequenceSlot): when a sequence's oldest queued request
    is cancelled, it and every request queued behind it are answered CANCELLED and the sequence
    is forgotten, so its next request needs START again."""
    model, corrid = "slow_sequence", 4200 + (later == "http")
    before = (canceled(server, model), executions(server, model))
    first = grpcclient.InferenceServerClient(server.target())
    running = threading.Thread(target=lambda: first.infer(
        model, four(grpcclient, 1), sequence_id=corrid, sequence_start=True))
    running.start()
    time.sleep(0.2)  # the START request runs; the next ones of the sequence queue behind it
    stream = grpcclient.InferenceServerClient(server.target())
    stream.start_stream(callback=lambda result, error: None)
    stream.async_stream_infer(model, four(grpcclient, 2), sequence_id=corrid, request_id="cut")
    time.sleep(0.2)
    errors = []

    def third():
        module = grpcclient if later == "grpc" else httpclient
        url = server.target() if later == "grpc" else f"127.0.0.1:{server.port}"
        c = module.InferenceServerClient(url)
        try:
            c.infer(model, four(module, 3), sequence_id=corrid, sequence_end=True)
        except InferenceServerException as e:
            errors.append(e)
        finally:
            c.close()

    behind = threading.Thread(target=third)
    behind.start()
    time.sleep(0.2)
    stream.stop_stream(cancel_requests=True)  # cancels the stream's request only
    stream.close()
    running.join()
    behind.join()
    first.close()
    assert len(errors) == 1 and "Request was cancelled" in str(errors[0]), errors
    wait_for(lambda: canceled(server, model) == before[0] + 2, "two CANCELED failures")
    time.sleep(SLOW_MS / 1000 + 0.3)
    assert executions(server, model) == before[1] + 1  # only the START request ran
    c = grpcclient.InferenceServerClient(server.target())
    with pytest.raises(InferenceServerException) as e:
        c.infer(model, four(grpcclient, 4), sequence_id=corrid, sequence_end=True)
    assert (f"inference request for sequence {corrid} to model '{model}' must specify the START "
            "flag on the first request of the sequence") in str(e.value)
    c.close()
