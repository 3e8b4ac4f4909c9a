"""Issue 13 item 7 through Triton's own client: ragged batching. Requests whose ragged input has
different shapes are batched into one execution by the dynamic batcher (preferred batch size 3,
1 s queue delay), the model gets every batch_input kind computed over the batch, and each request
gets its own rows and its own part of the BATCH_SCATTER_WITH_INPUT_SHAPE output. Models: the
`ragged` fixture repository (scripts/gen_test_models.py fixture_ragged)."""

import asyncio
import threading

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, grpcclient_aio, httpclient, httpclient_aio)
from helpers import repo

LENGTHS = [3, 1, 2]  # one request each; all three make one batch


@pytest.fixture(scope="module")
def server():
    s = GrpcServer([repo("fixtures", "ragged")],
                   ["--model-control-mode=explicit", "--load-model=ragged_onnx",
                    "--load-model=ragged_torch"], name="client-ragged").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def values(n, seed):
    return (np.arange(n, dtype=np.float32) + 10 * seed + 1).reshape(1, n)


def make_inputs(module, name, data):
    inp = module.InferInput(name, list(data.shape), "FP32")
    inp.set_data_from_numpy(data)
    return [inp]


def stats(client, model):
    s = client.get_inference_statistics(model)
    if isinstance(s, dict):
        m = s["model_stats"][0]
        return int(m["inference_count"]), int(m["execution_count"])
    m = s.model_stats[0]
    return m.inference_count, m.execution_count


def run_concurrently(target, model, input_name, make_client, module):
    """One client per thread (tritonclient's sync clients are not shared across threads)."""
    results = [None] * len(LENGTHS)
    errors = []

    def one(i):
        try:
            c = make_client()
            results[i] = c.infer(model, make_inputs(module, input_name, values(LENGTHS[i], i)))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(LENGTHS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    return results


def check_onnx(results):
    acc = []
    for i, r in enumerate(results):
        n = LENGTHS[i]
        x = values(n, i)
        np.testing.assert_allclose(r.as_numpy("SUM"), [[x.sum()]])
        out = r.as_numpy("OUT")
        assert out.shape == (1, n)  # scattered back with the request's own IN shape
        np.testing.assert_array_equal(out, 2 * x)
        np.testing.assert_array_equal(r.as_numpy("COUNT"), [[float(n)]])  # ELEMENT_COUNT (FP32)
        np.testing.assert_array_equal(r.as_numpy("COUNTZ"), [[n]])  # ..._WITH_ZERO differences
        np.testing.assert_array_equal(r.as_numpy("ISHAPE"), [[n]])  # BATCH_ITEM_SHAPE
        np.testing.assert_array_equal(r.as_numpy("IFLAT"), [[n]])  # BATCH_ITEM_SHAPE_FLATTEN
        # MAX_ELEMENT_COUNT_AS_SHAPE is the largest request of the batch: every request sees it.
        np.testing.assert_array_equal(r.as_numpy("MAXC"), [[max(LENGTHS)]])
        acc.append((int(r.as_numpy("ACC")[0, 0]), n))
    # ACCUMULATED_ELEMENT_COUNT: running sums over the one batch, in the order it was formed.
    acc.sort()
    assert [a for a, _ in acc] == list(np.cumsum([n for _, n in acc])), acc


def check_torch(results):
    for i, r in enumerate(results):
        x = values(LENGTHS[i], i)
        np.testing.assert_allclose(r.as_numpy("SUM__0"), [[x.sum()]])
        np.testing.assert_array_equal(r.as_numpy("OUT__1"), 2 * x)


CASES = [("ragged_onnx", "IN", check_onnx), ("ragged_torch", "INPUT__0", check_torch)]


@pytest.mark.parametrize("model,input_name,check", CASES)
def test_requests_of_different_shapes_run_as_one_execution(server, model, input_name, check):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        make_client = ((lambda: httpclient.InferenceServerClient(f"127.0.0.1:{server.port}"))
                       if name == "http" else
                       (lambda: grpcclient.InferenceServerClient(server.target())))
        before = stats(c, model)
        check(run_concurrently(c, model, input_name, make_client, module))
        after = stats(c, model)
        assert after[0] - before[0] == len(LENGTHS), (name, before, after)
        assert after[1] - before[1] == 1, (name, before, after)  # one execution for all three


@pytest.mark.parametrize("model,input_name,check", CASES)
def test_asyncio_clients_batch_ragged_requests(server, model, input_name, check):
    async def run():
        for name, c in aio_clients(server):
            try:
                module = httpclient_aio if name == "http" else grpcclient_aio
                before = await c.get_inference_statistics(model)
                results = await asyncio.gather(*[
                    c.infer(model, make_inputs(module, input_name, values(n, i)))
                    for i, n in enumerate(LENGTHS)])
                check(results)
                after = await c.get_inference_statistics(model)
                count = (lambda s: (int(s["model_stats"][0]["execution_count"]))
                         if isinstance(s, dict) else s.model_stats[0].execution_count)
                assert count(after) - count(before) == 1, name
            finally:
                await c.close()
    asyncio.run(run())


def test_a_single_ragged_request_gets_its_batch_inputs_and_shape(server):
    # Alone in its batch (the queue delay expires): all batch inputs describe this request only.
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    x = values(5, 0)
    r = c.infer("ragged_onnx", make_inputs(httpclient, "IN", x))
    np.testing.assert_allclose(r.as_numpy("SUM"), [[x.sum()]])
    for out in ("ACC", "COUNTZ", "MAXC", "ISHAPE", "IFLAT"):
        np.testing.assert_array_equal(r.as_numpy(out), [[5]])
    assert r.as_numpy("OUT").shape == (1, 5)


def test_the_ragged_configuration_is_reported_as_written(server):
    for name, c in clients(server):
        cfg = c.get_model_config("ragged_onnx")
        if name == "http":
            assert cfg["input"][0]["allow_ragged_batch"] is True
            kinds = [b["kind"] for b in cfg["batch_input"]]
            assert cfg["batch_output"][0]["kind"] == "BATCH_SCATTER_WITH_INPUT_SHAPE"
        else:
            assert cfg.config.input[0].allow_ragged_batch
            kinds = [b.kind for b in cfg.config.batch_input]
            assert len(cfg.config.batch_output) == 1
        assert len(kinds) == 6, (name, kinds)


@pytest.mark.parametrize("model,message", [
    ("ragged_bad_shape_onnx",
     "unable to load model 'ragged_bad_shape_onnx', configuration expects model provides input "
     "with shape [-1]  for ragged input 'IN', model provides [-1,-1]"),
    ("ragged_bad_source_onnx", "unknown source input name 'NOPE'"),
])
def test_bad_ragged_models_fail_to_load_with_a_clear_error(server, model, message):
    for name, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            c.load_model(model)
        assert message in e.value.message(), (name, e.value.message())
        assert not c.is_model_ready(model), name
