"""gRPC ModelStreamInfer: response order, errors inside the stream, Triton's triton_grpc_error
header, many streams at once, and clients that go away mid-request."""

import queue
import threading

import grpc
import numpy as np
import pytest

from grpc_helpers import infer_request, output_array, pbs, serve_grpc  # noqa: F401
from helpers import repo


@pytest.fixture(scope="module")
def server(pbs):  # noqa: F811
    yield from serve_grpc([repo("examples"), repo("fixtures", "features")], "grpc-stream",
                          flags=["--grpc-infer-thread-count=2"])


def request(i, bad=False):
    x = np.array([[float(i)]], np.float32)
    if bad:  # wrong datatype: the core rejects it
        return infer_request("identity_fp32", [("INPUT0", "INT32", x.astype(np.int32))],
                             request_id=str(i))
    return infer_request("identity_fp32", [("INPUT0", "FP32", x)], request_id=str(i))


def test_responses_keep_request_order(server):
    reqs = [request(i) for i in range(200)]
    got = list(server.stub().ModelStreamInfer(iter(reqs)))
    assert [r.infer_response.id for r in got] == [str(i) for i in range(200)]
    for i, r in enumerate(got):
        assert r.error_message == ""
        assert output_array(r.infer_response)[0][0] == i


def test_order_across_models_of_different_speed(server):
    slow = infer_request("slow_identity", [("INPUT0", "FP32", np.array([7.0], np.float32))],
                         request_id="slow")
    reqs = [slow] + [request(i) for i in range(5)]
    got = list(server.stub().ModelStreamInfer(iter(reqs)))
    assert [r.infer_response.id for r in got] == ["slow", "0", "1", "2", "3", "4"]


def test_errors_are_interleaved_and_the_stream_continues(server):
    reqs = [request(i, bad=(i % 3 == 1)) for i in range(12)]
    got = list(server.stub().ModelStreamInfer(iter(reqs)))
    assert len(got) == 12
    for i, r in enumerate(got):
        if i % 3 == 1:
            assert "data-type is 'INT32'" in r.error_message, r.error_message
            assert r.infer_response.id == str(i)
        else:
            assert r.error_message == ""
            assert r.infer_response.id == str(i)
            assert output_array(r.infer_response)[0][0] == i


def test_unknown_model_in_stream_is_an_error_message(server):
    req = infer_request("nope", [("INPUT0", "FP32", np.ones((1, 1), np.float32))])
    got = list(server.stub().ModelStreamInfer(iter([req, request(1)])))
    assert "nope" in got[0].error_message
    assert got[1].error_message == "" and got[1].infer_response.id == "1"


def test_triton_grpc_error_header_ends_the_stream_with_a_status(server):
    reqs = [request(0), request(1), request(2, bad=True), request(3)]
    call = server.stub().ModelStreamInfer(iter(reqs), metadata=(("triton_grpc_error", "true"),))
    got = []
    with pytest.raises(grpc.RpcError) as e:
        for r in call:
            got.append(r)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "data-type is 'INT32'" in e.value.details()
    assert [r.infer_response.id for r in got] == ["0", "1"]


def test_many_concurrent_streams(server):
    errors = []

    def run(k):
        try:
            reqs = [request(k * 1000 + i) for i in range(30)]
            got = list(server.stub().ModelStreamInfer(iter(reqs)))
            assert [r.infer_response.id for r in got] == [str(k * 1000 + i) for i in range(30)]
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[0]


def test_interactive_stream_one_request_at_a_time(server):
    q = queue.Queue()

    def gen():
        while True:
            item = q.get()
            if item is None:
                return
            yield item

    call = server.stub().ModelStreamInfer(gen())
    for i in range(5):
        q.put(request(i))
        r = next(call)
        assert r.infer_response.id == str(i)
    q.put(None)
    assert list(call) == []


def test_client_cancels_mid_request(server):
    slow = infer_request("slow_identity", [("INPUT0", "FP32", np.array([1.0], np.float32))])
    for _ in range(3):
        q = queue.Queue()

        def gen():
            while True:
                item = q.get()
                if item is None:
                    return
                yield item

        call = server.stub().ModelStreamInfer(gen())
        q.put(slow)
        q.put(slow)
        call.cancel()
        q.put(None)
        with pytest.raises(grpc.RpcError) as e:
            list(call)
        assert e.value.code() == grpc.StatusCode.CANCELLED
    # Unary calls cancelled mid-inference as well.
    fut = server.stub().ModelInfer.future(slow)
    fut.cancel()
    # The server is fine and the next stream works.
    got = list(server.stub().ModelStreamInfer(iter([request(5)])))
    assert got[0].infer_response.id == "5"


def test_client_closes_connection_mid_stream(server, pbs):  # noqa: F811
    slow = infer_request("slow_identity", [("INPUT0", "FP32", np.array([1.0], np.float32))])
    channel = grpc.insecure_channel(server.target())
    stub = pbs.pb_grpc.GRPCInferenceServiceStub(channel)
    q = queue.Queue()

    def gen():
        yield slow
        q.get()  # never returns before the channel closes

    call = stub.ModelStreamInfer(gen())
    del call
    channel.close()
    q.put(None)
    assert server.stub().ServerLive(pbs.pb.ServerLiveRequest()).live
    got = list(server.stub().ModelStreamInfer(iter([request(9)])))
    assert got[0].infer_response.id == "9"


@pytest.fixture
def four_thread_server(pbs):  # noqa: F811
    yield from serve_grpc([repo("examples")], "grpc-cancel-race",
                          flags=["--grpc-infer-thread-count=4"])


def test_streams_cancelled_as_they_start_never_crash(four_thread_server):
    """A cancel can reach the server while it is still setting up the stream: the done
    notification then races the new-call event on another completion-queue thread. That race
    once freed the call twice; with 4 threads and many streams it showed in ~1 run in 3 on a
    loaded 2-core machine. The fixture asserts the server exits 0 afterwards."""
    req = infer_request("identity_fp32", [("INPUT0", "FP32", np.array([[1.0]], np.float32))])

    def client():
        grpc_stub = four_thread_server.stub()
        for i in range(300):
            call = grpc_stub.ModelStreamInfer(iter([req] * (i % 3)))  # 0, 1 or 2 requests
            call.cancel()
            try:
                list(call)
            except grpc.RpcError:
                pass

    threads = [threading.Thread(target=client) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(list(four_thread_server.stub().ModelStreamInfer(iter([req])))) == 1
