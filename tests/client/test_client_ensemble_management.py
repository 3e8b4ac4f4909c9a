"""Ensembles and model management (issue 15 item 3, REFERENCE-2 §7.4) through Triton's own client:
EXPLICIT load of an ensemble loads its composing models, unload_dependents unloads the ones it
brought in (and only those), a reloaded composing model serves the next ensemble requests, a
composing model that fails makes the ensemble UNAVAILABLE with a reason naming it, unloading a
composing model while ensemble requests are in flight never leaves one hanging, and POLL mode picks
up an ensemble added to the repository."""

import json
import os
import threading
import time

import numpy as np
import pytest

from client_support import GrpcServer, InferenceServerException, clients, grpcclient, httpclient
from ensemble_repo import add_sub_pipeline, copy_simple, ensemble, identity, io, step, write_model

A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 5, dtype=np.int32)


def pair_model(name, swapped=False, first="OUTPUT0"):
    """Identity with two inputs and outputs; swapped lists the outputs the other way round, so
    OUTPUT0 then copies INPUT1 (identity copies by position); `first` renames OUTPUT0."""
    outs = [f'{{ name: "{first}" data_type: TYPE_INT32 dims: [ 16 ] }}',
            '{ name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }']
    if swapped:
        outs.reverse()
    return f'''name: "{name}"
backend: "identity"
max_batch_size: 8
input [ {{ name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }}, {{ name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }} ]
output [ {", ".join(outs)} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
'''


def build_repo(root):
    identity(root, "ident_a")
    identity(root, "ident_b")
    copy_simple(root)
    add_sub_pipeline(root)
    write_model(root, "pick", pair_model("pick"))
    ensemble(root, "pick_ens", [io("IN0"), io("IN1")], [io("OUT")], [
        step("pick", {"INPUT0": "IN0", "INPUT1": "IN1"}, {"OUTPUT0": "OUT"})])
    write_model(root, "broken_m", 'name: "broken_m" backend: "identity" max_batch_size: -3')
    ensemble(root, "needs_broken", [io("IN")], [io("OUT")], [
        step("broken_m", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})])
    identity(root, "ident_slow", max_batch=8,
             extra='parameters { key: "execute_delay_ms" value: { string_value: "300" } }')
    identity(root, "ident_tail")
    ensemble(root, "slow_then_tail", [io("IN")], [io("OUT")], [
        step("ident_slow", {"INPUT0": "IN"}, {"OUTPUT0": "t"}),
        step("ident_tail", {"INPUT0": "t"}, {"OUTPUT0": "OUT"})])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("ensemble_mm")
    build_repo(root)
    s = GrpcServer([str(root)], ["--model-control-mode=explicit"], name="client-ensemble-mm")
    s.root = str(root)
    s.start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def ready(c, name):
    return c.is_model_ready(name)


def inputs(module, pairs):
    out = []
    for name, value in pairs:
        i = module.InferInput(name, list(value.shape), "INT32")
        i.set_data_from_numpy(value)
        out.append(i)
    return out


def test_load_brings_composing_models_and_unload_dependents(server):
    for name, c in clients(server):
        module = httpclient if name == "http" else grpcclient
        c.load_model("ident_b")  # loaded by name: not the ensemble's to unload
        c.load_model("pipeline")
        for m in ["pipeline", "ident_a", "ident_b", "simple"]:
            assert ready(c, m), (name, m)
        r = c.infer("pipeline", inputs(module, [("IN0", A), ("IN1", B)]))
        np.testing.assert_array_equal(r.as_numpy("SUM"), A + B)
        c.unload_model("pipeline")  # alone: the composing models stay
        assert not ready(c, "pipeline") and ready(c, "ident_a") and ready(c, "simple")
        c.load_model("pipeline")
        c.unload_model("pipeline", unload_dependents=True)
        deadline = time.time() + 10
        while time.time() < deadline and (ready(c, "ident_a") or ready(c, "simple")):
            time.sleep(0.05)
        assert not ready(c, "ident_a") and not ready(c, "simple"), name
        assert ready(c, "ident_b"), "explicitly loaded models are not dependents to unload"
        c.unload_model("ident_b")


def test_failing_composing_model_makes_the_ensemble_unavailable(server):
    for name, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            c.load_model("needs_broken")
        msg = e.value.message()
        assert "ensemble 'needs_broken' depends on 'broken_m' which is not valid. Model " \
               "'broken_m' failed with error: " in msg, (name, msg)
        index = c.get_model_repository_index()
        rows = index if name == "http" else [
            {"name": m.name, "state": m.state, "reason": m.reason} for m in index.models]
        row = [r for r in rows if r["name"] == "needs_broken"]
        assert row and row[0]["state"] == "UNAVAILABLE" and "broken_m" in row[0]["reason"], rows


def test_reloaded_composing_model_serves_new_requests(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    c.load_model("pick_ens")
    ins = inputs(httpclient, [("IN0", A), ("IN1", B)])
    np.testing.assert_array_equal(c.infer("pick_ens", ins).as_numpy("OUT"), A)
    swapped = pair_model("pick", swapped=True)
    with open(os.path.join(server.root, "pick", "config.pbtxt"), "w") as f:
        f.write(swapped)
    c.load_model("pick")
    np.testing.assert_array_equal(c.infer("pick_ens", ins).as_numpy("OUT"), B)
    for name, cc in clients(server):
        module = httpclient if name == "http" else grpcclient
        r = cc.infer("pick_ens", inputs(module, [("IN0", A), ("IN1", B)]))
        np.testing.assert_array_equal(r.as_numpy("OUT"), B)
    with open(os.path.join(server.root, "pick", "config.pbtxt"), "w") as f:
        f.write(pair_model("pick"))
    c.load_model("pick")
    np.testing.assert_array_equal(c.infer("pick_ens", ins).as_numpy("OUT"), A)
    # A reload the ensemble no longer fits (its mapped output is gone) unloads the ensemble with
    # the error as its reason; the composing model serves.
    with open(os.path.join(server.root, "pick", "config.pbtxt"), "w") as f:
        f.write(pair_model("pick", first="RENAMED"))
    c.load_model("pick")
    assert c.is_model_ready("pick") and not c.is_model_ready("pick_ens")
    reasons = " ".join(r.get("reason", "") for r in c.get_model_repository_index()
                       if r["name"] == "pick_ens")
    assert ("in ensemble pick_ens, ensemble tensor OUT is mapped from non-existing output "
            "OUTPUT0 in model pick") in reasons, reasons
    with pytest.raises(InferenceServerException):
        c.infer("pick_ens", ins)
    with open(os.path.join(server.root, "pick", "config.pbtxt"), "w") as f:
        f.write(pair_model("pick"))
    c.load_model("pick")
    c.load_model("pick_ens")
    np.testing.assert_array_equal(c.infer("pick_ens", ins).as_numpy("OUT"), A)
    c.unload_model("pick_ens", unload_dependents=True)


def test_composing_model_unloaded_while_requests_are_in_flight(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", concurrency=8)
    c.load_model("slow_then_tail")
    x = A
    pending = [c.async_infer("slow_then_tail", inputs(httpclient, [("IN", x)])) for _ in range(8)]
    time.sleep(0.1)  # the first steps are running (300 ms each, one instance)
    c.unload_model("ident_tail")
    ok = failed = 0
    for p in pending:
        try:
            r = p.get_result(timeout=30)
            np.testing.assert_array_equal(r.as_numpy("OUT"), x)
            ok += 1
        except InferenceServerException as e:
            assert e.message().startswith("in ensemble 'slow_then_tail', "), e.message()
            assert "ident_tail" in e.message(), e.message()
            failed += 1
    assert ok + failed == 8 and failed > 0
    c.unload_model("slow_then_tail", unload_dependents=True)


def test_poll_mode_loads_an_added_ensemble(tmp_path):
    identity(tmp_path, "ident_a")
    s = GrpcServer([str(tmp_path)], ["--model-control-mode=poll", "--repository-poll-secs=1"],
                   name="client-ensemble-poll").start()
    try:
        c = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        assert not c.is_model_ready("added")
        ensemble(tmp_path, "added", [io("IN")], [io("OUT")], [
            step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})])
        deadline = time.time() + 15
        while time.time() < deadline and not c.is_model_ready("added"):
            time.sleep(0.1)
        assert c.is_model_ready("added")
        r = c.infer("added", inputs(httpclient, [("IN", A)]))
        np.testing.assert_array_equal(r.as_numpy("OUT"), A)
    finally:
        assert s.stop() == 0


def test_a_cancelled_request_starts_no_further_step(server):
    # gRPC with a client deadline shorter than the first (300 ms) step: the client gives up, the
    # first step finishes, and the second is never dispatched (cancellation is checked before
    # each step).
    c = grpcclient.InferenceServerClient(server.target())
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    http.load_model("slow_then_tail")

    def tail_count():
        s = http.get_inference_statistics("ident_tail")["model_stats"][0]
        return int(s["inference_stats"]["success"]["count"]) + \
            int(s["inference_stats"]["fail"]["count"])

    before = tail_count()
    with pytest.raises(InferenceServerException) as e:
        c.infer("slow_then_tail", inputs(grpcclient, [("IN", A)]), client_timeout=0.1)
    assert "Deadline" in str(e.value) or "DEADLINE" in str(e.value), str(e.value)
    time.sleep(0.6)  # the first step completes meanwhile
    # The ensemble still answers later requests, through both steps.
    r = http.infer("slow_then_tail", inputs(httpclient, [("IN", A)]))
    np.testing.assert_array_equal(r.as_numpy("OUT"), A)
    assert tail_count() == before + 1
    http.unload_model("slow_then_tail", unload_dependents=True)
