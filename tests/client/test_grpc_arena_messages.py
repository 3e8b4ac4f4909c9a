"""gRPC request and reply messages on arenas (issue 21 goal 2, branch grpc), through Triton's own
client: a ModelInferRequest is read into an arena whose first block is part of one allocation and
the reply is built on an arena inside the call (or the stream's response slot), sized for the
usual small request. Messages that outgrow that first block (long IDs, many parameters, many
inputs and outputs, large and BYTES tensors) must come back intact, unary and streamed, sync and
asyncio; a request's input bytes stay valid while the model runs (they are views into the
arena's message); error replies on a stream still name their request's model and ID (now kept in
the response slot), and the unary call's one model lookup keeps Triton's texts and their order.
"""

import asyncio
import queue

import grpc
import numpy as np
import pytest

from client_support import GrpcServer, InferenceServerException, grpcclient, grpcclient_aio
from helpers import repo
from tritonclient.grpc import service_pb2
from tritonclient.grpc._utils import _get_inference_request  # Triton's client's own builder

STREAM = "/inference.GRPCInferenceService/ModelStreamInfer"
LONG_ID = "request-" + "x" * 3000  # longer than any first block: the reply's ID grows the arena


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("fixtures", "types"), repo("fixtures", "decoupled")],
                   name="client-grpc-arena").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def fp32(module, values, name="INPUT0"):
    t = module.InferInput(name, list(values.shape), "FP32")
    t.set_data_from_numpy(values)
    return t


ADD_SUB = "add_sub_int32_nobatch"  # two inputs, two outputs


def simple_inputs(module, k):
    a = np.arange(16, dtype=np.int32) + k
    b = np.full(16, k, dtype=np.int32)
    inputs = [module.InferInput("INPUT0", [16], "INT32"),
              module.InferInput("INPUT1", [16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return a, b, inputs


def many_parameters():
    return {f"p{i:02d}": "v" * 200 + str(i) for i in range(40)}


def check_simple(result, a, b, rid):
    assert result.get_response().id == rid
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_unary_messages_larger_than_the_first_block(server):
    c = grpcclient.InferenceServerClient(server.target())
    try:
        for k in range(3):
            a, b, inputs = simple_inputs(grpcclient, k)
            outputs = [grpcclient.InferRequestedOutput("OUTPUT1"),
                       grpcclient.InferRequestedOutput("OUTPUT0")]
            result = c.infer(ADD_SUB, inputs, outputs=outputs, request_id=LONG_ID + str(k),
                             parameters=many_parameters())
            check_simple(result, a, b, LONG_ID + str(k))
            # The small request of the benchmark's shape, between the large ones.
            x = np.arange(16, dtype=np.float32).reshape(1, 16) * (k + 1)
            small = c.infer("identity_fp32", [fp32(grpcclient, x)], request_id=str(k))
            assert small.get_response().id == str(k)
            np.testing.assert_array_equal(small.as_numpy("OUTPUT0"), x)
    finally:
        c.close()


def test_unary_large_and_bytes_tensors_both_ways(server):
    c = grpcclient.InferenceServerClient(server.target())
    try:
        big = np.random.default_rng(1).random((1, 300_000), dtype=np.float32)
        r = c.infer("identity_fp32", [fp32(grpcclient, big)])
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), big)
        words = np.array([b"", b"a" * 5000, "héllo".encode(), b"\x00\x01"] * 50, dtype=np.object_)
        t = grpcclient.InferInput("INPUT0", [1, len(words)], "BYTES")
        t.set_data_from_numpy(words.reshape(1, -1))
        r = c.infer("identity_string", [t], request_id=LONG_ID)
        assert r.get_response().id == LONG_ID
        assert list(r.as_numpy("OUTPUT0").ravel()) == list(words)
    finally:
        c.close()


def test_aio_unary_messages_of_every_size_at_once(server):
    async def run():
        c = grpcclient_aio.InferenceServerClient(server.target())
        try:
            calls, expected = [], []
            for k in range(24):
                n = 16 if k % 3 else 20_000 + k
                x = np.full((1, n), float(k), dtype=np.float32)
                rid = (LONG_ID if k % 4 == 0 else "") + str(k)
                calls.append(c.infer("identity_fp32", [fp32(grpcclient_aio, x)], request_id=rid,
                                     parameters=many_parameters() if k % 5 == 0 else None))
                expected.append((rid, x))
            for result, (rid, x) in zip(await asyncio.gather(*calls), expected):
                assert result.get_response().id == rid
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
        finally:
            await c.close()

    asyncio.run(run())


def test_stream_messages_larger_than_the_first_block_keep_their_order(server):
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        sent = []
        for k in range(30):
            if k % 2:
                a, b, inputs = simple_inputs(grpcclient, k)
                rid = LONG_ID + str(k)
                c.async_stream_infer(ADD_SUB, inputs, request_id=rid,
                                     parameters=many_parameters())
                sent.append((ADD_SUB, rid, (a, b)))
            else:
                x = np.full((1, 16 if k % 4 else 50_000), float(k), dtype=np.float32)
                c.async_stream_infer("identity_fp32", [fp32(grpcclient, x)], request_id=str(k))
                sent.append(("identity_fp32", str(k), x))
        for model, rid, data in sent:
            result, error = results.get(timeout=30)
            assert error is None, error
            if model == ADD_SUB:
                check_simple(result, *data, rid)
            else:
                assert result.get_response().id == rid
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
    finally:
        c.stop_stream()
        c.close()


def test_aio_stream_of_small_and_large_messages(server):
    async def run():
        c = grpcclient_aio.InferenceServerClient(server.target())
        xs = [np.full((1, 16 if k % 3 else 40_000), float(k), dtype=np.float32)
              for k in range(12)]

        async def requests():
            for k, x in enumerate(xs):
                yield {"model_name": "identity_fp32", "inputs": [fp32(grpcclient_aio, x)],
                       "request_id": (LONG_ID if k % 2 else "") + str(k)}

        got = []
        try:
            async for result, error in c.stream_infer(requests()):
                assert error is None, error
                got.append(result)
                if len(got) == len(xs):
                    break
        finally:
            await c.close()
        for k, (result, x) in enumerate(zip(got, xs)):
            assert result.get_response().id == (LONG_ID if k % 2 else "") + str(k)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)

    asyncio.run(run())


def test_stream_error_replies_name_their_request(server):
    """Raw ModelStreamInferResponse messages (built and parsed with tritonclient's own protobuf
    classes): an error reply carries its request's model name and ID, however long, between good
    replies."""
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    good = _get_inference_request(
        model_name="identity_fp32", inputs=[fp32(grpcclient, x)], model_version="",
        request_id="good", outputs=None, sequence_id=0, sequence_start=False,
        sequence_end=False, priority=0, timeout=None, parameters=None)
    unknown = service_pb2.ModelInferRequest(model_name="no_such_model_" + "m" * 500, id=LONG_ID)
    bad_version = service_pb2.ModelInferRequest(model_name="identity_fp32", id="v",
                                                model_version="1x")
    wrong_raw = service_pb2.ModelInferRequest()
    wrong_raw.CopyFrom(good)
    wrong_raw.id = "raw"
    wrong_raw.raw_input_contents.append(b"extra")
    with grpc.insecure_channel(server.target()) as channel:
        call = channel.stream_stream(
            STREAM, request_serializer=service_pb2.ModelInferRequest.SerializeToString,
            response_deserializer=service_pb2.ModelStreamInferResponse.FromString)
        replies = list(call(iter([good, unknown, good, bad_version, wrong_raw, good]), timeout=30))
    assert len(replies) == 6
    for r in (replies[0], replies[2], replies[5]):
        assert r.error_message == ""
        assert r.infer_response.id == "good"
        assert np.frombuffer(r.infer_response.raw_output_contents[0], np.float32).tolist() == \
            x.ravel().tolist()
        assert r.infer_response.parameters["triton_final_response"].bool_param
    e = replies[1]
    assert "no_such_model_" in e.error_message and "unknown" in e.error_message.lower()
    assert e.infer_response.model_name == unknown.model_name
    assert e.infer_response.id == LONG_ID
    assert e.infer_response.parameters["triton_final_response"].bool_param
    assert replies[3].error_message == (
        "failed to get model version from specified version string '1x': version must be a "
        "non-negative integer")
    assert (replies[3].infer_response.model_name, replies[3].infer_response.id) == \
        ("identity_fp32", "v")
    assert replies[4].error_message == \
        "expected 1 inputs but got 2 raw_input_contents for model 'identity_fp32'"
    assert replies[4].infer_response.id == "raw"


@pytest.mark.parametrize("aio", [False, True])
def test_unary_errors_keep_tritons_texts_and_order(server, aio):
    """The unary call looks its model up once: a bad version is named before an unknown model, an
    unknown model before a malformed request, a decoupled model is refused in Triton's words."""
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    cases = [
        (dict(model_name="no_such_model", model_version="x1"),
         "failed to get model version from specified version string 'x1': version must be a "
         "non-negative integer"),
        (dict(model_name="repeat_int32"),
         "ModelInfer RPC doesn't support models with decoupled transaction policy"),
    ]

    async def aio_infer(**kw):
        c = grpcclient_aio.InferenceServerClient(server.target())
        try:
            return await c.infer(inputs=[fp32(grpcclient_aio, x)], **kw)
        finally:
            await c.close()

    def infer(**kw):
        if aio:
            return asyncio.run(aio_infer(**kw))
        c = grpcclient.InferenceServerClient(server.target())
        try:
            return c.infer(inputs=[fp32(grpcclient, x)], **kw)
        finally:
            c.close()

    for kw, text in cases:
        with pytest.raises(InferenceServerException) as e:
            infer(**kw)
        assert e.value.message() == text, kw
    with pytest.raises(InferenceServerException) as e:
        infer(model_name="no_such_model")  # unknown, and INPUT0 is not its input either
    assert "no_such_model" in e.value.message()
    assert e.value.status() == "StatusCode.UNAVAILABLE" or "unknown" in e.value.message().lower()
    r = infer(model_name="identity_fp32", request_id=LONG_ID)  # the server still serves
    assert r.get_response().id == LONG_ID
