"""Issue 18, the Python backend's BLS and request features through Triton's own client:
exec(decoupled=True) / async_exec(decoupled=True) iterating a decoupled model's responses, the BLS
request fields (parameters, flags, correlation_id, model_version), pb_utils.is_model_ready /
load_model / unload_model. Models: tests/client/python_bls_models.py, beside copies of the
decoupled fixture `square_int32` and the sequence fixture `seq_accum`."""

import asyncio
import json
import shutil
import time

import numpy as np
import pytest

from client_support import (GrpcServer, InferenceServerException, aio_clients, clients,
                            grpcclient, grpcclient_aio, httpclient, module_of,
                            serve_repository)
from helpers import repo
import python_bls_models
from stream_support import outs_of, stream_counts


def write_repository(root):
    python_bls_models.write_all(root)
    shutil.copytree(repo("fixtures", "decoupled", "square_int32"), root / "square_int32")
    shutil.copytree(repo("fixtures", "sequence", "seq_accum"), root / "seq_accum")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # One HTTP thread: no request runs inline on an I/O thread, so the connection stays read
    # while a model executes and a client's close is seen (docs/python_backend.md).
    yield from serve_repository(tmp_path_factory, "python_bls", write_repository,
                                ["--model-control-mode=explicit", "--load-model=*",
                                 "--backend-config=python,stub-timeout-seconds=10",
                                 "--http-thread-count=1"],
                                name="client-python-bls")



def stream_call(client, name, model, n, mode="iterate"):
    module = module_of(name)
    inputs = [module.InferInput("MODEL", [1], "BYTES"), module.InferInput("IN", [1], "INT32")]
    inputs[0].set_data_from_numpy(np.array([model.encode()], dtype=np.object_))
    inputs[1].set_data_from_numpy(np.array([n], dtype=np.int32))
    result = client.infer("stream_caller_py", inputs, parameters={"mode": mode})
    return json.loads(result.as_numpy("INFO")[0])


FINAL_ONLY = {"out": None, "outputs": 0}


def test_exec_decoupled_iterates_a_python_model(server):
    for name, c in clients(server):
        seen = stream_call(c, name, "repeat_py", 3)
        assert seen == [{"out": [0], "outputs": 1}, {"out": [1], "outputs": 1},
                        {"out": [2], "outputs": 1}, FINAL_ONLY], seen
        assert stream_call(c, name, "repeat_py", 0) == [FINAL_ONLY]


def test_exec_decoupled_iterates_a_cpp_decoupled_model(server):
    for name, c in clients(server):
        seen = stream_call(c, name, "square_int32", 4)
        with_outputs = [s for s in seen if s["outputs"]]
        assert with_outputs == [{"out": [4], "outputs": 1}] * 4, seen
        assert seen[-1] in ({"out": [4], "outputs": 1}, FINAL_ONLY), seen


def test_async_exec_decoupled_is_iterated_with_async_for(server):
    async def run():
        for name, c in aio_clients(server):
            try:
                module = module_of(name)
                inputs = [module.InferInput("MODEL", [1], "BYTES"),
                          module.InferInput("IN", [1], "INT32")]
                inputs[0].set_data_from_numpy(np.array([b"repeat_py"], dtype=np.object_))
                inputs[1].set_data_from_numpy(np.array([2], dtype=np.int32))
                result = await c.infer("stream_caller_py", inputs, parameters={"mode": "async"})
                seen = json.loads(result.as_numpy("INFO")[0])
                assert seen == [{"out": [0], "outputs": 1}, {"out": [1], "outputs": 1},
                                FINAL_ONLY], seen
            finally:
                await c.close()
    asyncio.run(run())


def test_exec_decoupled_error_responses_come_one_by_one(server):
    for name, c in clients(server):
        seen = stream_call(c, name, "repeat_py", -1)
        assert seen == [{"error": "negative count", "code": 3}, FINAL_ONLY], seen


def test_exec_not_decoupled_on_a_decoupled_model_gives_tritons_text(server):
    for name, c in clients(server):
        for model in ("repeat_py", "square_int32"):
            seen = stream_call(c, name, model, 2, mode="plain")
            assert seen == [{"error": (
                f"Model {model} - Error when running inference: Model {model} is using the "
                "decoupled. The current BLS request call doesn't support models using the "
                "decoupled transaction policy. Please use 'decoupled=True' argument to the "
                "'exec' or 'async_exec' calls for decoupled models.'"), "code": 1}], seen


def test_abandoned_iterator_neither_leaks_nor_hangs_the_instance(server):
    for name, c in clients(server):
        for _ in range(3):
            assert stream_call(c, name, "repeat_py", 50, mode="abandon") == [
                {"out": [0], "outputs": 1}]
            assert stream_call(c, name, "square_int32", 40, mode="abandon") == [
                {"out": [40], "outputs": 1}]
        # The instance answers the next call at once, with nothing left over from before.
        assert stream_call(c, name, "repeat_py", 1) == [{"out": [0], "outputs": 1}, FINAL_ONLY]


def test_iterating_again_replays_the_responses(server):
    for name, c in clients(server):
        seen = stream_call(c, name, "repeat_py", 2, mode="twice")
        assert seen[-1] == {"same": True} and len(seen) == 4, seen


def test_a_decoupled_model_relays_a_decoupled_bls_stream(server):
    got = stream_counts(server, "relay_py", ((3, "a"), (-1, "b")), 6)
    assert outs_of(got, "a") == [0, 10, 20], got
    assert [e.message() for r, e in got if e is not None] == ["negative count"]
    finals = [r.get_response().id for r, e in got
              if e is None and r.get_response().parameters["triton_final_response"].bool_param]
    assert sorted(finals) == ["a", "b"]


def fields_call(client, name, kwargs, x=1):
    module = module_of(name)
    inputs = [module.InferInput("X", [1], "INT32")]
    inputs[0].set_data_from_numpy(np.array([x], dtype=np.int32))
    result = client.infer("fields_caller_py", inputs, parameters={"bls": json.dumps(kwargs)})
    return result.as_numpy("INFO")[0].decode()


def test_bls_parameters_flags_and_correlation_id_reach_the_called_model(server):
    for name, c in clients(server):
        kwargs = {"model_name": "echo_fields_py", "outputs": ["INFO"], "request_id": "r7",
                  "parameters": {"text": "x", "n": -3, "on": True}, "correlation_id": 42,
                  "flags": 1}
        echoed = json.loads(fields_call(c, name, kwargs))
        assert echoed == {"parameters": {"text": "x", "n": -3, "on": True}, "flags": 1,
                          "correlation_id": 42, "request_id": "r7"}, echoed
        kwargs.update(correlation_id="abc", flags=2, parameters={}, model_version=1)
        echoed = json.loads(fields_call(c, name, kwargs))
        assert echoed["correlation_id"] == "abc" and echoed["flags"] == 2, echoed
        assert echoed["parameters"] == {}, echoed
        # preferred_memory is accepted (Nereid's outputs are always in CPU memory).
        echoed = json.loads(fields_call(c, name, dict(kwargs, cpu_memory=True)))
        assert echoed["correlation_id"] == "abc", echoed


def test_bls_sequence_flags_keep_the_called_sequence_models_state(server):
    for name, c in clients(server):
        base = {"model_name": "seq_accum", "outputs": ["OUTPUT"], "shape": [1, 1],
                "correlation_id": 77 if name == "http" else 78}
        assert fields_call(c, name, dict(base, flags=1), x=3) == "3"
        assert fields_call(c, name, dict(base), x=4) == "7"
        assert fields_call(c, name, dict(base, flags=2), x=1) == "8"


def test_bls_with_the_requests_trace_runs(server):
    """`InferenceRequest(..., trace=request.trace())`, Triton's BLS tracing idiom (its QA bls
    model and user models use it): the call runs; get_context() is None (no OpenTelemetry)."""
    echo = {"model_name": "echo_fields_py", "outputs": ["INFO"], "request_id": "traced"}
    for name, c in clients(server):
        plain = fields_call(c, name, dict(echo))
        assert fields_call(c, name, dict(echo, parent_trace=True)) == plain, name
        assert not plain.startswith(("error", "TypeError", "AttributeError")), plain


def test_bls_request_fields_bad_input(server):
    echo = {"model_name": "echo_fields_py", "outputs": ["INFO"]}
    cases = [
        (dict(echo, parameters={"f": 1.5}), "TritonModelException: Expect parameters values to "
         "have type bool/int/str, found type <class 'float'>"),
        (dict(echo, parameters={"n": None}), "TritonModelException: Expect parameters values to "
         "have type bool/int/str, found type <class 'NoneType'>"),
        (dict(echo, parameters={"l": [1]}), "TritonModelException: Expect parameters values to "
         "have type bool/int/str, found type <class 'list'>"),
        (dict(echo, int_key=True), "TritonModelException: Expect parameters keys to have type "
         "str, found type <class 'int'>"),
        (dict(echo, parameters=[1]), "TritonModelException: Expect N8pybind114dictE, got "
         "<class 'list'>"),
        (dict(echo, correlation_id=1.5), "TritonModelException: Correlation ID must be integer "
         "or string"),
        (dict(echo, flags="start"), "TypeError: InferenceRequest flags must be an integer"),
        (dict(echo, model_version="1"), "TypeError: InferenceRequest model_version must be an "
         "integer"),
        (dict(echo, preferred_memory="CPU"), "TypeError: InferenceRequest preferred_memory must "
         "be a PreferredMemory"),
        (dict(echo, trace="t"), "TypeError: InferenceRequest trace must be an InferenceTrace"),
    ]
    for name, c in clients(server):
        for kwargs, expected in cases:
            assert fields_call(c, name, kwargs).startswith(expected), kwargs
        text = fields_call(c, name, dict(echo, model_version=9))
        assert text.startswith("error: ") and "echo_fields_py" in text, text
        text = fields_call(c, name, dict(echo, model_name="no_such_model"))
        assert text.startswith("error: ") and "no_such_model" in text, text


def control(client, params):
    module = httpclient if isinstance(client, httpclient.InferenceServerClient) else grpcclient
    inputs = [module.InferInput("X", [1], "INT32")]
    inputs[0].set_data_from_numpy(np.array([0], dtype=np.int32))
    result = client.infer("control_py", inputs, parameters=params)
    return result.as_numpy("INFO")[0].decode()


def test_is_model_ready(server):
    for _, c in clients(server):
        assert control(c, {"op": "ready", "name": "repeat_py"}) == "True"
        assert control(c, {"op": "ready", "name": "repeat_py", "version": "1"}) == "True"
        assert control(c, {"op": "ready", "name": "repeat_py", "version": "7"}) == "False"
        assert control(c, {"op": "ready", "name": "no_such_model"}) == "False"
        assert control(c, {"op": "ready", "name": "repeat_py", "version": "abc"}) == (
            "TritonModelException: Failed to check model readiness: failed to get model version "
            "from specified version string 'abc' (details: stol), version should be an integral "
            "value > 0")
        assert control(c, {"op": "ready", "name": "repeat_py", "version": "-2"}) == (
            "TritonModelException: Failed to check model readiness: failed to get model version "
            "from specified version string '-2', version should be an integral value > 0")


def wait_ready(client, model, ready):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if client.is_model_ready(model) == ready:
            return
        time.sleep(0.05)
    raise AssertionError(f"{model} ready is not {ready}")


def test_unload_and_load_model_from_python(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    g = grpcclient.InferenceServerClient(server.target())
    assert control(c, {"op": "unload", "name": "echo_fields_py"}) == "unloaded"
    wait_ready(c, "echo_fields_py", False)
    assert control(g, {"op": "load", "name": "echo_fields_py"}) == "loaded"
    assert c.is_model_ready("echo_fields_py")
    assert control(g, {"op": "ready", "name": "echo_fields_py"}) == "True"
    # With a configuration override (JSON) and files: a new model from nothing.
    cfg = json.dumps({"backend": "python", "input": [
        {"name": "INPUT", "data_type": "TYPE_INT32", "dims": [1]}],
        "output": [{"name": "INFO", "data_type": "TYPE_STRING", "dims": [1]}]})
    code = python_bls_models.textwrap.dedent(python_bls_models.ECHO_FIELDS)
    assert control(c, {"op": "load", "name": "echo_copy_py", "config": cfg,
                       "files": json.dumps({"file:1/model.py": code})}) == "loaded"
    assert c.is_model_ready("echo_copy_py")
    assert control(c, {"op": "unload", "name": "echo_copy_py"}) == "unloaded"
    wait_ready(c, "echo_copy_py", False)


def test_model_control_bad_input(server):
    for _, c in clients(server):
        text = control(c, {"op": "load", "name": "echo_fields_py", "config": "{not json"})
        assert text.startswith("TritonModelException: Failed to load model: failed to load "
                               "'echo_fields_py', Invalid config override: "), text
        text = control(c, {"op": "load", "name": "no_such_model"})
        assert text.startswith("TritonModelException: Failed to load model: "), text
        assert "no_such_model" in text, text
        assert control(c, {"op": "load", "name": "echo_fields_py", "files": "[1]"}) == (
            "TritonModelException: failed to load model 'echo_fields_py', files should be a "
            "dictionary of file paths and file contents")
        text = control(c, {"op": "load", "name": "echo_fields_py",
                           "files": json.dumps({"1/model.py": "x"})})
        assert text == ("TritonModelException: Failed to load model: Unrecognized load "
                        "parameter '1/model.py' with type 'bytes'"), text
        text = control(c, {"op": "unload", "name": "no_such_model"})
        assert text.startswith("TritonModelException: Failed to unload model: ") or \
            text == "unloaded", text


def test_model_control_outside_explicit_mode_gives_tritons_text(tmp_path):
    python_bls_models.write_all(tmp_path)
    s = GrpcServer([str(tmp_path)], [], name="client-python-bls-none").start()
    try:
        c = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        assert control(c, {"op": "load", "name": "repeat_py"}) == (
            "TritonModelException: Failed to load model: explicit model load / unload is not "
            "allowed if polling is enabled")
        assert control(c, {"op": "unload", "name": "repeat_py"}) == (
            "TritonModelException: Failed to unload model: explicit model load / unload is not "
            "allowed if polling is enabled")
        assert control(c, {"op": "ready", "name": "repeat_py"}) == "True"
        assert c.is_model_ready("repeat_py")
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]


def cancel_inputs(module, tag):
    inputs = [module.InferInput("IN", [1], "INT32")]
    inputs[0].set_data_from_numpy(np.array([tag], dtype=np.int32))
    return inputs


def wait_for_log(server, text, timeout=8):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in server.stderr():
            return True
        time.sleep(0.05)
    return False


def test_is_cancelled_of_a_non_decoupled_model_sees_a_grpc_cancel(server):
    async def run():
        c = grpcclient_aio.InferenceServerClient(server.target())
        try:
            task = asyncio.ensure_future(c.infer("cancel_loop_py", cancel_inputs(grpcclient, 1)))
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await c.close()
    asyncio.run(run())
    assert wait_for_log(server, "cancel_loop_py 1 cancelled=True"), server.stderr()[-3000:]


def test_is_cancelled_of_a_non_decoupled_model_sees_an_http_close(server):
    c = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}", network_timeout=0.5)
    with pytest.raises(Exception):
        c.infer("cancel_loop_py", cancel_inputs(httpclient, 2))
    c.close()
    assert wait_for_log(server, "cancel_loop_py 2 cancelled=True"), server.stderr()[-3000:]


def test_is_cancelled_stays_false_for_a_request_nobody_cancels(server):
    for name, c in clients(server):
        started = time.monotonic()
        tag = 3 if name == "http" else 4
        result = c.infer("cancel_loop_py", cancel_inputs(module_of(name), tag))
        assert result.as_numpy("OUT")[0] >= 1900 and time.monotonic() - started >= 1.9
        assert wait_for_log(server, f"cancel_loop_py {tag} cancelled=False")


def test_model_control_from_initialize(server):
    # Written after the server started, so only the model's own initialize() loads the target.
    write = python_bls_models.write_model
    info = [python_bls_models.INFO]
    echo = python_bls_models.ECHO_FIELDS
    for name in ("init_target_py", "init_victim_py"):
        write(server.root, name, python_bls_models.config(
            name, [python_bls_models.io("INPUT", "TYPE_INT32", [1])], info), echo)
    write(server.root, "init_control_py", python_bls_models.config(
        "init_control_py", [python_bls_models.io("X", "TYPE_INT32", [1])], info),
        python_bls_models.INIT_CONTROL)
    for name, c in clients(server):
        c.load_model("init_victim_py")
        assert c.is_model_ready("init_victim_py")
        if c.is_model_ready("init_target_py"):
            c.unload_model("init_target_py")
            wait_ready(c, "init_target_py", False)
        c.load_model("init_control_py")  # reloads it on the second round
        module = module_of(name)
        x = module.InferInput("X", [1], "INT32")
        x.set_data_from_numpy(np.array([0], dtype=np.int32))
        seen = json.loads(c.infer("init_control_py", [x]).as_numpy("INFO")[0])
        assert seen["ready_before"] is False and seen["ready_after"] is True, seen
        assert seen["ready_v1"] is True, seen
        assert seen["bad_load"].startswith("Failed to load model: "), seen
        assert "no_such_model" in seen["bad_load"], seen
        assert seen["bls"] == "BLS is only supported during the 'execute' function.", seen
        assert c.is_model_ready("init_target_py")
        wait_ready(c, "init_victim_py", False)


def test_bls_in_initialize_fails_the_load_with_tritons_text(server):
    python_bls_models.write_model(
        server.root, "bls_init_error_py", python_bls_models.config(
            "bls_init_error_py", [python_bls_models.io("X", "TYPE_INT32", [1])],
            [python_bls_models.INFO]), python_bls_models.BLS_INIT_ERROR)
    for _, c in clients(server):
        with pytest.raises(InferenceServerException) as e:
            c.load_model("bls_init_error_py")
        assert "BLS is only supported during the 'execute' function." in e.value.message(), \
            e.value.message()
        assert not c.is_model_ready("bls_init_error_py")
def stream_control(server, name, c, mode, n, tmp, **params):
    """stream_control_py streams counter_py (IN n) in `mode`; returns what it saw and the path of
    counter_py's report."""
    module = module_of(name)
    report = tmp / f"{mode}-{name}.json"
    inputs = [module.InferInput("IN", [1], "INT32")]
    inputs[0].set_data_from_numpy(np.array([n], dtype=np.int32))
    result = c.infer("stream_control_py", inputs,
                     parameters={"mode": mode, "report": str(report), **params})
    return json.loads(result.as_numpy("INFO")[0]), report


def read_report(path, timeout=8):
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return json.loads(path.read_text())


def test_iterator_cancel_cancels_the_called_request(server, tmp_path):
    # Triton's ResponseIterator.cancel(): the called model's sender turns cancelled, it stops and
    # sends its FINAL; the caller gets the responses sent before that, then the FINAL.
    for name, c in clients(server):
        seen, report = stream_control(server, name, c, "cancel", 10, tmp_path, delay="0.3")
        assert seen["seen"][:2] == [{"out": [0]}, {"out": [1]}], seen
        assert seen["seen"][-1] == {"out": None}, seen
        assert len(seen["seen"]) <= 4, seen
        assert read_report(report) == {"sent": len(seen["seen"]) - 1, "cancelled": True,
                                       "gate": "none"}


def test_dropped_iterator_cancels_the_called_request(server, tmp_path):
    for name, c in clients(server):
        seen, report = stream_control(server, name, c, "drop", 10, tmp_path, delay="0.3")
        assert seen["seen"] == [{"out": [0]}, {"out": [1]}], seen
        got = read_report(report)
        assert got["cancelled"] is True and got["sent"] <= 3, got


def test_calls_made_while_a_stream_is_iterated_are_answered_at_once(server, tmp_path):
    # counter_py sends response 1 only once touch_py (called by a plain exec() between two
    # next() of the stream) created the gate file: an exec() that waited for the stream's end
    # would leave the gate shut ("timeout").
    for name, c in clients(server):
        gate = tmp_path / f"gate-{name}"
        seen, report = stream_control(server, name, c, "interleave", 3, tmp_path,
                                      gate=str(gate))
        assert seen == {"seen": [{"out": [0]}, {"out": [1]}, {"out": [2]}, {"out": None}],
                        "touch": "touched", "is_cancelled": False}, seen
        assert read_report(report) == {"sent": 3, "cancelled": False, "gate": "open"}
    assert wait_for_log(server, "stream_control_py logs while streaming")



def test_is_cancelled_sees_an_http_close_of_a_request_run_inline(tmp_path):
    # Default HTTP threads (2): an idle instance runs the request inline on the connection's I/O
    # thread, which then does not read the connection; is_cancelled() peeks its socket instead.
    python_bls_models.write_all(tmp_path)
    s = GrpcServer([str(tmp_path)], ["--model-control-mode=explicit",
                                     "--load-model=cancel_loop_py"],
                   name="client-python-inline-cancel").start()
    try:
        for tag in (21, 22):
            c = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}", network_timeout=0.3)
            with pytest.raises(Exception):
                c.infer("cancel_loop_py", cancel_inputs(httpclient, tag))
            c.close()
            assert wait_for_log(s, f"cancel_loop_py {tag} cancelled=True"), s.stderr()[-3000:]
        # A client that waits gets its answer, not cancelled.
        c = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        assert c.infer("cancel_loop_py", cancel_inputs(httpclient, 23)).as_numpy("OUT")[0] >= 1900
        assert wait_for_log(s, "cancel_loop_py 23 cancelled=False")
    finally:
        assert s.stop() == 0, s.stderr()[-4000:]
