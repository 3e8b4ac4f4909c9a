"""Triton's trace extension through Triton's own client (REFERENCE-2.md §12.2): GET/POST
/v2/trace/setting and /v2/models/{m}/trace/setting and gRPC TraceSetting, sync and asyncio;
Triton's value forms and error texts; per-model settings over the global one, cleared with
null / an empty list; trace_file never settable; start-up errors of --trace-config; and the trace
files an inference writes: Triton's records, timestamp names in order, rate, count,
log-frequency files, ensemble parent ids and TENSORS data."""

import asyncio
import glob
import json
import os
import subprocess
import time

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, httpclient)
from helpers import repo

TIMESTAMP_ORDER = ["REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END",
                   "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END"]


def start(tmp_path, *config, name="client-trace"):
    flags = [f"--trace-config=triton,file={tmp_path / 'trace.json'}"]
    flags += [f"--trace-config={c}" for c in config]
    return GrpcServer([repo("examples")], flags, name=name).start()


def settings(name, client, model=None, update=None):
    """The settings as a dict of Triton's HTTP form, whichever protocol answered."""
    if update is None:
        got = client.get_trace_settings(model_name=model, as_json=True) if name == "grpc" \
            else client.get_trace_settings(model_name=model)
    else:
        got = client.update_trace_settings(model_name=model, settings=update, as_json=True) \
            if name == "grpc" else client.update_trace_settings(model_name=model, settings=update)
    if name != "grpc":
        return got
    out = {k: v.get("value", []) for k, v in got["settings"].items()}
    return {k: (v if k == "trace_level" else v[0]) for k, v in out.items()}


def infer_simple(client, n=1, request_id=""):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    for _ in range(n):
        inputs = [httpclient.InferInput("INPUT0", [1, 16], "INT32"),
                  httpclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(np.ones_like(a))
        client.infer("simple", inputs, request_id=request_id)


def records(tmp_path, expect_files=None, timeout=10):
    """Every record of trace.json.<n> (the writer thread writes them soon after the request; each
    file appears complete, renamed into place)."""
    deadline = time.monotonic() + timeout
    while True:
        files = sorted(f for f in glob.glob(str(tmp_path / "trace.json.*"))
                       if not f.endswith(".partial"))
        if expect_files is None or len(files) >= expect_files or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    out = []
    for f in files:
        with open(f) as fh:
            out += json.load(fh)
    return out, files


def by_id(recs):
    traces = {}
    for r in recs:
        t = traces.setdefault(r["id"], {"timestamps": [], "tensors": []})
        if "model_name" in r:
            t["header"] = r
        for ts in r.get("timestamps", []):
            t["timestamps"].append((ts["name"], ts["ns"]))
        if "activity" in r:
            t["tensors"].append(r)
    return traces


def test_settings_round_trip_both_protocols(tmp_path):
    with start(tmp_path, "level=TIMESTAMPS", "rate=1") as s:
        expected = {"trace_level": ["TIMESTAMPS"], "trace_rate": "1", "trace_count": "-1",
                    "log_frequency": "0", "trace_file": str(tmp_path / "trace.json"),
                    "trace_mode": "triton"}
        for name, c in clients(s):
            assert settings(name, c) == expected, name
            assert settings(name, c, model="simple") == expected, name
        assert "trace" in httpclient.InferenceServerClient(
            f"127.0.0.1:{s.port}").get_server_metadata()["extensions"]
        for name, c in clients(s):
            # A model setting overrides the keys it sets; the rest follow the global setting.
            got = settings(name, c, "simple", {"trace_rate": "5", "trace_level": ["TENSORS"]})
            assert got == {**expected, "trace_rate": "5", "trace_level": ["TENSORS"]}, name
            got = settings(name, c, None, {"log_frequency": "3"})
            assert got["log_frequency"] == "3" and got["trace_rate"] == "1", name
            assert settings(name, c, "simple")["log_frequency"] == "3", name
            assert settings(name, c, "simple")["trace_rate"] == "5", name
            # Clearing every key drops the model's setting.
            got = settings(name, c, "simple", {"trace_rate": None, "trace_level": None})
            assert got == {**expected, "log_frequency": "3"}, name
            got = settings(name, c, None, {"log_frequency": None,
                                           "trace_level": ["TIMESTAMPS", "TENSORS"]})
            assert got == {**expected, "trace_level": ["TIMESTAMPS", "TENSORS"]}, name
            settings(name, c, None, {"trace_level": ["TIMESTAMPS"]})


def test_settings_asyncio(tmp_path):
    async def run(s):
        for name, c in aio_clients(s):
            try:
                if name == "grpc":
                    got = await c.update_trace_settings(model_name="simple",
                                                        settings={"trace_count": "7"},
                                                        as_json=True)
                    assert got["settings"]["trace_count"]["value"] == ["7"]
                    got = await c.get_trace_settings(as_json=True)
                    assert got["settings"]["trace_count"]["value"] == ["-1"]
                    with pytest.raises(InferenceServerException) as e:
                        await c.update_trace_settings(settings={"trace_file": "x"})
                    assert "trace file location can not be updated through network protocol" \
                        in str(e.value)
                else:
                    got = await c.update_trace_settings(model_name="simple",
                                                        settings={"trace_count": "8"})
                    assert got["trace_count"] == "8"
                    got = await c.get_trace_settings()
                    assert got["trace_count"] == "-1"
                    with pytest.raises(InferenceServerException) as e:
                        await c.update_trace_settings(settings={"trace_rate": 3})
                    assert "attempt to access JSON non-string as string" in str(e.value)
            finally:
                await c.close()

    with start(tmp_path, "level=TIMESTAMPS", "rate=1") as s:
        asyncio.run(run(s))


def test_bad_updates_get_tritons_errors_and_change_nothing(tmp_path):
    with start(tmp_path, "level=TIMESTAMPS", "rate=1") as s:
        cases = [
            ({"trace_file": "/tmp/x"}, "trace file location can not be updated through network "
             "protocol"),
            ({"trace_level": ["OFF", "TIMESTAMPS"]}, "Expect only one trace level 'OFF' is "
             "specified"),
            ({"trace_rate": "often"}, "Unable to parse 'trace_rate', got: often"),
            ({"trace_rate": "99999999999"}, "Unable to parse 'trace_rate', value is out of range "
             "[ 0, 4294967295 ], got: 99999999999"),
            ({"trace_rate": "-4"}, "Unable to parse 'trace_rate', value is out of range "
             "[ 0, 4294967295 ], got: -4"),
            ({"log_frequency": "x"}, "Unable to parse 'log_frequency', got: x"),
            ({"trace_rate": "0"}, "Attempting to set invalid trace setting :sample rate must be "
             "non-zero"),
            ({"trace_count": "2147483648"}, "Unable to parse 'trace_count', value is out of range "
             "[ -1, 2147483647 ], got: 2147483648"),
        ]
        for name, c in clients(s):
            before = settings(name, c)
            for update, text in cases:
                with pytest.raises(InferenceServerException) as e:
                    settings(name, c, None, {**update, "log_frequency": "9"}
                             if "log_frequency" not in update else update)
                assert text in str(e.value), (name, update, str(e.value))
            assert settings(name, c) == before, name
            with pytest.raises(InferenceServerException) as e:
                settings(name, c, None, {"trace_count": "-2"})
            sep = " " if name == "grpc" else ""
            assert f"Unable to parse 'trace_count'. Expecting value >= -1, got:{sep}-2" in \
                str(e.value), name
            with pytest.raises(InferenceServerException) as e:
                settings(name, c, "no_such_model")
            assert "Request for unknown model : no_such_model" in str(e.value), name
        http = dict(clients(s))["http"]
        for body, text in [({"trace_rate": 5}, "attempt to access JSON non-string as string"),
                           ({"trace_level": "TIMESTAMPS"},
                            "attempt to access JSON non-array as array"),
                           ({"trace_level": [1]}, "attempt to access JSON non-string as string")]:
            with pytest.raises(InferenceServerException) as e:
                http.update_trace_settings(settings=body)
            assert text in str(e.value), body
        grpc = dict(clients(s))["grpc"]
        with pytest.raises(InferenceServerException) as e:
            grpc.update_trace_settings(settings={"trace_rate": ["1", "2"]})
        assert "expect only 1 value for 'trace_rate'" in str(e.value)
        # Unknown keys are ignored, as Triton does.
        assert settings("http", http, None, {"no_such_key": "1"})["trace_rate"] == "1"


def test_no_file_cannot_turn_tracing_on(tmp_path):
    with GrpcServer([repo("examples")], [], name="client-trace-nofile").start() as s:
        for name, c in clients(s):
            assert settings(name, c)["trace_level"] == ["OFF"]
            assert settings(name, c)["trace_rate"] == "1000"
            with pytest.raises(InferenceServerException) as e:
                settings(name, c, None, {"trace_level": ["TIMESTAMPS"]})
            assert "Attempting to set invalid trace setting :trace file name is not given" in \
                str(e.value), name


def test_inference_writes_triton_records_in_order(tmp_path):
    with start(tmp_path, "level=TIMESTAMPS", "rate=1", "triton,log-frequency=1") as s:
        for name, c in clients(s):
            mod = httpclient if name == "http" else grpcclient
            a = np.arange(16, dtype=np.int32).reshape(1, 16)
            inputs = [mod.InferInput("INPUT0", [1, 16], "INT32"),
                      mod.InferInput("INPUT1", [1, 16], "INT32")]
            inputs[0].set_data_from_numpy(a)
            inputs[1].set_data_from_numpy(np.ones_like(a))
            c.infer("simple", inputs, request_id=f"r-{name}")
        recs, files = records(tmp_path, expect_files=2)
    assert [os.path.basename(f) for f in files] == ["trace.json.0", "trace.json.1"]
    traces = {t["header"]["request_id"]: t for t in by_id(recs).values()}
    expected = {
        "r-http": ["HTTP_RECV_START", "HTTP_RECV_END"] + TIMESTAMP_ORDER
        + ["HTTP_SEND_START", "HTTP_SEND_END"],
        "r-grpc": ["GRPC_WAITREAD_START", "GRPC_WAITREAD_END"] + TIMESTAMP_ORDER
        + ["GRPC_SEND_START", "GRPC_SEND_END"],
    }
    assert set(traces) == set(expected)
    for rid, t in traces.items():
        assert t["header"]["model_name"] == "simple" and t["header"]["model_version"] == 1
        assert "parent_id" not in t["header"]
        assert [n for n, _ in t["timestamps"]] == expected[rid], rid
        ns = [v for _, v in t["timestamps"]]
        assert ns == sorted(ns) and ns[0] > 0, rid


def test_rate_count_and_shutdown_file(tmp_path):
    with start(tmp_path, "level=TIMESTAMPS", "rate=2") as s:
        c = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        infer_simple(c, 6)  # every second request: 3 traces
        c.update_trace_settings(settings={"trace_rate": "1", "trace_count": "2"})
        infer_simple(c, 4)  # 2 more, then the count is used up
        assert c.get_trace_settings()["trace_count"] == "0"
        with grpc_stop(s):
            pass
    # log_frequency 0: the traces of the first setting go to trace.json at shutdown (or when the
    # setting is replaced); the count setting flushes its 2 traces to trace.json.0 when used up.
    with open(tmp_path / "trace.json") as fh:
        main = by_id(json.load(fh))
    indexed, _ = records(tmp_path)
    assert len(main) == 3, main
    assert len(by_id(indexed)) == 2


class grpc_stop:
    """Stops a server on leaving the block and checks it exited cleanly."""

    def __init__(self, server):
        self.server = server

    def __enter__(self):
        return self.server

    def __exit__(self, *exc):
        assert self.server.stop() == 0, self.server.stderr()[-3000:]


def test_model_setting_overrides_global_off(tmp_path):
    with start(tmp_path, "level=OFF", "rate=1", "triton,log-frequency=1") as s:
        c = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        c.update_trace_settings(model_name="simple", settings={"trace_level": ["TIMESTAMPS"]})
        infer_simple(c, 2)
        x = np.zeros((1, 256), dtype=np.float32)
        i = httpclient.InferInput("INPUT0", [1, 256], "FP32")
        i.set_data_from_numpy(x)
        c.infer("identity_fp32", [i])  # global OFF: not traced
        recs, _ = records(tmp_path, expect_files=2)
    traces = by_id(recs)
    assert len(traces) == 2
    assert {t["header"]["model_name"] for t in traces.values()} == {"simple"}


def test_ensemble_steps_name_their_parent(tmp_path):
    with start(tmp_path, "level=TIMESTAMPS", "rate=1", "triton,log-frequency=1") as s:
        for name, c in clients(s):
            mod = httpclient if name == "http" else grpcclient
            i = mod.InferInput("INPUT", [1, 256], "FP32")
            i.set_data_from_numpy(np.random.rand(1, 256).astype(np.float32))
            c.infer("mlp_pipeline", [i])
        recs, _ = records(tmp_path, expect_files=2)
    traces = by_id(recs)
    parents = [t for t in traces.values() if t["header"]["model_name"] == "mlp_pipeline"]
    assert len(parents) == 2
    for p in parents:
        children = [t for t in traces.values()
                    if t["header"].get("parent_id") == p["header"]["id"]]
        assert sorted(c["header"]["model_name"] for c in children) == \
            ["identity_fp32", "identity_fp32", "mlp_fp32"]
        for child in children:
            assert [n for n, _ in child["timestamps"]] == TIMESTAMP_ORDER
            assert child["timestamps"][0][1] >= p["timestamps"][0][1]
        names = [n for n, _ in p["timestamps"]]
        assert names.index("REQUEST_START") < names.index("QUEUE_START") < \
            names.index("REQUEST_END")
        assert "COMPUTE_START" not in names  # an ensemble computes nothing itself


def test_tensors_level_records_data(tmp_path):
    with start(tmp_path, "level=TENSORS", "rate=1", "triton,log-frequency=1") as s:
        infer_simple(httpclient.InferenceServerClient(f"127.0.0.1:{s.port}"))
        recs, _ = records(tmp_path, expect_files=1)
    (t,) = by_id(recs).values()
    assert t["timestamps"] == []  # TENSORS alone records no timestamps
    inputs = {r["tensor"]["name"]: r["tensor"] for r in t["tensors"]
              if r["activity"] == "TENSOR_QUEUE_INPUT"}
    outputs = {r["tensor"]["name"]: r["tensor"] for r in t["tensors"]
               if r["activity"] == "TENSOR_BACKEND_OUTPUT"}
    assert inputs["INPUT0"] == {"name": "INPUT0", "data": ",".join(str(i) for i in range(16)),
                                "shape": "1,16", "dtype": "INT32"}
    assert outputs["OUTPUT0"]["data"] == ",".join(str(i + 1) for i in range(16))
    assert outputs["OUTPUT1"]["data"] == ",".join(str(i - 1) for i in range(16))


def test_restricted_trace_category(tmp_path):
    flags = [f"--trace-config=triton,file={tmp_path / 'trace.json'}",
             "--http-restricted-api=trace:admin-key=secret",
             "--grpc-restricted-protocol=trace:admin-key=secret"]
    with GrpcServer([repo("examples")], flags, name="client-trace-restricted").start() as s:
        for name, c in clients(s):
            for model in (None, "simple"):
                with pytest.raises(InferenceServerException) as e:
                    c.get_trace_settings(model_name=model)
                if name == "http":
                    assert "This API is restricted, expecting header 'admin-key'" in str(e.value)
                else:
                    assert "This protocol is restricted, expecting header " \
                        "'triton-grpc-protocol-admin-key'" in str(e.value)
            headers = {"admin-key": "secret"} if name == "http" else \
                {"triton-grpc-protocol-admin-key": "secret"}
            got = c.get_trace_settings(model_name="simple", headers=headers)
            assert got is not None
            # Inference is another category: not restricted.
            assert c.is_server_live()


def run_nereid(*flags):
    from nereid_server import nereid_bin
    return subprocess.run([nereid_bin(), f"--model-repository={repo('examples')}", *flags],
                          capture_output=True, text=True, timeout=30)


def test_start_up_errors(tmp_path):
    (tmp_path / "a-file").write_text("")
    bad = tmp_path / "a-file" / "trace.json"
    p = run_nereid(f"--trace-config=triton,file={bad}", "--trace-config=level=TIMESTAMPS")
    assert p.returncode == 1
    assert f"failed to open trace file '{bad}': Not a directory" in p.stderr, p.stderr
    p = run_nereid("--trace-config=mode=opentelemetry")
    assert p.returncode == 1
    assert "trace mode 'opentelemetry' is not supported by this build of Nereid" in p.stderr
    p = run_nereid("--trace-config=level=loud")
    assert p.returncode == 1
    assert 'Bad option: "--trace-config level". invalid value for trace level option: loud' in \
        p.stderr
    p = run_nereid("--trace-config=count=-5")
    assert p.returncode == 1
    assert "Expecting value >= -1" in p.stderr
