"""Ensemble request flow (issue 15 items 2 and 5, REFERENCE-2 §7.2) through Triton's own client:
stateful steps (Direct and Oldest sequence batchers with implicit state) over the gRPC stream and
over HTTP with the sequence id and START/END flags passed to the step, the correlation-ID error of
a stateful step with the ensemble prefix, a composing model's error prefixed
"in ensemble 'E', ", and the request timeout applied in the composing model's queue."""

import os
import queue
import shutil
import threading
import time

import numpy as np
import pytest

from client_support import GrpcServer, InferenceServerException, clients, grpcclient, httpclient
from ensemble_repo import copy_simple, ensemble, identity, step
from helpers import repo

I1 = ("TYPE_INT32", (1,))


def copy_seq(root, name, src="seq_accum"):
    source = repo("fixtures", "sequence", src)
    shutil.copytree(source, os.path.join(str(root), name))
    cfg = os.path.join(str(root), name, "config.pbtxt")
    with open(cfg) as f:
        text = f.read().replace(f'name: "{src}"', f'name: "{name}"')
    with open(cfg, "w") as f:
        f.write(text)


def build_repo(root):
    identity(root, "ident_i1", "TYPE_INT32", (1,), max_batch=4)
    copy_seq(root, "acc_direct")
    copy_seq(root, "acc_oldest", "seq_accum_oldest")
    for seq in ["acc_direct", "acc_oldest"]:
        ensemble(root, f"ens_{seq}", [("IN", *I1)], [("OUT", *I1)], [
            step("ident_i1", {"INPUT0": "IN"}, {"OUTPUT0": "t"}),
            step(seq, {"INPUT": "t"}, {"OUTPUT": "OUT"}),
        ], max_batch=4)
    # A variable-size pipeline whose second step (simple, [16]) refuses other sizes at run time.
    identity(root, "ident_var", "TYPE_INT32", (-1,))
    copy_simple(root)
    ensemble(root, "var_to_simple", [("IN", "TYPE_INT32", (-1,))], [("SUM", "TYPE_INT32", (16,))],
             [step("ident_var", {"INPUT0": "IN"}, {"OUTPUT0": "t"}),
              step("simple", {"INPUT0": "t", "INPUT1": "t"}, {"OUTPUT0": "SUM"})])
    # Priority levels in a step's batcher: the verbose log names the request and its level.
    identity(root, "ident_prio", "TYPE_INT32", (1,), max_batch=4,
             extra="dynamic_batching { priority_levels: 3 default_priority_level: 3 }")
    ensemble(root, "prio_ens", [("IN", *I1)], [("OUT", *I1)], [
        step("ident_prio", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})], max_batch=4)
    # A decoupled step makes the ensemble decoupled (REFERENCE-2 §7.1).
    identity(root, "ident_dec", "TYPE_INT32", (1,), max_batch=4,
             extra="model_transaction_policy { decoupled: true }")
    ensemble(root, "dec_ens", [("IN", *I1)], [("OUT", *I1)], [
        step("ident_i1", {"INPUT0": "IN"}, {"OUTPUT0": "t"}),
        step("ident_dec", {"INPUT0": "t"}, {"OUTPUT0": "OUT"})], max_batch=4)
    # A slow composing model with a queue: the step's timeout runs out while it waits there.
    identity(root, "ident_slow", "TYPE_INT32", (16,), max_batch=1,
             extra='parameters { key: "execute_delay_ms" value: { string_value: "600" } }\n'
                   'dynamic_batching { default_queue_policy { allow_timeout_override: true default_timeout_microseconds: 10000000 } }')
    ensemble(root, "slow_ens", [("IN", "TYPE_INT32", (16,))], [("OUT", "TYPE_INT32", (16,))],
             [step("ident_slow", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})], max_batch=1)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("ensemble_flow")
    build_repo(root)
    s = GrpcServer([str(root)], ["--log-verbose=1"], name="client-ensemble-flow").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def one(module, value, name="IN"):
    i = module.InferInput(name, [1, 1], "INT32")
    i.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    return [i]


@pytest.mark.parametrize("model", ["ens_acc_direct", "ens_acc_oldest"])
def test_sequence_over_grpc_stream(server, model):
    c = grpcclient.InferenceServerClient(server.target())
    results = queue.Queue()
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        values = [5, 7, 11]
        for k, v in enumerate(values):
            c.async_stream_infer(model, one(grpcclient, v), sequence_id=900 + len(model),
                                 sequence_start=k == 0, sequence_end=k == len(values) - 1,
                                 request_id=f"s{k}")
        got, flags = [], []
        for _ in values:
            result, error = results.get(timeout=20)
            assert error is None, error
            got.append(int(result.as_numpy("OUT")[0][0]))
            p = result.get_response().parameters
            flags.append((p["sequence_start"].bool_param, p["sequence_end"].bool_param))
            assert p["sequence_id"].int64_param == 900 + len(model)
        assert got == [5, 12, 23]
        # Triton's test_ensemble_sequence_flags.
        assert flags == [(True, False), (False, False), (False, True)]
    finally:
        c.stop_stream()
        c.close()


def test_sequence_over_http_and_interleaved(server):
    # Two sequences interleaved: each keeps its own state through the ensemble.
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    seq = {71: [1, 2, 3], 72: [10, 20, 30]}
    sums = {71: 0, 72: 0}
    for k in range(3):
        for sid, values in seq.items():
            r = c.infer("ens_acc_direct", one(httpclient, values[k]), sequence_id=sid,
                        sequence_start=k == 0, sequence_end=k == 2)
            sums[sid] += values[k]
            assert int(r.as_numpy("OUT")[0][0]) == sums[sid]


def test_stateful_step_without_correlation_id(server):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        with pytest.raises(InferenceServerException) as e:
            c.infer("ens_acc_direct", one(module, 1))
        assert e.value.message() == (
            "in ensemble 'ens_acc_direct', inference request to model 'acc_direct' must specify "
            "a non-zero or non-empty correlation ID"), (name, e.value.message())


def test_composing_error_is_prefixed(server):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        good = module.InferInput("IN", [1, 16], "INT32")
        good.set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
        r = c.infer("var_to_simple", [good])
        np.testing.assert_array_equal(r.as_numpy("SUM"), 2 * np.arange(16).reshape(1, 16))
        bad = module.InferInput("IN", [1, 8], "INT32")
        bad.set_data_from_numpy(np.arange(8, dtype=np.int32).reshape(1, 8))
        with pytest.raises(InferenceServerException) as e:
            c.infer("var_to_simple", [bad])
        msg = e.value.message()
        assert msg.startswith("in ensemble 'var_to_simple', "), (name, msg)
        assert "simple" in msg and "INPUT0" in msg, (name, msg)
        # Straight to the model, the same error has no prefix.
        with pytest.raises(InferenceServerException) as direct:
            bad0 = module.InferInput("INPUT0", [1, 8], "INT32")
            bad0.set_data_from_numpy(np.arange(8, dtype=np.int32).reshape(1, 8))
            bad1 = module.InferInput("INPUT1", [1, 8], "INT32")
            bad1.set_data_from_numpy(np.arange(8, dtype=np.int32).reshape(1, 8))
            c.infer("simple", [bad0, bad1])
        assert msg == "in ensemble 'var_to_simple', " + direct.value.message()


def test_timeout_applies_in_the_composing_queue(server):
    x = np.zeros((1, 16), dtype=np.int32)
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        blocker_done = threading.Event()

        def blocker():
            b = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
            i = httpclient.InferInput("INPUT0", [1, 16], "INT32")
            i.set_data_from_numpy(x)
            b.infer("ident_slow", [i])
            blocker_done.set()

        t = threading.Thread(target=blocker)
        t.start()
        time.sleep(0.2)  # the blocker is executing (600 ms); the step must queue behind it
        i = module.InferInput("IN", [1, 16], "INT32")
        i.set_data_from_numpy(x)
        with pytest.raises(InferenceServerException) as e:
            c.infer("slow_ens", [i], timeout=50000)  # 50 ms, in microseconds
        t.join()
        assert blocker_done.is_set()
        assert e.value.message() == "in ensemble 'slow_ens', Request timeout expired", (
            name, e.value.message())
        # Without a timeout the same request succeeds.
        r = c.infer("slow_ens", [i])
        np.testing.assert_array_equal(r.as_numpy("OUT"), x)


def test_decoupled_step_makes_the_ensemble_decoupled(server):
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    assert http.get_model_config("dec_ens")["model_transaction_policy"]["decoupled"] is True
    with pytest.raises(InferenceServerException) as e:
        http.infer("dec_ens", one(httpclient, 3))
    assert e.value.message() == (
        "HTTP end point doesn't support models with decoupled transaction policy")
    c = grpcclient.InferenceServerClient(server.target())
    results = queue.Queue()
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        c.async_stream_infer("dec_ens", one(grpcclient, 3))
        result, error = results.get(timeout=20)
        assert error is None, error
        assert int(result.as_numpy("OUT")[0][0]) == 3
    finally:
        c.stop_stream()
        c.close()


def test_request_id_and_priority_reach_the_step(server):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        rid = f"prio-{name}"
        r = c.infer("prio_ens", one(module, 4), request_id=rid, priority=1)
        assert int(r.as_numpy("OUT")[0][0]) == 4
        server.wait_for_log(f"model 'ident_prio': request '{rid}' queued at priority level 1")
        r = c.infer("prio_ens", one(module, 4), request_id=rid + "-default")
        server.wait_for_log(
            f"model 'ident_prio': request '{rid}-default' queued at priority level 3")
