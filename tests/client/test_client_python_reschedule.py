"""Request rescheduling (Triton's python_backend "Request Rescheduling", backend API v7):
`request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)` on a model with
`sequence_batching { iterative_sequence: true }` has the server execute the same request again
(same request id and inputs, flags 0 after the first execution's START), keeping a counter in the
model's state. A non-decoupled model returns None for the rescheduled request and answers once at
the end (HTTP and gRPC, sync and aio); a decoupled model sends one response per execution over a
gRPC stream. Elsewhere (no sequence batcher, dynamic batching) the request fails with Triton's
text, and a rescheduled request answered with a response fails with Triton's (typo included)."""

import asyncio
import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, grpcclient_aio, module_of)
import python_models
from stream_support import ResultStream, final_flag, outs_of

COUNTING = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.count = {}  # correlation id -> executions so far
        self.flags = {}  # correlation id -> request.flags() of each execution

    def execute(self, requests):
        out = []
        for r in requests:
            n = int(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy().reshape(-1)[0])
            key = r.correlation_id()
            c = self.count.get(key, 0) + 1
            self.count[key] = c
            self.flags.setdefault(key, []).append(r.flags())
            response = pb_utils.InferenceResponse([
                pb_utils.Tensor("COUNT", np.array([c], np.int32)),
                pb_utils.Tensor("FLAGS", np.array(self.flags[key], np.int32))])
            if n < 0:  # rescheduled, yet answered: Triton's error
                r.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                out.append(response)
            elif c < n:
                r.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                out.append(None)
            else:
                del self.count[key]
                del self.flags[key]
                out.append(response)
        return out
'''

# Triton's README example: IN responses counting down to 0, one per execution.
COUNTDOWN = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.left = {}  # correlation id -> responses still to send

    def execute(self, requests):
        for r in requests:
            key = r.correlation_id()
            if key not in self.left:
                self.left[key] = int(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0])
            self.left[key] -= 1
            sender = r.get_response_sender()
            response = pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", np.array([self.left[key]], np.int32)),
                pb_utils.Tensor("FLAGS", np.array([r.flags()], np.int32))])
            if self.left[key] <= 0:
                del self.left[key]
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                r.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                sender.send(response)
        return None
'''

ITERATIVE = "sequence_batching { iterative_sequence: true }"
DECOUPLED = "model_transaction_policy { decoupled: true }"
REFUSED = ("Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is "
           "not configured to handle such a flag.")


def write(root, name, code, extra, max_batch_size=0, outputs=("COUNT", "FLAGS")):
    (root / name / "1").mkdir(parents=True)
    dims = {"COUNT": [1], "FLAGS": [-1], "OUT": [1]}
    (root / name / "config.pbtxt").write_text(python_models.config(
        name, [python_models.io("IN", "TYPE_INT32", [1])],
        [python_models.io(o, "TYPE_INT32", dims[o]) for o in outputs],
        max_batch_size=max_batch_size, extra=extra))
    (root / name / "1" / "model.py").write_text(code)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("reschedule")
    write(root, "iter_py", COUNTING, ITERATIVE)
    write(root, "plain_py", COUNTING, "")
    write(root, "dyn_py", COUNTING, "dynamic_batching { }", max_batch_size=4)
    write(root, "iter_dec_py", COUNTDOWN, ITERATIVE + "\n" + DECOUPLED, outputs=("OUT", "FLAGS"))
    write(root, "dec_py", COUNTDOWN, DECOUPLED, outputs=("OUT", "FLAGS"))
    s = GrpcServer([str(root)], name="client-python-reschedule").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def inputs(kind, value, batched=False):
    t = module_of(kind).InferInput("IN", [1, 1] if batched else [1], "INT32")
    t.set_data_from_numpy(np.array([[value]] if batched else [value], dtype=np.int32))
    return [t]


def response_id(kind, result):
    return result.get_response()["id"] if kind == "http" else result.get_response().id


def stats(client, kind, model):
    """(execution count, success count) of `model`."""
    s = client.get_inference_statistics(model) if kind == "http" else \
        client.get_inference_statistics(model, as_json=True)
    m = s["model_stats"][0]
    return int(m.get("execution_count", 0)), int(m["inference_stats"]["success"].get("count", 0))


def test_rescheduled_request_runs_until_the_model_answers(server):
    for kind, c in clients(server):
        for n in (1, 3):
            before = stats(c, kind, "iter_py")
            result = c.infer("iter_py", inputs(kind, n), request_id=f"r-{kind}-{n}")
            assert result.as_numpy("COUNT").tolist() == [n], kind
            # START on the first execution, then flags 0 (Triton's IterativeSequencer)
            assert result.as_numpy("FLAGS").tolist() == [1] + [0] * (n - 1), kind
            assert response_id(kind, result) == f"r-{kind}-{n}", kind
            after = stats(c, kind, "iter_py")
            # every execution counts as one execution and one success
            assert (after[0] - before[0], after[1] - before[1]) == (n, n), kind
        c.close()


def test_rescheduled_requests_run_concurrently_over_aio(server):
    async def run():
        for kind, c in aio_clients(server):
            got = await asyncio.gather(*[c.infer("iter_py", inputs(kind, n)) for n in (4, 2, 3)])
            assert [r.as_numpy("COUNT").tolist() for r in got] == [[4], [2], [3]], kind
            await c.close()
    asyncio.run(run())


@pytest.mark.parametrize("model,batched", [("plain_py", False), ("dyn_py", True)])
def test_reschedule_elsewhere_fails_with_tritons_text(server, model, batched):
    for kind, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            c.infer(model, inputs(kind, 2, batched))
        assert REFUSED in str(e.value), (kind, str(e.value))
        if kind == "http":
            assert e.value.status() == "400", e.value.status()
        else:
            assert e.value.status() == "StatusCode.INVALID_ARGUMENT", e.value.status()
        # a request that does not reschedule (0: answer at once) is answered: the instance lives
        assert c.infer(model, inputs(kind, 0, batched)).as_numpy("COUNT") is not None, kind
        c.close()


def test_rescheduled_request_answered_with_a_response_fails(server):
    for kind, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            c.infer("iter_py", inputs(kind, -1))
        assert ("Failed to process the request(s) for model 'iter_py_0', message: Expected a None "
                "object in the execute function return list for reschduled request, found type "
                "'InferenceResponse'." in str(e.value)), (kind, str(e.value))
        assert c.infer("iter_py", inputs(kind, 2)).as_numpy("COUNT").tolist() == [2], kind
        c.close()


def take_until_finals(stream, finals, timeout=20):
    got, seen = [], 0
    while seen < finals:
        result, error = stream.results.get(timeout=timeout)
        got.append((result, error))
        if error is not None or final_flag(result):
            seen += 1
    return got


def test_decoupled_rescheduled_request_streams_one_response_per_execution(server):
    stream = ResultStream(server)
    try:
        for n, rid in ((3, "a"), (2, "b")):
            stream.client.async_stream_infer("iter_dec_py", inputs("grpc", n), request_id=rid)
        got = take_until_finals(stream, 2)
        stream.nothing_more()
    finally:
        stream.close()
    assert all(e is None for _, e in got), [str(e) for _, e in got if e is not None]
    assert outs_of(got, "a") == [2, 1, 0]
    assert outs_of(got, "b") == [1, 0]
    for rid in ("a", "b"):
        mine = [r for r, _ in got if r.get_response().id == rid]
        assert [int(r.as_numpy("FLAGS")[0]) for r in mine] == [1] + [0] * (len(mine) - 1)
        assert [final_flag(r) for r in mine] == [False] * (len(mine) - 1) + [True]


def test_decoupled_rescheduled_request_over_the_aio_stream(server):
    async def run():
        client = grpcclient_aio.InferenceServerClient(server.target())
        try:
            async def requests():
                yield {"model_name": "iter_dec_py", "inputs": inputs("grpc", 4),
                       "request_id": "aio"}
            outs = []
            async for result, error in client.stream_infer(requests()):
                assert error is None, str(error)
                outs.append(int(result.as_numpy("OUT")[0]))
                if outs[-1] == 0:
                    break
            return outs
        finally:
            await client.close()
    assert asyncio.run(run()) == [3, 2, 1, 0]


def test_decoupled_reschedule_elsewhere_ends_the_request_with_tritons_text(server):
    stream = ResultStream(server)
    try:
        stream.client.async_stream_infer("dec_py", inputs("grpc", 3), request_id="x")
        got = take_until_finals(stream, 1)
    finally:
        stream.close()
    assert len(got) == 2, got
    assert got[0][1] is None and int(got[0][0].as_numpy("OUT")[0]) == 2
    assert got[1][1] is not None and REFUSED in str(got[1][1]), str(got[1][1])
