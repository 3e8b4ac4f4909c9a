"""The Python backend (issue 18, REFERENCE-2 §10) through Triton's own client: the model.py
contract (initialize args, execute over lists of requests, BYTES as object arrays of bytes,
pb_utils helpers), dynamic batching, several instances (one stub process each), failures
(initialize errors, execute exceptions, wrong returns, a stub that exits or hangs is restarted)
and decoupled models through the response sender."""

import asyncio
import json
import queue
import time

import numpy as np
import pytest

from cancel_support import wait_for
from client_support import (GrpcServer, InferenceServerException, aio_clients, clients, grpcclient,
                            grpcclient_aio, httpclient, module_of, serve_repository)
import python_models
from stream_support import outs_of, stream_counts


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from serve_repository(tmp_path_factory, "python_backend", python_models.write_all,
                                ["--exit-on-error=false", "--strict-readiness=false",
                                 "--backend-config=python,stub-timeout-seconds=3"],
                                name="client-python")


def add_sub_inputs(module, a, b):
    inputs = [module.InferInput("INPUT0", list(a.shape), "FP32"),
              module.InferInput("INPUT1", list(b.shape), "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return inputs


def test_add_sub_over_http_and_grpc(server):
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    b = np.full((2, 4), 0.5, dtype=np.float32)
    for name, c in clients(server):
        assert c.is_model_ready("add_sub_py")
        result = c.infer("add_sub_py", add_sub_inputs(module_of(name), a, b))
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
    assert "add_sub_py initialized" in server.stderr()


def test_add_sub_aio(server):
    a = np.ones((1, 4), dtype=np.float32)
    b = np.arange(4, dtype=np.float32).reshape(1, 4)

    async def run():
        for name, c in aio_clients(server):
            try:
                result = await c.infer("add_sub_py", add_sub_inputs(module_of(name), a, b))
                np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
            finally:
                await c.close()
    asyncio.run(run())


def test_dynamic_batching_delivers_the_gathered_batch(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", concurrency=8)
    a = [np.full((1, 4), i, dtype=np.float32) for i in range(8)]
    pending = [c.async_infer("add_sub_py", add_sub_inputs(httpclient, x, x)) for x in a]
    for x, p in zip(a, pending):
        np.testing.assert_array_equal(p.get_result().as_numpy("OUTPUT0"), x + x)
    stats = c.get_inference_statistics("add_sub_py")["model_stats"][0]
    assert stats["inference_count"] >= 8
    assert stats["execution_count"] < stats["inference_count"], stats  # batches were formed


def test_execute_gets_one_request_per_client_request(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", concurrency=6)
    pending = []
    for i in range(6):
        t = httpclient.InferInput("X", [1, 1], "INT32")
        t.set_data_from_numpy(np.array([[i]], dtype=np.int32))
        pending.append(c.async_infer("batch_py", [t], request_id=f"id{i}",
                                     parameters={"k": f"v{i}", "n": i}))
    counts = []
    for i, p in enumerate(pending):
        r = p.get_result()
        assert r.as_numpy("DOUBLE")[0][0] == 2 * i
        request_id, params = r.as_numpy("META")[0][0].decode().split("|", 1)
        assert request_id == f"id{i}" and json.loads(params) == {"k": f"v{i}", "n": i}
        counts.append(int(r.as_numpy("COUNT")[0][0]))
    assert max(counts) > 1, counts  # a batch reached execute() as a list of requests
    g = grpcclient.InferenceServerClient(server.target())
    t = grpcclient.InferInput("X", [2, 1], "INT32")
    t.set_data_from_numpy(np.array([[3], [4]], dtype=np.int32))
    r = g.infer("batch_py", [t], request_id="two-rows")
    assert r.as_numpy("DOUBLE").tolist() == [[6], [8]]
    assert r.as_numpy("META")[1][0].decode() == "two-rows|{}"


def introspect(c, module, texts, request_id="", outputs=None):
    t = module.InferInput("TEXT", [len(texts)], "BYTES")
    t.set_data_from_numpy(np.array(texts, dtype=np.object_))
    requested = None if outputs is None else [module.InferRequestedOutput(o) for o in outputs]
    result = c.infer("introspect_py", [t], request_id=request_id, outputs=requested)
    info = json.loads(result.as_numpy("INFO")[0]) if outputs is None or "INFO" in outputs else None
    return result, info


def test_initialize_args_and_request_accessors(server):
    for name, c in clients(server):
        result, info = introspect(c, module_of(name), [b"ab", b"c\x00d"], request_id="r-7")
        assert list(result.as_numpy("UPPER")) == [b"AB", b"C\x00D"]
        args = info["args"]
        assert sorted(args) == sorted(["model_config", "model_instance_kind",
                                       "model_instance_name", "model_instance_device_id",
                                       "model_repository", "model_version", "model_name"])
        assert args["model_instance_kind"] == "CPU"
        assert args["model_instance_name"] in ("introspect_py_0_0", "introspect_py_0_1")
        assert args["model_instance_device_id"] == "0"
        assert args["model_repository"] == str(server.root / "introspect_py")
        assert args["model_version"] == "1" and args["model_name"] == "introspect_py"
        assert json.loads(args["model_config"])["name"] == "introspect_py"
        assert info["input_types"] == ["bytes", "bytes"]
        assert info["requested"] == ["UPPER", "INFO"]
        assert info["numpy_to_triton"] == 11 and "int64" in info["triton_to_numpy"]
        assert info["is_cancelled"] is False and info["flags"] == 0


def test_requested_output_names(server):
    for name, c in clients(server):
        result, _ = introspect(c, module_of(name), [b"x"], outputs=["UPPER"])
        assert list(result.as_numpy("UPPER")) == [b"X"]
        assert result.as_numpy("INFO") is None


def test_instance_group_count_gives_that_many_processes(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", concurrency=4)
    pids = set()
    for _ in range(6):
        pending = []
        for _ in range(4):
            t = httpclient.InferInput("TEXT", [1], "BYTES")
            t.set_data_from_numpy(np.array([b"slow"], dtype=np.object_))
            pending.append(c.async_infer("introspect_py", [t]))
        for p in pending:
            pids.add(json.loads(p.get_result().as_numpy("INFO")[0])["pid"])
    assert len(pids) == 2, pids


def faulty(c, module, mode):
    t = module.InferInput("MODE", [1], "INT32")
    t.set_data_from_numpy(np.array([mode], dtype=np.int32))
    return c.infer("faulty_py", [t])


def faulty_error(c, module, mode):
    with pytest.raises(InferenceServerException) as e:
        faulty(c, module, mode)
    return e.value.message()


def test_execute_errors_fail_the_request_and_the_instance_lives(server):
    for name, c in clients(server):
        m = module_of(name)
        pid = faulty(c, m, 0).as_numpy("OUT")[0]
        msg = faulty_error(c, m, 1)
        assert msg.startswith("Failed to process the request(s) for model 'faulty_py_0', "
                              "message: ValueError: mode one is not allowed"), msg
        assert "model.py(13): execute" in msg and "nereid_python_stub" not in msg, msg
        assert "Expected a list in the execute return, found type 'NoneType'." in \
            faulty_error(c, m, 2)
        assert ("Number of InferenceResponse objects do not match the number of "
                "InferenceRequest objects. InferenceRequest(s) size is:1, and "
                "InferenceResponse(s) size is:2") in faulty_error(c, m, 3)
        assert ("Expected an 'InferenceResponse' object in the execute function return list, "
                "found type 'str'.") in faulty_error(c, m, 4)
        assert ("Expected an 'InferenceResponse' object in the execute function return list, "
                "found type 'ndarray'.") in faulty_error(c, m, 40)
        assert "of type FP32, configuration says INT64" in faulty_error(c, m, 5)
        assert "did not produce output 'OUT'" in faulty_error(c, m, 6)
        assert faulty_error(c, m, 7) == "bad mode seven"
        assert faulty(c, m, 0).as_numpy("OUT")[0] == pid  # same stub process throughout


def test_triton_error_code_reaches_the_client(server):
    c = grpcclient.InferenceServerClient(server.target())
    with pytest.raises(InferenceServerException) as e:
        faulty(c, grpcclient, 7)
    assert e.value.status() == "StatusCode.INVALID_ARGUMENT"
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    with pytest.raises(InferenceServerException) as e:
        faulty(h, httpclient, 7)
    assert e.value.status() == "400"


def test_huge_output(server):
    for name, c in clients(server):
        if name == "grpc":
            continue  # 64 MiB is over the gRPC client's default message limit
        out = faulty(c, module_of(name), 10).as_numpy("OUT")
        assert out.shape == (8 * 1024 * 1024,) and out[-1] == 7 and out[0] == 0


@pytest.mark.parametrize("mode,reason", [(8, "exited"), (9, "timed out")])
def test_dead_or_hung_stub_fails_the_request_and_is_restarted(server, mode, reason):
    for name, c in clients(server):
        m = module_of(name)
        before = faulty(c, m, 0).as_numpy("OUT")[0]
        start = time.monotonic()
        assert faulty_error(c, m, mode) == (
            "Failed to process the request(s) for model instance 'faulty_py_0', message: "
            "Stub process is not healthy.")
        assert time.monotonic() - start < 15
        # The instance restarts its stub in the background and is not ready meanwhile (its one
        # instance cannot serve, ADR 0015); then a new stub serves.
        wait_for(lambda: c.is_model_ready("faulty_py"), "the restarted stub")
        after = faulty(c, m, 0).as_numpy("OUT")[0]  # served by a new stub
        assert after != before
    assert f"stub of 'faulty_py_0' (pid {before}) stub process {reason}" in server.stderr() \
        or reason in server.stderr()


@pytest.mark.parametrize("mode,reason", [
    (11, "malformed message from the Python stub: a response is cut short"),
    (12, "unexpected 'send' message"),
    (13, "malformed message from the Python stub: tensor 'OUT' lies outside the payload"),
    (14, "malformed message from the Python stub: a BLS frame is cut short"),
    (15, "malformed message from the Python stub: tensor 'X' lies outside the shared-memory pool"),
    (16, "malformed message from the Python stub: a BLS frame is cut short")])
def test_stub_sending_a_broken_binary_frame_is_restarted(server, mode, reason):
    """A stub whose user code writes a malformed binary header (stub_protocol.h) on its socket
    fails the request with the text of a dead stub and is replaced, as for any bad frame."""
    for name, c in clients(server):
        m = module_of(name)
        before = faulty(c, m, 0).as_numpy("OUT")[0]
        assert faulty_error(c, m, mode) == (
            "Failed to process the request(s) for model instance 'faulty_py_0', message: "
            "Stub process is not healthy.")
        wait_for(lambda: c.is_model_ready("faulty_py"), "the restarted stub")
        assert faulty(c, m, 0).as_numpy("OUT")[0] != before
        assert f"stub of 'faulty_py_0' (pid {before}) {reason}; restarting it" in server.stderr()


def test_stub_killed_from_outside_is_restarted(server):
    import os
    import signal
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    pid = int(faulty(c, httpclient, 0).as_numpy("OUT")[0])
    os.kill(pid, signal.SIGKILL)
    # The instance's watcher sees the stub exit while idle and starts a new one (Triton leaves
    # the model broken); a request meanwhile fails at once with Triton's text.
    served = []

    def new_stub_serves():
        try:
            served.append(int(faulty(c, httpclient, 0).as_numpy("OUT")[0]))
            return True
        except InferenceServerException as e:
            assert e.message().endswith("Stub process is not healthy."), e.message()
            return False
    wait_for(new_stub_serves, "a new stub")
    assert served[-1] != pid
    assert c.is_model_ready("faulty_py")


def test_initialize_failures_make_the_model_unavailable_with_the_python_error(server):
    for name, c in clients(server):
        assert not c.is_model_ready("init_raises_py")
        index = c.get_model_repository_index()
        rows = index if name == "http" else [
            {"name": m.name, "state": m.state, "reason": m.reason} for m in index.models]
        reasons = {r["name"]: r for r in rows}
        assert reasons["init_raises_py"]["state"] == "UNAVAILABLE"
        assert "NameError: name 'lorem_ipsum' is not defined" in reasons["init_raises_py"]["reason"]
        assert "model.py(4): initialize" in reasons["init_raises_py"]["reason"]
        assert "SyntaxError" in reasons["syntax_error_py"]["reason"]
        assert "TritonPythonModel" in reasons["no_class_py"]["reason"]


def test_a_stub_file_in_the_model_folder_never_runs(server):
    assert not (server.root / "add_sub_py" / "stub_ran").exists()


def test_decoupled_responses_through_the_sender(server):
    got = stream_counts(server, "decoupled_py", ((3, "a"), (0, "b"), (-1, "c")), 6)
    assert outs_of(got, "a") == [0, 1, 2]
    errors = [e.message() for r, e in got if e is not None]
    assert errors == ["negative"]
    finals = [r.get_response().id for r, e in got
              if e is None and r.get_response().parameters["triton_final_response"].bool_param]
    assert sorted(finals) == ["a", "b"]


def wait_for_log(server, text, seconds=5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in server.stderr():
            return
        time.sleep(0.05)
    pytest.fail(f"{text!r} not in the server log: {server.stderr()[-3000:]}")


@pytest.mark.parametrize("mode", [0, 1])  # 0: request.is_cancelled() in execute; 1: sender's
def test_is_cancelled_sees_a_cancelled_grpc_stream(server, mode):
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    t = grpcclient.InferInput("IN", [1], "INT32")
    t.set_data_from_numpy(np.array([mode], dtype=np.int32))
    c.async_stream_infer("cancel_py", [t], request_id=f"cancel{mode}")
    r, e = results.get(timeout=20)
    assert e is None and r.as_numpy("OUT").tolist() == [1]
    c.stop_stream(cancel_requests=True)
    c.close()
    wait_for_log(server, f"cancel_py cancel{mode} cancelled=True")


def test_is_cancelled_is_false_while_the_stream_lives(server):
    async def run():
        client = grpcclient_aio.InferenceServerClient(server.target())

        async def requests():
            yield {"model_name": "cancel_py", "inputs": [inp], "request_id": "kept"}
            await asyncio.sleep(4)  # keeps the stream open past the model's 2.5 s poll

        inp = grpcclient_aio.InferInput("IN", [1], "INT32")
        inp.set_data_from_numpy(np.array([1], dtype=np.int32))
        got = []
        try:  # the stream ends once the requests end (4 s) and the model sent its FINAL
            async for result, error in client.stream_infer(requests()):
                assert error is None
                got.append(result.as_numpy("OUT").tolist())
        finally:
            await client.close()
        assert got == [[1]]
    asyncio.run(run())
    wait_for_log(server, "cancel_py kept cancelled=False")


@pytest.mark.parametrize("setting,text", [
    ("stub-timeout-seconds=0", "stub-timeout-seconds can't be smaller than or equal to zero."),
    ("shm-growth-byte-size=-1", "shm-growth-byte-size can't be smaller than or equal to zero."),
    ("shm-default-byte-size=1024", "shm-default-byte-size can't be smaller than 4 MiBs"),
    ("stub-timeout-seconds=abc", "stol"),
])
def test_bad_backend_config_is_refused(tmp_path, setting, text):
    python_models.write_all(tmp_path)
    s = GrpcServer([str(tmp_path)], ["--exit-on-error=false", "--strict-readiness=false",
                                     f"--backend-config=python,{setting}"],
                   name="client-python-bad-config").start()
    try:
        c = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        assert not c.is_model_ready("add_sub_py")
        assert f"backend 'python' failed to initialize: {text}" in s.stderr()
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_example_preprocess_py(tmp_path):
    from helpers import repo
    s = GrpcServer([repo("examples")], name="client-python-example").start()
    try:
        x = np.array([[0.5, 1.0, 0.0]], dtype=np.float32)
        for name, c in clients(s):
            m = module_of(name)
            t = m.InferInput("INPUT0", [1, 3], "FP32")
            t.set_data_from_numpy(x)
            np.testing.assert_allclose(c.infer("preprocess_py", [t]).as_numpy("OUTPUT0"),
                                       (x - 0.5) / 0.25)

        async def run():
            for name, c in aio_clients(s):
                try:
                    t = module_of(name).InferInput("INPUT0", [1, 3], "FP32")
                    t.set_data_from_numpy(x)
                    r = await c.infer("preprocess_py", [t])
                    np.testing.assert_allclose(r.as_numpy("OUTPUT0"), (x - 0.5) / 0.25)
                finally:
                    await c.close()
        asyncio.run(run())
        assert "preprocess_py_0_0: mean 0.5, std 0.25" in s.stderr()
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def test_auto_complete_config(server):
    for name, c in clients(server):
        m = module_of(name)
        cfg = c.get_model_config("autocomplete_py")
        cfg = cfg if name == "http" else json.loads(
            __import__("google.protobuf.json_format", fromlist=["x"]).MessageToJson(
                cfg.config, preserving_proto_field_name=True))
        assert cfg["max_batch_size"] == 4
        assert "dynamic_batching" in cfg
        assert [i["name"] for i in cfg["input"]] == ["IN"]
        assert cfg["output"][0]["data_type"] == "TYPE_INT32"
        t = m.InferInput("IN", [1, 4], "INT32")
        t.set_data_from_numpy(np.arange(4, dtype=np.int32).reshape(1, 4))
        out = c.infer("autocomplete_py", [t]).as_numpy("OUT")
        assert out.tolist() == [[0, 3, 6, 9]]
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    assert h.get_model_config("autocomplete_decoupled_py")[
        "model_transaction_policy"]["decoupled"] is True


def test_auto_complete_config_errors(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    reasons = {r["name"]: r.get("reason", "") for r in c.get_model_repository_index()}
    assert ("auto_complete_config function in model 'autocomplete_none_py' must return a valid "
            "pb.ModelConfig object.") in reasons["autocomplete_none_py"]
    assert ("unable to load model 'autocomplete_conflict_py', configuration expects datatype "
            "TYPE_FP32 for input 'X', model provides TYPE_INT32") in \
        reasons["autocomplete_conflict_py"]


def bls_inputs(module, x, model="add_sub_py"):
    t = module.InferInput("X", [4], "FP32")
    t.set_data_from_numpy(np.array(x, dtype=np.float32))
    m = module.InferInput("MODEL", [1], "BYTES")
    m.set_data_from_numpy(np.array([model.encode()], dtype=np.object_))
    return [t, m]


def bls(c, module, x, model="add_sub_py", **kw):
    return c.infer("bls_py", bls_inputs(module, x, model), **kw)


def test_bls_timeout_fails_the_call_with_tritons_text(server):
    # queued_add_sub_py holds a lone request 300 ms for a batch; a 1 ms timeout expires first.
    for name, c in clients(server):
        m = module_of(name)
        with pytest.raises(InferenceServerException) as e:
            bls(c, m, [1, 2, 3, 4], "queued_add_sub_py", parameters={"bls_timeout": 1000})
        assert e.value.message() == "BLS failed: Request timeout expired", e.value.message()
        assert "UNAVAILABLE" in str(e.value.status()) or e.value.status() == "503"
        ok = bls(c, m, [1, 2, 3, 4], "queued_add_sub_py", parameters={"bls_timeout": 5000000})
        assert ok.as_numpy("Y").tolist() == [2, 3, 4, 5]
    # A model's UNAVAILABLE TritonError is the request's error, not a broken stub.
    assert "stub of 'bls_py_0'" not in server.stderr()


def test_bls_timeout_aio(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                with pytest.raises(InferenceServerException) as e:
                    await c.infer("bls_py", bls_inputs(module_of(name), [-1, 0, 0, 0],
                                                       "queued_add_sub_py"),
                                  parameters={"bls_timeout": 1000})
                assert e.value.message() == "BLS failed: Request timeout expired"
            finally:
                await c.close()
    asyncio.run(run())


def test_bls_from_threads_started_by_execute(server):
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    before = h.get_inference_statistics("add_sub_py")["model_stats"][0]["inference_count"]
    for name, c in clients(server):
        y = bls(c, module_of(name), [1, 2, 3, 4], parameters={"bls_threads": True})
        assert y.as_numpy("Y").tolist() == [2, 3, 4, 5]
    after = h.get_inference_statistics("add_sub_py")["model_stats"][0]["inference_count"]
    assert after - before == 4  # two calls per request, each run on add_sub_py


def test_decoupled_bls_from_a_sender_thread_after_execute_returned(server):
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        for n in (4, 9):
            t = grpcclient.InferInput("IN", [1], "INT32")
            t.set_data_from_numpy(np.array([n], dtype=np.int32))
            c.async_stream_infer("decoupled_bls_py", [t], request_id=f"d{n}")
            r, e = results.get(timeout=20)
            assert e is None, e
            assert r.as_numpy("OUT").tolist() == [n + 1]
    finally:
        c.stop_stream()
        c.close()


def test_bls_bad_timeout_fails_the_request(server):
    for name, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            bls(c, module_of(name), [1, 2, 3, 4], parameters={"bls_timeout": -5})
        assert "TypeError: InferenceRequest timeout must be an integer number of microseconds " \
               ">= 0, got -5" in e.value.message()
    # The instance lives.
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    assert bls(h, httpclient, [1, 2, 3, 4]).as_numpy("Y").tolist() == [2, 3, 4, 5]


def test_bls_calls_another_model_through_the_server(server):
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    before = h.get_inference_statistics("add_sub_py")["model_stats"][0]["inference_count"]
    for name, c in clients(server):
        m = module_of(name)
        assert bls(c, m, [1, 2, 3, 4]).as_numpy("Y").tolist() == [2, 3, 4, 5]
        assert bls(c, m, [-1, 0, 0, 0]).as_numpy("Y").tolist() == [0, 1, 1, 1]  # async_exec
    after = h.get_inference_statistics("add_sub_py")["model_stats"][0]["inference_count"]
    assert after - before == 4  # counted on the called model


def test_bls_errors_reach_model_py(server):
    for name, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            bls(c, module_of(name), [1, 2, 3, 4], model="no_such_model")
        assert e.value.message().startswith("BLS failed: Request for unknown model"), \
            e.value.message()


# ----------------------------------------------------- a non-decoupled model's response sender

def mode_input(module, mode):
    t = module.InferInput("MODE", [1], "INT32")
    t.set_data_from_numpy(np.array([mode], dtype=np.int32))
    return [t]


def assert_one_reply_everywhere(server, model, mode, value):
    """MODE `mode` of `model` answers OUT == [value] as one reply to every client: HTTP and
    gRPC, their asyncio forms, and the gRPC stream (one message, marked final)."""
    for name, c in clients(server):
        result = c.infer(model, mode_input(module_of(name), mode))
        assert result.as_numpy("OUT").tolist() == [value], name

    async def run():
        for name, c in aio_clients(server):
            try:
                result = await c.infer(model, mode_input(module_of(name), mode))
                assert result.as_numpy("OUT").tolist() == [value], name
            finally:
                await c.close()
    asyncio.run(run())

    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.target())
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        c.async_stream_infer(model, mode_input(grpcclient, mode), request_id="s",
                             enable_empty_final_response=True)
        result, error = results.get(timeout=20)
        assert error is None, error
        assert result.as_numpy("OUT").tolist() == [value]
        assert result.get_response().parameters["triton_final_response"].bool_param
        time.sleep(0.3)
        assert results.empty()  # one reply, no separate flags-only FINAL
    finally:
        c.stop_stream()
        c.close()


@pytest.mark.parametrize("mode", [0, 1])
def test_non_decoupled_sender_reply_and_final_make_one_reply(server, mode):
    """Mode 0 sends the reply, then a flags-only FINAL: the client gets one reply (Triton's
    frontends do the same); mode 1 sends the reply with FINAL."""
    assert_one_reply_everywhere(server, "sender_one_py", mode, 10 + mode)


@pytest.mark.parametrize("mode,text", [
    (2, "Unable to send response. Non-decoupled model cannot send more than one response."),
    (3, "Unable to send response. Non-decoupled model cannot send complete final before "
        "sending a response."),
    (4, "Unable to send response. Non-decoupled model cannot send more than one response."),
])
def test_non_decoupled_sender_refuses_a_second_reply(server, mode, text):
    for name, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            c.infer("sender_one_py", mode_input(module_of(name), mode))
        assert text in str(e.value), (name, str(e.value))
    # The model keeps serving.
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    assert h.infer("sender_one_py", mode_input(httpclient, 0)).as_numpy("OUT").tolist() == [10]


@pytest.mark.parametrize("mode,value", [(0, 10), (1, 11), (2, 28), (5, 15)])
def test_non_decoupled_reply_from_a_thread_after_execute_returned(server, mode, value):
    """Triton's test_non_decoupled_one_response_post_return: execute returns None and a thread of
    the model sends the one reply later (mode 2 after a BLS call from that thread, which the
    server answers while it waits for the reply; mode 5 from an asyncio task of a coroutine
    execute). Every client gets it as its one reply."""
    assert_one_reply_everywhere(server, "sender_later_py", mode, value)


def test_non_decoupled_replies_from_threads_of_concurrent_requests(server):
    """Many clients at once, each reply sent by a thread after execute returned: every client
    gets its own reply."""
    modes = [i % 2 for i in range(12)]
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", concurrency=12)
    try:
        pending = [c.async_infer("sender_later_py", mode_input(httpclient, m)) for m in modes]
        got = [p.get_result(timeout=60).as_numpy("OUT").tolist() for p in pending]
    finally:
        c.close()
    assert got == [[10 + m] for m in modes]


def test_non_decoupled_sender_of_an_answered_request_is_closed(server):
    """A request kept past its execution (whose reply was formed) cannot send again: its sender
    raises Triton's closed text in the later execution, whose own reply is unaffected."""
    h = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    try:
        assert h.infer("sender_later_py", mode_input(httpclient, 3)).as_numpy("OUT").tolist() == \
            [13]
        assert h.infer("sender_later_py", mode_input(httpclient, 4)).as_numpy("OUT").tolist() == \
            [14]
    finally:
        h.close()
