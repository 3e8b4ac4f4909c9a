"""Issue 13 item 7 follow-up through Triton's own client: ragged batching under the sequence
batcher. Three sequences whose ragged input has different shapes run as one execution under the
Direct strategy (8 slots, minimum_slot_utilization 0.375: it waits up to 2 s for 3 slots to hold
a request) and under the Oldest strategy (preferred batch size 3, 2 s queue delay), and each request
gets its own part of every batch input and of the scattered batch output, as with the dynamic
batcher (test_client_ragged.py).

The models are copies of the `ragged` fixtures (scripts/gen_test_models.py fixture_ragged) whose
dynamic_batching block is replaced by sequence_batching, in a repository served in explicit mode.
"""

import asyncio
import os
import shutil
import threading

import numpy as np
import pytest

from client_support import (GrpcServer, aio_clients, clients, grpcclient, grpcclient_aio,
                            httpclient, httpclient_aio)
from helpers import repo

LENGTHS = [3, 1, 2]  # one request of its own sequence each; all three make one execution

DIRECT = ("sequence_batching {\n  max_sequence_idle_microseconds: 5000000\n  direct {\n"
          "    max_queue_delay_microseconds: 2000000\n    minimum_slot_utilization: 0.375\n"
          "  }\n}\n")
OLDEST = ("sequence_batching {\n  max_sequence_idle_microseconds: 5000000\n  oldest {\n"
          "    max_candidate_sequences: 8\n    preferred_batch_size: [ 3 ]\n"
          "    max_queue_delay_microseconds: 2000000\n  }\n}\n")
# model name -> (fixture it copies, sequence_batching block, ragged input name)
MODELS = {
    "seq_ragged_direct": ("ragged_onnx", DIRECT, "IN"),
    "seq_ragged_oldest": ("ragged_onnx", OLDEST, "IN"),
    "seq_ragged_torch_direct": ("ragged_torch", DIRECT, "INPUT__0"),
    "seq_ragged_torch_oldest": ("ragged_torch", OLDEST, "INPUT__0"),
}


def write_models(root):
    for name, (source_name, block, _) in MODELS.items():
        source = repo("fixtures", "ragged", source_name)
        with open(os.path.join(source, "config.pbtxt")) as f:
            cfg = f.read()
        start = cfg.index("dynamic_batching {")
        end = cfg.index("}", start) + 1
        cfg = cfg[:start] + block + cfg[end:]
        cfg = cfg.replace(f'name: "{source_name}"', f'name: "{name}"')
        dst = os.path.join(root, name)
        shutil.copytree(os.path.join(source, "1"), os.path.join(dst, "1"))
        with open(os.path.join(dst, "config.pbtxt"), "w") as f:
            f.write(cfg)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("sequence_ragged"))
    write_models(root)
    s = GrpcServer([root], ["--model-control-mode=explicit"] +
                   [f"--load-model={m}" for m in MODELS], name="client-sequence-ragged").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


_next_id = [1000]
_id_lock = threading.Lock()


def new_sequence_id():
    with _id_lock:
        _next_id[0] += 1
        return _next_id[0]


def values(n, seed):
    return (np.arange(n, dtype=np.float32) + 10 * seed + 1).reshape(1, n)


def make_inputs(module, name, data):
    inp = module.InferInput(name, list(data.shape), "FP32")
    inp.set_data_from_numpy(data)
    return [inp]


def counts(s):
    if isinstance(s, dict):
        m = s["model_stats"][0]
        return int(m["inference_count"]), int(m["execution_count"])
    m = s.model_stats[0]
    return m.inference_count, m.execution_count


def check(model, results):
    torch = "torch" in model
    acc = []
    for i, r in enumerate(results):
        n = LENGTHS[i]
        x = values(n, i)
        np.testing.assert_allclose(r.as_numpy("SUM__0" if torch else "SUM"), [[x.sum()]])
        out = r.as_numpy("OUT__1" if torch else "OUT")
        assert out.shape == (1, n)  # scattered back with the request's own input shape
        np.testing.assert_array_equal(out, 2 * x)
        if torch:
            continue
        np.testing.assert_array_equal(r.as_numpy("COUNT"), [[float(n)]])  # ELEMENT_COUNT
        np.testing.assert_array_equal(r.as_numpy("ISHAPE"), [[n]])  # BATCH_ITEM_SHAPE
        # MAX_ELEMENT_COUNT_AS_SHAPE is the largest request of the execution.
        np.testing.assert_array_equal(r.as_numpy("MAXC"), [[max(LENGTHS)]])
        acc.append((int(r.as_numpy("ACC")[0, 0]), n))
    if acc:  # ACCUMULATED_ELEMENT_COUNT: running sums over the one execution's rows
        acc.sort()
        assert [a for a, _ in acc] == list(np.cumsum([n for _, n in acc])), acc


@pytest.mark.parametrize("model", list(MODELS))
def test_sequences_of_different_shapes_run_as_one_execution(server, model):
    input_name = MODELS[model][2]
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        make_client = ((lambda: httpclient.InferenceServerClient(f"127.0.0.1:{server.port}"))
                       if name == "http" else
                       (lambda: grpcclient.InferenceServerClient(server.target())))
        before = counts(c.get_inference_statistics(model))
        results = [None] * len(LENGTHS)
        errors = []

        def one(i):
            try:
                results[i] = make_client().infer(
                    model, make_inputs(module, input_name, values(LENGTHS[i], i)),
                    sequence_id=new_sequence_id(), sequence_start=True, sequence_end=True)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(LENGTHS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors, (name, errors)
        check(model, results)
        after = counts(c.get_inference_statistics(model))
        assert after[0] - before[0] == len(LENGTHS), (name, before, after)
        assert after[1] - before[1] == 1, (name, before, after)  # one execution for all three


@pytest.mark.parametrize("model", ["seq_ragged_direct", "seq_ragged_oldest"])
def test_asyncio_clients_batch_ragged_sequences(server, model):
    async def run():
        for name, c in aio_clients(server):
            try:
                module = httpclient_aio if name == "http" else grpcclient_aio
                before = counts(await c.get_inference_statistics(model))
                results = await asyncio.gather(*[
                    c.infer(model, make_inputs(module, "IN", values(n, i)),
                            sequence_id=new_sequence_id(), sequence_start=True,
                            sequence_end=True)
                    for i, n in enumerate(LENGTHS)])
                check(model, results)
                after = counts(await c.get_inference_statistics(model))
                assert after[1] - before[1] == 1, (name, before, after)
            finally:
                await c.close()
    asyncio.run(run())


def test_a_sequence_continues_with_a_different_shape(server):
    # One sequence, requests of growing shape: each runs (alone, after the queue delay) and gets
    # its own batch inputs and output shape.
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        sid = new_sequence_id()
        for k, n in enumerate([2, 4]):
            x = values(n, k)
            r = c.infer("seq_ragged_oldest", make_inputs(module, "IN", x), sequence_id=sid,
                        sequence_start=k == 0, sequence_end=k == 1)
            np.testing.assert_allclose(r.as_numpy("SUM"), [[x.sum()]])
            assert r.as_numpy("OUT").shape == (1, n), name
            np.testing.assert_array_equal(r.as_numpy("ACC"), [[n]])
