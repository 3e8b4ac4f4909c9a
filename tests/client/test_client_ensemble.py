"""Ensembles (issue 15, REFERENCE-2 §7) through Triton's own client: a fan-out/fan-in pipeline over
identity models and add/sub `simple`, a 64-step chain, ensembles nested 3 deep, BYTES, pruning,
request id and parameters, step errors, and every broken configuration UNAVAILABLE with Triton's
reason while the rest serves."""

import asyncio

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients, httpclient,
                            module_of)
from ensemble_repo import (I16, add_sub_pipeline, chain, copy_simple, ensemble, identity, io,
                           step)

A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 3, dtype=np.int32)
S16 = ("TYPE_STRING", (16,))


def build_repo(root):
    identity(root, "ident_a")
    identity(root, "ident_b")
    identity(root, "ident_str", "TYPE_STRING")
    identity(root, "ident_fp32", "TYPE_FP32")
    copy_simple(root)
    add_sub_pipeline(root)
    chain(root, "chain64", "ident_a", 64)
    chain(root, "nest3", "ident_a", 2)
    chain(root, "nest2", "nest3", 1, model_io=("IN", "OUT"))
    chain(root, "nest1", "nest2", 1, model_io=("IN", "OUT"))
    chain(root, "bytes_chain", "ident_str", 3, S16)
    # A non-batching ensemble over a batching model and the reverse (REFERENCE-2 §7.2).
    identity(root, "ident_nobatch", max_batch=0)
    ensemble(root, "nobatch_over_batch", [io("IN")], [io("OUT")], [
        step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "t"}),
        step("ident_nobatch", {"INPUT0": "t"}, {"OUTPUT0": "OUT"})], max_batch=0)
    ensemble(root, "batch_over_nobatch", [io("IN")], [io("OUT")], [
        step("ident_nobatch", {"INPUT0": "IN"}, {"OUTPUT0": "t"}),
        step("ident_a", {"INPUT0": "t"}, {"OUTPUT0": "OUT"})], max_batch=4)
    # Broken ones: each UNAVAILABLE with its reason, none affecting the others.
    ensemble(root, "bad_cycle", [io("IN")], [io("OUT")], [
        step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "t1"}),
        step("simple", {"INPUT0": "t1", "INPUT1": "t2"}, {"OUTPUT0": "t2", "OUTPUT1": "OUT"}),
    ])
    ensemble(root, "bad_twice", [io("IN")], [io("OUT")], [
        step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"}),
        step("ident_b", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"}),
    ])
    ensemble(root, "bad_unknown", [io("IN")], [io("OUT")], [
        step("no_such_model", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})])
    ensemble(root, "bad_version", [io("IN")], [io("OUT")], [
        step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"}, version=7)])
    ensemble(root, "bad_dtype", [io("IN", S16)], [io("OUT", S16)], [
        step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})])
    ensemble(root, "bad_shape", [("IN", "TYPE_INT32", (8,))], [io("OUT")], [
        step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})])
    ensemble(root, "bad_self", [io("IN")], [io("OUT")], [
        step("bad_self", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})])
    ensemble(root, "bad_batch", [io("IN")], [io("OUT")], [
        step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})], max_batch=16)
    ensemble(root, "bad_cyc_a", [io("IN")], [io("OUT")], [
        step("bad_cyc_b", {"IN": "IN"}, {"OUT": "OUT"})])
    ensemble(root, "bad_cyc_b", [io("IN")], [io("OUT")], [
        step("bad_cyc_a", {"IN": "IN"}, {"OUT": "OUT"})])
    ensemble(root, "bad_group", [io("IN")], [io("OUT")], [
        step("ident_a", {"INPUT0": "IN"}, {"OUTPUT0": "OUT"})],
        extra="instance_group [ { count: 1 kind: KIND_CPU } ]")


BROKEN = {
    "bad_cycle": "output 'OUT' for ensemble 'bad_cycle' is not written",
    "bad_twice": "ensemble tensor 'OUT' can appear in an output map only once for ensemble "
                 "'bad_twice' step 1",
    "bad_unknown": "ensemble bad_unknown contains models that are not available or ambiguous: "
                   "no_such_model",
    "bad_version": "ensemble 'bad_version' depends on 'ident_a' whose required version 7 is not "
                   "loaded.",
    "bad_dtype": "in ensemble bad_dtype, ensemble tensor IN: inconsistent data type: TYPE_STRING "
                 "is inferred from model bad_dtype while TYPE_INT32 is inferred from model "
                 "ident_a",
    "bad_shape": "in ensemble bad_shape, ensemble tensor IN: inconsistent shape: [-1,8] is "
                 "inferred from model bad_shape while [-1,16] is inferred from model ident_a",
    "bad_self": "circular dependency between ensembles: bad_self -> bad_self",
    "bad_batch": "ensemble bad_batch allows maximum batch size 16, but it contains model ident_a "
                 "which only allows maximum batch size to be 8",
    "bad_group": "instance group should not be specified for ensemble 'bad_group'",
    "bad_cyc_a": "circular dependency between ensembles: bad_cyc_a -> bad_cyc_b -> bad_cyc_a",
    "bad_cyc_b": "circular dependency between ensembles: bad_cyc_a -> bad_cyc_b -> bad_cyc_a",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("ensembles")
    build_repo(root)
    s = GrpcServer([str(root)], ["--exit-on-error=false", "--strict-readiness=false"],
                   name="client-ensemble").start()
    yield s
    assert s.stop() == 0, s.stderr()[-4000:]


def make_inputs(module, names_values, dtype="INT32"):
    inputs = []
    for name, value in names_values:
        i = module.InferInput(name, list(value.shape), dtype)
        i.set_data_from_numpy(value)
        inputs.append(i)
    return inputs


def test_fan_out_fan_in_pipeline(server):
    for name, c in clients(server):
        m = module_of(name)
        result = c.infer("pipeline", make_inputs(m, [("IN0", A), ("IN1", B)]), request_id="r-42")
        np.testing.assert_array_equal(result.as_numpy("SUM"), A + B)
        np.testing.assert_array_equal(result.as_numpy("DIFF"), A - B)
        response = result.get_response()
        rid = response["id"] if name == "http" else response.id
        assert rid == "r-42", name
        model = response["model_name"] if name == "http" else response.model_name
        assert model == "pipeline"


def test_only_requested_outputs_are_returned(server):
    for name, c in clients(server):
        m = module_of(name)
        out = [m.InferRequestedOutput("DIFF")]
        result = c.infer("pipeline", make_inputs(m, [("IN0", A), ("IN1", B)]), outputs=out)
        np.testing.assert_array_equal(result.as_numpy("DIFF"), A - B)
        assert result.as_numpy("SUM") is None


def test_batch_of_two(server):
    a = np.concatenate([A, A * 2])
    b = np.concatenate([B, B])
    for name, c in clients(server):
        m = module_of(name)
        result = c.infer("pipeline", make_inputs(m, [("IN0", a), ("IN1", b)]))
        np.testing.assert_array_equal(result.as_numpy("SUM"), a + b)


def test_chain_of_64_steps(server):
    for name, c in clients(server):
        m = module_of(name)
        result = c.infer("chain64", make_inputs(m, [("IN", A)]))
        np.testing.assert_array_equal(result.as_numpy("OUT"), A)


def test_nested_three_deep(server):
    for name, c in clients(server):
        m = module_of(name)
        result = c.infer("nest1", make_inputs(m, [("IN", B)]))
        np.testing.assert_array_equal(result.as_numpy("OUT"), B)


def test_bytes_flow_through(server):
    words = np.array([[f"w{i}".encode() * (i + 1) for i in range(16)]], dtype=np.object_)
    for name, c in clients(server):
        m = module_of(name)
        result = c.infer("bytes_chain", make_inputs(m, [("IN", words)], "BYTES"))
        np.testing.assert_array_equal(result.as_numpy("OUT"), words)


def test_wrong_input_is_refused_by_the_ensemble(server):
    for name, c in clients(server):
        m = module_of(name)
        with pytest.raises(InferenceServerException) as e:
            c.infer("pipeline", make_inputs(m, [("IN0", A), ("NOPE", B)]))
        assert "NOPE" in e.value.message(), (name, e.value.message())


def test_broken_ensembles_are_unavailable_with_the_reason(server):
    for name, c in clients(server):
        index = c.get_model_repository_index()
        rows = index if name == "http" else [
            {"name": m.name, "state": m.state, "reason": m.reason} for m in index.models]
        by_name = {}
        for row in rows:
            by_name.setdefault(row["name"], []).append(row)
        for model, text in BROKEN.items():
            assert model in by_name, (name, model)
            states = by_name[model]
            assert all(r.get("state") == "UNAVAILABLE" for r in states), (name, model, states)
            reasons = " ".join(r.get("reason", "") for r in states)
            assert text in reasons, (name, model, reasons)
            assert not c.is_model_ready(model)
        for good in ["pipeline", "chain64", "nest1", "nest2", "nest3", "bytes_chain", "ident_a",
                     "simple"]:
            assert c.is_model_ready(good), (name, good)


def test_metadata_and_config(server):
    for name, c in clients(server):
        meta = c.get_model_metadata("pipeline")
        config = c.get_model_config("pipeline")
        if name == "http":
            assert meta["platform"] == "ensemble"
            assert [i["shape"] for i in meta["inputs"]] == [[-1, 16], [-1, 16]]
            assert config.get("instance_group", []) == [] and "optimization" not in config
            steps = config["ensemble_scheduling"]["step"]
            assert steps[0]["model_version"] == -1
        else:
            assert meta.platform == "ensemble"
            assert list(meta.inputs[0].shape) == [-1, 16]
            assert len(config.config.instance_group) == 0
            assert config.config.ensemble_scheduling.step[2].model_name == "simple"


def test_asyncio_clients(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                m = module_of(name)
                results = await asyncio.gather(*[
                    c.infer("pipeline", make_inputs(m, [("IN0", A * k), ("IN1", B)]))
                    for k in range(16)])
                for k, r in enumerate(results):
                    np.testing.assert_array_equal(r.as_numpy("SUM"), A * k + B)
            finally:
                await c.close()
    asyncio.run(run())


def _stats(name, c, model):
    s = c.get_inference_statistics(model)
    if name == "http":
        row = s["model_stats"][0]
        return {"success": int(row["inference_stats"]["success"]["count"]),
                "inference_count": int(row["inference_count"]),
                "execution_count": int(row["execution_count"]),
                "version": row["version"],
                "input_ns": int(row["inference_stats"]["compute_input"]["ns"]),
                "infer_ns": int(row["inference_stats"]["compute_infer"]["ns"]),
                "output_ns": int(row["inference_stats"]["compute_output"]["ns"])}
    row = s.model_stats[0]
    return {"success": row.inference_stats.success.count, "inference_count": row.inference_count,
            "execution_count": row.execution_count, "version": row.version,
            "input_ns": row.inference_stats.compute_input.ns,
            "infer_ns": row.inference_stats.compute_infer.ns,
            "output_ns": row.inference_stats.compute_output.ns}


def test_statistics_count_the_ensemble_and_each_step(server):
    import requests
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    before = {m: _stats("http", http, m) for m in ["nest1", "nest2", "nest3", "ident_a"]}
    for _ in range(3):
        http.infer("nest1", make_inputs(httpclient, [("IN", A)]))
    for name, c in clients(server):
        after = {m: _stats(name, c, m) for m in before}
        for m in ["nest1", "nest2", "nest3"]:
            assert after[m]["success"] - before[m]["success"] == 3, (name, m)
            assert after[m]["inference_count"] - before[m]["inference_count"] == 3, (name, m)
            assert after[m]["execution_count"] - before[m]["execution_count"] == 3, (name, m)
            assert after[m]["infer_ns"] > before[m]["infer_ns"]
        # nest3 runs ident_a twice per request: each step is one request of ident_a.
        assert after["ident_a"]["success"] - before["ident_a"]["success"] == 6, name
        # An ensemble's compute durations are the sums over its steps (REFERENCE-2 §7.4): here
        # every ident_a execution came from these requests, so the sums match to the nanosecond.
        delta = {m: {k: after[m][k] - before[m][k] for k in ("input_ns", "infer_ns", "output_ns")}
                 for m in before}
        assert delta["nest3"] == delta["ident_a"], (name, delta)
        assert delta["nest2"] == delta["nest3"] == delta["nest1"], (name, delta)
        assert delta["nest1"]["infer_ns"] > 0, (name, delta)
    text = requests.get(server.metrics_url()).text
    line = [l for l in text.splitlines()
            if l.startswith('nv_inference_request_success{') and 'model="nest1"' in l]
    assert line and 'version="1"' in line[0] and float(line[0].split()[-1]) >= 3, line


def test_example_mlp_pipeline_matches_mlp_alone():
    from helpers import repo
    s = GrpcServer([repo("examples")], ["--metrics-config=summary_latencies=true"],
                   name="client-ensemble-example").start()
    try:
        x = np.random.default_rng(5).standard_normal((2, 256)).astype(np.float32)
        for name, c in clients(s):
            m = module_of(name)
            i = m.InferInput("INPUT", [2, 256], "FP32")
            i.set_data_from_numpy(x)
            got = c.infer("mlp_pipeline", [i]).as_numpy("OUTPUT")
            j = m.InferInput("INPUT0", [2, 256], "FP32")
            j.set_data_from_numpy(x)
            want = c.infer("mlp_fp32", [j]).as_numpy("OUTPUT0")
            assert got.shape == (2, 16)
            np.testing.assert_array_equal(got, want)
        # The ensemble has latency summaries like any model.
        import requests
        text = requests.get(s.metrics_url()).text
        assert any(l.startswith("nv_inference_request_summary_us_count{") and
                   'model="mlp_pipeline"' in l and float(l.split()[-1]) == 2
                   for l in text.splitlines()), [l for l in text.splitlines() if "summary" in l]
    finally:
        assert s.stop() == 0


def test_batching_and_non_batching_steps_adapt_shapes(server):
    x = np.arange(16, dtype=np.int32)
    for name, c in clients(server):
        m = module_of(name)
        r = c.infer("nobatch_over_batch", make_inputs(m, [("IN", x)]))
        assert r.as_numpy("OUT").shape == (16,), name
        np.testing.assert_array_equal(r.as_numpy("OUT"), x)
        r = c.infer("batch_over_nobatch", make_inputs(m, [("IN", x.reshape(1, 16))]))
        assert r.as_numpy("OUT").shape == (1, 16), name
        np.testing.assert_array_equal(r.as_numpy("OUT"), x.reshape(1, 16))
