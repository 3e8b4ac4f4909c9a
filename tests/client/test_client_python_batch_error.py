"""Issue 18: in a dynamic batch of a Python model, an InferenceResponse(error=TritonError(...)) for
one request fails that request alone; the others of the batch get their outputs (Triton's
python_backend, backend API v6 ExecuteArgs::request_errors). Each client gets its own outcome with
Triton's code mapping, and the statistics count the failed requests as failures, the others as
successes, over HTTP and gRPC, sync and aio."""

import asyncio
import threading

import numpy as np
import pytest

from client_support import (InferenceServerException, aio_clients, clients, module_of,
                            serve_repository)
from python_models import config, io

# Fails a request whose value is odd: value % 4 == 1 with INVALID_ARG, value % 4 == 3 with
# UNAVAILABLE (its outputs, given anyway, are ignored as in Triton); BATCH is how many requests
# the execution held.
MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            v = int(x[0][0])
            out = [pb_utils.Tensor("OUT", x * 2),
                   pb_utils.Tensor("BATCH", np.full((1, 1), len(requests), np.int32))]
            if v % 2 == 0:
                responses.append(pb_utils.InferenceResponse(output_tensors=out))
                continue
            code = (pb_utils.TritonError.INVALID_ARG if v % 4 == 1
                    else pb_utils.TritonError.UNAVAILABLE)
            responses.append(pb_utils.InferenceResponse(
                output_tensors=out, error=pb_utils.TritonError(f"request {v} failed", code)))
        return responses
'''

N = 6  # requests per round, all in one batch (preferred_batch_size)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    def write(root):
        d = root / "batch_error_py"
        (d / "1").mkdir(parents=True)
        (d / "config.pbtxt").write_text(config(
            "batch_error_py", [io("IN", "TYPE_INT32", [1])],
            [io("OUT", "TYPE_INT32", [1]), io("BATCH", "TYPE_INT32", [1])], max_batch_size=8,
            extra=f"dynamic_batching {{ preferred_batch_size: [ {N} ] "
                  "max_queue_delay_microseconds: 5000000 }"))
        (d / "1" / "model.py").write_text(MODEL)
    yield from serve_repository(tmp_path_factory, "python_batch_error", write,
                                ["--backend-config=python,stub-timeout-seconds=30"],
                                name="client-python-batch-error")


def inputs(module, v):
    i = module.InferInput("IN", [1, 1], "INT32")
    i.set_data_from_numpy(np.array([[v]], dtype=np.int32))
    return [i]


def counts(name, client):
    """(success count, fail count, execution count) of batch_error_py."""
    if name == "grpc":
        stats = client.get_inference_statistics("batch_error_py", as_json=True)
    else:
        stats = client.get_inference_statistics("batch_error_py")
    s = stats["model_stats"][0]
    inference = s.get("inference_stats", {})
    return (int(inference.get("success", {}).get("count", 0)),
            int(inference.get("fail", {}).get("count", 0)), int(s.get("execution_count", 0)))


EXPECTED_STATUS = {("http", 1): "400", ("http", 3): "503",
                   ("grpc", 1): "StatusCode.INVALID_ARGUMENT",
                   ("grpc", 3): "StatusCode.UNAVAILABLE"}


def check(name, outcomes):
    """outcomes[v] is the result or the InferenceServerException of the request with value v."""
    for v, got in enumerate(outcomes):
        if v % 2 == 0:
            assert not isinstance(got, Exception), (v, got)
            assert got.as_numpy("OUT").tolist() == [[2 * v]]
            assert got.as_numpy("BATCH").tolist() == [[N]]  # one execution held all of them
        else:
            assert isinstance(got, InferenceServerException), (v, got)
            assert got.message() == f"request {v} failed", got.message()
            assert str(got.status()) == EXPECTED_STATUS[(name, v % 4)], got.status()


def infer_concurrently(server, name, values):
    """{value: result or InferenceServerException}, one client and thread per request."""
    module = module_of(name)
    outcomes = {}

    def call(v):
        client = (module.InferenceServerClient(f"127.0.0.1:{server.port}") if name == "http"
                  else module.InferenceServerClient(server.target()))
        try:
            outcomes[v] = client.infer("batch_error_py", inputs(module, v))
        except InferenceServerException as e:
            outcomes[v] = e
        finally:
            # Closed on its own thread: garbage-collected on another, the HTTP client's gevent
            # pool finds no hub there (a PytestUnraisableExceptionWarning in CI).
            client.close()

    threads = [threading.Thread(target=call, args=(v,)) for v in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def test_error_in_one_response_fails_only_its_request(server):
    for name, c in clients(server):
        before = counts(name, c)
        outcomes = infer_concurrently(server, name, range(N))
        check(name, [outcomes[v] for v in range(N)])
        after = counts(name, c)
        assert (after[0] - before[0], after[1] - before[1], after[2] - before[2]) == \
            (N // 2, N // 2, 1), (before, after)


def test_error_in_one_response_fails_only_its_request_aio(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                module = module_of(name)

                async def call(v):
                    try:
                        return await c.infer("batch_error_py", inputs(module, v))
                    except InferenceServerException as e:
                        return e

                outcomes = await asyncio.gather(*(call(v) for v in range(N)))
                check(name, outcomes)
            finally:
                await c.close()
    asyncio.run(run())


def test_every_request_of_a_batch_failing_alone(server):
    # All odd values: every response carries an error, the execution itself succeeds.
    values = [1, 3, 5, 7, 9, 11]
    for name, c in clients(server):
        before = counts(name, c)
        outcomes = infer_concurrently(server, name, values)
        for v in values:
            assert isinstance(outcomes[v], InferenceServerException), (v, outcomes[v])
            assert outcomes[v].message() == f"request {v} failed"
            assert str(outcomes[v].status()) == EXPECTED_STATUS[(name, v % 4)]
        after = counts(name, c)
        assert (after[0] - before[0], after[1] - before[1], after[2] - before[2]) == \
            (0, N, 1), (before, after)
