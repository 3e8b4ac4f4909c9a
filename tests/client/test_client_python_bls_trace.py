"""Issue 18, BLS tracing in the Python backend through Triton's own client: a BLS call given
`trace=request.trace()` of a traced request is traced as that request's child (Triton's
TRITONSERVER_InferenceTraceSpawnChildTrace: the called model's records carry "parent_id", the
caller's trace id), for exec() and exec(decoupled=True), over HTTP and gRPC. A call without
`trace=` is not traced and takes no sample (Triton samples no BLS call on its own), and the trace
of a request that was not sampled gives its call no trace and no error. The trace file is read
after the server stopped."""

import glob
import json

import numpy as np

from client_support import GrpcServer, clients, module_of
import python_bls_models
from python_models import config, io

CALLER = "fields_caller_py"


def write_repository(root):
    m = python_bls_models
    x, inp = io("X", "TYPE_INT32", [1]), io("INPUT", "TYPE_INT32", [1])
    model, n, out = io("MODEL", "TYPE_STRING", [1]), io("IN", "TYPE_INT32", [1]), \
        io("OUT", "TYPE_INT32", [1])
    decoupled = "model_transaction_policy { decoupled: true }"
    for name, cfg, code in [
            (CALLER, config(CALLER, [x], [m.INFO]), m.FIELDS_CALLER),
            ("echo_fields_py", config("echo_fields_py", [inp], [m.INFO]), m.ECHO_FIELDS),
            ("stream_caller_py", config("stream_caller_py", [model, n], [m.INFO]),
             m.STREAM_CALLER),
            ("repeat_py", config("repeat_py", [n], [out], extra=decoupled), m.REPEAT)]:
        m.write_model(root, name, cfg, code)


def run_server(tmp_path, *trace_config):
    """A server on the four models with Triton's trace flags, its file <tmp_path>/trace.json."""
    root = tmp_path / "models"
    write_repository(root)
    flags = [f"--trace-config=triton,file={tmp_path / 'trace.json'}", "--model-control-mode=none",
             "--backend-config=python,stub-timeout-seconds=10"]
    flags += [f"--trace-config={c}" for c in trace_config]
    return GrpcServer([str(root)], flags, name="client-python-bls-trace").start()


def stop(server):
    code = server.stop()
    assert code == 0, f"exit code {code}\n{server.stderr()[-4000:]}"


def traces(tmp_path):
    """The header and timestamp names of every trace in the trace files (written by now: the
    server stopped), by trace id."""
    out = {}
    for f in sorted(glob.glob(str(tmp_path / "trace.json*"))):
        with open(f) as fh:
            for r in json.load(fh):
                t = out.setdefault(r["id"], {"header": None, "timestamps": []})
                if "model_name" in r:
                    t["header"] = r
                t["timestamps"] += [(ts["name"], ts["ns"]) for ts in r.get("timestamps", [])]
    return out


def by_request_id(found):
    return {t["header"].get("request_id", ""): t for t in found.values() if t["header"]}


def call_fields(client, name, request_id, kwargs):
    """fields_caller_py with request id `request_id` making the BLS call `kwargs`; what the called
    echo_fields_py saw (its reply), or the caller's error text."""
    module = module_of(name)
    inputs = [module.InferInput("X", [1], "INT32")]
    inputs[0].set_data_from_numpy(np.array([1], dtype=np.int32))
    result = client.infer(CALLER, inputs, request_id=request_id,
                          parameters={"bls": json.dumps(kwargs)})
    text = result.as_numpy("INFO")[0].decode()
    try:
        return json.loads(text)
    except ValueError:
        return text


def call_stream(client, name, request_id, n):
    """stream_caller_py iterating repeat_py's n responses with trace=request.trace()."""
    module = module_of(name)
    inputs = [module.InferInput("MODEL", [1], "BYTES"), module.InferInput("IN", [1], "INT32")]
    inputs[0].set_data_from_numpy(np.array([b"repeat_py"], dtype=np.object_))
    inputs[1].set_data_from_numpy(np.array([n], dtype=np.int32))
    result = client.infer("stream_caller_py", inputs, request_id=request_id,
                          parameters={"mode": "iterate", "trace": True})
    return json.loads(result.as_numpy("INFO")[0])


def echo(request_id, traced):
    kwargs = {"model_name": "echo_fields_py", "outputs": ["INFO"], "request_id": request_id}
    return dict(kwargs, parent_trace=True) if traced else kwargs


def children_of(found, trace):
    return [t for t in found.values()
            if t["header"] and t["header"].get("parent_id") == trace["header"]["id"]]


def test_a_bls_call_given_the_requests_trace_is_its_child(tmp_path):
    s = run_server(tmp_path, "level=TIMESTAMPS", "rate=1")
    try:
        for name, c in clients(s):
            assert call_fields(c, name, f"caller-{name}", echo(f"child-{name}", True))[
                "request_id"] == f"child-{name}"
            # Without trace=: the call is not traced (Triton's BLS request has no trace then).
            assert call_fields(c, name, f"plain-caller-{name}", echo(f"plain-{name}", False))[
                "request_id"] == f"plain-{name}"
            # exec(decoupled=True) on a decoupled model: its child too.
            seen = call_stream(c, name, f"stream-caller-{name}", 2)
            assert [r["out"] for r in seen] == [[0], [1], None], seen
    finally:
        stop(s)
    found = traces(tmp_path)
    ids = by_request_id(found)
    for name in ("http", "grpc"):
        caller, child = ids[f"caller-{name}"], ids[f"child-{name}"]
        assert caller["header"]["model_name"] == CALLER and "parent_id" not in caller["header"]
        assert child["header"]["model_name"] == "echo_fields_py"
        assert child["header"]["parent_id"] == caller["header"]["id"], child["header"]
        assert children_of(found, caller) == [child]
        names = [n for n, _ in child["timestamps"]]
        assert names[:2] == ["REQUEST_START", "QUEUE_START"] and names[-1] == "REQUEST_END", names
        # The call starts while the caller runs: after the caller's start (one clock).
        assert child["timestamps"][0][1] >= caller["timestamps"][0][1]

        plain_caller = ids[f"plain-caller-{name}"]
        assert f"plain-{name}" not in ids, ids[f"plain-{name}"]
        assert children_of(found, plain_caller) == []

        stream_caller = ids[f"stream-caller-{name}"]
        streamed = children_of(found, stream_caller)
        assert [t["header"]["model_name"] for t in streamed] == ["repeat_py"], streamed
    # Nothing else was traced: 3 callers and 2 children per protocol.
    assert len(found) == 10, sorted(ids)


def test_a_bls_call_without_trace_takes_no_sample(tmp_path):
    """count=2: two callers, each making a call without trace=: both callers are traced (a call
    sampled on its own would have taken the second sample) and no call is."""
    s = run_server(tmp_path, "level=TIMESTAMPS", "rate=1", "count=2")
    try:
        c = dict(clients(s))["http"]
        for rid in ("one", "two"):
            assert call_fields(c, "http", rid, echo(f"{rid}-call", False))[
                "request_id"] == f"{rid}-call"
    finally:
        stop(s)
    found = traces(tmp_path)
    assert sorted(by_request_id(found)) == ["one", "two"]
    assert len(found) == 2


def test_the_trace_of_a_request_not_sampled_gives_its_call_none(tmp_path):
    # count=1: the first caller is traced (its call as its child, which takes no sample), then
    # nothing: the second caller is not sampled and neither is its call, given trace= or not.
    for name in ("http", "grpc"):
        out = tmp_path / name
        out.mkdir()
        s = run_server(out, "level=TIMESTAMPS", "rate=1", "count=1")
        try:
            c = dict(clients(s))[name]
            assert call_fields(c, name, "first", echo("first-child", True))[
                "request_id"] == "first-child"
            for rid, traced in (("second", True), ("third", False)):
                reply = call_fields(c, name, rid, echo(f"{rid}-child", traced))
                assert reply["request_id"] == f"{rid}-child", reply  # no error
            seen = call_stream(c, name, "fourth", 1)
            assert [r["out"] for r in seen] == [[0], None], seen
        finally:
            stop(s)
        found = traces(out)
        ids = by_request_id(found)
        assert sorted(ids) == ["first", "first-child"], sorted(ids)
        assert ids["first-child"]["header"]["parent_id"] == ids["first"]["header"]["id"]
        assert len(found) == 2
